// A board pod's Events as the kubelet records them on its Pod (issue 14 §2):
// reasons from pkg/kubelet/events/event.go, messages in the kubelet's
// formats, involvedObject the Pod with fieldPath the container
// (kubecontainer.GenerateContainerRef: "spec.containers{name}",
// "spec.initContainers{name}"). Sent only for pods that have a Pod in the
// API (agent/daemon/pod_events.cpp).
//
// Upstream (Kubernetes 1.30):
//   images/image_manager.go EnsureImageExists: Pulling "Pulling image %q";
//     Pulled "Successfully pulled image %q in %v (%v including waiting)";
//     Failed "Failed to pull image %q: %v"; BackOff (Normal) "Back-off
//     pulling image %q"; ErrImageNeverPull "Container image %q is not
//     present with pull policy of Never";
//   kuberuntime_container.go startContainer: Failed "Error: %v" (the pull's
//     ErrImagePull / ImagePullBackOff, a config or runtime error), Created
//     "Created container %s", Started "Started container %s";
//   killContainer: Killing "Stopping container %s", or computePodActions'
//     "Container %s failed liveness probe, will be restarted";
//   kuberuntime_manager.go doBackOff: BackOff (Warning) "Back-off restarting
//     failed container %s in pod %s" with format.Pod ("name_namespace(uid)");
//   prober/prober.go runProbe: Unhealthy "%s probe failed: %s" (Liveness,
//     Readiness, Startup), "%s probe errored: %v".
//
// Bounded as client-go's recorder bounds them (tools/record
// events_cache.go EventSourceObjectSpamFilter: per object a token bucket
// of 25, refilled one per 5 minutes), and an Event identical to one the Pod
// already has (same container, type, reason and message) counted on it
// (events_cache.go eventLogger.eventObserve: the same name and
// firstTimestamp, count + 1, sent as a PATCH of count, lastTimestamp and
// message), after EventAggregator has combined similar ones (the same
// object, type and reason with 10 different messages within 10 minutes:
// one Event "(combined from similar events): <the newest message>").
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/cluster_report.h"
#include "core/probe.h"

namespace daemonlet {

struct PodEvent {
    std::string field_path;  // "" : the Pod itself
    std::string type;        // Normal, Warning
    std::string reason;
    std::string message;
    // doBackOff's message ends " in pod <format.Pod>" (format_pod,
    // core/security_context.h), the Pod's name and uid, known once the Pod
    // is: added by pod_cluster_event.
    bool names_pod = false;
    std::int64_t time_ms = 0;  // wall clock
};

// A Pod of the API: the board pod's (agent/daemon/api_pods.h).
struct ApiPodRef {
    std::string namespace_;
    std::string name;
    std::string uid;
};

// A container of the pod's spec: app container or init container.
struct ContainerRef {
    std::string name;
    bool init = false;
};

// GenerateContainerRef's fieldPath (pkg/kubelet/container/ref.go
// fieldPath): spec.containers{name} or spec.initContainers{name}.
std::string container_field_path(const ContainerRef& c);
// Go's time.Duration String of a whole number of milliseconds (what
// Truncate(time.Millisecond) leaves): "0s", "850ms", "1.5s", "2m3.004s".
std::string go_duration(std::int64_t ms);

PodEvent pulling_event(const ContainerRef& c, const std::string& image, std::int64_t now_ms);
PodEvent pulled_event(const ContainerRef& c, const std::string& image, std::int64_t pull_ms,
                      std::int64_t total_ms, std::int64_t now_ms);
PodEvent pull_failed_event(const ContainerRef& c, const std::string& image, const std::string& error,
                           std::int64_t now_ms);
PodEvent pull_backoff_event(const ContainerRef& c, const std::string& image, std::int64_t now_ms);
PodEvent never_pull_event(const ContainerRef& c, const std::string& image, std::int64_t now_ms);
// startContainer's Failed "Error: <what>": ErrImagePull, ImagePullBackOff,
// a CreateContainerConfigError's message, the runtime's error.
PodEvent failed_event(const ContainerRef& c, const std::string& what, std::int64_t now_ms);
// A Warning of `reason` with `message`, on the container (or on the Pod
// itself when `c` is null): the volume manager's FailedMount (Pod),
// startContainer's FailedPostStartHook and killContainer's
// FailedPreStopHook ("PostStartHook failed": the hook's output is kept out
// of the Event, as upstream keeps it).
PodEvent warning_event(const ContainerRef* c, const char* reason, std::string message, std::int64_t now_ms);
PodEvent created_event(const ContainerRef& c, std::int64_t now_ms);
PodEvent started_event(const ContainerRef& c, std::int64_t now_ms);
// `probe`: the probe that failed (Liveness, Startup) or none (a stop).
PodEvent killing_event(const ContainerRef& c, const ProbeKind* probe, std::int64_t now_ms);
PodEvent backoff_event(const ContainerRef& c, std::int64_t now_ms);
// `errored`: the probe could not be run (prober.go's "errored"), else it failed.
PodEvent unhealthy_event(const ContainerRef& c, ProbeKind kind, const std::string& output, bool errored,
                         std::int64_t now_ms);

// The Event for `ev` on the Pod.
ClusterEvent pod_cluster_event(const PodEvent& ev, const ApiPodRef& pod);

// How a Pod's Event goes out, as client-go's EventCorrelator decides
// (events_cache.go EventCorrelate: eventObserve, then the spam filter):
// not at all (the filter's tokens are spent), as a new Event, or as a
// repeat of one sent before, counted on it.
struct PodEventSend {
    bool send = false;
    bool repeat = false;        // PATCH the Event named by `first_ms` (ClusterEvent::repeat)
    std::int32_t count = 1;     // its count with this one
    std::int64_t first_ms = 0;  // the first one's time (wall clock): its name and firstTimestamp
    bool combined = false;      // EventAggregator's: the message is kCombinedPrefix + its own
    std::string name;           // the Event's metadata.name: a repeat's is its first's
};
inline constexpr const char* kCombinedPrefix = "(combined from similar events): ";

// The decision applied to the Event made of it (its count, first time,
// repeat and, combined, its message).
void apply_send(const PodEventSend& how, ClusterEvent& ev);

// EventSourceObjectSpamFilter's token bucket per Pod (kSpamBurst, one more
// each kSpamRefillMs) and eventLogger's cache of the Events seen (per Pod
// the kSeenPerPod newest keys; client-go keeps 4096 for the whole node).
// A repeat is counted even when the filter holds it back, so the next one
// let through carries the count, as eventObserve runs before the filter.
// `pod` names the Pod (its uid); `now_ms` is monotonic (a step of the wall
// clock refills nothing); the Event's own time_ms is its wall time.
class PodEventFilter {
  public:
    static constexpr double kSpamBurst = 25;
    static constexpr std::int64_t kSpamRefillMs = 300'000;
    // EventAggregator: defaultAggregateMaxEvents, defaultAggregateIntervalInSeconds.
    static constexpr std::size_t kAggregateMaxEvents = 10;
    static constexpr std::int64_t kAggregateIntervalMs = 600'000;
    // Bounded: more Pods than this and the longest idle is forgotten.
    static constexpr std::size_t kMaxPods = 512;
    static constexpr std::size_t kSeenPerPod = 16;

    // `name`: the name a new Event gets (new_event_name); a repeat keeps
    // the one its first got, as eventObserve keeps lastObservation.name.
    PodEventSend decide(const std::string& pod, const PodEvent& ev, std::int64_t now_ms,
                        std::string name = {});
    // A step of the wall clock (wall_clock.h): the first times move, as the
    // queued Events' do, so that a repeat still names its Event.
    void rebase(const WallStep& step);
    void forget(const std::string& pod) { pods_.erase(pod); }
    std::size_t size() const { return pods_.size(); }

  private:
    struct Seen {
        std::string key;  // field path, type, reason and message
        std::int64_t first_ms = 0;
        std::int32_t count = 0;
        std::string name;
    };
    // EventAggregator's record of one type and reason: the messages seen.
    struct Similar {
        std::string key;  // type and reason
        std::vector<std::string> messages;
        std::int64_t last_ms = 0;  // monotonic
    };
    struct State {
        double tokens = kSpamBurst;
        std::int64_t refilled_ms = 0;
        std::vector<Seen> seen;        // the newest last
        std::vector<Similar> similar;  // the newest last, kSeenPerPod at most
    };
    // EventAggregate: true when `ev` is to be combined with its similar ones.
    static bool aggregate(State& s, const PodEvent& ev, std::int64_t now_ms);
    std::map<std::string, State> pods_;
};

}  // namespace daemonlet
