// Static pods: v1 Pod documents in the manifest directory, run as the
// kubelet runs the pods of its staticPodPath (pkg/kubelet/config/file.go
// and common.go). Pure: the agent passes the node and the file's path in.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/model.h"
#include "core/pod.h"
#include "core/sysctl.h"

namespace daemonlet {

// kubelet's generatePodName (config/common.go): "<name>-<nodeName>", the
// node name lower-cased.
std::string static_pod_name(const std::string& name, const std::string& node_name);

// kubelet's applyDefaults (config/common.go) for a pod read from `path`:
// the UID is a hash of the pod as written, the node's name and the file's
// path (upstream: md5 of DeepHashObject + "host:" + "file:"; here two
// FNV-1a 64 of the canonical JSON, 32 hex digits as upstream's), so an edit
// makes a new pod; the name gets the node's suffix; namespace "default"
// when none; spec.nodeName is set to this node (whatever the file says, as
// upstream); annotations kubernetes.io/config.hash (the UID) and
// kubernetes.io/config.source "file"; a toleration of every NoExecute taint
// (AddOrUpdateTolerationInPod). config.seen is not set: it is a time, and
// core reads no clock. A metadata.uid in the file is not kept (upstream
// keeps it): the UID always follows the content.
Pod make_static_pod(Pod pod, const std::string& node_name, const std::string& path);

// Why the kubelet refuses a pod on this node (lifecycle/predicate.go
// Admit, generalFilter), as rejectPod records it: phase Failed, reason
// the predicate's name, message "Pod was rejected: Predicate <name> failed";
// the first failing predicate in generalFilter's order:
//   NodeAffinity  nodeSelector and required node affinity do not match;
//   NodePorts     a hostPort of its containers conflicts with one of `active`
//                 (the specs of the pods running on the node: nodeports.Fits,
//                 HostPortInfo.CheckConflict: the same protocol and port, on
//                 the same hostIP or either one 0.0.0.0 / unset).
// Taints are not checked (Admit skips them for static pods), nor the node
// name (applyDefaults has set it), nor resources (the board has no
// scheduler accounting).
std::optional<PodRejection> admit_static_pod(const Pod& pod, const Node& node,
                                             const std::vector<const PodSpec*>& active = {});

// A static pod the agent found in its store at its start (adopted) whose
// file still offers it.
struct AdoptedStaticPod {
    const Pod* pod = nullptr;  // its file's pod, as make_static_pod made it
    std::int64_t created_at_ms = 0;
    // The refusal an earlier admission recorded (the pod is Failed and ran
    // nothing); none: it was admitted and runs.
    std::optional<PodRejection> rejected;
};

// What a start changes of an adopted static pod's admission.
struct StaticReadmission {
    std::string uid;
    // Refused now: a pod that ran is refused (its containers stop, it is
    // Failed with this reason), or a refused one is refused for another
    // reason. None: a pod refused before is admitted now (it starts).
    std::optional<PodRejection> rejection;
};

// The kubelet's admission at its start (kubelet.go syncLoopIteration: "After
// restarting, kubelet will get all existing pods through ADD as if they are
// new pods. These pods will then go through the admission process and *may*
// be rejected"): HandlePodAdditions sorts the pods by creation time
// (sliceutils.PodsByCreationTime; here the name breaks a tie) and runs
// canAdmitPod on each against the pods admitted before it: the sysctl
// handler (admit_sysctls over `sysctls`), then the predicates
// (admit_static_pod against `active`, the other pods that run, and the
// static pods admitted before it); rejectPod for a refusal. So a pod
// admitted before and no longer admissible (allowedUnsafeSysctls narrowed,
// the node's labels changed) is refused, and one refused before and
// admissible now runs. Only the changes are returned, in that order; a pod
// refused again for the same reason is not one.
std::vector<StaticReadmission> readmit_static_pods(std::vector<AdoptedStaticPod> pods, const Node& node,
                                                   const SysctlAllowlist& sysctls,
                                                   std::vector<const PodSpec*> active);

}  // namespace daemonlet
