// nodeaffinity.GetRequiredNodeAffinity / RequiredNodeAffinity.Match /
// LazyErrorNodeSelector / nodeSelectorRequirementsAsSelector /
// nodeSelectorRequirementsAsFieldSelector, Kubernetes 1.25 to 1.30
// (k8s.io/component-helpers/scheduling/corev1/nodeaffinity/nodeaffinity.go).
#include "core/node_affinity.h"

#include <algorithm>
#include <optional>

namespace daemonlet {
namespace {

const std::vector<std::string> kSelectorOperators = {"In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"};
const std::vector<std::string> kFieldSelectorOperators = {"In", "NotIn"};
constexpr const char* kObjectNameField = "metadata.name";

// v1.NodeSelectorOperator to selection.Operator.
std::optional<SelectorOp> node_selector_op(const std::string& op) {
    if (op == "In") return SelectorOp::In;
    if (op == "NotIn") return SelectorOp::NotIn;
    if (op == "Exists") return SelectorOp::Exists;
    if (op == "DoesNotExist") return SelectorOp::DoesNotExist;
    if (op == "Gt") return SelectorOp::GreaterThan;
    if (op == "Lt") return SelectorOp::LessThan;
    return std::nullopt;
}

// One fields.OneTermEqualSelector / OneTermNotEqualSelector.
struct FieldTerm {
    std::string key;
    std::string value;
    bool equal = true;
};

// nodeSelectorRequirementsAsFieldSelector: only In and NotIn, each with
// exactly one value. Keys are not checked: any key is accepted and, as the
// node's field set holds metadata.name alone, compares against "".
std::vector<std::string> field_requirements(const std::vector<NodeSelectorRequirement>& reqs,
                                            const FieldPath& path, std::vector<FieldTerm>& out) {
    std::vector<std::string> errs;
    for (std::size_t i = 0; i < reqs.size(); ++i) {
        const auto& r = reqs[i];
        const FieldPath p = path.index(i);
        if (r.op == "In" || r.op == "NotIn") {
            if (r.values.size() != 1) {
                errs.push_back(
                    invalid(p.child("values"), render_string_list(r.values), "must have one element")
                        .to_string());
            } else {
                out.push_back(FieldTerm{r.key, r.values.front(), r.op == "In"});
            }
        } else {
            errs.push_back(
                not_supported(p.child("operator"), render_string(r.op), kFieldSelectorOperators).to_string());
        }
    }
    return errs;
}

// A nodeSelectorTerm parsed once: labels / fields unset when the term has no
// matchExpressions / matchFields, which then do not constrain.
struct ParsedTerm {
    std::optional<LabelSelectorExpr> labels;
    std::optional<std::vector<FieldTerm>> fields;
    std::vector<std::string> errors;
};

ParsedTerm parse_term(const NodeSelectorTerm& term, const FieldPath& path) {
    ParsedTerm out;
    if (!term.match_expressions.empty()) {
        auto parsed =
            node_selector_requirements_as_selector(term.match_expressions, path.child("matchExpressions"));
        out.errors = std::move(parsed.errors);
        out.labels = std::move(parsed.selector);
    }
    if (!term.match_fields.empty()) {
        std::vector<FieldTerm> fields;
        for (auto& e : field_requirements(term.match_fields, path.child("matchFields"), fields))
            out.errors.push_back(std::move(e));
        out.fields = std::move(fields);
    }
    return out;
}

// nodeSelectorTerm.match. extractNodeFields only sets metadata.name when the
// node has a name, and an empty field set skips the matchFields check.
bool term_matches(const ParsedTerm& t, const Node& node) {
    if (t.labels && !t.labels->matches(node.metadata.labels)) return false;
    if (t.fields && !node.metadata.name.empty()) {
        for (const auto& f : *t.fields) {
            const std::string have = f.key == kObjectNameField ? node.metadata.name : std::string();
            if ((have == f.value) != f.equal) return false;
        }
    }
    return true;
}

enum class TermOutcome { Empty, Unparsable, NoMatch, Match };

struct TermsResult {
    bool matches = false;
    std::vector<TermOutcome> outcomes;  // per term, up to the first match
    std::vector<std::string> errors;
};

// NewLazyErrorNodeSelector + LazyErrorNodeSelector.Match: empty terms are
// dropped, unparsable ones skipped, the first matching term wins and then
// no error is reported.
TermsResult evaluate_terms(const NodeSelector& selector, const Node& node) {
    TermsResult out;
    const FieldPath path("nodeSelectorTerms");
    for (std::size_t i = 0; i < selector.node_selector_terms.size(); ++i) {
        const auto& term = selector.node_selector_terms[i];
        if (term.match_expressions.empty() && term.match_fields.empty()) {
            out.outcomes.push_back(TermOutcome::Empty);
            continue;
        }
        ParsedTerm parsed = parse_term(term, path.index(i));
        if (!parsed.errors.empty()) {
            out.outcomes.push_back(TermOutcome::Unparsable);
            for (auto& e : parsed.errors) {
                if (std::find(out.errors.begin(), out.errors.end(), e) == out.errors.end())
                    out.errors.push_back(std::move(e));
            }
            continue;
        }
        if (term_matches(parsed, node)) {
            out.outcomes.push_back(TermOutcome::Match);
            out.matches = true;
            out.errors.clear();
            return out;
        }
        out.outcomes.push_back(TermOutcome::NoMatch);
    }
    return out;
}

// A requirement as a person reads it, in the syntax labels.Requirement's
// String uses: "color in (blue,red)", "!gpu", "kernel>4".
std::string requirement_text(const NodeSelectorRequirement& r) {
    std::string values;
    for (std::size_t i = 0; i < r.values.size(); ++i) {
        if (i) values += ',';
        values += r.values[i];
    }
    if (r.op == "Exists") return r.key;
    if (r.op == "DoesNotExist") return "!" + r.key;
    std::string out = r.key;
    if (r.op == "Gt" || r.op == "Lt") {
        out += r.op == "Gt" ? ">" : "<";
        out += values;
        return out;
    }
    out += r.op == "In" ? " in (" : r.op == "NotIn" ? " notin (" : " " + r.op + " (";
    out += values;
    out += ')';
    return out;
}

// A term: {color in (blue,red), !gpu, metadata.name=board-1}.
std::string term_text(const NodeSelectorTerm& term) {
    std::string out = "{";
    auto add = [&](const std::string& part) {
        if (out.size() > 1) out += ", ";
        out += part;
    };
    for (const auto& r : term.match_expressions) add(requirement_text(r));
    for (const auto& r : term.match_fields) {
        std::string part = r.key;
        part += r.op == "NotIn" ? "!=" : "=";
        for (std::size_t i = 0; i < r.values.size(); ++i) {
            if (i) part += ',';
            part += r.values[i];
        }
        add(part);
    }
    out += '}';
    return out;
}

// Why a nodeSelector pair refuses the node.
std::string node_selector_reason(const std::string& key, const std::string& want, const Labels& labels) {
    std::string out = "nodeSelector requires ";
    out += key;
    out += '=';
    out += want;
    const auto it = labels.find(key);
    if (it == labels.end()) {
        out += " but the node has no label ";
        out += key;
    } else {
        out += " but the node has ";
        out += key;
        out += '=';
        out += it->second;
    }
    return out;
}

}  // namespace

ParsedNodeSelectorRequirements node_selector_requirements_as_selector(
    const std::vector<NodeSelectorRequirement>& requirements, const FieldPath& path) {
    ParsedNodeSelectorRequirements out;
    if (requirements.empty()) {
        out.selector.nothing = true;
        return out;
    }
    for (std::size_t i = 0; i < requirements.size(); ++i) {
        const auto& expr = requirements[i];
        const FieldPath p = path.index(i);
        const auto op = node_selector_op(expr.op);
        if (!op) {
            out.errors.push_back(
                not_supported(p.child("operator"), render_string(expr.op), kSelectorOperators).to_string());
            continue;
        }
        auto r = make_requirement(expr.key, *op, expr.values, p);
        if (r) {
            out.selector.requirements.push_back(std::move(r).value());
        } else {
            out.errors.push_back(r.error().message);
        }
    }
    if (!out.errors.empty()) out.selector = LabelSelectorExpr{true, {}};
    return out;
}

NodeSelectorMatch match_node_selector(const NodeSelector& selector, const Node& node) {
    TermsResult r = evaluate_terms(selector, node);
    return NodeSelectorMatch{r.matches, std::move(r.errors)};
}

NodeAffinityMatch match_required_node_affinity(const PodSpec& spec, const Node& node) {
    NodeAffinityMatch out;
    const Labels& labels = node.metadata.labels;

    // labels.SelectorFromSet(pod.Spec.NodeSelector), checked first; when it
    // refuses, the affinity is not evaluated and no parse error is reported.
    if (!spec.node_selector.empty() && !selector_from_set(spec.node_selector).matches(labels)) {
        out.node_selector_mismatch = true;
        for (const auto& [k, v] : spec.node_selector) {
            const auto it = labels.find(k);
            if (it == labels.end() || it->second != v)
                out.reasons.push_back(node_selector_reason(k, v, labels));
        }
        return out;
    }

    const bool has_required =
        spec.affinity && spec.affinity->node_affinity && spec.affinity->node_affinity->required;
    if (!has_required) {
        out.matches = true;
        return out;
    }
    const NodeSelector& required = *spec.affinity->node_affinity->required;
    TermsResult r = evaluate_terms(required, node);
    if (r.matches) {
        out.matches = true;
        return out;
    }

    out.required_affinity_mismatch = true;
    if (required.node_selector_terms.empty())
        out.reasons.emplace_back("required node affinity has no nodeSelectorTerms, so it matches no node");
    for (std::size_t i = 0; i < r.outcomes.size(); ++i) {
        const std::string term = "nodeSelectorTerms[" + std::to_string(i) + "]";
        switch (r.outcomes[i]) {
        case TermOutcome::Empty:
            out.reasons.push_back(term + " is empty, and an empty term matches no node");
            break;
        case TermOutcome::NoMatch:
            out.reasons.push_back(term + " " + term_text(required.node_selector_terms[i]) +
                                  " does not match the node");
            break;
        case TermOutcome::Unparsable:  // explained by its parse errors below
        case TermOutcome::Match: break;
        }
    }
    for (const auto& e : r.errors)
        out.reasons.push_back("ignored a required node affinity term that does not parse: " + e);
    out.parse_errors = std::move(r.errors);
    return out;
}

}  // namespace daemonlet
