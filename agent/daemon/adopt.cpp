// Adoption: what the agent finds running when it starts. The Adoption
// component (adoption.h) matches the store's pods with the runtime's
// containers and rebuilds those no record knows from their labels; this is
// its wiring: the runtime's stops and removals, the watches, the pods added
// and saved, their hooks, the terminations resumed, the sweeps.
#include <set>
#include <string>
#include <utility>

#include "agent/daemon/adoption.h"
#include "agent/daemon/agent.h"
#include "platform/log.h"

namespace daemonlet::agent {

using platform::Level;
using platform::log;

// On start: the pods in the store, matched with the containers the runtime
// still has. Running containers are adopted as they are (zero restarts);
// exited ones are handled as exits now.
void Agent::adopt() {
    auto infos = runtime_->adopt_all();
    if (!infos.ok()) {
        log(Level::Err, "runtime: " + infos.error().message);
        return;
    }
    auto stored = store_->list_pods();
    if (!stored.ok()) {
        log(Level::Err, "store: " + stored.error().message);
        return;
    }
    AdoptionPlan plan =
        plan_adoption(std::move(stored).value(), std::move(infos).value(), clock_.monotonic_ms());
    for (const auto& notice : plan.notices) log(Level::Notice, notice);
    for (const auto& w : plan.watch) workers_->watch(w.id, w.uid, w.index);
    for (auto& p : plan.pods) pods_.add(std::move(p));
    for (const auto& id : plan.remove) runtime_->remove_async(id, [](Status) {});
    for (const auto& second : plan.second_instances) {
        log(Level::Warning, second.warning);
        runtime_->stop_async(second.id, [this, id = second.id](Status s) {
            if (!s.ok()) log(Level::Warning, "container " + id + ": " + s.error().message);
            if (runtime_) runtime_->remove_async(id, [](Status) {});
        });
    }
    for (auto& o : plan.orphans) {
        for (const auto& stop : o.stop) {
            log(Level::Warning, stop.warning);
            runtime_->stop_async(stop.id, [id = stop.id](Status s) {
                if (!s.ok()) log(Level::Warning, "container " + id + ": " + s.error().message);
            });
        }
        if (!o.rebuilt) continue;
        LivePod& p = *o.rebuilt;
        for (const auto& w : o.watch) workers_->watch(w.id, w.uid, w.index);
        log(Level::Warning, o.rebuilt_warning, {{"DAEMONLET_POD", p.rec.namespace_ + "/" + p.rec.name}});
        refresh_readiness(p);
        pods_.save(p);
        pods_.add(std::move(p));
    }
    for (auto& [uid, p] : pods_) load_adopted_hooks(uid, p);
    std::size_t adopted = workers_->watched_count() - plan.exited.size();
    for (const auto& id : plan.exited) workers_->on_exit(id);
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
