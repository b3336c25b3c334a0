// What a container gets from ConfigMaps, Secrets and the downward API
// (issue 13 §2): its env (core/pod_env.h, the kubelet's
// makeEnvironmentVariables) and its pod's configMap, secret, downwardAPI and
// projected volumes (config_volumes.h). A missing object or key keeps the
// container waiting with the kubelet's CreateContainerConfigError and
// message until on_config_objects_changed brings it.
#include <cstdint>
#include <string>

#include "agent/daemon/agent.h"
#include "core/empty_dir.h"
#include "core/pod_network.h"
#include "core/service_account.h"
#include "platform/log.h"
#include "platform/system_info.h"

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

PodFacts Agent::pod_facts(const LivePod& p) const {
    PodFacts f;
    f.name = p.rec.name;
    f.namespace_ = p.rec.namespace_;
    f.uid = p.rec.uid;
    f.node_name = node_.metadata.name;
    f.host_ips = node_ips_->ips();
    f.allocatable_cpu = allocatable(node_, "cpu", platform::online_cpus());
    f.allocatable_memory = allocatable(node_, "memory", platform::memory_bytes());
    f.objects = &sources_->config_objects();
    // getServiceEnvVarMap's `kubernetes` Service, for every pod of an agent
    // that follows a cluster: at the address the board reaches the API
    // server by (core/service_account.h), not a cluster IP.
    if (cluster_)
        if (auto hp = api_server_host_port(cluster_->server()); hp.ok())
            f.service_env = kubernetes_service_env(hp.value().first, hp.value().second);
    if (config_.api_server.enabled && api_access_) {
        f.tokens = api_access_.get();
        f.cluster_objects = &api_access_->objects();
        f.start_without_token = true;
    }
    const Desired* d = desired_for(p.rec);
    const PodSource static_src = p.rec.is_static() ? pod_source(p.rec) : PodSource{};
    // A DaemonSet's template (whatever the pod's revision), or a static pod.
    const PodSpec* spec = d ? &d->ds().spec.template_.spec : static_src.spec.get();
    const ObjectMeta* meta = d ? &d->ds().spec.template_.metadata : static_src.meta;
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

Result<std::vector<std::pair<std::string, std::string>>> Agent::container_env(const LivePod& p,
                                                                              const Container& spec) const {
    auto env = make_environment_variables(pod_facts(p), spec);
    if (!env) return env.error();
    return std::move(env.value().vars);
}

bool Agent::resolve_config(LivePod& p, std::size_t index, const Container& spec,
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
            record_event(p.rec.namespace_, p.rec.daemonset, "Warning", "Failed",
                         "Error: " + message + " (pod " + p.rec.name + ")");
            record_pod_event(p, failed_event(container_ref(p, index), message, clock_.wall_ms()));
        }
        return false;
    };
    // What the pod needs from the cluster is asked for first: a container
    // that waits for it starts when it comes (on_config_objects_changed).
    if (config_.api_server.enabled) {
        const auto keys = ApiAccess::keys_of(p.rec.namespace_, *launch.pod_spec);
        api_access_->need(p.rec.uid, keys);
        api_access_->need_objects(cluster_refs(p.rec.namespace_, *launch.pod_spec));
        // No token yet (the API server unreachable at a first boot): the
        // container starts without it (PodFacts::start_without_token), said
        // once per pod.
        for (const auto& k : keys)
            if (auto t = api_access_->token(p.rec.uid, k);
                !t && api_access_->first_without_cluster(p.rec.uid)) {
                log(Level::Warning,
                    "pod " + pod + ": starts without its service-account token for now (" +
                        t.error().message + "); it is written into " + kServiceAccountMountPath +
                        " when the API server answers",
                    {{"DAEMONLET_POD", pod}});
                break;
            }
    } else if (const Desired* d = desired_for(p.rec);
               d && should_automount(d->ds().object) && api_access_->first_without_cluster(p.rec.uid)) {
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
        record_pod_event(p, warning_event(nullptr, "InvalidEnvironmentVariableNames", w, clock_.wall_ms()));
    }
    launch.env = std::move(env.value().vars);
    auto volumes = config_volumes_->prepare(facts, launch.pod_spec);
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

ApiAccess::Wanted Agent::wanted_from_cluster() const {
    ApiAccess::Wanted out;
    for (const auto& [uid, p] : pods_) {
        if (p.rec.deleting) continue;
        if (const PodSource src = pod_source(p.rec); src.spec) {
            out.tokens.merge(api_access_->wanted_keys(uid, ApiAccess::keys_of(p.rec.namespace_, *src.spec)));
            out.objects.merge(cluster_refs(p.rec.namespace_, *src.spec));
        }
    }
    return out;
}

std::set<ObjectRef> Agent::cluster_refs(const std::string& ns, const PodSpec& spec) const {
    std::set<ObjectRef> out = ApiAccess::refs_of(ns, spec);
    const ConfigObjects& local = sources_->config_objects();
    std::erase_if(out, [&](const ObjectRef& r) {
        return r.secret ? local.secret(r.namespace_, r.name) != nullptr
                        : local.config_map(r.namespace_, r.name) != nullptr;
    });
    return out;
}

void Agent::on_config_objects_changed() {
    if (stopping_ || !config_volumes_) return;
    // A pod adopted from the previous agent has had no start in this one:
    // its volumes follow the objects from now on too.
    for (auto& [uid, p] : pods_) {
        if (p.rec.deleting || config_volumes_->knows(uid)) continue;
        const PodSource src = pod_source(p.rec);
        if (!src.spec) continue;
        (void)config_volumes_->prepare(pod_facts(p), src.spec);  // rewrite() below reports a failure
    }
    for (const auto& problem : config_volumes_->rewrite(sources_->config_objects()))
        log(Level::Warning, "config volumes: " + problem + "; keeping its last content");
    // Containers waiting for a ConfigMap, Secret or key try again.
    start_waiting_containers();
}

}  // namespace daemonlet::agent
