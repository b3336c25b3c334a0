// The reconciler's plan for one node, Kubernetes 1.25 to 1.30: the DaemonSet
// controller's manage pass (daemon_controller.go podsShouldBeOnNode) and,
// when that pass changed nothing, its rolling-update pass (update.go
// rollingUpdate, findUpdatedPodsOnNode), each with nodeList = [this node].
//
// How upstream's pod states map onto ObservedPod:
//   DeletionTimestamp set            terminating, pod.deleting or deleted_by_user
//   deleted AND terminal             pod.deleting && !terminating (containers all exited):
//                                    left out, as getNodesToDaemonPods(includeDeletedTerminal
//                                    = false) leaves it out (kubernetes PR 118716, June 2023)
//   IsPodReady                       ready
//   Ready LastTransitionTime         ready_since_mono_ms (monotonic clock)
//   controller-revision-hash label   pod.revision_hash
//
// Without surge, a pod still stopping keeps its replacement from starting:
// upstream creates only when the node has no pod of the DaemonSet at all
// (PR 51279 "Ensure that DaemonSet respects termination",
// TestDaemonSetRespectsTermination), so the old pod is stopped first and the
// new one started. With surge a stopping pod does not count.
//
// A user's `daemonlet delete pod` is upstream's DELETE of the pod: it sets the
// deletion timestamp; here the plan carries out the stop ("deleted by user")
// and, in the same pass, treats the pod as already being deleted.
//
// A connected board whose cluster paces the rollout (paced_by_cluster,
// issue 14 §3) is a kubelet node of that controller: the controller deletes
// the old Pod (rollingUpdate, and manage's surge clean-up) and the board
// follows the deletion (deleted_by_user); so those two steps hold here and
// are reported (ReconcilePlan::paced), and a surge pod starts only for the
// controller's Pod (cluster_made_new_pod).
//
// Expectations: upstream runs rollingUpdate only when every create and delete
// of the manage pass has been observed (SatisfiedExpectations). A one-node
// plan has the same effect by skipping the rolling update of a DaemonSet in
// a pass where manage already planned something for it.
#include "core/reconcile.h"

#include <algorithm>
#include <cassert>
#include <limits>
#include <map>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "core/int_or_percent.h"
#include "core/strings.h"

namespace daemonlet {
namespace {

using DsKey = std::pair<std::string, std::string>;  // namespace, DaemonSet name

// ready_since + minReadySeconds, held inside int64.
std::int64_t available_at(std::int64_t ready_since_ms, std::int32_t min_ready_seconds) {
    const std::int64_t wait = std::int64_t{min_ready_seconds} * 1000;
    if (ready_since_ms > std::numeric_limits<std::int64_t>::max() - wait)
        return std::numeric_limits<std::int64_t>::max();
    return ready_since_ms + wait;
}

// The pod's deletion timestamp is set: a stop was asked for (by us or the user).
bool being_deleted(const ObservedPod& p) { return p.terminating || p.pod.deleting || p.deleted_by_user; }

// Deleted and every container exited: upstream's deleted terminal pod.
bool deleted_and_finished(const ObservedPod& p) { return p.pod.deleting && !p.terminating; }

// podByCreationTimestampAndPhase (every pod here is scheduled to this node):
// creation time, then name; the uid keeps the order total.
bool older(const ObservedPod* a, const ObservedPod* b) {
    return std::tie(a->pod.created_at_ms, a->pod.name, a->pod.uid) <
           std::tie(b->pod.created_at_ms, b->pod.name, b->pod.uid);
}

std::string revision_of(const PodRecord& p) {
    return "revision " + std::to_string(p.revision) + " (" + p.revision_hash + ")";
}

struct Removal {
    const ObservedPod* pod;
    std::string reason;
};

// One DaemonSet's pass: manage, then (if manage did nothing) the rolling update.
class DaemonSetPlanner {
  public:
    DaemonSetPlanner(const DesiredDaemonSet& d, std::vector<const ObservedPod*> pods, std::int64_t now,
                     FailedPodsBackoff& failed_backoff)
        : d_(d), ds_(*d.ds), pods_(std::move(pods)), now_(now), failed_backoff_(failed_backoff) {
        std::sort(pods_.begin(), pods_.end(), older);
    }

    void run(std::vector<PodToCreate>& creates, std::vector<Removal>& removes) {
        manage();
        if (!create_ && removes_.empty()) rolling_update();
        if (create_)
            creates.push_back(PodToCreate{ds_.metadata.namespace_, ds_.metadata.name, d_.hash, d_.revision});
        removes.insert(removes.end(), removes_.begin(), removes_.end());
    }

    // The rollout here waits for the DaemonSet controller (paced_by_cluster).
    bool paced() const { return paced_; }

    // The earliest time a ready pod that stays becomes available, if any.
    // Upstream re-queues the DaemonSet minReadySeconds after a pod turns
    // ready (updatePod); the plan names the moment instead.
    std::optional<std::int64_t> wake_at() const {
        std::optional<std::int64_t> wake = failed_wake_;
        if (ds_.spec.min_ready_seconds <= 0) return wake;
        for (const ObservedPod* p : live_) {
            if (removed(p) || !p->ready || !p->ready_since_mono_ms) continue;
            if (pod_available(*p, ds_.spec.min_ready_seconds, now_)) continue;
            const std::int64_t at = available_at(*p->ready_since_mono_ms, ds_.spec.min_ready_seconds);
            if (!wake || at < *wake) wake = at;
        }
        return wake;
    }

  private:
    bool available(const ObservedPod* p) const { return pod_available(*p, ds_.spec.min_ready_seconds, now_); }
    // util.IsPodUpdated, by hash (templateGeneration is legacy and not kept).
    bool updated(const ObservedPod* p) const { return !d_.hash.empty() && p->pod.revision_hash == d_.hash; }
    bool removed(const ObservedPod* p) const {
        return std::any_of(removes_.begin(), removes_.end(), [p](const Removal& r) { return r.pod == p; });
    }
    void remove(const ObservedPod* p, std::string reason) {
        removes_.push_back(Removal{p, std::move(reason)});
    }
    // failedPodsBackoff.IsInBackOffSinceUpdate; when it holds, the pass is
    // planned again as it ends (upstream's enqueueDaemonSetAfter).
    bool in_failed_backoff() {
        auto it = failed_backoff_.entries.find(backoff_key());
        if (it == failed_backoff_.entries.end()) return false;
        const FailedPodsBackoff::Entry& e = it->second;
        if (now_ - e.last_update_ms > 2 * failed_backoff_.max_ms) return false;  // hasExpired
        if (now_ - e.last_update_ms >= e.backoff_ms) return false;
        failed_wake_ = e.last_update_ms + e.backoff_ms;
        return true;
    }
    // failedPodsBackoff.Next: initial at first (or once expired), then doubled up to max.
    void next_failed_backoff() {
        auto [it, fresh] = failed_backoff_.entries.try_emplace(backoff_key());
        FailedPodsBackoff::Entry& e = it->second;
        if (fresh || now_ - e.last_update_ms > 2 * failed_backoff_.max_ms)
            e.backoff_ms = failed_backoff_.initial_ms;
        else
            e.backoff_ms = std::min(e.backoff_ms * 2, failed_backoff_.max_ms);
        e.last_update_ms = now_;
    }
    DsKey key() const { return {ds_.metadata.namespace_, ds_.metadata.name}; }
    // failedPodsBackoffKey: "<ds.UID>/<ObservedGeneration>/<node>"; here the
    // template's hash stands for the generation (a pod's rejection depends
    // on its template), so that a fixed template (or a DaemonSet made anew
    // under the same name) starts at the initial back-off, not behind the
    // old one's 15 minutes.
    std::pair<std::string, std::string> backoff_key() const {
        return {ds_.metadata.namespace_, ds_.metadata.name + "/" + ds_.metadata.uid + "/" + d_.hash};
    }
    std::string current_revision() const {
        return "revision " + std::to_string(d_.revision) + " (" + d_.hash + ")";
    }

    // podsShouldBeOnNode.
    void manage() {
        const Decision& decision = d_.decision;
        // `exists`: the node has pods of this DaemonSet, those being deleted included.
        const bool exists = !pods_.empty();
        for (const ObservedPod* p : pods_) {
            if (p->deleted_by_user && !p->terminating && !p->pod.deleting) remove(p, "deleted by user");
            if (!being_deleted(*p)) live_.push_back(p);
        }

        if (!decision.should_continue_running) {
            // Every pod not already being deleted goes.
            const std::string reason = decision.reasons.empty()
                                           ? std::string("node no longer matches")
                                           : "node no longer matches: " + join(decision.reasons, "; ");
            for (const ObservedPod* p : live_) remove(p, reason);
            return;
        }

        std::vector<const ObservedPod*> running;
        for (const ObservedPod* p : live_) {
            if (p->pod.phase == PodPhase::Failed) {
                // "This is a critical place where DS is often fighting with
                // kubelet that rejects pods": back off.
                if (in_failed_backoff()) continue;
                next_failed_backoff();
                remove(p, "failed daemon pod (phase Failed)");
            } else if (p->pod.phase == PodPhase::Succeeded) {
                remove(p, "succeeded daemon pod (phase Succeeded)");
            } else {
                running.push_back(p);
            }
        }

        // util.AllowsSurge: SurgeCount(ds, 1) > 0, an error counting as no surge.
        const auto surge = surge_count(ds_, 1);
        if (!(surge.ok() && surge.value() > 0)) {
            // Without surge a new pod waits until no pod of this DaemonSet is
            // left on the node, a stopping one included: the old pod is
            // stopped first and the new one started.
            if (!exists) {
                create_ = decision.should_run;
                return;
            }
            for (std::size_t i = 1; i < running.size(); ++i)
                remove(running[i], "duplicate: the older pod " + running[0]->pod.name + " is kept");
            return;
        }

        if (running.empty()) {
            // Surging: a stopping pod does not hold back its replacement; a
            // Failed one kept by the back-off does (upstream's `exists`).
            create_ = decision.should_run && !failed_wake_;
            return;
        }
        if (running.size() == 1) return;

        // Keep the oldest pod of the current revision and the oldest of any
        // other; of those two, the old one goes when it is not ready or when
        // the new one is available.
        const ObservedPod* oldest_new = nullptr;
        const ObservedPod* oldest_old = nullptr;
        for (const ObservedPod* p : running) {
            const ObservedPod*& slot = updated(p) ? oldest_new : oldest_old;
            if (!slot) {
                slot = p;
                continue;
            }
            remove(p, "duplicate: the older pod " + slot->pod.name + " of " + revision_of(slot->pod) +
                          " is kept");
        }
        if (oldest_new && oldest_old && d_.paced_by_cluster) {
            // The controller deletes the old Pod (its manage pass, the same
            // rule as below, on its own view of readiness); the kubelet
            // follows that deletion.
            if (!oldest_old->ready || available(oldest_new)) paced_ = true;
        } else if (oldest_new && oldest_old) {
            if (!oldest_old->ready) {
                remove(oldest_old, "rolling update: " + revision_of(oldest_old->pod) + " is not ready, " +
                                       oldest_new->pod.name + " replaces it");
            } else if (available(oldest_new)) {
                remove(oldest_old, "rolling update: " + oldest_new->pod.name + " of " + current_revision() +
                                       " is available");
            }
        }
    }

    // rollingUpdate for this node.
    void rolling_update() {
        if (ds_.spec.update_strategy.type != "RollingUpdate") return;  // OnDelete: the user deletes
        const auto budget = rolling_update_budget(ds_, d_.decision.should_run ? 1 : 0);
        if (!budget) return;  // upstream returns the error and changes nothing

        // findUpdatedPodsOnNode: pods not being deleted, at most one of each kind.
        const ObservedPod* new_pod = nullptr;
        const ObservedPod* old_pod = nullptr;
        for (const ObservedPod* p : live_) {
            const ObservedPod*& slot = updated(p) ? new_pod : old_pod;
            if (slot) return;  // excess pods: manage prunes them first
            slot = p;
        }
        if (!old_pod) return;

        const std::string old_rev = revision_of(old_pod->pod);
        if (d_.paced_by_cluster) {
            // The controller's rollingUpdate deletes the old Pod within
            // maxUnavailable across the fleet, or makes the surge Pod; the
            // board starts the new pod only for that Pod.
            const bool surge = budget.value().max_surge > 0;
            if (surge && !new_pod && d_.decision.should_run && d_.cluster_made_new_pod)
                create_ = true;
            else if (!new_pod || (surge && available(new_pod)))
                paced_ = true;
            return;
        }
        if (budget.value().max_surge == 0) {
            // Delete just enough old pods to stay within maxUnavailable; the
            // manage pass starts the new pod once the old one is gone.
            if (new_pod) return;
            if (!available(old_pod)) {
                remove(old_pod, "rolling update: " + old_rev + " is not available, replaced at once by " +
                                    current_revision());
            } else if (budget.value().max_unavailable > 0) {
                remove(old_pod, "rolling update: " + old_rev + " is replaced by " + current_revision() +
                                    " (maxUnavailable " + std::to_string(budget.value().max_unavailable) +
                                    ")");
            }
            return;
        }

        // Surging: start the new pod while the old one runs; the old one goes
        // once the new one is available (here, or in the next manage pass).
        if (!new_pod) {
            if (!d_.decision.should_run) {
                // No new pod may start here: an unavailable old pod goes, and so
                // does an available one (numAvailable 1 > desiredNumberScheduled 0).
                remove(old_pod, "rolling update: " + old_rev + " is out of date and the node no longer " +
                                    "accepts new pods");
                return;
            }
            // An unavailable old pod is replaced at once; an available one is
            // a surge candidate, and nothing else on this node uses the surge.
            create_ = true;
            return;
        }
        if (available(new_pod))
            remove(old_pod,
                   "rolling update: " + new_pod->pod.name + " of " + current_revision() + " is available");
    }

    const DesiredDaemonSet& d_;
    const DaemonSet& ds_;
    std::vector<const ObservedPod*> pods_;  // oldest first; deleted terminal pods left out
    std::vector<const ObservedPod*> live_;  // not being deleted, oldest first
    std::int64_t now_;
    FailedPodsBackoff& failed_backoff_;
    std::optional<std::int64_t> failed_wake_;  // a Failed pod kept by the back-off: plan again then
    bool create_ = false;
    bool paced_ = false;
    std::vector<Removal> removes_;
};

}  // namespace

bool pod_available(const ObservedPod& pod, std::int32_t min_ready_seconds, std::int64_t now_mono_ms) {
    if (!pod.ready) return false;
    if (min_ready_seconds <= 0) return true;
    if (!pod.ready_since_mono_ms) return false;  // upstream: a zero LastTransitionTime is never available
    return available_at(*pod.ready_since_mono_ms, min_ready_seconds) <= now_mono_ms;
}

ReconcilePlan plan_reconcile(const std::vector<DesiredDaemonSet>& desired,
                             const std::vector<ObservedPod>& pods, std::int64_t now_mono_ms,
                             FailedPodsBackoff* failed_backoff) {
    FailedPodsBackoff fresh;
    FailedPodsBackoff& backoff = failed_backoff ? *failed_backoff : fresh;
    // failedPodsBackoff.GC: entries not updated for 2 x max go.
    std::erase_if(backoff.entries,
                  [&](const auto& e) { return now_mono_ms - e.second.last_update_ms > 2 * backoff.max_ms; });
    // Desired DaemonSets by key, in key order; a repeated key keeps its first entry.
    std::map<DsKey, const DesiredDaemonSet*> by_key;
    for (const auto& d : desired) {
        assert(d.ds != nullptr && "DesiredDaemonSet without a DaemonSet");
        if (d.ds == nullptr) continue;
        by_key.emplace(DsKey{d.ds->metadata.namespace_, d.ds->metadata.name}, &d);
    }

    std::map<DsKey, std::vector<const ObservedPod*>> owned;
    std::vector<Removal> removes;
    for (const auto& p : pods) {
        if (deleted_and_finished(p)) continue;
        DsKey key{p.pod.namespace_, p.pod.daemonset};
        if (by_key.count(key) != 0) {
            owned[key].push_back(&p);
        } else if (!p.terminating && !p.pod.deleting) {
            // The owner is gone: the garbage collector's cascading delete.
            removes.push_back(Removal{&p, "DaemonSet " + key.first + "/" + key.second + " removed"});
        }
    }

    ReconcilePlan plan;
    for (const auto& [key, d] : by_key) {
        auto it = owned.find(key);
        DaemonSetPlanner planner(*d, it == owned.end() ? std::vector<const ObservedPod*>{} : it->second,
                                 now_mono_ms, backoff);
        planner.run(plan.create, removes);
        if (planner.paced()) plan.paced.push_back(key.first + "/" + key.second);
        if (auto wake = planner.wake_at(); wake && (!plan.wake_at_mono_ms || *wake < *plan.wake_at_mono_ms))
            plan.wake_at_mono_ms = wake;
    }

    // Deterministic order: namespace, DaemonSet, then the pods oldest first.
    std::stable_sort(removes.begin(), removes.end(), [](const Removal& a, const Removal& b) {
        const PodRecord& x = a.pod->pod;
        const PodRecord& y = b.pod->pod;
        return std::tie(x.namespace_, x.daemonset, x.created_at_ms, x.name, x.uid) <
               std::tie(y.namespace_, y.daemonset, y.created_at_ms, y.name, y.uid);
    });
    plan.remove.reserve(removes.size());
    for (auto& r : removes) plan.remove.push_back(PodToDelete{r.pod->pod.uid, std::move(r.reason)});
    return plan;
}

bool cluster_paces_rollout(LinkState link, bool link_judged, const std::vector<PodInApi>& old_pods) {
    if (link != LinkState::Connected) return !link_judged;
    // Absent first: an Unknown pod can only turn Present or Absent, and each
    // then rolls alone beside an Absent one; waiting for it would hold the
    // rollout for good when two pods' creates keep failing in turn (each is
    // Absent only between its list and its create, while the other waits).
    if (std::find(old_pods.begin(), old_pods.end(), PodInApi::Absent) != old_pods.end()) return false;
    return true;
}

}  // namespace daemonlet
