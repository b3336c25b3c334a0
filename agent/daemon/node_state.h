// The NodeState component: the board as a Node (issue 12 §1). It owns the
// Node in force (its labels, taints and unschedulable: what every
// DaemonSet is placed against, node_should_run_daemon_pod), the cluster's
// Node with apiServer.nodeFromCluster (kept in the store under meta key
// "api.node", so that an offline boot places pods as the connected agent
// did), and registerNode's pressure observations (the eviction manager's
// nodeConditionsObservedSince). The merging is core's (make_local_node,
// merge_cluster_node); this says when the Node in force changed, and the
// agent re-evaluates every DaemonSet (cluster.cpp).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/config.h"
#include "core/json.h"
#include "core/model.h"
#include "core/node_status.h"
#include "core/reflector.h"
#include "platform/clock.h"
#include "store/store.h"

namespace daemonlet::agent {

class NodeState {
  public:
    // What registerNode's status reads of the agent besides the machine.
    struct StatusInputs {
        // "<runtime>://<version>" as the runtime answers (CRI Version,
        // `runc --version`); empty: unknown.
        std::string runtime_version;
        std::string runtime_name = "exec";         // the runtime's name ("exec": none made)
        std::vector<std::string> ips;              // the node's IPs, the primary first
        bool container_waits_for_runtime = false;  // a container waits for a down runtime
    };

    // `config` is the agent's, read as it is now (a reload changes it).
    NodeState(const AgentConfig& config, store::Store& store, const platform::Clock& clock);
    NodeState(const NodeState&) = delete;
    NodeState& operator=(const NodeState&) = delete;

    // At start-up: the cluster's Node as last received (nodeFromCluster).
    void load();
    // The Node reflector's changes: whether the cluster's Node (this
    // node's, the fields kept) changed; it is stored then. The agent
    // refreshes the Node in force after a change.
    bool on_api_node(ReflectorChanges&& changes);
    // nodeFromCluster turned off by a reload: the cluster's Node is
    // forgotten (the store keeps it for a later boot with it on).
    void forget_cluster_node() { cluster_node_.reset(); }
    // The Node in force again from the configuration and (nodeFromCluster)
    // the cluster's Node, stored (put_node) when it changed: whether its
    // labels, taints or unschedulable changed (always at the first call).
    bool refresh();

    const Node& node() const { return node_; }
    const std::string& name() const { return node_.metadata.name; }

    // The Node as the kubelet registers it (initialNode).
    Json registration_object() const;
    // registerNode: the board's status from its measurements now.
    NodeStatusInput measure_status(const StatusInputs& inputs);

  private:
    const AgentConfig& config_;
    store::Store& store_;
    const platform::Clock& clock_;
    const std::string arch_;  // GOARCH of this machine
    Node node_;
    std::optional<Json> cluster_node_;    // nodeFromCluster: the Node object's fields kept
    PressureObservations pressure_seen_;  // when each threshold was last met
};

}  // namespace daemonlet::agent
