// Scheduling constraints: validateAffinity (node affinity from the typed
// model, pod (anti-)affinity from the document as written),
// ValidateTolerations and validateTaintEffect, from
// pkg/apis/core/validation/validation.go, Kubernetes 1.25 to 1.30.
//
// Only the shape is validated, as the API server does: a node selector
// requirement whose value is not a label value, or a Gt/Lt value that is not
// an integer, is accepted here and simply never matches.
#include <string>

#include "core/names.h"
#include "core/validation_internal.h"

namespace daemonlet::validation {
namespace {

// ValidateNodeSelectorRequirement.
void validate_node_selector_requirement(const NodeSelectorRequirement& r, const FieldPath& p,
                                        FieldErrors& errs) {
    if (r.op == "In" || r.op == "NotIn") {
        if (r.values.empty())
            errs.push_back(
                required(p.child("values"), "must be specified when `operator` is 'In' or 'NotIn'"));
    } else if (r.op == "Exists" || r.op == "DoesNotExist") {
        if (!r.values.empty())
            errs.push_back(forbidden(p.child("values"),
                                     "may not be specified when `operator` is 'Exists' or 'DoesNotExist'"));
    } else if (r.op == "Gt" || r.op == "Lt") {
        if (r.values.size() != 1)
            errs.push_back(required(p.child("values"),
                                    "must be specified single value when `operator` is 'Lt' or 'Gt'"));
    } else {
        errs.push_back(invalid(p.child("operator"), render_string(r.op), "not a valid selector operator"));
    }
    validate_label_name(r.key, p.child("key"), errs);
}

// ValidateNodeFieldSelectorRequirement: only metadata.name, In or NotIn one
// node name.
void validate_node_field_selector_requirement(const NodeSelectorRequirement& r, const FieldPath& p,
                                              FieldErrors& errs) {
    if (r.op == "In" || r.op == "NotIn") {
        if (r.values.size() != 1)
            errs.push_back(required(
                p.child("values"),
                "must be only one value when `operator` is 'In' or 'NotIn' for node field selector"));
    } else {
        errs.push_back(invalid(p.child("operator"), render_string(r.op), "not a valid selector operator"));
    }
    if (r.key != "metadata.name") {
        errs.push_back(invalid(p.child("key"), render_string(r.key), "not a valid field selector key"));
        return;
    }
    for (std::size_t i = 0; i < r.values.size(); ++i)
        invalid_each(errs, p.child("values").index(i), render_string(r.values[i]),
                     name_is_dns_subdomain(r.values[i], false));
}

// ValidateNodeSelectorTerm: an empty term is valid (it matches nothing).
void validate_node_selector_term(const NodeSelectorTerm& t, const FieldPath& p, FieldErrors& errs) {
    for (std::size_t j = 0; j < t.match_expressions.size(); ++j)
        validate_node_selector_requirement(t.match_expressions[j], p.child("matchExpressions").index(j),
                                           errs);
    for (std::size_t j = 0; j < t.match_fields.size(); ++j)
        validate_node_field_selector_requirement(t.match_fields[j], p.child("matchFields").index(j), errs);
}

// validateNodeAffinity: ValidateNodeSelector and ValidatePreferredSchedulingTerms.
void validate_node_affinity(const NodeAffinity& na, const FieldPath& p, FieldErrors& errs) {
    if (na.required) {
        FieldPath tp = p.child("requiredDuringSchedulingIgnoredDuringExecution").child("nodeSelectorTerms");
        if (na.required->node_selector_terms.empty())
            errs.push_back(required(tp, "must have at least one node selector term"));
        for (std::size_t i = 0; i < na.required->node_selector_terms.size(); ++i)
            validate_node_selector_term(na.required->node_selector_terms[i], tp.index(i), errs);
    }
    FieldPath pp = p.child("preferredDuringSchedulingIgnoredDuringExecution");
    for (std::size_t i = 0; i < na.preferred.size(); ++i) {
        const auto& term = na.preferred[i];
        if (term.weight <= 0 || term.weight > 100)
            errs.push_back(
                invalid(pp.index(i).child("weight"), render_int(term.weight), "must be in the range 1-100"));
        validate_node_selector_term(term.preference, pp.index(i).child("preference"), errs);
    }
}

// A metav1.LabelSelector read from the document as written. Members of the
// wrong type are skipped: the pod affinity document is not type-checked by
// the decoder, and validation only judges what it can read.
LabelSelector selector_from_json(const Json& j) {
    LabelSelector s;
    if (const Json* ml = member(j, "matchLabels"); ml && ml->is_object())
        for (auto it = ml->begin(); it != ml->end(); ++it)
            if (it.value().is_string()) s.match_labels[it.key()] = it.value().get<std::string>();
    if (const Json* me = member(j, "matchExpressions"); me && me->is_array())
        for (const Json& e : *me) {
            LabelSelectorRequirement r{string_member(e, "key"), string_member(e, "operator"), {}};
            if (const Json* vs = member(e, "values"); vs && vs->is_array())
                for (const Json& v : *vs)
                    if (v.is_string()) r.values.push_back(v.get<std::string>());
            s.match_expressions.push_back(std::move(r));
        }
    return s;
}

// validatePodAffinityTerm (matchLabelKeys, alpha in 1.29, is not checked).
void validate_pod_affinity_term(const Json& term, const FieldPath& p, FieldErrors& errs) {
    if (const Json* ls = member(term, "labelSelector"))
        validate_label_selector(selector_from_json(*ls), p.child("labelSelector"), errs);
    if (const Json* ns = member(term, "namespaceSelector"))
        validate_label_selector(selector_from_json(*ns), p.child("namespaceSelector"), errs);
    if (const Json* nss = member(term, "namespaces"); nss && nss->is_array())
        for (const Json& n : *nss)
            if (n.is_string())
                invalid_each(errs, p.child("namespace"), render_string(n.get<std::string>()),
                             name_is_dns_label(n.get<std::string>(), false));
    std::string key = string_member(term, "topologyKey");
    if (key.empty()) errs.push_back(required(p.child("topologyKey"), "can not be empty"));
    validate_label_name(key, p.child("topologyKey"), errs);
}

// validatePodAffinity / validatePodAntiAffinity.
void validate_pod_affinity(const Json& a, const FieldPath& p, FieldErrors& errs) {
    FieldPath rp = p.child("requiredDuringSchedulingIgnoredDuringExecution");
    if (const Json* req = member(a, "requiredDuringSchedulingIgnoredDuringExecution"); req && req->is_array())
        for (std::size_t i = 0; i < req->size(); ++i)
            validate_pod_affinity_term((*req)[i], rp.index(i), errs);
    FieldPath pp = p.child("preferredDuringSchedulingIgnoredDuringExecution");
    if (const Json* pref = member(a, "preferredDuringSchedulingIgnoredDuringExecution");
        pref && pref->is_array())
        for (std::size_t i = 0; i < pref->size(); ++i) {
            const Json& w = (*pref)[i];
            const Json* weight = member(w, "weight");
            std::int64_t n = weight && weight->is_number_integer() ? weight->get<std::int64_t>() : 0;
            if (n <= 0 || n > 100)
                errs.push_back(
                    invalid(pp.index(i).child("weight"), render_int(n), "must be in the range 1-100"));
            static const Json kNull;
            const Json* term = member(w, "podAffinityTerm");
            validate_pod_affinity_term(term ? *term : kNull, pp.index(i).child("podAffinityTerm"), errs);
        }
}

// The internal core.Toleration has no String(): %#v, seconds a pointer.
std::string render_toleration(const Toleration& t) {
    return "core.Toleration{Key:" + render_string(t.key) + ", Operator:" + render_string(t.op) +
           ", Value:" + render_string(t.value) + ", Effect:" + render_string(t.effect) +
           ", TolerationSeconds:(*int64)(" + (t.toleration_seconds ? "0x\xe2\x80\xa6" : "nil") + ")}";
}

}  // namespace

void validate_affinity(const Affinity& a, const FieldPath& p, FieldErrors& errs) {
    if (a.node_affinity) validate_node_affinity(*a.node_affinity, p.child("nodeAffinity"), errs);
    if (a.pod_affinity.is_object()) validate_pod_affinity(a.pod_affinity, p.child("podAffinity"), errs);
    if (a.pod_anti_affinity.is_object())
        validate_pod_affinity(a.pod_anti_affinity, p.child("podAntiAffinity"), errs);
}

void validate_taint_effect(const std::string& effect, bool allow_empty, const FieldPath& p,
                           FieldErrors& errs) {
    if (!allow_empty && effect.empty()) {
        errs.push_back(required(p));
        return;
    }
    if (effect != "NoSchedule" && effect != "PreferNoSchedule" && effect != "NoExecute")
        errs.push_back(
            not_supported(p, render_string(effect), {"NoSchedule", "PreferNoSchedule", "NoExecute"}));
}

void validate_tolerations(const std::vector<Toleration>& ts, const FieldPath& p, FieldErrors& errs) {
    for (std::size_t i = 0; i < ts.size(); ++i) {
        const Toleration& t = ts[i];
        FieldPath ip = p.index(i);
        if (!t.key.empty()) validate_label_name(t.key, ip.child("key"), errs);
        // An empty key with Exists (and no value) tolerates every taint.
        if (t.key.empty() && t.op != "Exists")
            errs.push_back(invalid(ip.child("operator"), render_string(t.op),
                                   "operator must be Exists when `key` is empty, which means \"match all "
                                   "values and all keys\""));
        if (t.toleration_seconds && t.effect != "NoExecute")
            errs.push_back(invalid(ip.child("effect"), render_string(t.effect),
                                   "effect must be 'NoExecute' when `tolerationSeconds` is set"));
        if (t.op == "Equal" || t.op.empty()) {
            auto msgs = names::is_valid_label_value(t.value);
            if (!msgs.empty()) {
                std::string joined;
                for (std::size_t k = 0; k < msgs.size(); ++k) joined += (k ? ";" : "") + msgs[k];
                errs.push_back(invalid(ip.child("operator"), render_string(t.value), joined));
            }
        } else if (t.op == "Exists") {
            if (!t.value.empty())
                errs.push_back(invalid(ip.child("operator"), render_toleration(t),
                                       "value must be empty when `operator` is 'Exists'"));
        } else {
            errs.push_back(not_supported(ip.child("operator"), render_string(t.op), {"Equal", "Exists"}));
        }
        if (!t.effect.empty()) validate_taint_effect(t.effect, true, ip.child("effect"), errs);
    }
}

}  // namespace daemonlet::validation
