// The DaemonSetEvents component (agent/daemon/daemonset_events.h): the
// events the agent records on a DaemonSet, in a real SQLite store in a
// temporary directory, on a fake clock. The Host is a fake: the cluster's
// DaemonSets are the test's (ns/name -> uid, none without a link), and the
// Events for the cluster are kept as sent.
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "agent/daemon/daemonset_events.h"
#include "core/strings.h"
#include "tests/agent/daemon/fake_clock.h"
#include "tests/store/store_fixture.h"

#include <CppUTest/TestHarness.h>

using namespace daemonlet;
using namespace daemonlet::agent;
using namespace daemonlet::testing;

namespace {

constexpr const char* kEventsNs = "kube-system";

class FakeEventsHost final : public DaemonSetEvents::Host {
  public:
    store::Store* ds_events_store() override { return store; }
    std::optional<std::string> cluster_daemonset_uid(const std::string& ns,
                                                     const std::string& name) const override {
        if (!linked) return std::nullopt;
        auto it = cluster.find(ns + "/" + name);
        if (it == cluster.end()) return std::nullopt;
        return it->second;
    }
    void send_ds_event(ClusterEvent ev) override { sent.push_back(std::move(ev)); }
    const std::string& events_node_name() const override { return node; }

    store::Store* store = nullptr;
    bool linked = true;                          // a link to the API server
    std::map<std::string, std::string> cluster;  // the cluster's DaemonSets: "ns/name" -> uid
    std::vector<ClusterEvent> sent;
    std::string node = "board-7";
};

DesiredDaemonSets::Desired desired_ds(const std::string& name, const std::string& hash = "h1",
                                      std::int64_t revision = 1) {
    auto ds = std::make_shared<DaemonSet>();
    ds->metadata.namespace_ = kEventsNs;
    ds->metadata.name = name;
    DesiredDaemonSets::Desired d;
    d.object = ds;
    d.from = ds;
    d.hash = hash;
    d.revision = revision;
    return d;
}

PodRecord ds_pod(const std::string& ds, PodPhase phase = PodPhase::Running) {
    PodRecord p;
    p.uid = "uid-" + ds;
    p.name = ds + "-x7k2p";
    p.namespace_ = kEventsNs;
    p.daemonset = ds;
    p.phase = phase;
    return p;
}

Decision says_no(std::vector<std::string> reasons, bool may_continue) {
    return Decision{false, may_continue, std::move(reasons)};
}

Decision runs() { return Decision{true, true, {}}; }

}  // namespace

TEST_GROUP(DaemonSetEvents) {
    TempDir dir;
    FakeClock clock;
    FakeEventsHost host;
    std::unique_ptr<store::Store> store;
    std::unique_ptr<DaemonSetEvents> events;

    void setup() override {
        store = MUST(store::Store::open(dir.file("daemonlet.db"), clock.wall_ms(), nullptr));
        host.store = store.get();
        events = std::make_unique<DaemonSetEvents>(host, clock);
    }
    void teardown() override {
        events.reset();
        store.reset();
    }
    // The store's rows on DaemonSet `name`, oldest first: "type reason: message".
    std::vector<std::string> rows(const std::string& name) {
        std::vector<std::string> out;
        for (const auto& ev : MUST(store->list_events(kEventsNs, "DaemonSet/" + name, 100)))
            out.push_back(ev.type + " " + ev.reason + ": " + ev.message);
        return out;
    }
    std::string rows_text(const std::string& name) { return join(rows(name), "\n"); }
    // The Events sent to the cluster: "name reason: message".
    std::string sent_text() {
        std::vector<std::string> out;
        for (const auto& ev : host.sent) out.push_back(ev.name + " " + ev.reason + ": " + ev.message);
        return join(out, "\n");
    }
};

// Flash wear: an event identical to the DaemonSet's newest (same reason and
// message), a crash loop's BackOff, is one row; a different one is written,
// and the first again after it.
TEST(DaemonSetEvents, AnIdenticalEventIsNotWrittenTwiceADifferentOneIs) {
    const PodRecord pod = ds_pod("agent");
    events->backoff(pod, "main");
    clock.advance(10'000);
    events->backoff(pod, "main");
    STRCMP_EQUAL("Warning BackOff: Back-off restarting failed container main in pod agent-x7k2p",
                 rows_text("agent").c_str());
    events->backoff(pod, "sidecar");
    events->backoff(pod, "main");
    STRCMP_EQUAL(
        "Warning BackOff: Back-off restarting failed container main in pod agent-x7k2p\n"
        "Warning BackOff: Back-off restarting failed container sidecar in pod agent-x7k2p\n"
        "Warning BackOff: Back-off restarting failed container main in pod agent-x7k2p",
        rows_text("agent").c_str());
    // Same message, another reason: a different event.
    events->record(kEventsNs, "agent", "Warning", "Other",
                   "Back-off restarting failed container main in pod agent-x7k2p");
    LONGS_EQUAL(4, rows("agent").size());
}

// A static pod has no DaemonSet: nothing in the store, nothing sent (its
// log line says what happened).
TEST(DaemonSetEvents, AStaticPodRecordsNothing) {
    host.cluster["kube-system/"] = "uid-nothing";
    PodRecord pod = ds_pod("");
    pod.name = "static-web-board-7";
    events->pod_removed(pod, "deleted by the user");
    events->backoff(pod, "main");
    LONGS_EQUAL(0, rows("").size());
    LONGS_EQUAL(0, RawDb(dir.file("daemonlet.db")).scalar("SELECT count(*) FROM events"));
    LONGS_EQUAL(0, host.sent.size());
}

// The DaemonSet controller's FailedDaemonPod (daemon_controller.go
// podsShouldBeOnNode: "Found failed daemon pod %s/%s on node %s, will try
// to kill it"), then its delete's SuccessfulDelete.
TEST(DaemonSetEvents, AFailedDaemonPodIsFoundThenDeleted) {
    events->pod_removed(ds_pod("agent", PodPhase::Failed), "failed daemon pod (exit 1)");
    STRCMP_EQUAL(
        "Warning FailedDaemonPod: Found failed daemon pod kube-system/agent-x7k2p on node board-7, "
        "will try to kill it\n"
        "Normal SuccessfulDelete: Deleted pod: agent-x7k2p (failed daemon pod (exit 1))",
        rows_text("agent").c_str());
    // A pod that is not Failed, or a Failed one stopped for another reason:
    // a delete only.
    events->pod_removed(ds_pod("other"), "failed daemon pod (exit 1)");
    events->pod_removed(ds_pod("third", PodPhase::Failed), "deleted by the user");
    STRCMP_EQUAL("Normal SuccessfulDelete: Deleted pod: other-x7k2p (failed daemon pod (exit 1))",
                 rows_text("other").c_str());
    STRCMP_EQUAL("Normal SuccessfulDelete: Deleted pod: third-x7k2p (deleted by the user)",
                 rows_text("third").c_str());
}

// A NoExecute taint the pod does not tolerate: the taint manager's
// eviction (TaintManagerEviction "Marking for deletion Pod %s"), not the
// controller's SuccessfulDelete.
TEST(DaemonSetEvents, ANoExecuteTaintEvictsInsteadOfDeleting) {
    events->pod_removed(ds_pod("agent"), "taint dedicated=edge:NoExecute is not tolerated");
    STRCMP_EQUAL(
        "Warning TaintManagerEviction: Marking for deletion Pod kube-system/agent-x7k2p: "
        "taint dedicated=edge:NoExecute is not tolerated",
        rows_text("agent").c_str());
}

// FailedPlacement (the DaemonSet controller's, when the node does not fit)
// once per change of the decision: "runs" silences it, and the same "no"
// after it is said again. Seen on the cluster's side, where each recorded
// event goes (the store's row of a repeat is the newest's).
TEST(DaemonSetEvents, FailedPlacementOncePerChangeOfTheDecision) {
    host.cluster["kube-system/agent"] = "uid-agent";
    const auto d = desired_ds("agent");
    events->placement(d, says_no({"taint a=b:NoExecute is not tolerated"}, false));
    events->placement(d, says_no({"taint a=b:NoExecute is not tolerated"}, false));
    events->placement(d, says_no({"node(s) didn't match Pod's node affinity/selector", "x"}, true));
    events->placement(d, says_no({"node(s) didn't match Pod's node affinity/selector", "x"}, true));
    events->placement(d, runs());
    events->placement(d, runs());
    events->placement(d, says_no({"node(s) didn't match Pod's node affinity/selector", "x"}, true));
    events->placement(d, says_no({}, true));
    STRCMP_EQUAL(
        "agent FailedPlacement: failed to place pod on \"board-7\": taint a=b:NoExecute is not "
        "tolerated (a running pod is stopped)\n"
        "agent FailedPlacement: failed to place pod on \"board-7\": node(s) didn't match Pod's "
        "node affinity/selector; x\n"
        "agent FailedPlacement: failed to place pod on \"board-7\": node(s) didn't match Pod's "
        "node affinity/selector; x\n"
        "agent FailedPlacement: failed to place pod on \"board-7\": the node does not match",
        sent_text().c_str());
    // Another DaemonSet's decision is its own.
    events->placement(desired_ds("other"), says_no({"taint a=b:NoExecute is not tolerated"}, false));
    LONGS_EQUAL(1, rows("other").size());
}

// RolloutComplete once per hash: not again for the same hash, again only
// after another hash completed (an undo back to it); each DaemonSet its own.
TEST(DaemonSetEvents, RolloutCompleteOncePerHash) {
    CHECK_TRUE(events->rollout_done(desired_ds("agent", "h1", 1)));
    CHECK_FALSE(events->rollout_done(desired_ds("agent", "h1", 1)));
    CHECK_TRUE(events->rollout_done(desired_ds("agent", "h2", 2)));
    CHECK_TRUE(events->rollout_done(desired_ds("agent", "h1", 3)));
    CHECK_TRUE(events->rollout_done(desired_ds("other", "h1", 1)));
    STRCMP_EQUAL(
        "Normal RolloutComplete: Revision 1 (h1) rolled out\n"
        "Normal RolloutComplete: Revision 2 (h2) rolled out\n"
        "Normal RolloutComplete: Revision 3 (h1) rolled out",
        rows_text("agent").c_str());
    LONGS_EQUAL(1, rows("other").size());
}

// The cluster's Event only for a DaemonSet the cluster has: a manifest
// file's own is in the store only, and without a link nothing is sent.
TEST(DaemonSetEvents, AClusterEventOnlyForADaemonSetTheClusterHas) {
    host.cluster["kube-system/from-api"] = "uid-api";
    events->record(kEventsNs, "from-file", "Normal", "SuccessfulCreate", "Created pod: from-file-1");
    events->record(kEventsNs, "from-api", "Normal", "SuccessfulCreate", "Created pod: from-api-1");
    LONGS_EQUAL(1, rows("from-file").size());
    LONGS_EQUAL(1, rows("from-api").size());
    STRCMP_EQUAL("from-api SuccessfulCreate: Created pod: from-api-1", sent_text().c_str());
    const ClusterEvent& ev = host.sent.at(0);
    STRCMP_EQUAL("kube-system", ev.namespace_.c_str());
    STRCMP_EQUAL("DaemonSet", ev.kind.c_str());
    STRCMP_EQUAL("uid-api", ev.uid.c_str());
    STRCMP_EQUAL("Normal", ev.type.c_str());
    STRCMP_EQUAL("", ev.field_path.c_str());
    LONGS_EQUAL(clock.wall_ms(), ev.first_ms);
    LONGS_EQUAL(clock.wall_ms(), ev.last_ms);
    LONGS_EQUAL(1, ev.count);
    CHECK_FALSE(ev.repeat);
    CHECK_TRUE(ev.event_name.rfind("from-api.", 0) == 0);

    host.linked = false;
    events->record(kEventsNs, "from-api", "Normal", "SuccessfulCreate", "Created pod: from-api-2");
    LONGS_EQUAL(2, rows("from-api").size());
    LONGS_EQUAL(1, host.sent.size());
    // LocalManifestOverrides: the cluster's Event alone, never a row.
    host.linked = true;
    events->send_to_cluster(kEventsNs, "from-api", "Warning", "LocalManifestOverrides", "a file wins");
    events->send_to_cluster(kEventsNs, "from-file", "Warning", "LocalManifestOverrides", "a file wins");
    LONGS_EQUAL(2, rows("from-api").size());
    LONGS_EQUAL(2, host.sent.size());
    STRCMP_EQUAL(
        "from-api SuccessfulCreate: Created pod: from-api-1\n"
        "from-api LocalManifestOverrides: a file wins",
        sent_text().c_str());
}

// client-go's recorder (events_cache.go eventObserve): a repeat within the
// filter's window PATCHes the count of the Event sent first (its name and
// firstTimestamp), even after another event came between; the store keeps
// one row per run of identical events.
TEST(DaemonSetEvents, ARepeatIsCountedOnTheClustersEvent) {
    host.cluster["kube-system/agent"] = "uid-agent";
    const PodRecord pod = ds_pod("agent");
    const std::int64_t t0 = clock.wall_ms();
    events->backoff(pod, "main");
    clock.advance(1'000);
    events->backoff(pod, "main");
    clock.advance(1'000);
    events->backoff(pod, "sidecar");
    clock.advance(1'000);
    events->backoff(pod, "main");
    LONGS_EQUAL(4, host.sent.size());
    LONGS_EQUAL(3, rows("agent").size());
    const ClusterEvent& first = host.sent[0];
    const ClusterEvent& again = host.sent[1];
    const ClusterEvent& other = host.sent[2];
    const ClusterEvent& third = host.sent[3];
    CHECK_TRUE(again.repeat);
    LONGS_EQUAL(2, again.count);
    STRCMP_EQUAL(first.event_name.c_str(), again.event_name.c_str());
    LONGS_EQUAL(t0, again.first_ms);
    LONGS_EQUAL(t0 + 1'000, again.last_ms);
    CHECK_FALSE(other.repeat);
    CHECK(other.event_name != first.event_name);
    CHECK_TRUE(third.repeat);
    LONGS_EQUAL(3, third.count);
    STRCMP_EQUAL(first.event_name.c_str(), third.event_name.c_str());
}

// The spam filter per DaemonSet (EventSourceObjectSpamFilter: 25 at once,
// one more per 5 minutes of the monotonic clock): the 26th within the burst
// is held back, and counted on the next one let through.
TEST(DaemonSetEvents, TheSpamFilterHoldsBackABurstOnTheMonotonicClock) {
    host.cluster["kube-system/agent"] = "uid-agent";
    host.cluster["kube-system/other"] = "uid-other";
    for (int i = 0; i < 26; ++i) events->record(kEventsNs, "agent", "Warning", "BackOff", "again");
    LONGS_EQUAL(25, host.sent.size());
    // Another DaemonSet's bucket is its own.
    events->record(kEventsNs, "other", "Warning", "BackOff", "again");
    LONGS_EQUAL(26, host.sent.size());
    // A step of the wall clock refills nothing.
    clock.set_wall(clock.wall_ms() + PodEventFilter::kSpamRefillMs);
    events->record(kEventsNs, "agent", "Warning", "BackOff", "again");
    LONGS_EQUAL(26, host.sent.size());
    clock.advance(PodEventFilter::kSpamRefillMs);
    events->record(kEventsNs, "agent", "Warning", "BackOff", "again");
    LONGS_EQUAL(27, host.sent.size());
    LONGS_EQUAL(28, host.sent.back().count);
}

// A step of the wall clock (NTP at boot): a repeat still names its first
// Event, at its first time moved with the step.
TEST(DaemonSetEvents, AWallClockStepMovesTheFirstTimes) {
    host.cluster["kube-system/agent"] = "uid-agent";
    const std::int64_t t0 = clock.wall_ms();
    events->record(kEventsNs, "agent", "Warning", "BackOff", "again");
    const std::int64_t delta = 3'600'000;
    events->rebase(WallStep{delta, t0, t0});
    clock.set_wall(t0 + delta + 1'000);
    events->record(kEventsNs, "agent", "Warning", "BackOff", "again");
    LONGS_EQUAL(2, host.sent.size());
    CHECK_TRUE(host.sent[1].repeat);
    LONGS_EQUAL(t0 + delta, host.sent[1].first_ms);
}

// Before the store is open nothing is recorded, on the cluster either.
TEST(DaemonSetEvents, NoStoreNoEvent) {
    host.cluster["kube-system/agent"] = "uid-agent";
    host.store = nullptr;
    events->record(kEventsNs, "agent", "Normal", "SuccessfulCreate", "Created pod: agent-1");
    LONGS_EQUAL(0, host.sent.size());
    host.store = store.get();
    LONGS_EQUAL(0, rows("agent").size());
}
