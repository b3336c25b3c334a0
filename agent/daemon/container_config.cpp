// The ContainerConfig component (container_config.h): the kubelet's
// generateContainerConfig. What a container gets from ConfigMaps, Secrets
// and the downward API (issue 13 §2): its env (core/pod_env.h, the
// kubelet's makeEnvironmentVariables) and its pod's configMap, secret,
// downwardAPI and projected volumes (config_volumes.h). A missing object or
// key keeps the container waiting with the kubelet's
// CreateContainerConfigError and message until the agent's
// on_config_objects_changed brings it.
#include "agent/daemon/container_config.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include "agent/daemon/pod_labels.h"
#include "core/empty_dir.h"
#include "core/expand.h"
#include "core/lifecycle_hook.h"
#include "core/qos.h"
#include "core/service_account.h"
#include "platform/log.h"

namespace daemonlet::agent {

using platform::Level;
using platform::log;

namespace {

// The node's allocatable cpu or memory: the cluster's Node says, else the
// machine (a board's whole CPU count and memory, what the kubelet reports
// without reservations).
std::optional<Quantity> allocatable(const Node& node, const char* name, std::int64_t machine_value) {
    const Json& o = node.object;
    if (o.is_object() && o.contains("status") && o["status"].is_object() &&
        o["status"].contains("allocatable")) {
        const Json& a = o["status"]["allocatable"];
        if (a.is_object() && a.contains(name) && a[name].is_string())
            if (auto q = parse_quantity(a[name].get<std::string>())) return q.value();
    }
    if (machine_value <= 0) return std::nullopt;
    Quantity q;
    q.text = std::to_string(machine_value);
    q.milli = machine_value * 1000;
    return q;
}

}  // namespace

// kuberuntime's newContainerLabels: kept by the runtime with the container.
std::map<std::string, std::string> pod_labels(const PodRecord& rec) {
    std::string names, init;
    for (const auto& c : rec.containers) names += (names.empty() ? "" : ",") + c.name;
    for (const auto& c : rec.init_containers)
        init += (init.empty() ? "" : ",") + c.name + (c.sidecar ? ":sidecar" : "");
    return {{kLabelDaemonSet, rec.daemonset},
            {kLabelRevisionHash, rec.revision_hash},
            {kLabelRevision, std::to_string(rec.revision)},
            {kLabelCreatedAt, std::to_string(rec.created_at_ms)},
            {kLabelContainers, names},
            {kLabelInitContainers, init}};
}

const Container* ContainerConfig::find_container(const PodSpec& spec, const LivePod& p, std::size_t index) {
    const bool init = p.is_init(index);
    const std::string& name = init ? p.rec.init_containers[index].name
                                   : p.rec.containers[index - p.rec.init_containers.size()].name;
    for (const auto& c : init ? spec.init_containers : spec.containers)
        if (c.name == name) return &c;
    return nullptr;
}

std::optional<platform::ContainerLaunch> ContainerConfig::launch(LivePod& p, std::size_t index) {
    ContainerStatus& cs = p.status(index);
    // The pod's spec, shared with the DaemonSet (or static pod) in force for
    // as long as the start needs it (it may run on after a rollout replaced
    // the DaemonSet).
    const PodSource src = host_.source_of(p.rec);
    const Container* spec = src.spec ? find_container(*src.spec, p, index) : nullptr;
    if (!spec) {
        cs.state = ContainerState::Waiting;
        cs.reason = "ContainerCreating";
        cs.message = "waiting for the pod's replacement";
        return std::nullopt;
    }
    platform::ContainerLaunch launch;
    launch.pod_uid = p.rec.uid;
    launch.pod_name = p.rec.name;
    launch.pod_namespace = p.rec.namespace_;
    launch.container_name = spec->name;
    launch.pod_spec = src.spec;
    const PodSpec& pod_spec = *launch.pod_spec;
    launch.grace_seconds = pod_spec.termination_grace_period_seconds.value_or(30);
    launch.oom_score_adj = oom_score_adj_of(pod_spec, *spec);
    launch.log_max_bytes = config_.container_log_max_size;
    launch.log_max_files = config_.container_log_max_files;
    launch.restart_count = static_cast<std::uint32_t>(std::max(0, cs.restart_count));
    launch.labels = pod_labels(p.rec);
    launch.annotations = src.meta->annotations;
    // Kept with the pod for its stop once the revision is gone (hooks.cpp
    // load_adopted_hooks); a static pod's file is kept by the agent.
    if (const DaemonSet* d = p.rec.is_static() ? nullptr : host_.daemonset_of(p.rec))
        if (auto t = d->object.find("spec"); t != d->object.end() && t->contains("template"))
            cs.stop_record = stop_record(t->at("template").value("spec", Json()), spec->name,
                                         config_.runtime_type == "exec");
    if (!resolve(p, index, *spec, launch)) return std::nullopt;
    std::map<std::string, std::string> env(launch.env.begin(), launch.env.end());
    auto lookup = [&](const std::string& n) -> std::optional<std::string> {
        auto e = env.find(n);
        if (e == env.end()) return std::nullopt;
        return e->second;
    };
    // kubelet's ExpandContainerCommandAndArgs
    // (pkg/kubelet/container/helpers.go): $(VAR) in command and args, before
    // an image runtime merges them with the image's Entrypoint and Cmd. The
    // one description of what runs: the exec runtime runs its command +
    // args, an image runtime builds the container from it.
    auto expanded = std::make_shared<Container>(*spec);
    for (auto& a : expanded->command) a = expand_vars(a, lookup);
    for (auto& a : expanded->args) a = expand_vars(a, lookup);
    // kubelet's makeMounts: a volume whose mounter says ReadOnly (configMap,
    // secret, downwardAPI, projected) is mounted read-only whatever the
    // mount asks.
    for (auto& vm : expanded->volume_mounts)
        if (launch.volume_host_paths.count(vm.name)) vm.read_only = true;
    launch.container = expanded;

    // An image runtime has the image's entrypoint; the exec runtime has none.
    if (spec->command.empty() && std::string_view(config_.runtime_type) == "exec") {
        cs.state = ContainerState::Waiting;
        cs.reason = "CreateContainerConfigError";
        cs.message =
            "the exec runtime runs spec.containers[].command directly on the host and has no image "
            "entrypoint: set command";
        log(Level::Err,
            "pod " + p.rec.namespace_ + "/" + p.rec.name + " container " + cs.name + ": " + cs.message);
        return std::nullopt;
    }
    if (!host_.image_ready({p.rec.uid, index}, p.rec, *spec, cs)) return std::nullopt;
    return launch;
}

PodFacts ContainerConfig::pod_facts(const LivePod& p) const {
    const NodeFacts node = host_.node_facts();
    PodFacts f;
    f.name = p.rec.name;
    f.namespace_ = p.rec.namespace_;
    f.uid = p.rec.uid;
    f.node_name = node.node->metadata.name;
    f.host_ips = node.host_ips;
    f.allocatable_cpu = allocatable(*node.node, "cpu", node.machine_cpus);
    f.allocatable_memory = allocatable(*node.node, "memory", node.machine_memory);
    f.objects = &host_.config_objects();
    // getServiceEnvVarMap's `kubernetes` Service, for every pod of an agent
    // that follows a cluster: at the address the board reaches the API
    // server by (core/service_account.h), not a cluster IP.
    if (const auto server = host_.api_server())
        if (auto hp = api_server_host_port(*server); hp.ok())
            f.service_env = kubernetes_service_env(hp.value().first, hp.value().second);
    if (ApiAccess* api = host_.api_access(); config_.api_server.enabled && api) {
        f.tokens = api;
        f.cluster_objects = &api->objects();
        f.start_without_token = true;
    }
    const DaemonSet* d = host_.daemonset_of(p.rec);
    const PodSource static_src = p.rec.is_static() ? host_.source_of(p.rec) : PodSource{};
    // A DaemonSet's template (whatever the pod's revision), or a static pod.
    const PodSpec* spec = d ? &d->spec.template_.spec : static_src.spec.get();
    const ObjectMeta* meta = d ? &d->spec.template_.metadata : static_src.meta;
    if (spec && meta) {
        f.spec = spec;
        // The DaemonSet controller's pod labels: the template's and the
        // revision's; a static pod's own.
        f.labels = meta->labels;
        if (d) f.labels["controller-revision-hash"] = p.rec.revision_hash;
        f.annotations = meta->annotations;
        // The ServiceAccount admission plugin's default.
        f.service_account_name = spec->service_account_name.empty() ? "default" : spec->service_account_name;
        // A pod in the node's network has the node's IPs before its first
        // container runs; any other has what its sandbox reported.
        f.pod_ips = p.rec.pod_ips;
        if (f.pod_ips.empty() && spec->host_network) f.pod_ips = f.host_ips;
    }
    return f;
}

Result<std::vector<std::pair<std::string, std::string>>> ContainerConfig::container_env(
    const LivePod& p, const Container& spec) const {
    auto env = make_environment_variables(pod_facts(p), spec);
    if (!env) return env.error();
    return std::move(env.value().vars);
}

bool ContainerConfig::resolve(LivePod& p, std::size_t index, const Container& spec,
                              platform::ContainerLaunch& launch) {
    ContainerStatus& cs = p.status(index);
    const std::string pod = p.rec.namespace_ + "/" + p.rec.name;
    auto wait = [&](const std::string& message) {
        // kubelet's kuberuntime startContainer: generateContainerConfig
        // failed; the container waits, and starts once its objects exist.
        bool changed = cs.reason != "CreateContainerConfigError" || cs.message != message;
        cs.state = ContainerState::Waiting;
        cs.reason = "CreateContainerConfigError";
        cs.message = message;
        if (changed) {
            log(Level::Warning, "pod " + pod + " container " + cs.name + ": " + message,
                {{"DAEMONLET_POD", pod}});
            host_.record_config_event(p.rec.namespace_, p.rec.daemonset, "Warning", "Failed",
                                      "Error: " + message + " (pod " + p.rec.name + ")");
            // startContainer's recordContainerEvent, on the Pod.
            host_.record_pod_warning(p, index, "Failed", "Error: " + message);
        }
        return false;
    };
    ApiAccess* api = host_.api_access();
    // What the pod needs from the cluster is asked for first: a container
    // that waits for it starts when it comes (on_config_objects_changed).
    if (config_.api_server.enabled && api) {
        const auto keys = ApiAccess::keys_of(p.rec.namespace_, *launch.pod_spec);
        api->need(p.rec.uid, keys);
        api->need_objects(cluster_refs(p.rec.namespace_, *launch.pod_spec));
        // No token yet (the API server unreachable at a first boot): the
        // container starts without it (PodFacts::start_without_token), said
        // once per pod.
        for (const auto& k : keys)
            if (auto t = api->token(p.rec.uid, k); !t && api->first_without_cluster(p.rec.uid)) {
                log(Level::Warning,
                    "pod " + pod + ": starts without its service-account token for now (" +
                        t.error().message + "); it is written into " + kServiceAccountMountPath +
                        " when the API server answers",
                    {{"DAEMONLET_POD", pod}});
                break;
            }
    } else if (const DaemonSet* d = host_.daemonset_of(p.rec); api && !config_.api_server.enabled && d &&
                                                               should_automount(d->object) &&
                                                               api->first_without_cluster(p.rec.uid)) {
        log(Level::Notice,
            "pod " + pod + ": no API server configured: starts without a service-account token (" +
                kServiceAccountMountPath + " is not mounted)",
            {{"DAEMONLET_POD", pod}});
    }
    PodFacts facts = pod_facts(p);
    auto env = make_environment_variables(facts, spec);
    if (!env) return wait(env.error().message);
    for (const auto& w : env.value().warnings) {  // makeEnvironmentVariables' Event, on the Pod
        log(Level::Warning, "pod " + pod + " container " + cs.name + ": " + w, {{"DAEMONLET_POD", pod}});
        host_.record_pod_warning(p, std::nullopt, "InvalidEnvironmentVariableNames", w);
    }
    launch.env = std::move(env.value().vars);
    auto volumes = host_.config_volumes().prepare(facts, launch.pod_spec);
    if (!volumes) return wait(volumes.error().message);
    launch.volume_host_paths = std::move(volumes.value());
    // calculateEmptyDirMemorySize, against the node's allocatable memory.
    const std::optional<std::int64_t> allocatable_memory =
        facts.allocatable_memory ? std::optional<std::int64_t>(facts.allocatable_memory->value())
                                 : std::nullopt;
    for (const auto& v : launch.pod_spec->volumes)
        if (auto size = empty_dir_memory_size(v, *launch.pod_spec, allocatable_memory))
            launch.memory_volume_bytes[v.name] = *size;
    return true;
}

std::set<ObjectRef> ContainerConfig::cluster_refs(const std::string& ns, const PodSpec& spec) const {
    std::set<ObjectRef> out = ApiAccess::refs_of(ns, spec);
    const ConfigObjects& local = host_.config_objects();
    std::erase_if(out, [&](const ObjectRef& r) {
        return r.secret ? local.secret(r.namespace_, r.name) != nullptr
                        : local.config_map(r.namespace_, r.name) != nullptr;
    });
    return out;
}

std::optional<int> ContainerConfig::oom_score_adj_of(const PodSpec& pod, const Container& c) const {
    if (oom_memory_bytes_ <= 0) return std::nullopt;  // the exec runtime, or memory unknown
    return restrict_oom_score_adj(container_oom_score_adj(pod, c, oom_memory_bytes_), oom_score_floor_);
}

}  // namespace daemonlet::agent
