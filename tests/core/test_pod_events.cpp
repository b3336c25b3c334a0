// A board pod's Events on its Pod as the kubelet records them (issue 14
// §2, core/pod_events.h). Rows name the kubelet function whose reason and
// message they pin (Kubernetes 1.30), and client-go's spam filter.
#include <string>
#include <vector>

#include "core/json_diff.h"
#include "core/pod_events.h"

// CppUTest last: its leak-detection macros redefine new.
#include <CppUTest/TestHarness.h>

using namespace daemonlet;

TEST_GROUP(PodEvents){};

TEST(PodEvents, ReasonsAndMessagesAsTheKubeletRecordsThem) {
    const ContainerRef app{"main", false};
    const ContainerRef init{"setup", true};
    const ProbeKind liveness = ProbeKind::Liveness, startup = ProbeKind::Startup;
    struct Row {
        const char* name;
        PodEvent ev;
        const char* field_path;
        const char* type;
        const char* reason;
        const char* message;
    };
    const Row rows[] = {
        {"image_manager.go EnsureImageExists: Pulling", pulling_event(app, "busybox:1.36", 1),
         "spec.containers{main}", "Normal", "Pulling", "Pulling image \"busybox:1.36\""},
        {"EnsureImageExists: Pulled, the pull's time and the wait's",
         pulled_event(app, "busybox:1.36", 1500, 2250, 1), "spec.containers{main}", "Normal", "Pulled",
         "Successfully pulled image \"busybox:1.36\" in 1.5s (2.25s including waiting)"},
        {"EnsureImageExists: Failed (FailedToPullImage)", pull_failed_event(app, "x:1", "not found", 1),
         "spec.containers{main}", "Warning", "Failed", "Failed to pull image \"x:1\": not found"},
        {"EnsureImageExists: BackOff (BackOffPullImage) is Normal", pull_backoff_event(app, "x:1", 1),
         "spec.containers{main}", "Normal", "BackOff", "Back-off pulling image \"x:1\""},
        {"EnsureImageExists: ErrImageNeverPull", never_pull_event(app, "x:1", 1), "spec.containers{main}",
         "Warning", "ErrImageNeverPull", "Container image \"x:1\" is not present with pull policy of Never"},
        {"startContainer: Failed \"Error: %v\" with the pull's error", failed_event(app, "ErrImagePull", 1),
         "spec.containers{main}", "Warning", "Failed", "Error: ErrImagePull"},
        {"volume manager: FailedMount on the Pod, no fieldPath",
         warning_event(nullptr, "FailedMount", "hostPath type check failed", 1), "", "Warning", "FailedMount",
         "hostPath type check failed"},
        {"startContainer: FailedPostStartHook on the container",
         warning_event(&app, "FailedPostStartHook", "PostStartHook failed", 1), "spec.containers{main}",
         "Warning", "FailedPostStartHook", "PostStartHook failed"},
        {"startContainer: Created", created_event(app, 1), "spec.containers{main}", "Normal", "Created",
         "Created container main"},
        {"startContainer: Started; GenerateContainerRef of an init container", started_event(init, 1),
         "spec.initContainers{setup}", "Normal", "Started", "Started container setup"},
        {"killContainer: Killing, Stopping container", killing_event(app, nullptr, 1),
         "spec.containers{main}", "Normal", "Killing", "Stopping container main"},
        {"computePodActions: liveness failed, will be restarted", killing_event(app, &liveness, 1),
         "spec.containers{main}", "Normal", "Killing",
         "Container main failed liveness probe, will be restarted"},
        {"computePodActions: startup failed, will be restarted", killing_event(app, &startup, 1),
         "spec.containers{main}", "Normal", "Killing",
         "Container main failed startup probe, will be restarted"},
        {"prober.go runProbe: Unhealthy, probe failed",
         unhealthy_event(app, ProbeKind::Readiness, "HTTP probe failed with statuscode: 503", false, 1),
         "spec.containers{main}", "Warning", "Unhealthy",
         "Readiness probe failed: HTTP probe failed with statuscode: 503"},
        {"prober.go runProbe: Unhealthy, probe errored",
         unhealthy_event(app, ProbeKind::Liveness, "timeout", true, 1), "spec.containers{main}", "Warning",
         "Unhealthy", "Liveness probe errored: timeout"},
    };
    for (const auto& r : rows) {
        STRCMP_EQUAL_TEXT(r.field_path, r.ev.field_path.c_str(), r.name);
        STRCMP_EQUAL_TEXT(r.type, r.ev.type.c_str(), r.name);
        STRCMP_EQUAL_TEXT(r.reason, r.ev.reason.c_str(), r.name);
        STRCMP_EQUAL_TEXT(r.message, r.ev.message.c_str(), r.name);
    }
}

TEST(PodEvents, GoDurationAsTimeDurationString) {
    struct Row {
        const char* name;
        std::int64_t ms;
        const char* want;
    };
    const Row rows[] = {
        {"zero: 0s", 0, "0s"},
        {"under a second: ms", 850, "850ms"},
        {"whole seconds", 2000, "2s"},
        {"fraction trimmed", 1500, "1.5s"},
        {"minutes: 2m0s", 120'000, "2m0s"},
        {"minutes and a fraction", 123'004, "2m3.004s"},
        {"hours: 1h0m1s", 3'601'000, "1h0m1s"},
    };
    for (const auto& r : rows) STRCMP_EQUAL_TEXT(r.want, go_duration(r.ms).c_str(), r.name);
}

TEST(PodEvents, TheEventOnThePodWithItsContainerFieldPath) {
    const ApiPodRef pod{"edge", "agent-x7k2p", "uid-1"};
    // doBackOff: "in pod %s" with format.Pod of the API's Pod.
    ClusterEvent ev = pod_cluster_event(backoff_event({"main", false}, 1'767'225'600'000), pod);
    STRCMP_EQUAL("Back-off restarting failed container main in pod agent-x7k2p_edge(uid-1)",
                 ev.message.c_str());
    STRCMP_EQUAL("Warning", ev.type.c_str());
    const Json obj = event_object(ev, "board-1");
    const Json want = {{"kind", "Pod"},         {"apiVersion", "v1"}, {"namespace", "edge"},
                       {"name", "agent-x7k2p"}, {"uid", "uid-1"},     {"fieldPath", "spec.containers{main}"}};
    CHECK_TEXT(json_same(obj["involvedObject"], want), obj["involvedObject"].dump().c_str());
    STRCMP_EQUAL("BackOff", obj["reason"].get<std::string>().c_str());
    // Queued twice: folded into one with count 2 (EventCorrelator); another
    // container's is its own.
    EventQueue q;
    q.add(ev);
    q.add(ev);
    ClusterEvent other = ev;
    other.field_path = "spec.containers{side}";
    q.add(other);
    LONGS_EQUAL(2, q.size());
    LONGS_EQUAL(2, q.front().count);
}

TEST(PodEvents, FilterAsEventSourceObjectSpamFilterAndEventLoggerCounts) {
    PodEventFilter f;
    const ContainerRef app{"main", false};
    auto send = [&](const std::string& pod, const PodEvent& ev, std::int64_t now) {
        return f.decide(pod, ev, now).send;
    };
    // eventObserve: an Event identical to one the Pod has is a repeat, its
    // count and first time the first one's (a PATCH); another is new, and
    // a repeat of an older key counts on that one.
    PodEventSend d = f.decide("p1", started_event(app, 1'000), 0, "p1.first");
    CHECK_TRUE(d.send && !d.repeat);
    LONGS_EQUAL(1, d.count);
    STRCMP_EQUAL("p1.first", d.name.c_str());
    d = f.decide("p1", started_event(app, 2'000), 0, "p1.second");
    CHECK_TRUE_TEXT(d.send && d.repeat, "eventObserve: the same key counts on its Event");
    LONGS_EQUAL(2, d.count);
    LONGS_EQUAL(1'000, d.first_ms);
    // lastObservation.name: the repeat PATCHes the Event named first.
    STRCMP_EQUAL("p1.first", d.name.c_str());
    d = f.decide("p1", backoff_event(app, 3'000), 0);
    CHECK_TRUE(d.send && !d.repeat);
    d = f.decide("p1", started_event(app, 4'000), 0);
    CHECK_TRUE_TEXT(d.send && d.repeat && d.count == 3 && d.first_ms == 1'000,
                    "eventObserve: an older key (not the newest) still counts on its Event");
    // The burst of 25 per Pod (4 taken), then one per 5 minutes.
    int sent = 0;
    for (int i = 0; i < 40; ++i)
        if (send("p1", unhealthy_event(app, ProbeKind::Readiness, std::to_string(i), false, 1), 1000)) ++sent;
    LONGS_EQUAL(21, sent);
    CHECK_FALSE(send("p1", unhealthy_event(app, ProbeKind::Readiness, "x", false, 1), 200'000));
    CHECK_TRUE(send("p1", unhealthy_event(app, ProbeKind::Readiness, "y", false, 1), 301'000));
    // eventObserve runs before the spam filter: a repeat held back still
    // counts, and the next one let through carries the count.
    PodEventFilter g;
    for (int i = 0; i < 30; ++i) g.decide("p1", backoff_event(app, 5'000 + i), 0);
    d = g.decide("p1", backoff_event(app, 9'000), 600'000);
    CHECK_TRUE(d.send && d.repeat);
    LONGS_EQUAL(31, d.count);
    LONGS_EQUAL(5'000, d.first_ms);
    // Another Pod has its own bucket.
    CHECK_TRUE(send("p2", unhealthy_event(app, ProbeKind::Readiness, "x", false, 1), 301'000));
    // Bounded: kSeenPerPod keys per Pod (the oldest forgotten: new again),
    // the longest idle Pod forgotten past kMaxPods.
    // (Each over 10 minutes after the last: EventAggregator combines none.)
    PodEventFilter h;
    h.decide("p1", started_event(app, 1), 0);
    std::int64_t t = 0;
    for (std::size_t i = 0; i < PodEventFilter::kSeenPerPod; ++i)
        h.decide("p1", unhealthy_event(app, ProbeKind::Readiness, std::to_string(i), false, 2),
                 t += PodEventFilter::kAggregateIntervalMs + 1);
    CHECK_FALSE(h.decide("p1", started_event(app, 3), t).repeat);
    for (std::size_t i = 0; i < PodEventFilter::kMaxPods + 10; ++i)
        f.decide("q" + std::to_string(i), started_event(app, 1), 400'000 + static_cast<std::int64_t>(i));
    LONGS_EQUAL(PodEventFilter::kMaxPods, f.size());
}

// client-go tools/record events_cache.go EventAggregate (and
// TestEventAggregatorByReasonFunc's key): the same object, type and reason
// with kAggregateMaxEvents different messages within 10 minutes are one
// Event "(combined from similar events): <message>", counted by
// eventObserve under the aggregate key.
TEST(PodEvents, SimilarEventsCombinedAsEventAggregator) {
    PodEventFilter f;
    const ContainerRef app{"main", false};
    auto probe = [&](int i, std::int64_t wall) {
        return unhealthy_event(app, ProbeKind::Readiness, "out " + std::to_string(i), false, wall);
    };
    for (int i = 0; i < 9; ++i) {
        const PodEventSend d = f.decide("p1", probe(i, 1'000 + i), 0);
        CHECK_TEXT(d.send && !d.combined && !d.repeat, "below the threshold: the Event as it is");
    }
    // A repeat of a message seen: no new local key, counted on its own Event.
    PodEventSend d = f.decide("p1", probe(3, 1'500), 0);
    CHECK_TRUE(d.send && !d.combined && d.repeat && d.count == 2);
    // Another reason of the same object keeps its own record.
    CHECK_FALSE(f.decide("p1", backoff_event(app, 1'600), 0).combined);
    // The 10th different message: the combined Event, new.
    d = f.decide("p1", probe(9, 2'000), 0);
    CHECK_TRUE_TEXT(d.send && d.combined && !d.repeat && d.count == 1 && d.first_ms == 2'000,
                    "EventAggregate: the maxEvents-th local key gives the aggregate Event");
    ClusterEvent ev = pod_cluster_event(probe(9, 2'000), {"it", "web-x1", "uid-1"});
    const std::string own = ev.message;
    apply_send(d, ev);
    STRCMP_EQUAL((std::string(kCombinedPrefix) + own).c_str(), ev.message.c_str());
    // The next different one (in another container too: the aggregate key
    // has no field path) counts on the combined Event.
    d = f.decide("p1", unhealthy_event({"side", false}, ProbeKind::Readiness, "out 10", false, 3'000), 1'000);
    CHECK_TRUE_TEXT(d.send && d.combined && d.repeat && d.count == 2 && d.first_ms == 2'000,
                    "eventObserve under the aggregate key: a PATCH of the combined Event");
    // More than 10 minutes after the last: a fresh record, the Event as it is.
    d = f.decide("p1", probe(11, 700'000), 1'000 + PodEventFilter::kAggregateIntervalMs + 1);
    CHECK_TRUE(d.send && !d.combined && !d.repeat);
}

TEST(PodEvents, RepeatIsPatchedOnItsEventAndFoldsAsATotal) {
    const ClusterEvent ev =
        pod_cluster_event(backoff_event({"main", false}, 1'000), {"it", "web-x1", "uid-1"});
    ClusterEvent again = ev;
    again.repeat = true;
    again.count = 3;
    again.last_ms = 5'000;
    // recordToSink: the repeat's PATCH names the first one's Event.
    STRCMP_EQUAL(event_object(ev, "n")["metadata"]["name"].get<std::string>().c_str(),
                 event_name(again).c_str());
    const Json patch = event_patch(again);
    CHECK(patch == Json({{"count", 3}, {"lastTimestamp", "1970-01-01T00:00:05Z"}, {"message", ev.message}}));
    // Queued before its first was sent: the first goes with the total.
    EventQueue q;
    q.add(ev);
    q.add(again);
    LONGS_EQUAL(1, q.size());
    LONGS_EQUAL(3, q.front().count);
    CHECK_FALSE(q.front().repeat);
    // The first sent already: the repeat is queued, a PATCH, and a PATCH
    // that finds no Event creates it (front_repeat_created).
    q.pop();
    q.add(again);
    CHECK_TRUE(q.front().repeat);
    q.front_repeat_created();
    CHECK_FALSE(q.front().repeat);
}

TEST(PodEvents, TheEventBeingSentIsNeitherFoldedIntoNorDropped) {
    ClusterEvent a = pod_cluster_event(backoff_event({"main", false}, 1'000), {"it", "a", "uid-a"});
    ClusterEvent b = pod_cluster_event(backoff_event({"main", false}, 1'000), {"it", "b", "uid-b"});
    EventQueue q(2);
    q.add(a);
    q.set_front_in_flight(true);
    // A repeat of the one in flight is queued on its own: folded, its
    // count would go with the answer's pop.
    q.add(a);
    LONGS_EQUAL(2, q.size());
    LONGS_EQUAL(1, q.front().count);
    // Full: the oldest not in flight goes, never the one being sent.
    q.add(b);
    LONGS_EQUAL(2, q.size());
    STRCMP_EQUAL("a", q.items()[0].name.c_str());
    STRCMP_EQUAL("b", q.items()[1].name.c_str());
    LONGS_EQUAL(1, q.dropped());
    q.pop();  // the answer: the one sent goes, nothing in flight now
    q.add(b);
    LONGS_EQUAL(1, q.size());
    LONGS_EQUAL(2, q.front().count);
}
