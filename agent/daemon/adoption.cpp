// The Adoption component (adoption.h).
#include "agent/daemon/adoption.h"

#include <algorithm>
#include <map>
#include <set>
#include <utility>

#include "agent/daemon/pod_labels.h"

namespace daemonlet::agent {

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

}  // namespace

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

namespace {

// A running instance of the pod's container that its record does not name:
// the agent that started it was killed before it recorded the id (the
// runtime's state is written before the start returns). Adopted into the
// record, never started a second time (issue 15's kill -9 storm found two
// processes for one container).
std::map<std::string, platform::ContainerInfo>::iterator unrecorded_instance(
    std::map<std::string, platform::ContainerInfo>& by_id, const std::string& pod_uid, ContainerStatus& cs,
    std::vector<std::string>& notices) {
    auto it = std::find_if(by_id.begin(), by_id.end(), [&](const auto& e) {
        return e.second.running && e.second.pod_uid == pod_uid && e.second.container_name == cs.name;
    });
    if (it == by_id.end()) return it;
    notices.push_back("container " + cs.name + " of pod " + it->second.pod_namespace + "/" +
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

}  // namespace

AdoptionPlan plan_adoption(std::vector<PodRecord> stored, std::vector<platform::ContainerInfo> found,
                           std::int64_t now_mono_ms) {
    AdoptionPlan plan;
    std::map<std::string, platform::ContainerInfo> by_id;
    for (auto& i : found) by_id[i.id] = std::move(i);
    std::set<std::string> known;  // the stored pods' uids
    for (auto& rec : stored) {
        LivePod p;
        p.rec = std::move(rec);
        // The Pod's deletion grace counts once its stop has begun (saved
        // with `deleting`): one saved in the turn between the API's delete
        // and the reconcile's terminate, the agent gone since, is not the
        // running pod's (its liveness kills keep the spec's grace); a
        // connected agent hears the delete again.
        if (!p.rec.deleting) p.rec.deletion_grace_seconds.reset();
        p.containers.resize(p.rec.init_containers.size() + p.rec.containers.size());
        for (std::size_t i = 0; i < p.containers.size(); ++i) {
            auto& cs = p.status(i);
            auto it = cs.runtime_id.empty() ? by_id.end() : by_id.find(cs.runtime_id);
            if (it == by_id.end()) it = unrecorded_instance(by_id, p.rec.uid, cs, plan.notices);
            if (it == by_id.end()) {
                if (cs.state == ContainerState::Running) {
                    cs.state = ContainerState::Waiting;
                    cs.reason = "ContainerCreating";
                }
                continue;
            }
            p.containers[i].id = cs.runtime_id;
            p.containers[i].started_mono_ms = now_mono_ms;
            if (cs.image_id.empty()) cs.image_id = it->second.image_ref;  // started by an older agent
            plan.watch.push_back({cs.runtime_id, p.rec.uid, i});
            if (!it->second.running) plan.exited.push_back(cs.runtime_id);
            by_id.erase(it);
        }
        p.start_observed = true;  // started by an earlier agent
        known.insert(p.rec.uid);
        plan.pods.push_back(std::move(p));
    }
    // Containers no pod record knows: the database was lost and rebuilt.
    // Their labels rebuild the pods, which are adopted like the others (zero
    // restarts); the DaemonSets then decide, as for any pod, whether they
    // stay. Exited ones and unlabelled ones (no way to know their pod) go.
    std::map<std::string, std::vector<platform::ContainerInfo>> orphans;  // by pod uid
    for (auto& [id, info] : by_id) {
        if (!info.running) {
            plan.remove.push_back(id);
            continue;
        }
        if (known.count(info.pod_uid)) {
            // A second instance of a container its pod already runs: the
            // one the record names stays.
            plan.second_instances.push_back({id, "container " + id + " of pod " + info.pod_namespace + "/" +
                                                     info.pod_name + " is a second instance of " +
                                                     info.container_name + "; stopping it"});
            continue;
        }
        orphans[info.pod_uid].push_back(std::move(info));
    }
    for (const auto& [uid, found_of_uid] : orphans) {
        AdoptionPlan::Orphan o;
        auto rec = uid.empty() ? std::nullopt : rebuild_record(found_of_uid);
        if (!rec) {
            for (const auto& info : found_of_uid)
                o.stop.push_back(
                    {info.id, "container " + info.id + " of pod " + info.pod_uid +
                                  " is not in the store and carries no pod labels; stopping it"});
            plan.orphans.push_back(std::move(o));
            continue;
        }
        rec->phase = PodPhase::Running;
        LivePod p;
        p.rec = std::move(*rec);
        p.containers.resize(p.rec.init_containers.size() + p.rec.containers.size());
        for (std::size_t i = 0; i < p.containers.size(); ++i) {
            const std::string& id = p.status(i).runtime_id;
            if (id.empty()) continue;
            p.containers[i].id = id;
            p.containers[i].started_mono_ms = now_mono_ms;
            o.watch.push_back({id, uid, i});
        }
        o.rebuilt_warning = "pod " + p.rec.namespace_ + "/" + p.rec.name + " (DaemonSet " + p.rec.daemonset +
                            ") was not in the store: rebuilt from its running containers and adopted";
        p.start_observed = true;
        o.rebuilt = std::move(p);
        plan.orphans.push_back(std::move(o));
    }
    return plan;
}

}  // namespace daemonlet::agent
