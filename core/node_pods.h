// The Pods bound to this node, as the agent's pod watch has them
// (apiServer.podStatus, issue 14 §3/§4), and what the board does about
// each: pure decisions, carried out by agent/daemon/api_pods.cpp.
//
// Upstream (pkg/kubelet):
//   config/apiserver.go NewSourceApiserver: the node's pods are listed and
//     watched with fieldSelector spec.nodeName=<node>;
//   a Pod of the board's pod being deleted (metadata.deletionTimestamp set
//     by the API server's graceful deletion, podStrategy
//     CheckGracefulDelete) stops it within deletionGracePeriodSeconds
//     (kubelet.go HandlePodUpdates -> pod worker's terminating path,
//     kuberuntime killContainer: at least minimumGracePeriodInSeconds, 2);
//     a Pod removed outright (a DELETED event) stops it too (HandlePodRemoves);
//   status/status_manager.go canBeDeleted / deletePod: a Pod whose
//     containers have stopped is deleted with gracePeriodSeconds 0 and its
//     uid as a precondition (the agent's ApiPods::finish);
//   lifecycle/predicate.go Admit + kubelet.go rejectPod: a Pod the node
//     would not admit is given phase Failed, reason the failed predicate's
//     name, message "Pod was rejected: Predicate <name> failed: <desc>",
//     and left to its controller (the DaemonSet controller deletes failed
//     daemon pods);
//   a deliberate departure: the kubelet admits any pod bound to it; a board
//     runs only DaemonSet pods and its own static pods (issue 14 §1), so
//     any other Pod bound to it (a bare Pod, a ReplicaSet's, a Job's) is
//     rejected as rejectPod rejects one: phase Failed, reason
//     NotDaemonSetPod (a single word, as PodAdmitResult's reasons are),
//     a message naming its controller. Mirror pods (the annotation
//     kubernetes.io/config.mirror, pod/mirror_client.go IsMirrorPod) are
//     not pods the kubelet runs and are never refused;
//   pod/mirror_client.go and kubelet.go syncPod / HandlePodCleanups: a
//     static pod (and, on a board, a manifest file's DaemonSet pod) has a
//     mirror pod, the annotation kubernetes.io/config.mirror, owned by the
//     Node; made again when deleted or outdated, deleted when its pod
//     goes; deleting it never restarts the pod;
//   kubelet_pods.go convertToAPIContainerStatuses: a container the kubelet
//     cannot find when the pod terminates is terminated with exit code 137,
//     reason ContainerStatusUnknown.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/decision.h"
#include "core/json.h"

namespace daemonlet {

// kubetypes.ConfigMirrorAnnotationKey: a mirror pod's (its value the static
// pod's config hash).
inline constexpr const char* kConfigMirrorAnnotation = "kubernetes.io/config.mirror";

// What the agent keeps of a Pod bound to this node (not the whole object:
// a board has little memory).
struct NodePod {
    std::string namespace_, name, uid;
    // Its controller ownerReference (controller: true); "" when none.
    std::string owner_kind, owner_name, owner_uid;
    std::string revision_hash;  // its controller-revision-hash label
    bool mirror = false;        // annotation kubernetes.io/config.mirror (IsMirrorPod)
    bool deleting = false;      // metadata.deletionTimestamp set
    std::optional<std::int64_t> deletion_grace_seconds;
    std::string phase, reason;
};
NodePod node_pod_of(const Json& pod);

// Whether `pod` (a Pod of this node no board pod has) may be the Pod a
// paced rollout's new pod takes (issue 14 §3): a live Pod of the DaemonSet
// `ds_uid` whose controller-revision-hash is `current_hash`, the cluster's
// hash of the DaemonSet's current template ("" unknown: none is). The
// controller's rollingUpdate makes its surge Pod at the current revision
// only (update.go, syncNodes with the current hash); a Pod of another one
// (a leftover, an earlier template's surge Pod) is not the one for this
// template, and taking it for one would start a pod around maxSurge.
bool is_current_surge_pod(const NodePod& pod, const std::string& ds_uid, const std::string& current_hash);

// A Pod the board neither runs nor should run is left to others unless it
// is a DaemonSet's; what the board knows of that DaemonSet.
enum class OwnerState {
    Followed,     // one of the board's cluster DaemonSets (same uid)
    Absent,       // gone from the cluster (its name has another uid, or a GET said 404)
    NotFollowed,  // in the cluster, outside the board's namespaces or selector
    Unchecked,    // not in the board's cache: the server is asked (GET)
};
struct OwnerView {
    OwnerState state = OwnerState::Unchecked;
    Decision decision;  // the board's own, for a Followed DaemonSet
    // The board's pods of it, and whether each has its Pod in the watch's
    // cache (a pod still without one may take this Pod).
    std::size_t board_pods = 0;
    bool all_have_pods = false;
    // The controller-revision-hash of the board pods' Pods, and the
    // controller's hash of the DaemonSet's current template ("" unknown: its
    // ControllerRevisions not listed yet).
    std::vector<std::string> board_pod_hashes;
    std::string current_hash;
};

enum class NodePodAction {
    Keep,             // nothing to do
    RestartBoardPod,  // the board's pod's Pod is being deleted: stop it, confirm, start a fresh one
    Refuse,           // phase Failed with reason and message (the kubelet's admission failure)
    Finish,           // terminal status, then DELETE with grace 0 and the uid precondition
                      // (a left-over: of a revision a board pod's Pod has, or not the current one;
                      // a current-revision Pod beside an older board pod's is kept: the
                      // controller's surge Pod, the rollout's business)
    CheckOwner,       // GET the owning DaemonSet first
    DeleteMirror,     // an orphaned mirror pod of this node: DELETE, grace 0, uid precondition
};
struct NodePodVerdict {
    NodePodAction action = NodePodAction::Keep;
    std::string reason;              // Refuse: the predicate's name
    std::string message;             // Refuse: the status message; Finish: why, for the log
    std::int64_t grace_seconds = 0;  // RestartBoardPod: the Pod's deletionGracePeriodSeconds (0: none)
};

// `claimed`: the Pod is the one of a pod the board runs (created or taken).
NodePodVerdict judge_node_pod(const NodePod& pod, bool claimed, const OwnerView& owner);

// The node's mirror pods no pod of the board has (judge_node_pod keeps
// every mirror pod): one owned by this Node whose static pod (or
// manifest-file DaemonSet pod) the board no longer runs is deleted, as
// HandlePodCleanups' deleteOrphanedMirrorPods does (DeleteMirrorPod:
// grace 0, the uid precondition). `board_has_it`: a pod of the board is
// to have a mirror pod of that namespace and name (about to take it).
NodePodVerdict judge_mirror_pod(const NodePod& pod, const std::string& node_name, bool board_has_it);

// pod/mirror_client.go CreateMirrorPod: a copy of the pod `pod` (its
// metadata and spec; no uid, resourceVersion or status), the annotation
// kubernetes.io/config.mirror set to its config hash `hash`
// (kubernetes.io/config.hash too when absent), and one ownerReference, to
// the Node (apiVersion v1, kind Node, name, uid, controller: true); bound
// to the node.
Json mirror_pod_object(const Json& pod, const std::string& hash, const std::string& node_name,
                       const std::string& node_uid);
// kubepod.IsMirrorPodOf for a Pod as the server has it: a mirror pod of
// that hash, owned by the Node of that uid.
bool is_mirror_pod_of(const Json& pod, const std::string& hash, const std::string& node_uid);

// killContainer's grace: the Pod's deletionGracePeriodSeconds when set,
// else the spec's terminationGracePeriodSeconds; at least 2 s
// (minimumGracePeriodInSeconds).
std::int64_t kill_grace_seconds(std::optional<std::int64_t> deletion_grace, std::int64_t spec_grace);

// predicateAdmitHandler.Admit's reason and message for a DaemonSet pod the
// board's decision does not run (template nodeName: NodeName; node
// affinity or selector: NodeAffinity; a taint: TaintToleration), the
// board's own reasons after the upstream message.
struct AdmissionRefusal {
    std::string reason, message;
};
AdmissionRefusal admission_refusal(const Decision& decision);

// The departure above: a Pod bound to the board that is neither a
// DaemonSet's nor a mirror pod.
inline constexpr const char* kNotDaemonSetPodReason = "NotDaemonSetPod";
AdmissionRefusal not_daemon_set_refusal(const NodePod& pod);

// A finished Pod's status when the board never ran it (or no longer knows
// its containers): phase Failed, not Ready, each container of `status`
// not terminated yet set terminated as ContainerStatusUnknown.
Json orphan_terminal_status(const Json& status, const std::string& now);

}  // namespace daemonlet
