// The required node placement of a pod spec, as the DaemonSet controller and
// the scheduler evaluate it in Kubernetes 1.25 to 1.30:
// nodeaffinity.GetRequiredNodeAffinity(pod).Match(node) in
// k8s.io/component-helpers/scheduling/corev1/nodeaffinity/nodeaffinity.go.
//
//   spec.nodeSelector (every pair must be a node label, equal)
//   AND spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution:
//       nodeSelectorTerms ORed; within a term, matchExpressions (on labels) and
//       matchFields (on metadata.name only) all ANDed.
//
// The nil and empty cases are upstream's:
//   - no affinity, no nodeAffinity, or no required selector: no constraint;
//   - a required selector with no terms matches no node;
//   - a term with neither matchExpressions nor matchFields matches no node;
//   - a term that does not parse (bad key, bad operator, Gt/Lt with a
//     non-integer, matchFields with other than one value) is skipped, the
//     other terms still decide, and its errors are reported only when no
//     term matched (LazyErrorNodeSelector);
//   - matchFields is checked only when the node has a name: a nameless node
//     passes any matchFields (extractNodeFields yields an empty set);
//   - a matchFields key other than metadata.name compares against "".
// Preferred terms never constrain placement and are not looked at.
#pragma once

#include <string>
#include <vector>

#include "core/field_error.h"
#include "core/label_requirement.h"
#include "core/model.h"

namespace daemonlet {

struct NodeAffinityMatch {
    bool matches = false;
    // Which part refused the node (both false when it matches).
    bool node_selector_mismatch = false;
    bool required_affinity_mismatch = false;
    // Upstream's parse errors of skipped terms, one per failing requirement,
    // e.g. `nodeSelectorTerms[0].matchExpressions[0].values[0]: Invalid
    // value: "abc": for 'Gt', 'Lt' operators, the value must be an integer`;
    // a requirement with several problems gives them as one upstream
    // aggregate, `[a, b]`. Only filled when no term matched, as upstream does.
    std::vector<std::string> parse_errors;
    // One sentence per reason the node was refused, naming the nodeSelector
    // pair or the terms that failed, then the parse errors. Empty on a match.
    std::vector<std::string> reasons;
};

// GetRequiredNodeAffinity(pod).Match(node) for the spec of a pod.
NodeAffinityMatch match_required_node_affinity(const PodSpec& spec, const Node& node);

// LazyErrorNodeSelector.Match: the terms of one NodeSelector against a node.
struct NodeSelectorMatch {
    bool matches = false;
    std::vector<std::string> errors;  // parse errors of skipped terms, when nothing matched
};
NodeSelectorMatch match_node_selector(const NodeSelector& selector, const Node& node);

// nodeSelectorRequirementsAsSelector: matchExpressions as a label selector
// (In, NotIn, Exists, DoesNotExist, Gt, Lt), errors reported under `path`
// (`<path>[i].operator`, `<path>[i].key`, ...). No requirements: Nothing.
struct ParsedNodeSelectorRequirements {
    LabelSelectorExpr selector;
    std::vector<std::string> errors;  // non-empty: the selector is unusable
};
ParsedNodeSelectorRequirements node_selector_requirements_as_selector(
    const std::vector<NodeSelectorRequirement>& requirements, const FieldPath& path);

}  // namespace daemonlet
