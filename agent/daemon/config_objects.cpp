// The agent's side of what a container gets from ConfigMaps, Secrets and
// the downward API (issue 13 §2), which the ContainerConfig resolves
// (container_config.h): what it reads of the agent (its Host), the cluster
// objects and tokens the live pods want, and the objects' changes: running
// pods' config volumes rewritten, waiting containers started again.
#include <optional>
#include <string>

#include "agent/daemon/agent.h"
#include "platform/log.h"
#include "platform/system_info.h"

namespace daemonlet::agent {

using platform::Level;
using platform::log;

const DaemonSet* Agent::daemonset_of(const PodRecord& rec) const {
    const Desired* d = desired_.for_pod(rec);
    return d ? &d->ds() : nullptr;
}

ContainerConfig::NodeFacts Agent::node_facts() const {
    return {&node_state_->node(), node_ips_->ips(), platform::online_cpus(), platform::memory_bytes()};
}

std::optional<std::string> Agent::api_server() const {
    if (!cluster_) return std::nullopt;
    return cluster_->server();
}

bool Agent::image_ready(const ImageWaiter& w, const PodRecord& pod, const Container& spec,
                        ContainerStatus& cs) {
    return images_->ready_to_start(w, pod, spec, cs);
}

void Agent::record_config_event(const std::string& ns, const std::string& daemonset, const char* type,
                                const char* reason, const std::string& message) {
    ds_events_.record(ns, daemonset, type, reason, message);
}

void Agent::record_pod_warning(const LivePod& p, std::optional<std::size_t> index, const char* reason,
                               const std::string& message) {
    const ContainerRef ref = index ? container_ref(p, *index) : ContainerRef{};
    record_pod_event(p, warning_event(index ? &ref : nullptr, reason, message, clock_.wall_ms()));
}

ApiAccess::Wanted Agent::wanted_from_cluster() const {
    ApiAccess::Wanted out;
    for (const auto& [uid, p] : pods_) {
        if (p.rec.deleting) continue;
        if (const PodSource src = pod_source(p.rec); src.spec) {
            out.tokens.merge(api_access_->wanted_keys(uid, ApiAccess::keys_of(p.rec.namespace_, *src.spec)));
            out.objects.merge(container_config_.cluster_refs(p.rec.namespace_, *src.spec));
        }
    }
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
        (void)config_volumes_->prepare(container_config_.pod_facts(p),
                                       src.spec);  // rewrite() below reports a failure
    }
    for (const auto& problem : config_volumes_->rewrite(sources_->config_objects()))
        log(Level::Warning, "config volumes: " + problem + "; keeping its last content");
    // Containers waiting for a ConfigMap, Secret or key try again.
    start_waiting_containers();
}

}  // namespace daemonlet::agent
