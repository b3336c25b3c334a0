// DaemonSet and Node validation on create, as the API server does it:
// pkg/apis/apps/validation/validation.go (ValidateDaemonSet and what it
// calls) and pkg/apis/core/validation/validation.go (ValidateNode), for
// Kubernetes 1.25 to 1.30. The objects arrive defaulted, as they do there.
#include "core/validation.h"

#include <limits>
#include <map>
#include <set>
#include <string>

#include "core/label_requirement.h"
#include "core/names.h"
#include "core/validation_internal.h"

namespace daemonlet {

using namespace validation;

namespace {

// *metav1.LabelSelector has a generated (gogo protobuf) String() that
// field.Error uses, e.g. for an empty selector:
//   &LabelSelector{MatchLabels:map[string]string{},MatchExpressions:[]LabelSelectorRequirement{},}
std::string render_label_selector(const LabelSelector& s) {
    std::string out = "&LabelSelector{MatchLabels:map[string]string{";
    for (const auto& [k, v] : s.match_labels) out.append(k).append(": ").append(v).append(",");
    out += "},MatchExpressions:[]LabelSelectorRequirement{";
    for (const auto& r : s.match_expressions) {
        out.append("LabelSelectorRequirement{Key:")
            .append(r.key)
            .append(",Operator:")
            .append(r.op)
            .append(",Values:[");
        for (std::size_t i = 0; i < r.values.size(); ++i) out.append(i ? " " : "").append(r.values[i]);
        out += "],},";
    }
    return out + "},}";
}

// The internal apps.DaemonSetUpdateStrategy has no String(): %#v. A set
// rollingUpdate pointer prints as an address upstream; ours is elided.
std::string render_strategy(const DaemonSetUpdateStrategy& s) {
    return "apps.DaemonSetUpdateStrategy{Type:" + render_string(s.type) +
           ", RollingUpdate:(*apps.RollingUpdateDaemonSet)(" + (s.rolling_update ? "0x\xe2\x80\xa6" : "nil") +
           ")}";
}

// strconv.Atoi as intstr.IntValue uses it: an optional sign and decimal
// digits, saturating out of range, 0 when the text is not a number.
std::int64_t go_atoi(const std::string& s) {
    std::size_t i = 0;
    bool neg = false;
    if (i < s.size() && (s[i] == '+' || s[i] == '-')) neg = s[i++] == '-';
    if (i == s.size()) return 0;
    std::int64_t v = 0;
    for (; i < s.size(); ++i) {
        if (s[i] < '0' || s[i] > '9') return 0;
        int d = s[i] - '0';
        if (v > (std::numeric_limits<std::int64_t>::max() - d) / 10)
            return neg ? std::numeric_limits<std::int64_t>::min() : std::numeric_limits<std::int64_t>::max();
        v = v * 10 + d;
    }
    return neg ? -v : v;
}

// util/validation IsValidPercent: ^[0-9]+%$.
bool is_valid_percent(const std::string& s) {
    if (s.size() < 2 || s.back() != '%') return false;
    for (std::size_t i = 0; i + 1 < s.size(); ++i)
        if (s[i] < '0' || s[i] > '9') return false;
    return true;
}

const char* const kPercentMsg =
    "a valid percent string must be a numeric string followed by an ending '%' (e.g. '1%',  or '93%', regex "
    "used "
    "for validation is '[0-9]+%')";

// getIntOrPercentValue: a valid percentage counts as its number, any other
// string as intstr.IntValue reads it.
std::int64_t int_or_percent_value(const IntOrString& v) {
    if (v.type == IntOrString::Type::Int) return v.int_val;
    if (is_valid_percent(v.str_val)) return go_atoi(v.str_val.substr(0, v.str_val.size() - 1));
    return go_atoi(v.str_val);
}

// ValidatePositiveIntOrPercent.
void validate_positive_int_or_percent(const IntOrString& v, const FieldPath& p, FieldErrors& errs) {
    if (v.type == IntOrString::Type::String) {
        if (!is_valid_percent(v.str_val)) errs.push_back(invalid(p, render_int_or_string(v), kPercentMsg));
    } else {
        validate_nonnegative(v.int_val, p, errs);
    }
}

// IsNotMoreThan100Percent.
void is_not_more_than_100_percent(const IntOrString& v, const FieldPath& p, FieldErrors& errs) {
    if (v.type != IntOrString::Type::String || !is_valid_percent(v.str_val)) return;
    if (int_or_percent_value(v) > 100)
        errs.push_back(invalid(p, render_int_or_string(v), "must not be greater than 100%"));
}

// ValidateRollingUpdateDaemonSet: both values are non-negative ints or
// percentages of at most 100%, and exactly one of them is non-zero. An unset
// value converts to the zero IntOrString, as v1 -> internal conversion does.
void validate_rolling_update(const RollingUpdateDaemonSet& ru, const FieldPath& p, FieldErrors& errs) {
    IntOrString unavailable = ru.max_unavailable.value_or(IntOrString{});
    IntOrString surge = ru.max_surge.value_or(IntOrString{});
    validate_positive_int_or_percent(unavailable, p.child("maxUnavailable"), errs);
    validate_positive_int_or_percent(surge, p.child("maxSurge"), errs);
    is_not_more_than_100_percent(unavailable, p.child("maxUnavailable"), errs);
    is_not_more_than_100_percent(surge, p.child("maxSurge"), errs);
    bool has_unavailable = int_or_percent_value(unavailable) != 0;
    bool has_surge = int_or_percent_value(surge) != 0;
    if (has_unavailable && has_surge)
        errs.push_back(invalid(p.child("maxSurge"), render_int_or_string(surge),
                               "may not be set when maxUnavailable is non-zero"));
    else if (!has_unavailable && !has_surge)
        errs.push_back(required(p.child("maxUnavailable"), "cannot be 0 when maxSurge is 0"));
}

// ValidateDaemonSetUpdateStrategy. With OnDelete a rollingUpdate block is
// neither rejected nor checked: upstream ignores it.
void validate_update_strategy(const DaemonSetUpdateStrategy& s, const FieldPath& p, FieldErrors& errs) {
    if (s.type == "OnDelete") return;
    if (s.type == "RollingUpdate") {
        if (!s.rolling_update)
            errs.push_back(required(p.child("rollingUpdate")));
        else
            validate_rolling_update(*s.rolling_update, p.child("rollingUpdate"), errs);
        return;
    }
    errs.push_back(not_supported(p, render_strategy(s), {"RollingUpdate", "OnDelete"}));
}

// ValidateDaemonSetSpec.
void validate_daemonset_spec(const DaemonSetSpec& spec, const Json& raw_pod_spec, const FieldPath& p,
                             FieldErrors& errs) {
    const Labels& template_labels = spec.template_.metadata.labels;
    if (spec.selector) validate_label_selector(*spec.selector, p.child("selector"), errs);
    // A nil selector selects nothing, so it never matches the template:
    // that is the error a missing selector gets.
    auto selector = label_selector_as_selector(spec.selector);
    if (selector.ok() && !selector.value().matches(template_labels))
        errs.push_back(invalid(p.child("template").child("metadata").child("labels"),
                               go_string_map(template_labels),
                               "`selector` does not match template `labels`"));
    if (spec.selector && spec.selector->match_labels.empty() && spec.selector->match_expressions.empty())
        errs.push_back(invalid(p.child("selector"), render_label_selector(*spec.selector),
                               "empty selector is invalid for daemonset"));

    validate_pod_template_spec(spec.template_, raw_pod_spec, p.child("template"), errs);
    // restartPolicy was first-order validated by the pod spec; a DaemonSet
    // additionally allows only Always.
    FieldPath pod_spec = p.child("template").child("spec");
    if (spec.template_.spec.restart_policy != "Always")
        errs.push_back(not_supported(pod_spec.child("restartPolicy"),
                                     render_string(spec.template_.spec.restart_policy), {"Always"}));
    if (spec.template_.spec.active_deadline_seconds)
        errs.push_back(forbidden(pod_spec.child("activeDeadlineSeconds"),
                                 "activeDeadlineSeconds in DaemonSet is not Supported"));
    validate_nonnegative(spec.min_ready_seconds, p.child("minReadySeconds"), errs);
    validate_nonnegative(spec.template_generation, p.child("templateGeneration"), errs);
    validate_update_strategy(spec.update_strategy, p.child("updateStrategy"), errs);
    if (spec.revision_history_limit)
        validate_nonnegative(*spec.revision_history_limit, p.child("revisionHistoryLimit"), errs);
}

// The internal core.Taint has no String(): %#v. TimeAdded is a pointer.
std::string render_taint(const Taint& t) {
    return "core.Taint{Key:" + render_string(t.key) + ", Value:" + render_string(t.value) +
           ", Effect:" + render_string(t.effect) + ", TimeAdded:(*v1.Time)(" +
           (t.time_added.empty() ? "nil" : "0x\xe2\x80\xa6") + ")}";
}

// validateNodeTaints: key a qualified name, value a label value, effect
// required and known, and no two taints with the same key and effect.
void validate_node_taints(const std::vector<Taint>& taints, const FieldPath& p, FieldErrors& errs) {
    std::map<std::string, std::set<std::string>> unique;
    for (std::size_t i = 0; i < taints.size(); ++i) {
        const Taint& t = taints[i];
        FieldPath ip = p.index(i);
        validate_label_name(t.key, ip.child("key"), errs);
        auto value_errs = names::is_valid_label_value(t.value);
        if (!value_errs.empty()) {
            std::string joined;
            for (std::size_t k = 0; k < value_errs.size(); ++k) joined += (k ? ";" : "") + value_errs[k];
            errs.push_back(invalid(ip.child("value"), render_string(t.value), joined));
        }
        validate_taint_effect(t.effect, false, ip.child("effect"), errs);
        auto& keys = unique[t.effect];
        if (keys.count(t.key)) {
            FieldError dup = duplicate(ip, render_taint(t));
            dup.detail = "taints must be unique by key and effect pair";
            errs.push_back(std::move(dup));
            continue;
        }
        keys.insert(t.key);
    }
}

}  // namespace

FieldErrors validate_daemonset(const DaemonSet& ds) {
    FieldErrors errs;
    validate_object_meta(ds.metadata, true, FieldPath("metadata"), errs);
    static const Json kNull;
    const Json* raw = &kNull;
    if (const Json* spec = member(ds.object, "spec"))
        if (const Json* tmpl = member(*spec, "template"))
            if (const Json* pod = member(*tmpl, "spec")) raw = pod;
    validate_daemonset_spec(ds.spec, *raw, FieldPath("spec"), errs);
    return errs;
}

FieldErrors validate_node(const Node& node) {
    FieldErrors errs;
    FieldPath meta("metadata");
    validate_object_meta(node.metadata, false, meta, errs);
    // Upstream validates spec.taints under the metadata path.
    if (!node.taints.empty()) validate_node_taints(node.taints, meta.child("taints"), errs);
    return errs;
}

}  // namespace daemonlet
