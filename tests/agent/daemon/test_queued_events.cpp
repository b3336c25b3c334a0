// The QueuedEvents component (agent/daemon/queued_events.h) over a real
// SQLite store and a real loop: the store's rows follow the link's queue of
// Events (one row per Event, only the rows that changed written), load gives
// back what was saved with its seqs, and the flush of what the agent reports
// runs one at a time, a write during it asking for exactly one more.
// client-go's record.EventBroadcaster keeps this queue in memory; the rows
// are the board's departure (an offline reboot loses no Event).
#include <deque>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <string>

#include "agent/daemon/cluster_link.h"
#include "agent/daemon/queued_events.h"
#include "tests/agent/daemon/run_until.h"
#include "tests/store/store_fixture.h"

#include <CppUTest/TestHarness.h>

using namespace daemonlet;
using namespace daemonlet::testing;

namespace {

constexpr std::int64_t kNow = 1'717'000'000'000;

ClusterEvent event(std::int64_t seq, const std::string& reason, std::int32_t count = 1) {
    ClusterEvent ev{"ns", "Pod", "agent-x7k2p", "uid-1", "Normal", reason, "msg", kNow, kNow, count};
    ev.event_name = "agent-x7k2p." + std::to_string(seq);
    ev.seq = seq;
    return ev;
}

class FakeHost : public agent::QueuedEvents::Host {
  public:
    explicit FakeHost(store::Store& s) : store(s) {}
    store::Store& events_store() override { return store; }
    const std::deque<ClusterEvent>* link_events() override { return link ? &queue : nullptr; }
    store::Store& store;
    bool link = true;
    std::deque<ClusterEvent> queue;
};

}  // namespace

TEST_GROUP(QueuedEvents) {
    TempDir dir;
    uv_loop_t loop{};
    std::unique_ptr<store::Store> st;
    std::unique_ptr<FakeHost> host;
    std::unique_ptr<agent::QueuedEvents> qe;
    void setup() override {
        uv_loop_init(&loop);
        st = MUST(store::Store::open(dir.file("daemonlet.db"), kNow, nullptr));
        // The flushes' callbacks run when the test says (finish_flushes),
        // not when the worker wakes the loop: a flush is running until then.
        CHECK_TRUE(st->start_worker([] {}, {}).ok());
        host = std::make_unique<FakeHost>(*st);
        qe = std::make_unique<agent::QueuedEvents>(&loop, *host);
        qe->start();
    }
    void teardown() override {
        qe->close();
        uv_run(&loop, UV_RUN_DEFAULT);
        st->stop_worker();
        qe.reset();
        LONGS_EQUAL(0, uv_loop_close(&loop));
    }
    // The loop run until nothing is left on it (the save's timer fired).
    void settle() {
        CHECK_TRUE(run_until(&loop, [] { return false; }));
    }
    // The rows in the store: seq -> the Event's reason and count ("?" for a
    // row that is no Event).
    std::map<std::int64_t, std::string> rows() {
        std::map<std::int64_t, std::string> out;
        for (const auto& r : MUST(st->list_queued_events())) {
            Json j = Json::parse(r.json, nullptr, false);
            out[r.seq] =
                j.is_object() ? j.value("reason", "") + "x" + std::to_string(j.value("count", 0)) : "?";
        }
        return out;
    }
    using Rows = std::map<std::int64_t, std::string>;
};

// An Event queued: one row; its count folded: that row updated; the front
// sent: the rows below it deleted; one dropped from the middle of a full
// queue: its row deleted.
TEST(QueuedEvents, TheRowsFollowTheQueue) {
    host->queue = {event(1, "Pulled")};
    CHECK_TRUE(qe->save_now());
    CHECK_TRUE(rows() == Rows({{1, "Pulledx1"}}));
    host->queue.front().count = 3;
    CHECK_TRUE(qe->save_now());
    CHECK_TRUE(rows() == Rows({{1, "Pulledx3"}}));
    host->queue.push_back(event(2, "Created"));
    host->queue.push_back(event(3, "Started"));
    host->queue.push_back(event(4, "Killing"));
    CHECK_TRUE(qe->save_now());
    CHECK_TRUE(rows() == Rows({{1, "Pulledx3"}, {2, "Createdx1"}, {3, "Startedx1"}, {4, "Killingx1"}}));
    host->queue.erase(host->queue.begin() + 2);  // dropped from the middle
    host->queue.pop_front();                     // sent
    CHECK_TRUE(qe->save_now());
    CHECK_TRUE(rows() == Rows({{2, "Createdx1"}, {4, "Killingx1"}}));
    host->queue.clear();
    CHECK_TRUE(qe->save_now());
    CHECK_TRUE(rows().empty());
}

// Only the rows that changed are written (flash): a row changed behind the
// component's back stays as it is when another row is saved.
TEST(QueuedEvents, OnlyTheRowsThatChangedAreWritten) {
    host->queue = {event(1, "Pulled"), event(2, "Created")};
    CHECK_TRUE(qe->save_now());
    CHECK_TRUE(MUST(st->put_queued_event({2, "not an event"})));
    host->queue.front().count = 2;
    CHECK_TRUE(qe->save_now());
    CHECK_TRUE(rows() == Rows({{1, "Pulledx2"}, {2, "?"}}));
}

TEST(QueuedEvents, NothingIsWrittenWhenNothingChanged) {
    host->link = false;
    CHECK_FALSE(qe->save_now());  // no link: no queue to keep
    host->link = true;
    CHECK_FALSE(qe->save_now());  // an empty queue, no rows
    host->queue = {event(1, "Pulled")};
    CHECK_TRUE(qe->save_now());
    CHECK_FALSE(qe->save_now());
    CHECK_TRUE(rows() == Rows({{1, "Pulledx1"}}));
}

// What a stopped agent saved is what the next one's first link gets, with
// its seqs and names; a row that is no Event is not carried, and goes with
// the next save.
TEST(QueuedEvents, LoadGivesBackWhatWasSaved) {
    host->queue = {event(3, "Pulled", 2), event(5, "Started")};
    host->queue.back().repeat = true;
    CHECK_TRUE(qe->save_now());
    CHECK_TRUE(MUST(st->put_queued_event({7, "not an event"})));
    FakeHost next_host(*st);
    agent::QueuedEvents next(&loop, next_host);
    next.load();
    const auto& got = next.carried();
    LONGS_EQUAL(2, got.size());
    LONGS_EQUAL(3, got[0].seq);
    STRCMP_EQUAL("Pulled", got[0].reason.c_str());
    LONGS_EQUAL(2, got[0].count);
    STRCMP_EQUAL("agent-x7k2p.3", got[0].event_name.c_str());
    CHECK_FALSE(got[0].repeat);
    LONGS_EQUAL(5, got[1].seq);
    CHECK_TRUE(got[1].repeat);
    next.load();  // read once
    LONGS_EQUAL(2, next.carried().size());
    next_host.queue.assign(got.begin(), got.end());
    CHECK_TRUE(next.save_now());
    CHECK_TRUE(rows() == Rows({{3, "Pulledx2"}, {5, "Startedx1"}}));
    CHECK_FALSE(next.save_now());
}

// An Event queued is kept at the next turn of the loop and flushed.
TEST(QueuedEvents, AnEventQueuedIsKeptAtTheNextTurnAndFlushed) {
    host->queue = {event(1, "Pulled")};
    qe->changed(true);
    CHECK_TRUE(rows().empty());
    settle();
    CHECK_TRUE(rows() == Rows({{1, "Pulledx1"}}));
    LONGS_EQUAL(1, qe->flushes_started());
    st->finish_flushes();
    LONGS_EQUAL(1, st->worker_stats().flushes);
    // Nothing written since: no flush.
    qe->changed(true);
    settle();
    st->finish_flushes();
    LONGS_EQUAL(1, qe->flushes_started());
}

// A flush asked while one runs: exactly one more, once it ends (never two
// at a time, never one lost).
TEST(QueuedEvents, AFlushAskedWhileOneRunsGivesExactlyOneMore) {
    qe->flush_reported();
    settle();
    LONGS_EQUAL(1, qe->flushes_started());
    host->queue = {event(1, "Pulled")};
    qe->changed(true);
    qe->flush_reported();
    settle();
    CHECK_TRUE(rows() == Rows({{1, "Pulledx1"}}));  // written, its flush waits
    LONGS_EQUAL(1, qe->flushes_started());
    st->finish_flushes();  // the first ends: the one more starts
    LONGS_EQUAL(2, qe->flushes_started());
    st->finish_flushes();
    settle();
    LONGS_EQUAL(2, qe->flushes_started());
    LONGS_EQUAL(2, st->worker_stats().flushes);
}

// A write the agent reports (a revision recorded) is flushed with no Event
// and no link; once the agent stops, nothing is.
TEST(QueuedEvents, FlushReportedFlushesWithNoEvent) {
    host->link = false;
    qe->flush_reported();
    settle();
    st->finish_flushes();
    LONGS_EQUAL(1, qe->flushes_started());
    LONGS_EQUAL(1, st->worker_stats().flushes);
    qe->stop();
    qe->flush_reported();
    settle();
    st->finish_flushes();
    LONGS_EQUAL(1, qe->flushes_started());
}

// The agent's stop with a flush in flight: its answer comes (the stop's
// waiting undo is answered by it) and starts no other, and the shutdown's
// last save still writes the queue.
TEST(QueuedEvents, AStopLetsTheFlushInFlightEndAndStillSaves) {
    qe->flush_reported();
    settle();
    LONGS_EQUAL(1, qe->flushes_started());
    qe->flush_reported();  // asked while the first runs
    settle();
    qe->stop();
    st->finish_flushes();
    settle();
    LONGS_EQUAL(1, qe->flushes_started());
    host->queue = {event(1, "Pulled")};
    CHECK_TRUE(qe->save_now());
    CHECK_TRUE(rows() == Rows({{1, "Pulledx1"}}));
}

// A link that is made but never started (it sends nothing): the queue a
// new link takes over.
namespace {

std::unique_ptr<agent::ClusterLink> unstarted_link(uv_loop_t* loop, const TempDir& dir) {
    ApiServerConfig config;
    config.enabled = true;
    config.kubeconfig = dir.file("kubeconfig");
    std::ofstream(config.kubeconfig) << "kind: Config\ncurrent-context: c\n"
                                        "contexts: [{name: c, context: {cluster: k, user: u}}]\n"
                                        "clusters: [{name: k, cluster: {server: \"https://127.0.0.1:1\", "
                                        "}}]\n"
                                        "users: [{name: u, user: {token: t}}]\n";
    std::filesystem::permissions(config.kubeconfig, std::filesystem::perms::owner_read);
    return MUST(agent::ClusterLink::create(loop, config, "board-1", {}));
}

}  // namespace

// The agent's first link gets what the store kept (client-go's broadcaster
// starts empty; the board keeps its queue across a restart): the Events in
// order with their seqs and names, and its next seq after the highest.
TEST(QueuedEvents, TheFirstLinkGetsTheStoredQueue) {
    host->queue = {event(3, "Pulled", 2), event(5, "Started")};
    CHECK_TRUE(qe->save_now());
    FakeHost next_host(*st);
    agent::QueuedEvents next(&loop, next_host);
    auto link = unstarted_link(&loop, dir);
    next.carry_into(*link);
    const auto& got = link->queued_events();
    LONGS_EQUAL(2, got.size());
    LONGS_EQUAL(3, got[0].seq);
    STRCMP_EQUAL("agent-x7k2p.3", got[0].event_name.c_str());
    LONGS_EQUAL(2, got[0].count);
    LONGS_EQUAL(5, got[1].seq);
    STRCMP_EQUAL("Started", got[1].reason.c_str());
    CHECK_TRUE(link->next_event_seq() > 5);
    link->close();
}

// A reload's link takes over the closed link's queue as it is, not as the
// store last listed it: an Event sent since the load is not sent again, one
// queued since is kept, and the seqs go on from the closed link's.
TEST(QueuedEvents, AReloadsLinkTakesOverTheClosedLinksQueue) {
    host->queue = {event(1, "Pulled")};
    CHECK_TRUE(qe->save_now());
    FakeHost next_host(*st);
    agent::QueuedEvents next(&loop, next_host);
    auto first = unstarted_link(&loop, dir);
    next.carry_into(*first);  // the stored Pulled
    ClusterEvent created = event(0, "Created");
    created.seq = 0;
    created.event_name.clear();
    first->add_event(created);
    const std::int64_t seq_after = first->next_event_seq();
    LONGS_EQUAL(2, first->queued_events().size());
    first->close();
    next.carry_from(*first);
    // An Event written to the store behind its back (as the stored Pulled,
    // renamed) is not carried: the store is read once, at the first link.
    std::string stale = MUST(st->list_queued_events()).at(0).json;
    stale.replace(stale.find("Pulled"), 6, "Stale!");
    CHECK_TRUE(MUST(st->put_queued_event({9, stale})));
    auto second = unstarted_link(&loop, dir);
    next.carry_into(*second);
    const auto& got = second->queued_events();
    LONGS_EQUAL(2, got.size());
    STRCMP_EQUAL("Pulled", got[0].reason.c_str());
    STRCMP_EQUAL("Created", got[1].reason.c_str());
    STRCMP_EQUAL(first->queued_events()[1].event_name.c_str(), got[1].event_name.c_str());
    LONGS_EQUAL(first->queued_events()[1].seq, got[1].seq);
    CHECK_TRUE(second->next_event_seq() >= seq_after);
    second->close();
}
