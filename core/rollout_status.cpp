#include "core/rollout_status.h"

#include <algorithm>
#include <tuple>

namespace daemonlet {

DaemonSetNodeStatus daemonset_node_status(const Decision& decision, std::vector<NodeDaemonPod> pods,
                                          const std::string& current_hash) {
    DaemonSetNodeStatus s;
    const bool scheduled = !pods.empty();
    if (!decision.should_run) {
        // A pod where none should run is misscheduled (numberMisscheduled).
        if (scheduled) s.misscheduled = 1;
        return s;
    }
    s.desired = 1;
    if (!scheduled) return s;
    s.current = 1;
    std::sort(pods.begin(), pods.end(), [](const NodeDaemonPod& a, const NodeDaemonPod& b) {
        return std::tie(a.created_at_ms, a.name) < std::tie(b.created_at_ms, b.name);
    });
    const NodeDaemonPod& oldest = pods.front();
    if (oldest.ready) {
        s.ready = 1;
        if (oldest.available) s.available = 1;
    }
    if (!current_hash.empty() && oldest.revision_hash == current_hash) s.updated = 1;
    return s;
}

RolloutStatus daemonset_rollout_status(const DaemonSet& ds, const DaemonSetNodeStatus& st, bool observed) {
    RolloutStatus r;
    const std::string name = "\"" + ds.metadata.name + "\"";
    if (ds.spec.update_strategy.type != "RollingUpdate") {
        r.error = "rollout status is only available for RollingUpdate strategy type";
        r.done = true;
        return r;
    }
    if (!observed) {
        r.message = "Waiting for daemon set spec update to be observed...";
        return r;
    }
    if (st.updated < st.desired) {
        r.message = "Waiting for daemon set " + name + " rollout to finish: " + std::to_string(st.updated) +
                    " out of " + std::to_string(st.desired) + " new pods have been updated...";
        return r;
    }
    if (st.available < st.desired) {
        r.message = "Waiting for daemon set " + name + " rollout to finish: " + std::to_string(st.available) +
                    " of " + std::to_string(st.desired) + " updated pods are available...";
        return r;
    }
    r.message = "daemon set " + name + " successfully rolled out";
    r.done = true;
    return r;
}

}  // namespace daemonlet
