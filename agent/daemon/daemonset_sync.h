// The DaemonSetSync component: the DaemonSet controller's syncDaemonSet
// for this one node (pkg/controller/daemon/daemon_controller.go
// syncDaemonSet -> manage: podsShouldBeOnNode, then syncNodes; update.go
// rollingUpdate), over the DaemonSets in force (DesiredDaemonSets,
// desired_daemonsets.h) and the pods the agent runs (PodTable,
// pod_table.h). The decisions are core's plan_reconcile (core/reconcile.h);
// this owns what the controller keeps between passes: its failedPodsBackoff,
// the DaemonSets whose rollout here waits for the controller (apiServer.
// rollouts: cluster), and the creates-per-turn cap. It returns what a pass
// does as plain data (the pods to terminate, the pods to create, whether to
// plan again and when to wake); the agent does it (pods.cpp: terminations,
// admission, the start, logs and events, timers).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "agent/daemon/desired_daemonsets.h"
#include "agent/daemon/pod_table.h"
#include "core/model.h"
#include "core/reconcile.h"
#include "platform/clock.h"

namespace daemonlet::agent {

class DaemonSetSync {
  public:
    // At most this many pods are created per loop turn, the rest planned
    // again on the next one: each costs store writes, and 50 DaemonSets
    // dropped in at once must not hold the loop (its watchdog pings, the
    // control socket) for all of them. Not upstream's slow start
    // (syncNodes' batches of SlowStartInitialBatchSize, doubling), which
    // guards against a failing API server, not a busy loop.
    static constexpr std::size_t kCreatesPerTurn = 8;

    // What a pass asks of the agent.
    class Host {
      public:
        virtual ~Host() = default;
        // The node the DaemonSets are placed on (node_should_run_daemon_pod).
        virtual const Node& sync_node() const = 0;
        // Whether the DaemonSet controller paces `d`'s rollout here
        // (DesiredDaemonSet::paced_by_cluster, cluster_made_new_pod).
        virtual void pace_by_cluster(const DesiredDaemonSets::Desired& d, DesiredDaemonSet& w) const = 0;
    };

    // The state a pass plans over: taken before the pass's other work
    // (the waiting containers' starts, the static pods) changes the table.
    struct Observed {
        std::vector<DesiredDaemonSet> want;  // one per DaemonSet in force, in key order
        std::vector<ObservedPod> seen;       // the table's pods but the static ones
    };

    // One pass's decisions.
    struct Plan {
        std::vector<PodToDelete> remove;  // terminated first
        std::vector<PodToCreate> create;  // then created, at most kCreatesPerTurn
        // Something was to be done: plan again (what was done changes what
        // is observed); next_turn: only after the loop has polled, the
        // creates being capped.
        bool again = false;
        bool next_turn = false;
        // The plan may change by itself this much later (minReadySeconds,
        // the failed-pod back-off): plan again then.
        std::optional<std::uint64_t> wake_in_ms;
        // DaemonSets whose rollout here began to wait for the controller
        // with this pass (said once until they stop waiting).
        std::vector<std::string> newly_paced;
    };

    // `random(n, alphabet)`: n characters drawn from the alphabet (the pods'
    // uids and names); empty: a random generator.
    using Random = std::function<std::string(std::size_t n, std::string_view alphabet)>;

    DaemonSetSync(Host& host, const platform::Clock& clock, Random random = {});
    DaemonSetSync(const DaemonSetSync&) = delete;
    DaemonSetSync& operator=(const DaemonSetSync&) = delete;

    // The pass's input, as the table is now (readiness refreshed by the
    // agent first).
    Observed observe(const DesiredDaemonSets& desired, const PodTable& pods) const;
    // The pass, at the monotonic time now: the controller's back-off and
    // the paced DaemonSets move on.
    Plan plan(const Observed& observed);
    // The new pod of `c` as the controller and the API server make it: a v4
    // UUID, the name "<daemonset>-<5 random characters>" (GenerateName,
    // apiserver names.SimpleNameGenerator: utilrand's alphabet, no vowels),
    // its revision, created now (wall clock).
    LivePod new_pod(const PodToCreate& c) const;

    // The last pass's DaemonSets whose rollout here waits for the DaemonSet
    // controller (ReconcilePlan::paced), for `daemonlet status`.
    const std::vector<std::string>& paced() const { return paced_; }

  private:
    Host& host_;
    const platform::Clock& clock_;
    Random random_;
    // The DaemonSet controller's back-off on deleting Failed pods (core/reconcile.h).
    FailedPodsBackoff failed_pods_backoff_;
    std::vector<std::string> paced_;
};

}  // namespace daemonlet::agent
