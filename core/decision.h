// Whether this node should run a DaemonSet's pod: upstream
// NodeShouldRunDaemonPod (pkg/controller/daemon/daemon_controller.go,
// Kubernetes 1.25 to 1.30), a pure function of the Node and the DaemonSet.
#pragma once

#include <string>
#include <vector>

#include "core/model.h"

namespace daemonlet {

struct Decision {
    // The pod should be placed on the node now.
    bool should_run = false;
    // A pod already on the node may stay (true when should_run; also true
    // when only NoSchedule taints are not tolerated).
    bool should_continue_running = false;
    // Why, one sentence each: which predicate failed, which taint was not
    // tolerated, which affinity term could not be parsed. Empty when the pod
    // simply fits.
    std::vector<std::string> reasons;
};

Decision node_should_run_daemon_pod(const Node& node, const DaemonSet& ds);

}  // namespace daemonlet
