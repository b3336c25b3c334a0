// labels.NewRequirement, Requirement.Matches, SelectorFromSet and
// metav1.LabelSelectorAsSelector, as in Kubernetes 1.25 to 1.30
// (k8s.io/apimachinery/pkg/labels/selector.go,
// k8s.io/apimachinery/pkg/apis/meta/v1/helpers.go).
#include "core/label_requirement.h"

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string_view>

#include "core/names.h"
#include "core/strings.h"

namespace daemonlet {
namespace {

// strconv.ParseInt(s, 10, 64): an optional sign, then at least one decimal
// digit, nothing else (no spaces, no underscores with an explicit base), and
// the value must fit in an int64.
std::optional<std::int64_t> parse_int64(std::string_view s) {
    bool neg = false;
    if (!s.empty() && (s.front() == '+' || s.front() == '-')) {
        neg = s.front() == '-';
        s.remove_prefix(1);
    }
    if (s.empty()) return std::nullopt;
    constexpr std::uint64_t kLimit = std::uint64_t{1} << 63;
    std::uint64_t n = 0;
    for (char c : s) {
        if (c < '0' || c > '9') return std::nullopt;
        const auto d = static_cast<std::uint64_t>(c - '0');
        if (n > (kLimit - d) / 10) return std::nullopt;  // past 2^63 whatever the sign
        n = n * 10 + d;
    }
    if (!neg && n == kLimit) return std::nullopt;
    if (neg) return n == kLimit ? INT64_MIN : -static_cast<std::int64_t>(n);
    return static_cast<std::int64_t>(n);
}

// field.ErrorList.ToAggregate().Error(): duplicates dropped, one message
// bare, several in brackets.
std::string aggregate(const FieldErrors& errs) {
    std::vector<std::string> msgs;
    for (const auto& e : errs) {
        std::string m = e.to_string();
        if (std::find(msgs.begin(), msgs.end(), m) == msgs.end()) msgs.push_back(std::move(m));
    }
    if (msgs.size() == 1) return msgs.front();
    return "[" + join(msgs, ", ") + "]";
}

// metav1.LabelSelectorOperator to selection.Operator: no Gt or Lt here.
std::optional<SelectorOp> label_selector_op(const std::string& op) {
    if (op == "In") return SelectorOp::In;
    if (op == "NotIn") return SelectorOp::NotIn;
    if (op == "Exists") return SelectorOp::Exists;
    if (op == "DoesNotExist") return SelectorOp::DoesNotExist;
    return std::nullopt;
}

bool has_value(const LabelRequirement& r, const std::string& v) {
    return std::find(r.values.begin(), r.values.end(), v) != r.values.end();
}

}  // namespace

bool LabelRequirement::matches(const Labels& ls) const {
    const auto it = ls.find(key);
    const bool present = it != ls.end();
    switch (op) {
    case SelectorOp::In:
    case SelectorOp::Equals:
    case SelectorOp::DoubleEquals: return present && has_value(*this, it->second);
    case SelectorOp::NotIn:
    case SelectorOp::NotEquals: return !present || !has_value(*this, it->second);
    case SelectorOp::Exists: return present;
    case SelectorOp::DoesNotExist: return !present;
    case SelectorOp::GreaterThan:
    case SelectorOp::LessThan: {
        // Both sides must be base-10 int64s; anything else simply does not
        // match (upstream logs at V(10) and returns false).
        if (!present || values.size() != 1) return false;
        const auto have = parse_int64(it->second);
        const auto want = parse_int64(values.front());
        if (!have || !want) return false;
        return op == SelectorOp::GreaterThan ? *have > *want : *have < *want;
    }
    }
    return false;
}

Result<LabelRequirement> make_requirement(const std::string& key, SelectorOp op,
                                          const std::vector<std::string>& values, const FieldPath& path) {
    FieldErrors errs;
    if (auto problems = names::is_qualified_name(key); !problems.empty())
        errs.push_back(invalid(path.child("key"), render_string(key), join(problems, "; ")));

    const FieldPath values_path = path.child("values");
    switch (op) {
    case SelectorOp::In:
    case SelectorOp::NotIn:
        if (values.empty()) {
            errs.push_back(invalid(values_path, render_string_list(values),
                                   "for 'in', 'notin' operators, values set can't be empty"));
        }
        break;
    case SelectorOp::Equals:
    case SelectorOp::DoubleEquals:
    case SelectorOp::NotEquals:
        if (values.size() != 1) {
            errs.push_back(invalid(values_path, render_string_list(values),
                                   "exact-match compatibility requires one single value"));
        }
        break;
    case SelectorOp::Exists:
    case SelectorOp::DoesNotExist:
        if (!values.empty()) {
            errs.push_back(invalid(values_path, render_string_list(values),
                                   "values set must be empty for exists and does not exist"));
        }
        break;
    case SelectorOp::GreaterThan:
    case SelectorOp::LessThan:
        if (values.size() != 1) {
            errs.push_back(invalid(values_path, render_string_list(values),
                                   "for 'Gt', 'Lt' operators, exactly one value is required"));
        }
        for (std::size_t i = 0; i < values.size(); ++i) {
            if (!parse_int64(values[i])) {
                errs.push_back(invalid(values_path.index(i), render_string(values[i]),
                                       "for 'Gt', 'Lt' operators, the value must be an integer"));
            }
        }
        break;
    }
    // Every value, whatever the operator, must be a label value; upstream
    // reports it under values[i][<key>].
    for (std::size_t i = 0; i < values.size(); ++i) {
        if (auto problems = names::is_valid_label_value(values[i]); !problems.empty()) {
            errs.push_back(
                invalid(values_path.index(i).key(key), render_string(values[i]), join(problems, "; ")));
        }
    }

    if (!errs.empty()) return Error{ErrorCode::Invalid, aggregate(errs)};
    return LabelRequirement{key, op, values};
}

bool LabelSelectorExpr::matches(const Labels& ls) const {
    if (nothing) return false;
    return std::all_of(requirements.begin(), requirements.end(),
                       [&](const LabelRequirement& r) { return r.matches(ls); });
}

LabelSelectorExpr selector_from_set(const Labels& set) {
    // SelectorFromSet does not validate in 1.25-1.30: each pair becomes an
    // equality requirement as written, so a malformed key or value matches
    // exactly the nodes that carry that very label (none, in a valid
    // cluster). An empty set is Everything.
    LabelSelectorExpr out;
    out.requirements.reserve(set.size());
    for (const auto& [k, v] : set) out.requirements.push_back(LabelRequirement{k, SelectorOp::Equals, {v}});
    return out;
}

Result<LabelSelectorExpr> label_selector_as_selector(const std::optional<LabelSelector>& sel) {
    LabelSelectorExpr out;
    if (!sel) {
        out.nothing = true;
        return out;
    }
    if (sel->match_labels.empty() && sel->match_expressions.empty()) return out;  // Everything
    // matchLabels first, in key order (upstream ranges over a Go map, so only
    // which of several bad labels is reported first may differ).
    for (const auto& [k, v] : sel->match_labels) {
        auto r = make_requirement(k, SelectorOp::Equals, {v}, FieldPath());
        if (!r) return r.error();
        out.requirements.push_back(std::move(r).value());
    }
    for (const auto& expr : sel->match_expressions) {
        const auto op = label_selector_op(expr.op);
        if (!op)
            return Error{ErrorCode::Invalid,
                         render_string(expr.op) + " is not a valid label selector operator"};
        auto r = make_requirement(expr.key, *op, expr.values, FieldPath());
        if (!r) return r.error();
        out.requirements.push_back(std::move(r).value());
    }
    // selector.Add sorts by key; matching does not depend on the order, but
    // anything printing the selector then reads as upstream's does.
    std::stable_sort(out.requirements.begin(), out.requirements.end(),
                     [](const LabelRequirement& a, const LabelRequirement& b) { return a.key < b.key; });
    return out;
}

}  // namespace daemonlet
