// What the DaemonSets' Events (DaemonSetEvents, daemonset_events.h) read of
// the agent: the store, the cluster's DaemonSets and link, the node's name.
#include "agent/daemon/agent.h"

namespace daemonlet::agent {

// Only for the DaemonSets the cluster has, while there is a link.
std::optional<std::string> Agent::cluster_daemonset_uid(const std::string& ns,
                                                        const std::string& name) const {
    if (!cluster_) return std::nullopt;
    auto it = sources_->api().find(ns + "/" + name);
    if (it == sources_->api().end()) return std::nullopt;
    return it->second.uid;
}

void Agent::send_ds_event(ClusterEvent ev) {
    if (cluster_) cluster_->add_event(std::move(ev));
}

}  // namespace daemonlet::agent
