// The kubelet's crash-loop backoff for one container, Kubernetes 1.25 to
// 1.30: kuberuntime_manager.go doBackOff over client-go's
// flowcontrol.Backoff, created by the kubelet as NewBackOff(10 s, 300 s)
// without jitter.
//
//   doBackOff(exit at FinishedAt):
//     IsInBackOffSince(key, FinishedAt)  no entry, or FinishedAt - lastUpdate > 2 x max
//                                          -> false: start now
//                                        else -> wait until FinishedAt + entry.backoff
//     Next(key)                          no entry or expired -> backoff = initial
//                                        else -> backoff = min(2 x backoff, max)
//                                        lastUpdate = now (the container starts next)
//
// lastUpdate is the moment of the last start, so FinishedAt - lastUpdate is
// how long the container ran: `ran_for_ms` here.
#include "core/reconcile.h"

#include <algorithm>

namespace daemonlet {

std::int64_t next_restart_delay(BackoffState& state, std::int64_t ran_for_ms, const BackoffPolicy& policy) {
    if (state.backoff_ms <= 0 || ran_for_ms > policy.reset_after_ms) {
        // No entry, or hasExpired: not in backoff, and Next starts the entry over.
        state.backoff_ms = policy.initial_ms;
        state.delay_ms = 0;
        return 0;
    }
    const std::int64_t delay = state.backoff_ms;
    state.delay_ms = delay;
    // min(2 x backoff, max) without overflowing.
    state.backoff_ms = delay > policy.max_ms / 2 ? policy.max_ms : std::min(delay * 2, policy.max_ms);
    return delay;
}

std::int64_t next_runtime_down_delay(std::int64_t previous_ms) {
    constexpr std::int64_t kBase = 100, kMax = 5'000;  // kubelet.go syncLoop: base, max
    if (previous_ms <= 0) return kBase;
    return std::min(kMax, previous_ms * 2);
}

}  // namespace daemonlet
