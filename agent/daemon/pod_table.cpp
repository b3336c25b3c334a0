#include "agent/daemon/pod_table.h"

#include <cstdio>
#include <cstdlib>
#include <utility>

#include "platform/log.h"

namespace daemonlet::agent {

using platform::Level;
using platform::log;

namespace {
[[noreturn]] void missing(const char* what, const std::string& uid) {
    std::fprintf(stderr, "daemonlet: PodTable::%s: no pod %s (a broken invariant)\n", what, uid.c_str());
    std::abort();
}
}  // namespace

LivePod* PodTable::find(const std::string& uid) {
    auto it = pods_.find(uid);
    return it == pods_.end() ? nullptr : &it->second;
}

const LivePod* PodTable::find(const std::string& uid) const {
    auto it = pods_.find(uid);
    return it == pods_.end() ? nullptr : &it->second;
}

LivePod& PodTable::at(const std::string& uid) {
    if (LivePod* p = find(uid)) return *p;
    missing("at", uid);
}

const LivePod& PodTable::at(const std::string& uid) const {
    if (const LivePod* p = find(uid)) return *p;
    missing("at", uid);
}

LivePod& PodTable::add(LivePod pod) {
    std::string uid = pod.rec.uid;
    auto [it, added] = pods_.emplace(std::move(uid), std::move(pod));
    if (!added) missing("add (already here)", it->first);
    return it->second;
}

void PodTable::erase(const std::string& uid) { pods_.erase(uid); }

std::vector<std::string> PodTable::uids() const {
    std::vector<std::string> out;
    out.reserve(pods_.size());
    for (const auto& [uid, p] : pods_) out.push_back(uid);
    return out;
}

void PodTable::add_containers(LivePod& p, const PodSpec& spec) {
    const bool has_init = !spec.init_containers.empty();
    for (const auto& c : spec.init_containers) {
        ContainerStatus cs;
        cs.name = c.name;
        cs.reason = "PodInitializing";
        cs.sidecar = c.restart_policy == "Always";
        p.rec.init_containers.push_back(std::move(cs));
        p.containers.emplace_back();
    }
    for (const auto& c : spec.containers) {
        ContainerStatus cs;
        cs.name = c.name;
        cs.reason = has_init ? "PodInitializing" : "ContainerCreating";
        p.rec.containers.push_back(std::move(cs));
        p.containers.emplace_back();
    }
}

void PodTable::save(const LivePod& p) {
    MetricRegistry* metrics = host_.pod_metrics();
    if (!p.start_observed && p.rec.phase == PodPhase::Running && metrics) {
        // kubelet's PodStartDuration: from the pod's creation to all its
        // containers running.
        p.start_observed = true;
        metrics->observe("kubelet_pod_start_duration_seconds",
                         static_cast<double>(clock_.wall_ms() - p.rec.created_at_ms) / 1000.0);
    }
    if (auto w = host_.pod_store().put_pod(p.rec); !w.ok()) log(Level::Err, "store: " + w.error().message);
    host_.pod_saved();
}

}  // namespace daemonlet::agent
