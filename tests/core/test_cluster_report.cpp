// The Lease and Events the agent sends: shapes as kubelet's node lease and
// client-go's event recorder make them, and the offline queue's bounds.
#include "core/cluster_report.h"

#include <CppUTest/TestHarness.h>

using namespace daemonlet;

namespace {
ClusterEvent ev(const std::string& reason, std::int64_t t, const std::string& message = "m") {
    ClusterEvent e;
    e.namespace_ = "edge";
    e.kind = "DaemonSet";
    e.name = "agent";
    e.type = "Normal";
    e.reason = reason;
    e.message = message;
    e.first_ms = e.last_ms = t;
    return e;
}
}  // namespace

TEST_GROUP(ClusterReport){};

TEST(ClusterReport, RepeatsFoldIntoOneEventWithACountAndTheirTimes) {
    EventQueue q(10);
    q.add(ev("BackOff", 1000));
    q.add(ev("BackOff", 5000));
    q.add(ev("BackOff", 9000, "other message"));
    LONGS_EQUAL(2, q.size());
    LONGS_EQUAL(2, q.front().count);
    LONGS_EQUAL(1000, q.front().first_ms);
    LONGS_EQUAL(5000, q.front().last_ms);
}

TEST(ClusterReport, AFullQueueDropsTheOldestAndCountsThem) {
    EventQueue q(3);
    for (int i = 0; i < 5; ++i) q.add(ev("R" + std::to_string(i), i * 1000));
    LONGS_EQUAL(3, q.size());
    LONGS_EQUAL(2, q.dropped());
    STRCMP_EQUAL("R2", q.front().reason.c_str());
}

TEST(ClusterReport, EachQueuedEventHasItsOwnPlaceWhichAFoldKeeps) {
    // The key of its row in the store (QueuedEvents::save_now):
    // new Events take the next place, a fold keeps the queued one's, and an
    // Event loaded from the store keeps its place, the next ones after it.
    EventQueue q(10);
    ClusterEvent loaded = ev("Loaded", 500);
    loaded.seq = 41;
    q.add(loaded);
    q.add(ev("BackOff", 1000));
    q.add(ev("BackOff", 5000));  // folded
    q.add(ev("Started", 6000));
    LONGS_EQUAL(3, q.size());
    LONGS_EQUAL(41, q.items()[0].seq);
    LONGS_EQUAL(42, q.items()[1].seq);
    LONGS_EQUAL(2, q.items()[1].count);
    LONGS_EQUAL(43, q.items()[2].seq);
}

TEST(ClusterReport, EventsKeepTheirOriginalTimes) {
    ClusterEvent e = ev("SuccessfulCreate", 1'795'000'000'123);
    e.last_ms = 1'795'000'060'000;
    e.count = 3;
    e.uid = "u-1";
    Json j = event_object(e, "edge-01");
    STRCMP_EQUAL("Event", j["kind"].get<std::string>().c_str());
    STRCMP_EQUAL("2026-11-18T11:06:40Z", j["firstTimestamp"].get<std::string>().c_str());
    STRCMP_EQUAL("2026-11-18T11:07:40Z", j["lastTimestamp"].get<std::string>().c_str());
    LONGS_EQUAL(3, j["count"].get<int>());
    STRCMP_EQUAL("apps/v1", j["involvedObject"]["apiVersion"].get<std::string>().c_str());
    STRCMP_EQUAL("u-1", j["involvedObject"]["uid"].get<std::string>().c_str());
    // client-go's recorder: <name>.<first timestamp in nanoseconds, hex>.
    STRCMP_EQUAL("agent.18e91efd632854c0", j["metadata"]["name"].get<std::string>().c_str());
    STRCMP_EQUAL("edge-01", j["source"]["host"].get<std::string>().c_str());
}

TEST(ClusterReport, AnEventKeepsTheNameItWasQueuedWithAndTwoInOneMillisecondDiffer) {
    // makeEvent: "%v.%x" of the object's name and the time in nanoseconds;
    // here the milliseconds' nanoseconds carry a counter.
    STRCMP_EQUAL("agent.18e91efd632854c0", new_event_name("agent", 1'795'000'000'123, 0).c_str());
    STRCMP_EQUAL("agent.18e91efd632854c7", new_event_name("agent", 1'795'000'000'123, 7).c_str());
    CHECK(new_event_name("agent", 5, 1) != new_event_name("agent", 5, 2));
    ClusterEvent e = ev("BackOff", 1'795'000'000'123);
    e.event_name = "agent.kept";
    e.first_ms = 0;  // sent under the time it is sent at (a clock not set when queued)
    STRCMP_EQUAL("agent.kept", event_object(e, "n")["metadata"]["name"].get<std::string>().c_str());
}

TEST(ClusterReport, OnlyTheSameEventFoldsInTheQueue) {
    // A repeat of agent.a folds into it (its count is the total); an Event
    // of the same words under another name (the recorder forgot the first,
    // a restart) stays apart, so that its own repeats find it.
    EventQueue q(10);
    ClusterEvent a = ev("BackOff", 1000);
    a.event_name = "agent.a";
    q.add(a);
    ClusterEvent again = a;
    again.repeat = true;
    again.count = 3;
    q.add(again);
    ClusterEvent b = ev("BackOff", 2000);
    b.event_name = "agent.b";
    q.add(b);
    LONGS_EQUAL(2, q.size());
    LONGS_EQUAL(3, q.front().count);
    CHECK_FALSE(q.front().repeat);
}

TEST(ClusterReport, AnAnswerSaysWhatBecomesOfTheQueuedEvent) {
    struct Row {
        const char* name;
        bool repeat;
        int count;
        long status;
        EventAnswer expected;
    };
    static const Row rows[] = {
        {"POST created", false, 1, 201, EventAnswer::Sent},
        {"PATCH counted", true, 2, 200, EventAnswer::Sent},
        // recordToSink: a PATCH that finds none creates the Event.
        {"PATCH of a gone Event is a POST", true, 2, 404, EventAnswer::Create},
        // Sent again after a restart or a cut: the name is made, so was it.
        {"POST of a made Event counts as sent", false, 1, 409, EventAnswer::Sent},
        {"POST of a made Event with repeats PATCHes its count", false, 4, 409, EventAnswer::PatchNext},
        {"a PATCH's conflict is refused", true, 2, 409, EventAnswer::Refused},
        {"forbidden is refused", false, 1, 403, EventAnswer::Refused},
        {"too many requests is retried", false, 1, 429, EventAnswer::Retry},
        {"a server error is retried", false, 1, 503, EventAnswer::Retry},
    };
    for (const Row& r : rows) {
        ClusterEvent e = ev("BackOff", 1000);
        e.repeat = r.repeat;
        e.count = r.count;
        CHECK_TEXT(event_answer(e, r.status) == r.expected, r.name);
    }
}

TEST(ClusterReport, TheLeaseIsKubeletsNodeLease) {
    Json l = lease_object("edge-01", "kube-node-lease", 40, 1'795'000'000'123);
    STRCMP_EQUAL("coordination.k8s.io/v1", l["apiVersion"].get<std::string>().c_str());
    STRCMP_EQUAL("edge-01", l["metadata"]["name"].get<std::string>().c_str());
    STRCMP_EQUAL("kube-node-lease", l["metadata"]["namespace"].get<std::string>().c_str());
    STRCMP_EQUAL("edge-01", l["spec"]["holderIdentity"].get<std::string>().c_str());
    LONGS_EQUAL(40, l["spec"]["leaseDurationSeconds"].get<int>());
    // metav1.MicroTime: microseconds.
    STRCMP_EQUAL("2026-11-18T11:06:40.123000Z", l["spec"]["renewTime"].get<std::string>().c_str());
}
