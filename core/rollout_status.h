// A DaemonSet's status on this node and kubectl's rollout status message
// for it. Pure: the caller says which pods are ready and available.
//
// - daemonset_node_status follows the DaemonSet controller's
//   updateDaemonSetStatus (pkg/controller/daemon/daemon_controller.go,
//   Kubernetes 1.25 to 1.30) for nodeList = [this node]: desired when the
//   node should run the pod; the node's pods sorted oldest first
//   (podByCreationTimestampAndPhase) and only the oldest counted for ready,
//   available and updated.
// - daemonset_rollout_status is kubectl's DaemonSetStatusViewer
//   (staging/src/k8s.io/kubectl/pkg/polymorphichelpers/rollout_status.go).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/decision.h"
#include "core/model.h"

namespace daemonlet {

struct NodeDaemonPod {
    std::string name;
    std::int64_t created_at_ms = 0;
    std::string revision_hash;
    bool ready = false;      // podutil.IsPodReady
    bool available = false;  // podutil.IsPodAvailable(minReadySeconds)
};

struct DaemonSetNodeStatus {
    int desired = 0;  // desiredNumberScheduled
    int current = 0;  // currentNumberScheduled
    int misscheduled = 0;
    int ready = 0;      // numberReady
    int available = 0;  // numberAvailable
    int updated = 0;    // updatedNumberScheduled
};

DaemonSetNodeStatus daemonset_node_status(const Decision& decision, std::vector<NodeDaemonPod> pods,
                                          const std::string& current_hash);

struct RolloutStatus {
    std::string message;  // without the trailing newline kubectl prints
    bool done = false;
    std::string error;  // set instead of a message: the strategy has no rollout status
};

// observed: the agent has acted on the DaemonSet's current spec
// (generation <= status.observedGeneration).
RolloutStatus daemonset_rollout_status(const DaemonSet& ds, const DaemonSetNodeStatus& status, bool observed);

}  // namespace daemonlet
