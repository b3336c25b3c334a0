// A pod's v1 PodStatus as the kubelet reports it, from the board's record:
// one converter for `daemonlet get pods -o json` and for the Pods the
// agent keeps in the API (issue 14 §2, agent/daemon/api_pods.cpp).
//
// Upstream (pkg/kubelet):
//   kubelet_pods.go generateAPIPodStatus: phase; conditions
//     PodReadyToStartContainers, Initialized, Ready, ContainersReady,
//     PodScheduled, in that order (status/generate.go
//     GeneratePodReadyToStartContainersCondition,
//     GeneratePodInitializedCondition, GeneratePodReadyCondition,
//     GenerateContainersReadyCondition);
//     hostIP/hostIPs (the node's, at most a dual-stack pair); podIP is
//     podIPs[0] (convertStatusToAPIStatus); startTime; qosClass;
//   convertToAPIContainerStatuses: name, state, lastState (the previous
//     termination, with the containerID of the instance that ended), ready,
//     started, restartCount, image, imageID (the runtime's image ref),
//     containerID; app container statuses sorted by name
//     (kubetypes.SortedContainerStatuses), init containers in spec order;
//   getPhase(podIsTerminal): a pod that is gone is Succeeded when every
//     container terminated with exit code 0, else Failed;
//   status/status_manager.go updateLastTransitionTime: a condition keeps
//     its lastTransitionTime while its status holds;
//   pkg/util/pod PatchPodStatus (preparePatchBytesForPodStatus): a two-way
//     strategic merge patch from the status the server has, with
//     metadata.uid as a precondition; conditions, podIPs and hostIPs merged
//     by their keys (type, ip), container statuses replaced.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/json.h"
#include "core/pod.h"

namespace daemonlet {

struct PodStatusContext {
    std::string runtime;                // containerID scheme: exec, runc, containerd, ...
    std::vector<std::string> node_ips;  // the node's, primary first
    std::vector<std::string> images;    // per container, init containers first; "" or absent: unknown
    std::string qos_class;              // "" : not reported
    std::int64_t now_ms = 0;            // wall clock
    // The pod is gone from the board: its terminal phase (getPhase with
    // podIsTerminal), not Ready.
    bool terminal = false;
};

// The status; a condition's lastTransitionTime is the latest container
// start (a view without history; the agent's Pods carry the times over
// with keep_transition_times). Times recorded before the wall clock was set
// are null when it is set now (core/wall_clock.h).
Json pod_api_status(const PodRecord& pod, const PodStatusContext& ctx);

// Whether the pod is Ready: every app container and every sidecar ready.
bool pod_is_ready(const PodRecord& pod);

// updateLastTransitionTime: each condition of `status` whose type has the
// same status in `old_status` keeps the old lastTransitionTime; the others
// (new or changed) get `now`.
void keep_transition_times(Json& status, const Json& old_status, const std::string& now);

// PatchPodStatus's patch from `old_status` (what the server has) to
// `status`, with {"metadata": {"uid": uid}}; {} when nothing differs.
Json pod_status_patch(const Json& old_status, const Json& status, const std::string& uid);

}  // namespace daemonlet
