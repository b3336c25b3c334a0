// Adoption: what the agent finds running when it starts. The pods in the
// store are matched with the runtime's containers; containers no pod record
// knows (the database was lost) rebuild their pods from the labels every
// container is started with (pod_labels), so nothing restarts.
#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>

#include "agent/daemon/agent.h"
#include "agent/daemon/pod_labels.h"
#include "platform/log.h"
#include "platform/system_info.h"

namespace daemonlet::agent {

using platform::Level;
using platform::log;

namespace {

std::vector<std::string> split_names(const std::string& s) {
    std::vector<std::string> out;
    for (std::size_t pos = 0; pos <= s.size();) {
        std::size_t comma = std::min(s.find(',', pos), s.size());
        if (comma > pos) out.push_back(s.substr(pos, comma - pos));
        pos = comma + 1;
    }
    return out;
}

std::int64_t to_int(const std::string& s) {
    std::int64_t v = 0;
    for (char c : s) {
        if (c < '0' || c > '9' || v > (INT64_MAX - 9) / 10) return 0;
        v = v * 10 + (c - '0');
    }
    return v;
}

// The record of a pod whose containers run but which the store does not
// know (the database was lost and rebuilt): from the labels its containers
// were started with. Empty when they carry no labels (or disagree).
std::optional<PodRecord> rebuild_record(const std::vector<platform::ContainerInfo>& found) {
    const auto& first = found.front();
    auto label = [&](const char* k) {
        auto it = first.labels.find(k);
        return it == first.labels.end() ? std::string() : it->second;
    };
    PodRecord rec;
    rec.uid = first.pod_uid;
    rec.name = first.pod_name;
    rec.namespace_ = first.pod_namespace;
    rec.daemonset = label(kLabelDaemonSet);
    rec.revision_hash = label(kLabelRevisionHash);
    rec.revision = to_int(label(kLabelRevision));
    rec.created_at_ms = to_int(label(kLabelCreatedAt));
    if (rec.name.empty() || rec.namespace_.empty() || rec.daemonset.empty() || rec.revision_hash.empty())
        return std::nullopt;
    for (const auto& name : split_names(label(kLabelContainers))) {
        ContainerStatus cs;
        cs.name = name;
        cs.reason = "ContainerCreating";
        rec.containers.push_back(std::move(cs));
    }
    // The app containers run, so the init containers have all completed;
    // sidecars run on beside them (or start again if they are gone).
    for (const auto& entry : split_names(label(kLabelInitContainers))) {
        ContainerStatus cs;
        cs.sidecar = entry.size() > 8 && entry.compare(entry.size() - 8, 8, ":sidecar") == 0;
        cs.name = cs.sidecar ? entry.substr(0, entry.size() - 8) : entry;
        if (!cs.sidecar) {
            cs.state = ContainerState::Terminated;
            cs.reason = "Completed";
        }
        rec.init_containers.push_back(std::move(cs));
    }
    for (const auto& info : found) {
        if (info.labels != first.labels) return std::nullopt;
        auto named = [&](const ContainerStatus& c) { return c.name == info.container_name; };
        auto it = std::find_if(rec.containers.begin(), rec.containers.end(), named);
        if (it == rec.containers.end()) {
            it = std::find_if(rec.init_containers.begin(), rec.init_containers.end(), named);
            if (it == rec.init_containers.end() || !it->sidecar) return std::nullopt;
        }
        it->runtime_id = info.id;
        it->image_id = info.image_ref;
        it->state = ContainerState::Running;
        it->reason.clear();
        it->started_at_ms = info.started_at_ms;
        it->started = true;
    }
    // Only a sidecar found: the pod was still initializing; its other init
    // containers run again.
    bool app_running =
        std::any_of(rec.containers.begin(), rec.containers.end(),
                    [](const ContainerStatus& c) { return c.state == ContainerState::Running; });
    if (!app_running)
        for (auto& c : rec.init_containers)
            if (!c.sidecar) {
                c.state = ContainerState::Waiting;
                c.reason = "PodInitializing";
            }
    return rec;
}

}  // namespace

// A running instance of the pod's container that its record does not name:
// the agent that started it was killed before it recorded the id (the
// runtime's state is written before the start returns). Adopted into the
// record, never started a second time (issue 15's kill -9 storm found two
// processes for one container).
static std::map<std::string, platform::ContainerInfo>::iterator unrecorded_instance(
    std::map<std::string, platform::ContainerInfo>& by_id, const std::string& pod_uid, ContainerStatus& cs) {
    auto it = std::find_if(by_id.begin(), by_id.end(), [&](const auto& e) {
        return e.second.running && e.second.pod_uid == pod_uid && e.second.container_name == cs.name;
    });
    if (it == by_id.end()) return it;
    log(Level::Notice, "container " + cs.name + " of pod " + it->second.pod_namespace + "/" +
                           it->second.pod_name + " runs as " + it->first +
                           ", started by an agent that stopped before recording it: adopted");
    cs.runtime_id = it->first;
    cs.state = ContainerState::Running;
    cs.reason.clear();
    cs.message.clear();
    cs.started_at_ms = it->second.started_at_ms;
    cs.started = true;
    if (!it->second.image_ref.empty()) cs.image_id = it->second.image_ref;
    return it;
}

// On start: the pods in the store, matched with the containers the runtime
// still has. Running containers are adopted as they are (zero restarts);
// exited ones are handled as exits now.
void Agent::adopt() {
    auto infos = runtime_->adopt_all();
    if (!infos.ok()) {
        log(Level::Err, "runtime: " + infos.error().message);
        return;
    }
    std::map<std::string, platform::ContainerInfo> by_id;
    for (auto& i : infos.value()) by_id[i.id] = i;
    auto stored = store_->list_pods();
    if (!stored.ok()) {
        log(Level::Err, "store: " + stored.error().message);
        return;
    }
    std::vector<std::string> exited;
    for (auto& rec : stored.value()) {
        LivePod p;
        p.rec = rec;
        // The Pod's deletion grace counts once its stop has begun (saved
        // with `deleting`): one saved in the turn between the API's delete
        // and the reconcile's terminate, the agent gone since, is not the
        // running pod's (its liveness kills keep the spec's grace); a
        // connected agent hears the delete again.
        if (!p.rec.deleting) p.rec.deletion_grace_seconds.reset();
        p.containers.resize(rec.init_containers.size() + rec.containers.size());
        for (std::size_t i = 0; i < p.containers.size(); ++i) {
            auto& cs = p.status(i);
            auto it = cs.runtime_id.empty() ? by_id.end() : by_id.find(cs.runtime_id);
            if (it == by_id.end()) it = unrecorded_instance(by_id, rec.uid, cs);
            if (it == by_id.end()) {
                if (cs.state == ContainerState::Running) {
                    cs.state = ContainerState::Waiting;
                    cs.reason = "ContainerCreating";
                }
                continue;
            }
            p.containers[i].id = cs.runtime_id;
            p.containers[i].started_mono_ms = clock_.monotonic_ms();
            if (cs.image_id.empty()) cs.image_id = it->second.image_ref;  // started by an older agent
            workers_->watch(cs.runtime_id, rec.uid, i);
            if (!it->second.running) exited.push_back(cs.runtime_id);
            by_id.erase(it);
        }
        p.start_observed = true;  // started by an earlier agent
        pods_.add(std::move(p));
    }
    // Containers no pod record knows: the database was lost and rebuilt.
    // Their labels rebuild the pods, which are adopted like the others (zero
    // restarts); the DaemonSets then decide, as for any pod, whether they
    // stay. Exited ones and unlabelled ones (no way to know their pod) go.
    std::map<std::string, std::vector<platform::ContainerInfo>> orphans;  // by pod uid
    for (const auto& [id, info] : by_id) {
        if (!info.running) {
            runtime_->remove_async(id, [](Status) {});
            continue;
        }
        if (pods_.contains(info.pod_uid)) {
            // A second instance of a container its pod already runs: the
            // one the record names stays.
            log(Level::Warning, "container " + id + " of pod " + info.pod_namespace + "/" + info.pod_name +
                                    " is a second instance of " + info.container_name + "; stopping it");
            runtime_->stop_async(id, [this, id = id](Status s) {
                if (!s.ok()) log(Level::Warning, "container " + id + ": " + s.error().message);
                if (runtime_) runtime_->remove_async(id, [](Status) {});
            });
            continue;
        }
        orphans[info.pod_uid].push_back(info);
    }
    for (const auto& [uid, found] : orphans) {
        auto rec = uid.empty() ? std::nullopt : rebuild_record(found);
        if (!rec) {
            for (const auto& info : found) {
                log(Level::Warning, "container " + info.id + " of pod " + info.pod_uid +
                                        " is not in the store and carries no pod labels; stopping it");
                runtime_->stop_async(info.id, [id = info.id](Status s) {
                    if (!s.ok()) log(Level::Warning, "container " + id + ": " + s.error().message);
                });
            }
            continue;
        }
        rec->phase = PodPhase::Running;
        LivePod p;
        p.rec = *rec;
        p.containers.resize(rec->init_containers.size() + rec->containers.size());
        for (std::size_t i = 0; i < p.containers.size(); ++i) {
            const std::string& id = p.status(i).runtime_id;
            if (id.empty()) continue;
            p.containers[i].id = id;
            p.containers[i].started_mono_ms = clock_.monotonic_ms();
            workers_->watch(id, uid, i);
        }
        log(Level::Warning,
            "pod " + rec->namespace_ + "/" + rec->name + " (DaemonSet " + rec->daemonset +
                ") was not in the store: rebuilt from its running containers and adopted",
            {{"DAEMONLET_POD", rec->namespace_ + "/" + rec->name}});
        refresh_readiness(p);
        p.start_observed = true;
        pods_.save(p);
        pods_.add(std::move(p));
    }
    for (auto& [uid, p] : pods_) load_adopted_hooks(uid, p);
    std::size_t adopted = workers_->watched_count() - exited.size();
    for (const auto& id : exited) workers_->on_exit(id);
    // Pods that were stopping when the agent went away are stopped again
    // (the stop may have gone with it) and finish once nothing runs;
    // containers without a process are started by the first reconcile,
    // once the DaemonSets are known.
    std::vector<std::string> stopping;
    for (const auto& [uid, p] : pods_)
        if (p.rec.deleting) stopping.push_back(uid);
    for (const auto& uid : stopping) workers_->resume_termination(uid);
    // Config volumes and token bindings of pods that went while no agent ran.
    std::set<std::string> live;
    for (const auto& [uid, p] : pods_) live.insert(uid);
    config_volumes_->sweep(live);
    api_access_->sweep(live);
    if (!pods_.empty() || adopted)
        log(Level::Notice, "adopted " + std::to_string(adopted) + " running containers of " +
                               std::to_string(pods_.size()) + " pods");
}

}  // namespace daemonlet::agent
