// The board pods' Events on their Pods (issue 14 §2; the events and their
// bounds in core/pod_events.h). An Event of a pod whose Pod the API does
// not have yet (its ControllerRevision not written, its create in flight)
// waits for it, at most kPendingPerPod of them per pod (the oldest go);
// those of a pod that never gets one (a manifest file's DaemonSet, a static
// pod) are not kept at all. Sent through ClusterLink's Event queue, as the
// DaemonSets' Events: bounded, folded, kept across a disconnection; a
// repeat of one of the Pod's Events PATCHes its count (core PodEventFilter).
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>

#include "core/pod_events.h"

namespace daemonlet::agent {

class PodEvents {
  public:
    static constexpr std::size_t kPendingPerPod = 16;
    static constexpr std::size_t kPendingPods = 256;
    using Send = std::function<void(ClusterEvent)>;
    using PodOf = std::function<std::optional<ApiPodRef>(const std::string& board_uid)>;

    // An Event of board pod `board_uid`, whose Pod is `pod` (none yet:
    // kept if `may_get_one`). `mono_ms`: the monotonic clock.
    void record(const std::string& board_uid, const std::optional<ApiPodRef>& pod, bool may_get_one,
                PodEvent ev, std::int64_t mono_ms, const Send& send);
    // The kept Events of pods that have their Pod now are sent; those of
    // pods no longer in `live` are dropped.
    void flush(const PodOf& pod_of, const std::set<std::string>& live, std::int64_t mono_ms,
               const Send& send);
    std::size_t pending() const;
    // A step of the wall clock: the kept and the counted Events' times move.
    void rebase(const WallStep& step);

  private:
    void send_one(const ApiPodRef& pod, const PodEvent& ev, std::int64_t mono_ms, const Send& send);
    void flush_one(const std::string& board_uid, const ApiPodRef& pod, std::int64_t mono_ms,
                   const Send& send);
    std::map<std::string, std::deque<PodEvent>> pending_;
    PodEventFilter filter_;
};

}  // namespace daemonlet::agent
