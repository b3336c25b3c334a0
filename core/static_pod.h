// Static pods: v1 Pod documents in the manifest directory, run as the
// kubelet runs the pods of its staticPodPath (pkg/kubelet/config/file.go
// and common.go). Pure: the agent passes the node and the file's path in.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/model.h"
#include "core/pod.h"

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

}  // namespace daemonlet
