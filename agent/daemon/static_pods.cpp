// The StaticPods component (static_pods.h): the files' v1 Pods as the
// kubelet's static pods, and what a reconcile stops and starts of them.
#include "agent/daemon/static_pods.h"

#include <algorithm>
#include <tuple>

#include "core/pod_network.h"
#include "platform/log.h"

namespace daemonlet::agent {

using platform::Level;
using platform::log;

std::vector<StaticPods::Conflict> StaticPods::rebuild(const std::vector<Sources::FilePod>& files,
                                                      const std::string& node_name,
                                                      std::string_view runtime) {
    std::vector<Conflict> said;
    std::map<std::string, Desired> next;
    std::map<std::string, std::string> by_name;  // "namespace/name" -> path, the first file wins
    for (const auto& f : files) {
        auto pod = std::make_shared<const Pod>(make_static_pod(*f.pod, node_name, f.path));
        const std::string key = pod->metadata.namespace_ + "/" + pod->metadata.name;
        auto [it, fresh] = by_name.emplace(key, f.path);
        if (!fresh) {
            // kubelet's filterInvalidPods: a name already taken in the
            // source. Said once per pairing, not per rebuild.
            if (conflicts_.insert(key + "|" + it->second + "|" + f.path).second) {
                log(Level::Warning, "static pod " + key + " is defined in both " + it->second + " and " +
                                        f.path + "; using " + it->second + " (its path sorts first)");
                said.push_back({key, it->second, f.path});
            }
            continue;
        }
        // Once per file version (its UID): hostPorts the runtime cannot
        // map, as for a DaemonSet's template (desired.cpp).
        if (!offered_.count(pod->metadata.uid))
            if (auto why = unmapped_host_ports(pod->spec, runtime); !why.empty())
                log(Level::Warning, "static pod " + key + " from " + f.path + ": " + why);
        next[pod->metadata.uid] = Desired{pod, f.path};
    }
    std::erase_if(deleted_, [&](const std::string& uid) { return !next.count(uid); });
    // A pod its file no longer offers keeps its spec until it has stopped.
    for (auto& [uid, s] : offered_)
        if (!next.count(uid) && pods_.contains(uid)) leaving_.emplace(uid, std::move(s));
    std::erase_if(leaving_, [&](const auto& e) { return next.count(e.first) > 0; });
    offered_ = std::move(next);
    return said;
}

const StaticPods::Desired* StaticPods::offered(const std::string& uid) const {
    auto it = offered_.find(uid);
    return it == offered_.end() ? nullptr : &it->second;
}

const StaticPods::Desired* StaticPods::of(const std::string& uid) const {
    if (const Desired* s = offered(uid)) return s;
    auto it = leaving_.find(uid);
    return it == leaving_.end() ? nullptr : &it->second;
}

std::vector<StaticPods::Stop> StaticPods::plan_stops() {
    std::vector<Stop> stops;
    for (const auto& [uid, p] : pods_) {
        if (!p.rec.is_static() || p.rec.deleting) continue;
        if (offered_.count(uid) && !p.deleted_by_user) continue;
        if (p.deleted_by_user) deleted_.insert(uid);
        stops.push_back({uid, offered_.count(uid) ? "deleted by the user; the static pod starts again"
                                                  : "its manifest file changed or no longer defines it"});
    }
    return stops;
}

std::vector<StaticPods::Start> StaticPods::plan_starts() {
    std::vector<std::pair<const std::string*, const Desired*>> missing;
    for (const auto& [uid, s] : offered_)
        if (!pods_.contains(uid)) missing.emplace_back(&uid, &s);
    std::sort(missing.begin(), missing.end(), [](const auto& a, const auto& b) {
        return std::tie(a.second->path, a.second->pod->metadata.name) <
               std::tie(b.second->path, b.second->pod->metadata.name);
    });
    std::vector<Start> starts;
    for (const auto& [uid, s] : missing) {
        if (deleted_.erase(*uid)) {
            starts.push_back({*uid, nullptr});  // after this pass has answered the delete
            continue;
        }
        // An edited file's pod (a new UID) waits until the old pod of the
        // same full name has terminated: two etcds must not share a data
        // directory or a port. The old pod's end (PodWorkers'
        // finish_if_stopped, the agent's pod_terminated) reconciles again.
        // The starts before it add pods of other names only (one pod per
        // name is offered), so deciding them all before any is created
        // answers as deciding each one after the previous one's creation.
        const std::string& ns = s->pod->metadata.namespace_;
        const std::string& name = s->pod->metadata.name;
        if (std::any_of(pods_.begin(), pods_.end(), [&](const auto& other) {
                return other.second.rec.is_static() && other.second.rec.namespace_ == ns &&
                       other.second.rec.name == name;
            }))
            continue;
        starts.push_back({*uid, s});
    }
    return starts;
}

std::vector<AdoptedStaticPod> StaticPods::adopted() const {
    std::vector<AdoptedStaticPod> out;
    for (const auto& [uid, p] : pods_) {
        if (!p.rec.is_static() || p.rec.deleting || p.rec.phase == PodPhase::Succeeded) continue;
        const Desired* s = offered(uid);
        if (!s) continue;  // its file went: it stops
        AdoptedStaticPod a;
        a.pod = s->pod.get();
        a.created_at_ms = p.rec.created_at_ms;
        if (p.rec.phase == PodPhase::Failed) {
            // Finished (restartPolicy Never or OnFailure): it stays so. A
            // refused pod ran no container.
            if (!p.rec.containers.empty() || p.rec.reason.empty()) continue;
            a.rejected = PodRejection{p.rec.reason, p.rec.message};
        }
        out.push_back(a);
    }
    return out;
}

}  // namespace daemonlet::agent
