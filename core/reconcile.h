// The reconciler's plan: desired state (each DaemonSet's decision for this
// node and its current revision) against actual state (the local pods), as
// the upstream DaemonSet controller's manage and rollingUpdate passes do it
// for one node (pkg/controller/daemon/daemon_controller.go
// podsShouldBeOnNode, update.go rollingUpdate), plus the kubelet's
// crash-loop backoff for restarting exited containers. Pure: the agent
// passes in the monotonic time and carries out the plan.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/connectivity.h"
#include "core/decision.h"
#include "core/model.h"
#include "core/pod.h"

namespace daemonlet {

struct DesiredDaemonSet {
    const DaemonSet* ds = nullptr;  // valid, defaulted
    std::string hash;               // template_hash of its template
    std::int64_t revision = 0;      // the revision number of that template
    Decision decision;              // for this node
    // The DaemonSet controller paces this DaemonSet's rollout (issue 14 §3:
    // a connected board with apiServer.rollouts: cluster, its old pods
    // having their Pods). A kubelet replaces no pod for a template change:
    // the controller's rollingUpdate deletes the old Pod (update.go), and
    // the kubelet only follows that deletion (deleted_by_user here). So the
    // rolling-update pass deletes nothing and starts a surge pod only for
    // the controller's Pod (`cluster_made_new_pod`), and manage keeps a
    // surged old pod, both left to the controller; ReconcilePlan::paced
    // names the DaemonSets held so.
    bool paced_by_cluster = false;
    // With maxSurge: the controller has made a Pod of the current revision
    // for this node, which the board's new pod is to take.
    bool cluster_made_new_pod = false;
};

// Whether the API holds the Pod of one of the board's pods, as far as the
// board knows: Unknown until it has listed the node's Pods and looked for
// that pod's own.
enum class PodInApi { Unknown, Present, Absent };

// Whether the DaemonSet controller paces a cluster DaemonSet's rollout on
// this board (DesiredDaemonSet::paced_by_cluster, apiServer.rollouts:
// cluster), from the link (core Connectivity) and what the board knows of
// the Pods of its old-revision pods. A kubelet node always waits for the
// controller (update.go rollingUpdate deletes, HandlePodUpdates follows);
// a board waits only while the controller can act:
//   - connected, every old pod's Pod present: paced;
//   - connected, an old pod's Pod not known yet: held (paced), so that a
//     new link does not roll past the controller before it has looked;
//   - connected, an old pod without its Pod: the controller cannot delete
//     what it does not see: the board rolls alone, whatever the other old
//     pods' Pods are (known or not);
//   - disconnected and judged (connected once, then 15 s of failing; or a
//     new link that has not connected for 15 s): the board rolls alone,
//     where a kubelet cut off would change nothing;
//   - disconnected, not judged yet (the agent's start, a reload's new
//     link): held, since not connected yet is no outage.
bool cluster_paces_rollout(LinkState link, bool link_judged, const std::vector<PodInApi>& old_pods);

// A pod as the reconciler sees it: the record plus what the agent measured.
struct ObservedPod {
    PodRecord pod;
    bool terminating = false;  // a stop was requested and its containers have not all exited yet
    bool ready = false;        // every container ready (probes)
    std::optional<std::int64_t> ready_since_mono_ms;  // when it last became ready
    bool deleted_by_user = false;                     // `daemonlet delete pod` (OnDelete replaces it)
};

struct PodToCreate {
    std::string namespace_;
    std::string daemonset;
    std::string hash;
    std::int64_t revision = 0;
};

struct PodToDelete {
    std::string uid;
    std::string reason;  // for logs and events: "node no longer matches ...", "rolling update", "duplicate"
};

struct ReconcilePlan {
    std::vector<PodToCreate> create;
    std::vector<PodToDelete> remove;
    // The earliest monotonic time at which the plan may change by itself
    // (a pod becoming available after minReadySeconds): run again then.
    std::optional<std::int64_t> wake_at_mono_ms;
    // "namespace/name" of each DaemonSet paced_by_cluster whose rollout
    // would replace a pod here now, left to the DaemonSet controller.
    std::vector<std::string> paced;
};

// True when the pod has been ready for minReadySeconds (podutil.IsPodAvailable):
// ready, and minReadySeconds is 0 or ready_since + minReadySeconds <= now (a
// ready pod without ready_since is not available then). Inclusive, as
// upstream since 1.34 (PR 132122); 1.25 to 1.30 compared strictly, one
// millisecond later, which would make wake_at_mono_ms one tick early.
bool pod_available(const ObservedPod& pod, std::int32_t min_ready_seconds, std::int64_t now_mono_ms);

// The DaemonSet controller's failedPodsBackoff (daemon_controller.go:
// flowcontrol.NewBackOff(1 s, 15 min), keyed by DaemonSet and node; here
// the node is this one). A Failed pod (one the kubelet rejected at
// admission) is deleted only when its DaemonSet is not in back-off, and
// each deletion doubles the back-off (Next), so a pod the node keeps
// rejecting is not made and deleted in a hot loop; while in back-off the
// Failed pod stays, as upstream, and no new pod is made beside it. An
// entry not updated for 2 x max is forgotten (hasExpired, GC). Kept in
// memory by the caller across passes, as upstream's (a restart starts
// afresh).
struct FailedPodsBackoff {
    struct Entry {
        std::int64_t backoff_ms = 0;
        std::int64_t last_update_ms = 0;  // monotonic
    };
    std::map<std::pair<std::string, std::string>, Entry> entries;  // (namespace, "name/uid/template hash")
    std::int64_t initial_ms = 1'000;
    std::int64_t max_ms = 15 * 60'000;
};

// One pass over every DaemonSet and every pod (pods of DaemonSets no longer
// desired are removed). `failed_backoff`: the back-off state, updated;
// none: a fresh one for this pass alone.
ReconcilePlan plan_reconcile(const std::vector<DesiredDaemonSet>& desired,
                             const std::vector<ObservedPod>& pods, std::int64_t now_mono_ms,
                             FailedPodsBackoff* failed_backoff = nullptr);

// A run longer than this forgets a container's crash-loop back-off: 2 x the
// kubelet's MaxContainerBackOff of 300 s (flowcontrol.Backoff hasExpired).
inline constexpr std::int64_t kCrashLoopResetAfterMs = 600'000;

// The kubelet's crash-loop backoff for one container.
struct BackoffPolicy {
    std::int64_t initial_ms = 10'000;
    std::int64_t max_ms = 300'000;
    std::int64_t reset_after_ms = kCrashLoopResetAfterMs;  // healthy running time that forgets the backoff
};
struct BackoffState {
    std::int64_t delay_ms = 0;  // the delay used for the last restart (0: none yet, or it was immediate)
    // The kubelet's backoff entry (flowcontrol.Backoff entry.backoff): what
    // the next restart waits unless the run resets it; 0: no entry yet.
    std::int64_t backoff_ms = 0;
};
// The delay before restarting a container that exited after running for
// `ran_for_ms`, and the new state, as kuberuntime doBackOff with
// flowcontrol.Backoff(initial, max): the first exit restarts at once and
// starts the backoff at initial; each later exit waits the backoff, which
// then doubles up to max (delays 0, 10, 20, 40, 80, 160, 300, 300 s); a run
// longer than reset_after_ms (2 x max upstream, strictly longer) forgets it
// all, so that exit restarts at once again.
std::int64_t next_restart_delay(BackoffState& state, std::int64_t ran_for_ms, const BackoffPolicy& policy);

// The wait before trying again to start a container whose runtime did not
// answer (CRI "unavailable": containerd down), given the previous such wait
// (0: none). This is not the container's failure, so its crash-loop backoff
// is left alone: the kubelet skips pod syncs while the runtime is down
// (kubelet.go syncLoop: runtimeErrors, a sleep from 100 ms doubling up to
// 5 s) and starts the pod at the first sync after it is back.
std::int64_t next_runtime_down_delay(std::int64_t previous_ms);

}  // namespace daemonlet
