// The Kubernetes API server as the second source of DaemonSets, and the
// board's autonomy when it is unreachable.
//
// - What the cluster sends (ClusterLink's reflectors) goes to Sources
//   (sources.h), which tells real changes from status and bookkeeping and
//   merges it with the manifest files (a file of the same namespace/name
//   wins).
// - Everything received is in the store (table api_daemonsets, apart from
//   the version in force, which a file may win): a board that boots
//   with no network runs its cached DaemonSets before READY and without
//   waiting for the API server. No resourceVersion is kept: each start
//   lists first, as client-go's reflector does.
// - nodeFromCluster: the Node object's labels, taints and unschedulable over
//   the configuration (core merge_cluster_node, in NodeState, node_state.h);
//   a change re-evaluates every DaemonSet at once.
#include "agent/daemon/agent.h"
#include "platform/log.h"

namespace daemonlet::agent {

using platform::Level;
using platform::log;

void Agent::start_cluster(bool start_now) {
    // The token requests' link: none until this one is made.
    if (api_access_) api_access_->set_link(nullptr, "no API server configured");
    if (!config_.api_server.enabled || stopping_) return;
    ClusterHooks hooks;
    hooks.daemonsets = [this](const std::string& scope, ReflectorChanges&& ch) {
        on_api_daemonsets(scope, std::move(ch));
    };
    hooks.node = [this](ReflectorChanges&& ch) { on_api_node(std::move(ch)); };
    hooks.pods = [this](ReflectorChanges&& ch) {
        if (api_pods_ && !stopping_) api_pods_->on_pods(std::move(ch));
    };
    hooks.link = [this](LinkState s) { on_link(s); };
    hooks.events_changed = [this](bool queued) { queued_events_.changed(queued); };
    hooks.node_uid = [this] {
        if (api_pods_ && !stopping_) api_pods_->changed();
    };
    if (config_.api_server.register_node) {
        hooks.node_status = [this] { return node_state_->measure_status(node_status_inputs()); };
        hooks.node_object = [this] { return node_state_->registration_object(); };
    }
    auto link =
        ClusterLink::create(&loop_, config_.api_server, node_state_->name(), std::move(hooks), clock_);
    if (!link.ok()) {
        // The cached DaemonSets keep running; SIGHUP after fixing it retries.
        cluster_error_ = link.error().message;
        if (api_access_) api_access_->set_link(nullptr, "API server: " + cluster_error_);
        log(Level::Err,
            "API server: " + cluster_error_ + "; running from the cache and the manifest directory");
        update_status();
        return;
    }
    cluster_error_.clear();
    cluster_ = std::move(link).value();
    if (api_access_) api_access_->set_link(cluster_.get(), "");
    // Events queued when the agent last stopped, was killed or lost power
    // (an offline reboot), or the closed link's on a reload
    // (QueuedEvents::carry_into).
    queued_events_.carry_into(*cluster_);
    if (start_now) cluster_->start();
    start_api_pods();
}

// The resourceVersion is not kept: a new agent lists before it watches, as
// client-go's reflector does (a list is what tells what went while it was
// down), and the cache in the store runs the DaemonSets until then.
void Agent::on_api_daemonsets(const std::string& scope, ReflectorChanges&& ch) {
    if (stopping_) return;
    if (sources_->apply_api(scope, std::move(ch))) schedule_rebuild();
}

void Agent::on_api_node(ReflectorChanges&& ch) {
    if (stopping_) return;
    if (node_state_->on_api_node(std::move(ch))) refresh_node();
}

// The node as the configuration and (nodeFromCluster) the cluster describe
// it (NodeState, node_state.h); a change re-evaluates every DaemonSet.
void Agent::refresh_node() {
    if (!node_state_->refresh()) return;
    if (reconcile_timer_) {
        log(Level::Notice,
            "node " + node_state_->name() + ": labels or taints changed; re-evaluating every DaemonSet");
        schedule_reconcile();
    }
}

void Agent::on_link(LinkState state) {
    update_status();
    // A rollout the cluster paces is the board's again while disconnected.
    schedule_reconcile();
    if (api_pods_) {
        if (state == LinkState::Connected)
            api_pods_->reconnected();
        else
            api_pods_->changed();
    }
}

// registerNode's status: what NodeState reads of the agent besides the
// machine.
NodeState::StatusInputs Agent::node_status_inputs() const {
    NodeState::StatusInputs in;
    if (runtime_) {
        in.runtime_version = runtime_->version_string();
        in.runtime_name = runtime_->name();
    }
    if (node_ips_) in.ips = node_ips_->ips();
    // Ready unless a container waits for an unreachable runtime.
    for (const auto& [uid, p] : pods_)
        for (const auto& c : p.containers)
            if (c.runtime_down_ms > 0) in.container_waits_for_runtime = true;
    return in;
}

Json Agent::status_json() const {
    std::size_t running = 0, from_files = 0, from_api = 0;
    for (const auto& [uid, p] : pods_)
        if (p.rec.phase == PodPhase::Running) ++running;
    for (const auto& [key, d] : desired_) (d.from_api() ? from_api : from_files)++;
    Json api;
    if (cluster_)
        api = cluster_->status();
    else if (config_.api_server.enabled)
        api = Json{{"state", "error"}, {"lastError", cluster_error_}};
    else
        api = Json{{"state", "not configured"}};
    std::size_t shadowed = 0;
    for (const auto& [key, a] : sources_->api())
        if (const Desired* d = desired_.find(key); d && !d->from_api()) ++shadowed;
    api["cached"] = sources_->api().size();
    if (api_access_ && config_.api_server.enabled) api["forPods"] = api_access_->status();
    if (api_pods_) api["podStatus"] = api_pods_->status();
    if (config_.api_server.enabled)
        api["rollouts"] = config_.api_server.cluster_paces_rollouts ? "cluster" : "board";
    return Json{{"node", node_state_->name()},
                {"daemonSets",
                 {{"total", desired_.size()},
                  {"fromFiles", from_files},
                  {"fromCluster", from_api},
                  {"overriddenByFiles", shadowed},
                  // Their rollouts here that wait for the DaemonSet controller (issue 14 §3).
                  {"waitingForTheCluster", ds_sync_.paced()}}},
                {"pods", {{"total", pods_.size()}, {"running", running}}},
                {"manifests", sources_->status()},
                {"configObjects", sources_->config_status()},
                {"apiServer", api},
                {"storage", storage_ ? storage_->status_json() : Json::object()},
                {"images", images_ ? images_->status() : Json::object()}};
}

}  // namespace daemonlet::agent
