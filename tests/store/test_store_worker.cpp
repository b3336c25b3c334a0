// The store's worker (store/wal_worker.h) on a real SQLite file: flushes
// and checkpoints run on its thread, never on the owner's, and a flush's
// callback runs after the -wal holding the commit was synced. The syncs are
// watched, and held to stand for a slow card, through tests/store/faulty_vfs.h.
#include <sys/stat.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "tests/store/faulty_vfs.h"
#include "tests/store/store_fixture.h"

// CppUTest last: its leak-detection macros redefine new.
#include <CppUTest/TestHarness.h>

using namespace daemonlet;
using namespace daemonlet::testing;

namespace {

constexpr std::int64_t kNow = 1'717'000'000'000;
constexpr auto kDeadline = std::chrono::seconds(10);

std::int64_t file_size(const std::string& path) {
    struct stat st {};
    return ::stat(path.c_str(), &st) == 0 ? st.st_size : -1;
}

// What the syncs did, and a gate that holds the worker's syncs (a card
// whose flush takes as long as the test wants).
struct Syncs {
    std::mutex mu;
    std::condition_variable cv;
    std::thread::id owner = std::this_thread::get_id();
    int db_on_owner = 0;  // syncs made on the test's (the owner's) thread
    int wal_on_owner = 0;
    int wal_on_worker = 0;
    int db_on_worker = 0;
    bool hold = false;
    bool held = false;                  // a sync waits at the gate
    int wakes = 0;                      // the worker's wake-ups (uv_async_send in the agent)
    std::function<void()> at_wal_sync;  // run on the worker before a -wal sync

    void synced(bool wal) {
        std::unique_lock<std::mutex> lock(mu);
        if (std::this_thread::get_id() == owner) {
            ++(wal ? wal_on_owner : db_on_owner);
            return;
        }
        if (wal && at_wal_sync) {
            at_wal_sync();
            at_wal_sync = nullptr;
        }
        ++(wal ? wal_on_worker : db_on_worker);
        cv.notify_all();
        if (!hold) return;
        held = true;
        cv.notify_all();
        cv.wait_for(lock, kDeadline, [this] { return !hold; });
        held = false;
    }
    void wake() {
        std::lock_guard<std::mutex> lock(mu);
        ++wakes;
        cv.notify_all();
    }
    // Waits until `done` holds, within the deadline.
    template <class F>
    bool wait(F done) {
        std::unique_lock<std::mutex> lock(mu);
        return cv.wait_for(lock, kDeadline, [&] { return done(); });
    }
    void release() {
        std::lock_guard<std::mutex> lock(mu);
        hold = false;
        cv.notify_all();
    }
};

}  // namespace

TEST_GROUP(StoreWorker) {
    TempDir dir;
    std::string path = dir.file("daemonlet.db");
    FaultyVfs vfs;
    Syncs syncs;
    std::unique_ptr<store::Store> s;

    void start(store::Store::WorkerOptions options = {}) {
        FaultyVfs::on_sync([this](bool wal) { syncs.synced(wal); });
        s = MUST(store::Store::open(path, kNow, nullptr));
        auto st = s->start_worker([this] { syncs.wake(); }, options);
        CHECK_TEXT(st.ok(), st.ok() ? "" : st.error().message.c_str());
        std::lock_guard<std::mutex> lock(syncs.mu);
        syncs.wal_on_owner = 0;  // the open's
        syncs.db_on_owner = 0;
    }
    void teardown() override {
        syncs.release();
        if (s) s->stop_worker();
        s.reset();
        FaultyVfs::on_sync(nullptr);
    }
    // Commits pods one by one until the -wal holds `pages`.
    void grow_wal_to(std::int64_t pages, int* next_uid) {
        while (s->worker_stats().wal_pages < pages)
            CHECK_TRUE(MUST(s->put_pod(sample_pod("uid-" + std::to_string((*next_uid)++)))));
    }
};

TEST(StoreWorker, FlushAsyncWithoutAWorkerFailsAtOnceAndNeverCallsBack) {
    s = MUST(store::Store::open(path, kNow, nullptr));
    bool called = false;
    CHECK_FALSE(s->flush_async([&](Status) { called = true; }).ok());
    s->deliver();
    CHECK_FALSE(called);
}

// flush_then, what the agent calls (an undo's answer, the retry of held
// writes): without the worker the flush is made on the caller's thread and
// answered before the call returns; with it, from deliver() after the
// worker's sync. Exactly once either way.
TEST(StoreWorker, FlushThenFlushesHereWithoutAWorkerAndOnItWithOne) {
    FaultyVfs::on_sync([this](bool wal) { syncs.synced(wal); });
    s = MUST(store::Store::open(path, kNow, nullptr));
    CHECK_TRUE(MUST(s->put_pod(sample_pod("uid-7"))));
    syncs.wal_on_owner = 0;  // no worker: this thread only
    int calls = 0;
    s->flush_then([&](Status st) {
        ++calls;
        CHECK_TRUE(st.ok());
    });
    LONGS_EQUAL(1, calls);
    CHECK_TRUE(syncs.wal_on_owner > 0);
    s->deliver();
    LONGS_EQUAL(1, calls);

    s.reset();
    start();
    CHECK_TRUE(MUST(s->put_pod(sample_pod("uid-8"))));
    {
        std::lock_guard<std::mutex> lock(syncs.mu);
        syncs.wal_on_owner = 0;  // the commit's (the first after a reopen restarts the -wal)
    }
    calls = 0;
    s->flush_then([&](Status st) {
        ++calls;
        CHECK_TRUE(st.ok());
    });
    LONGS_EQUAL(0, calls);
    CHECK_TRUE(syncs.wait([&] { return syncs.wakes > 0; }));
    s->deliver();
    LONGS_EQUAL(1, calls);
    LONGS_EQUAL(1, s->worker_stats().flushes);
    LONGS_EQUAL(0, syncs.wal_on_owner);
}

// rollout undo's answer: the flush runs on the worker while the owner goes
// on, and its callback runs (from deliver) only after the -wal that holds
// the commit was synced: a copy of the files as the sync found them holds it.
TEST(StoreWorker, AFlushIsAnsweredAfterTheWorkerSyncedTheWalHoldingTheCommit) {
    start();
    CHECK_TRUE(MUST(s->put_pod(sample_pod("uid-7"))));
    TempDir copy;
    {
        std::lock_guard<std::mutex> lock(syncs.mu);
        syncs.at_wal_sync = [&] {
            // What an fdatasync now makes durable: every byte written so far.
            for (const char* suffix : {"", "-wal"})
                std::filesystem::copy_file(path + suffix, copy.file("daemonlet.db") + suffix);
        };
        syncs.hold = true;
    }
    std::optional<Status> answered;
    CHECK_TRUE(s->flush_async([&](Status st) { answered = st; }).ok());
    CHECK_TRUE(syncs.wait([&] { return syncs.held; }));  // the worker syncs; this thread does not wait
    s->deliver();
    CHECK_FALSE(answered.has_value());
    CHECK_TRUE(MUST(s->put_pod(sample_pod("uid-8"))));  // the owner writes meanwhile
    syncs.release();
    CHECK_TRUE(syncs.wait([&] { return syncs.wakes > 0; }));  // after the flush
    s->deliver();
    CHECK_TRUE(answered.has_value() && answered->ok());
    LONGS_EQUAL(0, syncs.wal_on_owner + syncs.db_on_owner);
    LONGS_EQUAL(1, s->worker_stats().flushes);
    auto reopened = MUST(store::Store::open(copy.file("daemonlet.db"), kNow, nullptr));
    auto pods = MUST(reopened->list_pods());
    LONGS_EQUAL(1, pods.size());
    STRCMP_EQUAL("uid-7", pods[0].uid.c_str());
}

// sqlite.org/wal.html, "Application-Initiated Checkpoints": SQLite's own
// checkpoint after a commit is off; once the -wal holds checkpoint_pages the
// worker copies it into the database (syncing both, on its thread), and the
// next commit starts the -wal over. That commit syncs the new -wal header
// (SQLite's own, on the committing thread): the one flush left on the
// owner's thread, once per checkpoint.
TEST(StoreWorker, TheWorkerCheckpointsAGrownWalAndTheNextCommitStartsItOver) {
    start(store::Store::WorkerOptions{8, 1000});
    int uid = 0;
    grow_wal_to(8, &uid);
    CHECK_TRUE(syncs.wait([&] { return syncs.db_on_worker > 0; }));  // the checkpoint's last step
    CHECK_TRUE(syncs.wait([&] { return s->worker_stats().checkpoints > 0; }));
    LONGS_EQUAL(0, s->worker_stats().last_not_copied);
    const std::int64_t grown = s->worker_stats().wal_pages;
    LONGS_EQUAL(0, syncs.wal_on_owner + syncs.db_on_owner);
    CHECK_TRUE(MUST(s->put_pod(sample_pod("uid-next"))));
    CHECK_TEXT(s->worker_stats().wal_pages < grown, std::to_string(s->worker_stats().wal_pages).c_str());
    LONGS_EQUAL(1, syncs.wal_on_owner);
    LONGS_EQUAL(0, syncs.db_on_owner);
    CHECK_TRUE(syncs.wal_on_worker > 0);
    LONGS_EQUAL(0, s->worker_stats().restarts);
}

// Checkpoint starvation (wal.html, "Avoiding Excessively Large WAL Files"):
// the owner commits all along a PASSIVE checkpoint that the card holds, so
// the -wal outgrows it; past restart_pages the next checkpoint is a RESTART,
// after which the -wal starts over.
TEST(StoreWorker, AWalThatOutgrowsAHeldCheckpointIsRestarted) {
    start(store::Store::WorkerOptions{8, 40});
    int uid = 0;
    {
        std::lock_guard<std::mutex> lock(syncs.mu);
        syncs.hold = true;
    }
    grow_wal_to(8, &uid);
    CHECK_TRUE(syncs.wait([&] { return syncs.held; }));  // the PASSIVE one, at its first sync
    grow_wal_to(40, &uid);                               // the owner is not held up meanwhile
    syncs.release();
    CHECK_TRUE(syncs.wait([&] { return s->worker_stats().restarts > 0; }));
    LONGS_EQUAL(0, s->worker_stats().last_not_copied);
    CHECK_TRUE(MUST(s->put_pod(sample_pod("uid-next"))));
    CHECK_TEXT(s->worker_stats().wal_pages < 8, std::to_string(s->worker_stats().wal_pages).c_str());
    CHECK_TRUE(s->worker_stats().wal_pages_max >= 40);
    LONGS_EQUAL(1, syncs.wal_on_owner);  // the new -wal header's
    LONGS_EQUAL(0, syncs.db_on_owner);
    LONGS_EQUAL(static_cast<long>(uid), MUST(s->list_pods()).size() - 1);
}

// The agent's stop: what was asked is done and answered, the -wal is
// emptied into the database; the store then works on without the worker.
TEST(StoreWorker, StopAnswersWhatWasAskedAndEmptiesTheWal) {
    start();
    CHECK_TRUE(MUST(s->put_pod(sample_pod("uid-1"))));
    std::optional<Status> answered;
    CHECK_TRUE(s->flush_async([&](Status st) { answered = st; }).ok());
    s->stop_worker();
    CHECK_TRUE(answered.has_value() && answered->ok());
    LONGS_EQUAL(0, file_size(path + "-wal"));
    CHECK_FALSE(s->flush_async([](Status) {}).ok());
    CHECK_TRUE(MUST(s->put_pod(sample_pod("uid-2"))));
    s.reset();
    auto reopened = MUST(store::Store::open(path, kNow, nullptr));
    LONGS_EQUAL(2, MUST(reopened->list_pods()).size());
}

// The agent's stop answers an undo before its control socket closes: the
// flushes asked are waited for (the card holds the sync 100 ms) and their
// callbacks run on the owner's thread, without a loop to deliver them; the
// worker runs on for the writes that follow (the pods' last saves).
TEST(StoreWorker, FinishFlushesWaitsForTheFlushesAskedAndAnswersThem) {
    start();
    {
        std::lock_guard<std::mutex> lock(syncs.mu);
        syncs.hold = true;
    }
    CHECK_TRUE(MUST(s->put_pod(sample_pod("uid-1"))));
    std::optional<Status> answered;
    CHECK_TRUE(s->flush_async([&](Status st) { answered = st; }).ok());
    CHECK_TRUE(syncs.wait([&] { return syncs.held; }));
    std::thread card([this] {
        std::this_thread::sleep_for(std::chrono::milliseconds(100));  // a slow card's flush
        syncs.release();
    });
    s->finish_flushes();
    card.join();
    CHECK_TRUE(answered.has_value() && answered->ok());
    LONGS_EQUAL(1, s->worker_stats().flushes);
    // The worker runs on.
    CHECK_TRUE(MUST(s->put_pod(sample_pod("uid-2"))));
    std::optional<Status> again;
    CHECK_TRUE(s->flush_async([&](Status st) { again = st; }).ok());
    s->finish_flushes();
    CHECK_TRUE(again.has_value() && again->ok());
    LONGS_EQUAL(2, s->worker_stats().flushes);
}
