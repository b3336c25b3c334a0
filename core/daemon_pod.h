// The Pod of the API for a pod the board runs for a cluster DaemonSet
// (issue 14 §2): the one the DaemonSet controller would have made for this
// node, named after the ControllerRevision the controller keeps for its
// template. Pure: the agent lists the revisions and the Pods
// (agent/daemon/api_pods.cpp), these functions read and build the objects.
//
// Upstream (pkg/controller/daemon):
//   daemon_controller.go syncNodes: the template of CreatePodTemplate,
//     its node affinity replaced by ReplaceDaemonSetPodNodeNameNodeAffinity,
//     created by podControl.CreatePods with metav1.NewControllerRef(ds);
//   controller_utils.go GetPodFromTemplate: generateName "<ds>-", the
//     template's labels, annotations and finalizers, its spec;
//   util/daemonset_util.go CreatePodTemplate: AddOrUpdateDaemonPodTolerations,
//     labels pod-template-generation (the deprecated template generation
//     annotation, when set) and controller-revision-hash;
//   update.go constructHistory / Match / getPatch and dedupCurHistories: the
//     current revision is the ControllerRevision whose data is
//     {"spec": {"template": <template + "$patch": "replace">}}, the highest
//     revision when several are; its controller-revision-hash label names it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/json.h"
#include "core/model.h"

namespace daemonlet {

inline constexpr const char* kControllerRevisionHashLabel = "controller-revision-hash";
inline constexpr const char* kPodTemplateGenerationLabel = "pod-template-generation";
inline constexpr const char* kTemplateGenerationAnnotation = "deprecated.daemonset.template.generation";

// metav1.LabelSelectorAsSelector(s).String(): the requirements sorted by
// key, "k=v" for matchLabels, "k in (a,b)", "k notin (a,b)", "k", "!k".
// Empty for a selector that selects everything.
std::string label_selector_string(const LabelSelector& selector);

// A DaemonSet's revision as its ControllerRevision holds it.
struct ClusterRevision {
    std::string name;
    std::string hash;  // its controller-revision-hash label: how the controller names the revision
    std::int64_t revision = 0;
    // data.spec.template without "$patch", defaulted as the DaemonSet's own
    // (core/defaults.h), so that it compares with the template the board
    // runs whatever the server's defaulting; and template_hash of it with
    // the DaemonSet's collisionCount (the board's revision hash).
    Json pod_template;
    std::string template_hash;
    std::vector<Toleration> tolerations;  // the template's, AddOrUpdateDaemonPodTolerations applied
};

// The ControllerRevisions of a list (items) that `ds` controls (a
// controller ownerReference with its uid; the controller's
// ControllerRevision adoption is its own business), decoded. An item that
// is not one (no hash label, no template, a template that does not
// decode) is skipped.
std::vector<ClusterRevision> cluster_revisions(const DaemonSet& ds, const Json& list);

// Match + dedupCurHistories: the revision of the template whose board hash
// is `template_hash`, the highest revision number when several are; null
// when none (the controller has not written it yet: wait, never guess).
const ClusterRevision* revision_for(const std::vector<ClusterRevision>& revisions,
                                    const std::string& template_hash);

// The Pod syncNodes creates for `node_name` from `ds` at `rev`, bound to
// the node (spec.nodeName: the board is its own scheduler). The
// pod-template-generation label is set when the pod runs the DaemonSet's
// current template and the DaemonSet has the annotation.
Json daemon_pod_object(const DaemonSet& ds, const ClusterRevision& rev, const std::string& node_name);

// The Pods of a PodList (items) that the DaemonSet `ds_uid` controls and
// that are bound to `node_name`; without the ones being deleted
// (deletionTimestamp set) when `include_deleting` is false.
std::vector<Json> controlled_pods(const Json& list, const std::string& ds_uid, const std::string& node_name,
                                  bool include_deleting = false);

}  // namespace daemonlet
