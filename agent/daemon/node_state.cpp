// The NodeState component (node_state.h): the Node in force, the
// cluster's Node and registerNode's measurements.
#include "agent/daemon/node_state.h"

#include "agent/daemon/sources.h"
#include "agent/daemon/version.h"
#include "core/decode.h"
#include "core/local_node.h"
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

NodeState::NodeState(const AgentConfig& config, store::Store& store, const platform::Clock& clock)
    : config_(config), store_(store), clock_(clock), arch_(goarch_from_machine(platform::machine())) {}

// At start-up: the cluster's Node as last received, so that an offline
// boot places pods as the connected agent did (its DaemonSets are
// Sources::load's).
void NodeState::load() {
    if (!config_.api_server.enabled || !config_.api_server.node_from_cluster) return;
    auto node = store_.get_meta(kNodeMeta);
    if (node.ok() && node.value() && !node.value()->empty()) {
        Json j = Json::parse(*node.value(), nullptr, false);
        if (j.is_object()) cluster_node_ = std::move(j);
    }
}

bool NodeState::on_api_node(ReflectorChanges&& ch) {
    std::optional<Json> next = cluster_node_;
    if (ch.replace || !ch.deleted.empty()) next.reset();
    for (const Json& o : ch.objects)
        if (meta_string(o, "name") == node_.metadata.name) next = node_subset(o);
    if (next == cluster_node_) return false;
    if (!next && cluster_node_)
        log(Level::Notice, "API server: the Node " + node_.metadata.name +
                               " is gone from the cluster; the configuration alone describes the board");
    cluster_node_ = std::move(next);
    if (auto w = store_.put_meta(kNodeMeta, cluster_node_ ? cluster_node_->dump() : std::string()); !w.ok())
        log(Level::Warning, "store: " + w.error().message);
    return true;
}

// The node as the configuration and (nodeFromCluster) the cluster describe
// it.
bool NodeState::refresh() {
    Node next = make_local_node(config_.node_name, config_.node_labels, config_.node_taints,
                                config_.node_unschedulable, "linux", arch_);
    if (config_.api_server.node_from_cluster && cluster_node_) {
        Node cluster;
        FieldErrors errs = decode_node(*cluster_node_, cluster);
        if (errs.empty())
            next = merge_cluster_node(config_.node_name, config_.node_labels, config_.node_taints,
                                      config_.node_unschedulable, cluster, "linux", arch_);
        else
            for (const auto& e : errs)
                log(Level::Err, "API server Node " + config_.node_name + ": " + e.to_string() +
                                    "; using the configuration's labels and taints");
    }
    const bool same = next.metadata.labels == node_.metadata.labels && next.taints == node_.taints &&
                      next.unschedulable == node_.unschedulable && !node_.metadata.name.empty();
    node_ = std::move(next);
    if (same) return false;
    store::StoredNode sn{node_.metadata.labels, node_.taints, node_.unschedulable};
    if (auto w = store_.put_node(sn); !w.ok()) log(Level::Warning, w.error().message);
    return true;
}

// The Node as the kubelet registers it: the automatic labels and nodeLabels,
// registerWithTaints (not nodeTaints, which are the board's own), and the
// unschedulable taint when nodeUnschedulable (initialNode).
Json NodeState::registration_object() const {
    return make_local_node(config_.node_name, config_.node_labels, config_.api_server.register_with_taints,
                           config_.node_unschedulable, "linux", arch_)
        .object;
}

NodeStatusInput NodeState::measure_status(const StatusInputs& inputs) {
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
    in.pressure = observe_pressure(m, in.thresholds, clock_.monotonic_ms(), pressure_seen_);

    static const platform::HostFacts facts = platform::read_host_facts();  // fixed until a reboot
    in.facts.machine_id = facts.machine_id;
    in.facts.system_uuid = facts.system_uuid;
    in.facts.boot_id = facts.boot_id;
    in.facts.kernel_version = facts.kernel_version;
    in.facts.os_image = facts.os_image;
    in.facts.architecture = arch_;
    // "<runtime>://<version>" as the CRI's Version answers (cri), runc's
    // `runc --version`; the exec runtime is daemonlet's own.
    in.facts.container_runtime_version = inputs.runtime_version;
    if (in.facts.container_runtime_version.empty())
        in.facts.container_runtime_version =
            inputs.runtime_name + "://" + (config_.runtime_type == "exec" ? daemonlet_version() : "");
    in.facts.kubelet_version = kubelet_version_string(daemonlet_version());
    in.ips = inputs.ips;
    in.hostname = node_.metadata.name;
    // Ready unless a container waits for an unreachable runtime.
    if (inputs.container_waits_for_runtime) {
        in.runtime_ready = false;
        in.runtime_message = "container runtime is down";
    }
    return in;
}

}  // namespace daemonlet::agent
