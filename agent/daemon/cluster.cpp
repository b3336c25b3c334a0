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
//   the configuration (core merge_cluster_node); a change re-evaluates every
//   DaemonSet at once.
#include <algorithm>

#include "agent/daemon/agent.h"
#include "agent/daemon/version.h"
#include "core/decode.h"
#include "core/local_node.h"
#include "core/node_status.h"
#include "platform/log.h"
#include "platform/system_info.h"

namespace daemonlet::agent {

using platform::Level;
using platform::log;

namespace {

constexpr const char* kNodeMeta = "api.node";  // the Node's labels, taints and unschedulable

// The Node fields the agent uses, as stored for an offline boot.
Json node_subset(const Json& node) {
    Json out = Json::object();
    out["apiVersion"] = "v1";
    out["kind"] = "Node";
    out["metadata"] = {{"name", meta_string(node, "name")}};
    if (node.contains("metadata") && node["metadata"].contains("labels"))
        out["metadata"]["labels"] = node["metadata"]["labels"];
    if (node.contains("spec") && node["spec"].is_object()) {
        Json spec = Json::object();
        for (const char* k : {"taints", "unschedulable"})
            if (node["spec"].contains(k)) spec[k] = node["spec"][k];
        out["spec"] = spec;
    }
    return out;
}

}  // namespace

// At start-up: the cluster's Node as last received, so that an offline
// boot places pods as the connected agent did (its DaemonSets are
// Sources::load's).
void Agent::load_cluster_node() {
    if (!config_.api_server.enabled || !config_.api_server.node_from_cluster) return;
    auto node = store_->get_meta(kNodeMeta);
    if (node.ok() && node.value() && !node.value()->empty()) {
        Json j = Json::parse(*node.value(), nullptr, false);
        if (j.is_object()) cluster_node_ = std::move(j);
    }
}

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
        hooks.node_status = [this] { return measure_node_status(); };
        hooks.node_object = [this] { return registration_object(); };
    }
    auto link =
        ClusterLink::create(&loop_, config_.api_server, node_.metadata.name, std::move(hooks), clock_);
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
    std::optional<Json> next = cluster_node_;
    if (ch.replace || !ch.deleted.empty()) next.reset();
    for (const Json& o : ch.objects)
        if (meta_string(o, "name") == node_.metadata.name) next = node_subset(o);
    if (next == cluster_node_) return;
    if (!next && cluster_node_)
        log(Level::Notice, "API server: the Node " + node_.metadata.name +
                               " is gone from the cluster; the configuration alone describes the board");
    cluster_node_ = std::move(next);
    if (auto w = store_->put_meta(kNodeMeta, cluster_node_ ? cluster_node_->dump() : std::string()); !w.ok())
        log(Level::Warning, "store: " + w.error().message);
    refresh_node();
}

// The node as the configuration and (nodeFromCluster) the cluster describe
// it; a change re-evaluates every DaemonSet.
void Agent::refresh_node() {
    const std::string arch = goarch_from_machine(platform::machine());
    Node next = make_local_node(config_.node_name, config_.node_labels, config_.node_taints,
                                config_.node_unschedulable, "linux", arch);
    if (config_.api_server.node_from_cluster && cluster_node_) {
        Node cluster;
        FieldErrors errs = decode_node(*cluster_node_, cluster);
        if (errs.empty())
            next = merge_cluster_node(config_.node_name, config_.node_labels, config_.node_taints,
                                      config_.node_unschedulable, cluster, "linux", arch);
        else
            for (const auto& e : errs)
                log(Level::Err, "API server Node " + config_.node_name + ": " + e.to_string() +
                                    "; using the configuration's labels and taints");
    }
    const bool same = next.metadata.labels == node_.metadata.labels && next.taints == node_.taints &&
                      next.unschedulable == node_.unschedulable && !node_.metadata.name.empty();
    node_ = std::move(next);
    if (same) return;
    store::StoredNode sn{node_.metadata.labels, node_.taints, node_.unschedulable};
    if (auto w = store_->put_node(sn); !w.ok()) log(Level::Warning, w.error().message);
    if (reconcile_timer_) {
        log(Level::Notice,
            "node " + node_.metadata.name + ": labels or taints changed; re-evaluating every DaemonSet");
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

// The Node as the kubelet registers it: the automatic labels and nodeLabels,
// registerWithTaints (not nodeTaints, which are the board's own), and the
// unschedulable taint when nodeUnschedulable (initialNode).
Json Agent::registration_object() const {
    return make_local_node(config_.node_name, config_.node_labels, config_.api_server.register_with_taints,
                           config_.node_unschedulable, "linux", goarch_from_machine(platform::machine()))
        .object;
}

NodeStatusInput Agent::measure_node_status() {
    NodeStatusInput in;
    NodeMeasurements& m = in.measurements;
    m.cpus = platform::online_cpus();
    const platform::MemoryInfo mem = platform::read_memory_info();
    m.memory_capacity = mem.total > 0 ? mem.total : platform::memory_bytes();
    m.memory_available = mem.available;
    // nodefs: the state directory's filesystem (the kubelet's root dir);
    // imagefs: the image store's (runc), else the same.
    const platform::FsInfo nodefs = platform::read_fs_info(config_.state_dir);
    platform::FsInfo imagefs = platform::read_fs_info(config_.state_dir + "/images");
    if (imagefs.available < 0) imagefs = nodefs;
    m.nodefs_capacity = nodefs.capacity;
    m.nodefs_available = nodefs.available;
    m.nodefs_inodes = nodefs.inodes;
    m.nodefs_inodes_free = nodefs.inodes_free;
    m.imagefs_capacity = imagefs.capacity;
    m.imagefs_available = imagefs.available;
    const platform::PidInfo pids = platform::read_pid_info();
    m.pid_max = pids.max;
    m.pids = pids.running;
    in.pressure = observe_pressure(m, in.thresholds, clock_.monotonic_ms(), node_pressure_seen_);

    static const platform::HostFacts facts = platform::read_host_facts();  // fixed until a reboot
    in.facts.machine_id = facts.machine_id;
    in.facts.system_uuid = facts.system_uuid;
    in.facts.boot_id = facts.boot_id;
    in.facts.kernel_version = facts.kernel_version;
    in.facts.os_image = facts.os_image;
    in.facts.architecture = goarch_from_machine(platform::machine());
    // "<runtime>://<version>" as the CRI's Version answers (cri), runc's
    // `runc --version`; the exec runtime is daemonlet's own.
    in.facts.container_runtime_version = runtime_ ? runtime_->version_string() : std::string();
    if (in.facts.container_runtime_version.empty())
        in.facts.container_runtime_version = std::string(runtime_ ? runtime_->name() : "exec") + "://" +
                                             (config_.runtime_type == "exec" ? daemonlet_version() : "");
    in.facts.kubelet_version = kubelet_version_string(daemonlet_version());
    if (node_ips_) in.ips = node_ips_->ips();
    in.hostname = node_.metadata.name;
    // Ready unless a container waits for an unreachable runtime.
    for (const auto& [uid, p] : pods_)
        for (const auto& c : p.containers)
            if (c.runtime_down_ms > 0) {
                in.runtime_ready = false;
                in.runtime_message = "container runtime is down";
            }
    return in;
}

// Events go to the cluster for the DaemonSets it has (a file's own
// DaemonSet is not the cluster's business).
void Agent::send_cluster_event(const std::string& ns, const std::string& daemonset, const char* type,
                               const char* reason, const std::string& message) {
    if (!cluster_) return;
    auto it = sources_->api().find(ns + "/" + daemonset);
    if (it == sources_->api().end()) return;
    const std::int64_t now = clock_.wall_ms();
    // The DaemonSet controller's recorder correlates as the kubelet's: a
    // repeat PATCHes the count of the Event sent before, the spam filter
    // per DaemonSet (core PodEventFilter, keyed by its uid).
    const PodEventSend send =
        ds_event_filter_.decide(it->second.uid, PodEvent{"", type, reason, message, false, now},
                                clock_.monotonic_ms(), new_event_name(daemonset, now, event_name_unique()));
    if (!send.send) return;
    ClusterEvent ev{ns, "DaemonSet", daemonset, it->second.uid, type, reason, message, now, now, 1, ""};
    apply_send(send, ev);
    cluster_->add_event(std::move(ev));
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
    return Json{{"node", node_.metadata.name},
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
