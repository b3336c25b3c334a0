// The Storage component (agent/daemon/storage.h) over a real SQLite store
// whose disk fills up (tests/store/faulty_vfs.h: every write that would grow
// the database or its -wal fails with SQLITE_FULL, so that SQLite's own
// handling runs): a write the disk refuses is kept and answers as if it had
// landed, the storage says it is not writable, nothing is half-written, and
// a retry once space returns writes what was kept, in one transaction.
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "agent/daemon/storage.h"
#include "store/sql.h"
#include "store/testing.h"
#include "tests/agent/daemon/fake_clock.h"
#include "tests/agent/daemon/run_until.h"
#include "tests/store/faulty_vfs.h"
#include "tests/store/store_fixture.h"

#include <CppUTest/TestHarness.h>

using namespace daemonlet;
using namespace daemonlet::testing;

namespace {

constexpr std::int64_t kNow = 1'717'000'000'000;

// A database at `path` holding seed_state (uid-1), cleanly closed: no -wal,
// no -shm.
void write_seeded(const std::string& path) {
    auto st = MUST(store::Store::open(path, kNow, nullptr));
    CHECK_TRUE(seed_state(*st).ok());
}

// `bytes` of junk written over `path` at `offset` (by default its start: a
// database no more).
void spoil(const std::string& path, std::streamoff offset = 0, std::size_t bytes = 8192) {
    std::ofstream bad(path, std::ios::in | std::ios::out);
    bad.seekp(offset);
    bad << std::string(bytes, 'U');
}

// The stateDir full, its -shm unmappable too (SQLite's ENOSPC), or not.
void full_without_shm(bool full) {
    FaultyVfs::set_full(full);
    FaultyVfs::set_shm_full(full);
}

}  // namespace

TEST_GROUP(Storage) {
    TempDir dir;
    std::string path = dir.file("daemonlet.db");
    FaultyVfs vfs;
    FakeClock clock;
    std::unique_ptr<agent::Storage> s;
    void setup() override {
        auto inner = MUST(store::Store::open(path, kNow, nullptr));
        CHECK_TRUE(seed_state(*inner).ok());
        // A lock held elsewhere refuses a write in 50 ms, not the 5 s of open.cpp.
        store::testing::set_busy_timeout(*inner, 50);
        // No loop: the test runs the retries itself.
        s = std::make_unique<agent::Storage>(nullptr, std::move(inner), clock);
    }
    void teardown() override {
        FaultyVfs::set_full(false);
        FaultyVfs::set_shm_full(false);
        if (s) s->close();
        s.reset();
        if (!loop_used) return;
        if (turns) {
            uv_close(reinterpret_cast<uv_handle_t*>(turns),
                     [](uv_handle_t* h) { delete reinterpret_cast<uv_timer_t*>(h); });
            turns = nullptr;
        }
        uv_run(&loop, UV_RUN_DEFAULT);
        LONGS_EQUAL(0, uv_loop_close(&loop));
    }
    // A real loop for the Storage (its retries, its worker's wake-ups, the
    // disk work off it).
    uv_loop_t loop{};
    bool loop_used = false;
    uv_loop_t* use_loop() {
        if (!loop_used) uv_loop_init(&loop);
        loop_used = true;
        return &loop;
    }
    bool run_until(const std::function<bool()>& done) { return testing::run_until(&loop, done); }
    // The Storage's disk work (a reopen, a copy's write) held on its thread
    // until a timer of the loop has fired and run `on_held` on the loop (at
    // most 2 s): work run on the loop holds the loop, the timer cannot fire,
    // and the work goes on after 2 s with `held` saying false.
    struct Held {
        std::mutex mu;
        std::condition_variable cv;
        std::string what;  // the work held now; "" when none
        bool released = false;
        std::vector<std::string> held;  // "<what>:<whether the loop turned meanwhile>"
        std::function<void(const std::string&)> on_held;
    } hold;
    uv_timer_t* turns = nullptr;
    void hold_disk_work() {
        s->set_disk_work_hook([this](const char* what) {
            std::unique_lock<std::mutex> lock(hold.mu);
            hold.what = what;
            hold.released = false;
            const bool turned =
                hold.cv.wait_for(lock, std::chrono::seconds(2), [this] { return hold.released; });
            hold.held.push_back(std::string(what) + ":" + (turned ? "loop turned" : "loop held"));
            hold.what.clear();
        });
        turns = new uv_timer_t;
        uv_timer_init(&loop, turns);
        turns->data = this;
        uv_timer_start(
            turns,
            [](uv_timer_t* t) {
                auto* self = static_cast<TEST_GROUP_CppUTestGroupStorage*>(t->data);
                std::string what;
                {
                    std::lock_guard<std::mutex> lock(self->hold.mu);
                    if (!self->hold.released) what = self->hold.what;
                }
                if (what.empty()) return;
                if (self->hold.on_held) self->hold.on_held(what);
                std::lock_guard<std::mutex> lock(self->hold.mu);
                self->hold.released = true;
                self->hold.cv.notify_all();
            },
            1, 1);
    }
    // A database of schema version 5 holding one pod: its open migrates it
    // (writes), its copy does not.
    static void write_version5(const std::string& file) {
        RawDb raw(file);
        for (int i = 0; i < 5; ++i) STRCMP_EQUAL("", raw.exec(store::sql::kMigrations[i].sql).c_str());
        STRCMP_EQUAL("", raw.exec("PRAGMA journal_mode = WAL; PRAGMA user_version = 5").c_str());
        STRCMP_EQUAL("",
                     raw.exec("INSERT INTO pods (uid, name, namespace, daemonset, revision_hash, revision, "
                              "phase, created_at_ms, deleting, containers_json) VALUES ('uid-1', "
                              "'agent-x7k2p', 'ns', 'agent', 'h1', 1, 'Running', 5, 0, '[]')")
                         .c_str());
    }
    // Storage::open on a stateDir (the fixture's store closed first).
    std::unique_ptr<agent::Storage> open_state_dir(const std::string& state_dir, uv_loop_t* on = nullptr) {
        if (s) s->close();
        s.reset();
        return MUST(agent::Storage::open(on, state_dir, clock, [this] { ++moved_aside; }));
    }
    int moved_aside = 0;
    // Storage::open on `state` whose version 5 file the full disk cannot
    // migrate: run from a copy, a write kept. The file's path.
    std::string open_from_copy(const TempDir& state, uv_loop_t* on = nullptr) {
        const std::string db = state.file("daemonlet.db");
        write_version5(db);
        FaultyVfs::set_full(true);
        s = open_state_dir(state.path(), on);
        CHECK_TRUE(s->mode() == agent::Storage::Mode::Copy);
        CHECK_TRUE(MUST(s->put_pod(sample_pod("uid-2"))));
        return db;
    }
    // What the database holds when `changes` were written to a healthy disk,
    // with the probe row the retry writes.
    std::string written_directly(const std::function<Status(store::Store&)>& changes) {
        TempDir other;
        const std::string p = other.file("daemonlet.db");
        auto st = MUST(store::Store::open(p, kNow, nullptr));
        CHECK_TRUE(seed_state(*st).ok());
        CHECK_TRUE(changes(*st).ok());
        CHECK_TRUE(MUST(st->put_meta("storage.checked", std::to_string(clock.wall_ms()))));
        st.reset();
        return dump_state(p);
    }
};

TEST(Storage, AWriteTheFullDiskRefusesIsKeptAndLandsOnceSpaceReturns) {
    const std::string before = dump_state(path);
    FaultyVfs::set_full(true);
    PodRecord pod = sample_pod("uid-2");
    CHECK_TRUE(MUST(s->put_pod(pod)));  // kept: the caller goes on
    CHECK_FALSE(s->writable());
    LONGS_EQUAL(1, s->pending());
    const Json st = s->status_json();
    CHECK_FALSE(st["writable"].get<bool>());
    CHECK_TEXT(st["error"].get<std::string>().find("full") != std::string::npos, st.dump().c_str());
    CHECK_TEXT(st["since"].get<std::string>().starts_with("2026-01-01T"), st.dump().c_str());
    STRCMP_EQUAL(", stateDir full: 1 changes not recorded yet", s->status_suffix().c_str());
    STRCMP_EQUAL(before.c_str(), dump_state(path).c_str());

    clock.advance(2000);
    CHECK_FALSE(s->retry().ok());  // still full
    CHECK_FALSE(s->writable());
    LONGS_EQUAL(1, s->pending());

    FaultyVfs::set_full(false);
    clock.advance(2000);
    CHECK_TRUE(s->retry().ok());
    CHECK_TRUE(s->writable());
    LONGS_EQUAL(0, s->pending());
    STRCMP_EQUAL("", s->status_suffix().c_str());
    STRCMP_EQUAL(R"({"writable":true,"error":"","since":"","pending":0})", s->status_json().dump().c_str());
    STRCMP_EQUAL(written_directly([&](store::Store& d) -> Status {
                     if (auto r = d.put_pod(pod); !r.ok()) return r.error();
                     return Ok{};
                 }).c_str(),
                 dump_state(path).c_str());
}

TEST(Storage, ATransactionTheFullDiskRefusesLandsWholeAndInOrder) {
    const std::string before = dump_state(path);
    FaultyVfs::set_full(true);
    CHECK_TRUE(roll_out(*s).ok());  // every write kept, the commit too
    CHECK_FALSE(s->writable());
    // Nothing of it is in the database: not half of it.
    STRCMP_EQUAL(before.c_str(), dump_state(path).c_str());
    FaultyVfs::set_full(false);
    CHECK_TRUE(s->retry().ok());
    STRCMP_EQUAL(written_directly(roll_out).c_str(), dump_state(path).c_str());
    {
        RawDb raw(path, SQLITE_OPEN_READONLY);
        STRCMP_EQUAL("ok", raw.rows("PRAGMA integrity_check").c_str());
    }
}

TEST(Storage, TheNewestWriteOfARowIsTheOneKept) {
    FaultyVfs::set_full(true);
    PodRecord pod = sample_pod("uid-2");
    CHECK_TRUE(MUST(s->put_pod(pod)));
    pod.phase = PodPhase::Failed;
    CHECK_TRUE(MUST(s->put_pod(pod)));
    CHECK_TRUE(MUST(s->delete_pod("uid-1")));
    LONGS_EQUAL(2, s->pending());
    FaultyVfs::set_full(false);
    CHECK_TRUE(s->retry().ok());
    auto pods = MUST(s->list_pods());
    LONGS_EQUAL(1, pods.size());
    STRCMP_EQUAL("uid-2", pods[0].uid.c_str());
    CHECK_TRUE(pods[0].phase == PodPhase::Failed);
}

TEST(Storage, ADaemonSetDeletedWhileFullTakesItsKeptRevisionsWithIt) {
    // The store's ON DELETE CASCADE: a kept revision of a DaemonSet deleted
    // since would fail its foreign key at the retry.
    FaultyVfs::set_full(true);
    CHECK_TRUE(MUST(s->put_daemonset(sample_daemonset("gone"))));
    CHECK_TRUE(MUST(s->put_revision(sample_revision("gone", 1))));
    CHECK_TRUE(MUST(s->delete_daemonset("kube-system", "gone")));
    LONGS_EQUAL(1, s->pending());
    FaultyVfs::set_full(false);
    CHECK_TRUE(s->retry().ok());
    CHECK_FALSE(MUST(s->get_daemonset("kube-system", "gone")).has_value());
    LONGS_EQUAL(0, MUST(s->list_revisions("kube-system", "gone")).size());
}

TEST(Storage, ReadsSeeTheWritesKeptWhileFull) {
    // The agent numbers a new revision from list_revisions and a
    // generation from get_daemonset: while the disk is full they must see
    // the kept writes, or a second edit would take the first one's number
    // (and fail UNIQUE at the retry).
    FaultyVfs::set_full(true);
    CHECK_TRUE(MUST(s->put_daemonset(sample_daemonset("agent", 2))));
    CHECK_TRUE(MUST(s->put_revision(sample_revision("agent", 2))));
    auto revs = MUST(s->list_revisions("kube-system", "agent"));
    LONGS_EQUAL(2, revs.size());
    LONGS_EQUAL(2, revs.back().revision);
    LONGS_EQUAL(2, MUST(s->get_daemonset("kube-system", "agent"))->generation);
    store::StoredRollback rb;
    rb.namespace_ = "kube-system";
    rb.name = "agent";
    rb.file_hash = "file-1";
    rb.revision_hash = "hash-1";
    rb.template_json = "{}";
    CHECK_TRUE(MUST(s->put_rollback(rb)));
    STRCMP_EQUAL("hash-1", MUST(s->get_rollback("kube-system", "agent"))->revision_hash.c_str());
    FaultyVfs::set_full(false);
    CHECK_TRUE(s->retry().ok());
    LONGS_EQUAL(2, MUST(s->list_revisions("kube-system", "agent")).size());
    STRCMP_EQUAL("hash-1", MUST(s->get_rollback("kube-system", "agent"))->revision_hash.c_str());
}

TEST(Storage, ADaemonSetWrittenAgainWhileFullStaysBeforeItsRevisions) {
    // The row keeps its first place in the replay: a revision kept after a
    // new DaemonSet lands after it even when the DaemonSet is written again.
    FaultyVfs::set_full(true);
    CHECK_TRUE(MUST(s->put_daemonset(sample_daemonset("new", 1))));
    CHECK_TRUE(MUST(s->put_revision(sample_revision("new", 1))));
    CHECK_TRUE(MUST(s->put_daemonset(sample_daemonset("new", 2))));
    FaultyVfs::set_full(false);
    CHECK_TRUE(s->retry().ok());
    LONGS_EQUAL(2, MUST(s->get_daemonset("kube-system", "new"))->generation);
    LONGS_EQUAL(1, MUST(s->list_revisions("kube-system", "new")).size());
}

TEST(Storage, ADaemonSetDeletedAndAddedAgainWhileFullLosesItsOldRevisions) {
    // The delete stays before the new put: the store's cascade removes the
    // old revisions, which the new ones' numbers would otherwise meet.
    FaultyVfs::set_full(true);
    CHECK_TRUE(MUST(s->delete_daemonset("kube-system", "agent")));
    LONGS_EQUAL(0, MUST(s->list_revisions("kube-system", "agent")).size());
    CHECK_TRUE(MUST(s->put_daemonset(sample_daemonset("agent", 1))));
    RevisionRecord fresh = sample_revision("agent", 1);
    fresh.hash = "hash-new";
    CHECK_TRUE(MUST(s->put_revision(fresh)));
    auto held = MUST(s->list_revisions("kube-system", "agent"));
    LONGS_EQUAL(1, held.size());
    STRCMP_EQUAL("hash-new", held[0].hash.c_str());
    FaultyVfs::set_full(false);
    CHECK_TRUE(s->retry().ok());
    auto revs = MUST(s->list_revisions("kube-system", "agent"));
    LONGS_EQUAL(1, revs.size());
    STRCMP_EQUAL("hash-new", revs[0].hash.c_str());
}

TEST(Storage, EventsKeptWhileFullAreBounded) {
    FaultyVfs::set_full(true);
    for (int i = 0; i < 200; ++i) CHECK_TRUE(MUST(s->add_event(sample_event("Pod/agent-x7k2p", 100 + i))));
    LONGS_EQUAL(agent::Storage::kMaxPendingEvents, s->pending());
    FaultyVfs::set_full(false);
    CHECK_TRUE(s->retry().ok());
    // The newest ones landed (the store keeps its own bound per object).
    auto events = MUST(s->list_events("kube-system", "Pod/agent-x7k2p", 1));
    LONGS_EQUAL(1, events.size());
    STRCMP_EQUAL("event 299 of Pod/agent-x7k2p", events.back().message.c_str());
}

TEST(Storage, QueuedClusterEventsKeptWhileFullStayWithinTheQueue) {
    // A board connected to its API server on a full stateDir: hundreds of
    // Events queued and sent. What is kept is the queue's rows as they end
    // (and one delete of the rows sent), not every write made meanwhile;
    // the rows land as the queue is, in order.
    CHECK_TRUE(MUST(s->put_queued_event({1, "{\"n\":1}"})));  // landed before the disk filled
    FaultyVfs::set_full(true);
    for (std::int64_t seq = 2; seq <= 500; ++seq) {
        CHECK_TRUE(MUST(s->put_queued_event({seq, "{\"n\":" + std::to_string(seq) + "}"})));
        if (seq > 3) CHECK_TRUE(MUST(s->delete_queued_events_below(seq - 2)));  // three queued
    }
    CHECK_TRUE(MUST(s->put_queued_event({499, "{\"n\":499,\"count\":2}"})));  // a folded count
    CHECK_FALSE(s->writable());
    LONGS_EQUAL(4, s->pending());  // rows 498 to 500, the delete below 498
    FaultyVfs::set_full(false);
    CHECK_TRUE(s->retry().ok());
    auto rows = MUST(s->list_queued_events());
    LONGS_EQUAL(3, rows.size());
    LONGS_EQUAL(498, rows[0].seq);
    STRCMP_EQUAL("{\"n\":499,\"count\":2}", rows[1].json.c_str());
    LONGS_EQUAL(500, rows[2].seq);
}

TEST(Storage, AStoreOpenedReadOnlyKeepsEverythingAndSaysItRecordsNothing) {
    s->close();
    s = std::make_unique<agent::Storage>(nullptr, MUST(store::Store::open_readonly(path)), clock,
                                         "/var/lib/daemonlet is on a read-only file system");
    const std::string before = dump_state(path);
    CHECK_FALSE(s->writable());
    CHECK_TRUE(roll_out(*s).ok());
    CHECK_TRUE(MUST(s->put_meta("resourceVersion", "7")));
    CHECK_FALSE(s->retry().ok());
    STRCMP_EQUAL(", stateDir read-only: nothing is recorded", s->status_suffix().c_str());
    STRCMP_EQUAL(before.c_str(), dump_state(path).c_str());
    // Reads are the store's.
    LONGS_EQUAL(1, MUST(s->list_pods()).size());
}

// The store's worker holding the database past the busy timeout (a RESTART
// checkpoint on a card far behind) refuses a write SQLITE_BUSY: it is kept
// as for a full disk, said, and lands at the retry once the lock is gone.
// The lock here: a second connection's BEGIN IMMEDIATE (the write lock).
TEST(Storage, AWriteRefusedBusyIsKeptAndLandsOnceTheLockIsReleased) {
    const std::string before = dump_state(path);
    RawDb other(path, SQLITE_OPEN_READWRITE);
    STRCMP_EQUAL("", other.exec("BEGIN IMMEDIATE").c_str());
    PodRecord pod = sample_pod("uid-2");
    CHECK_TRUE(MUST(s->put_pod(pod)));  // kept: the caller goes on
    CHECK_FALSE(s->writable());
    LONGS_EQUAL(1, s->pending());
    STRCMP_EQUAL(", stateDir busy (a checkpoint holds the database): 1 changes not recorded yet",
                 s->status_suffix().c_str());
    CHECK_TEXT(s->status_json()["error"].get<std::string>().find("locked") != std::string::npos,
               s->status_json().dump().c_str());
    CHECK_FALSE(s->retry().ok());  // still held
    LONGS_EQUAL(1, s->pending());

    STRCMP_EQUAL("", other.exec("COMMIT").c_str());
    clock.advance(2000);
    CHECK_TRUE(s->retry().ok());
    CHECK_TRUE(s->writable());
    LONGS_EQUAL(0, s->pending());
    STRCMP_EQUAL("", s->status_suffix().c_str());
    STRCMP_EQUAL(written_directly([&](store::Store& d) -> Status {
                     if (auto r = d.put_pod(pod); !r.ok()) return r.error();
                     return Ok{};
                 }).c_str(),
                 dump_state(path).c_str());
}

// An agent of a newer build on a full stateDir whose database has an older
// schema: the open's migration cannot be written, so the agent runs from a
// copy (Store::open_copy) and each retry opens the file again; once space
// returns the open migrates it and what was kept lands in it.
TEST(Storage, AnUpgradeTheFullDiskRefusesRunsFromACopyAndMigratesOnceSpaceReturns) {
    s->close();
    const std::string old = dir.file("old.db");
    write_version5(old);
    FaultyVfs::set_full(true);
    auto opened = store::Store::open(old, kNow, nullptr);
    CHECK_FALSE(opened.ok());
    STRCMP_EQUAL("no_space", opened.error().code_name());
    s = std::make_unique<agent::Storage>(nullptr, MUST(store::Store::open_copy(old)), clock);
    s->open_later(opened.error(), [&](std::int64_t now_ms) {
        agent::Storage::Reopened r;
        r.store = store::Store::open(old, now_ms, nullptr);
        return r;
    });
    CHECK_FALSE(s->writable());
    LONGS_EQUAL(1, MUST(s->list_pods()).size());  // the pods the version 5 file holds
    CHECK_TRUE(MUST(s->put_pod(sample_pod("uid-2"))));
    LONGS_EQUAL(1, s->pending());
    CHECK_FALSE(s->retry().ok());  // still full: the open fails again
    CHECK_FALSE(s->writable());
    LONGS_EQUAL(5, RawDb(old).scalar("PRAGMA user_version"));

    FaultyVfs::set_full(false);
    CHECK_TRUE(s->retry().ok());
    CHECK_TRUE(s->writable());
    LONGS_EQUAL(0, s->pending());
    LONGS_EQUAL(store::sql::kSchemaVersion, RawDb(old).scalar("PRAGMA user_version"));
    LONGS_EQUAL(2, MUST(s->list_pods()).size());  // the file's, with the kept write
}

// Storage::open, the agent's start (agent.cpp): the mode it runs in.
TEST(Storage, OpenOnAHealthyStateDirRunsFromTheFile) {
    s = open_state_dir(dir.path());
    CHECK_TRUE(s->mode() == agent::Storage::Mode::Normal);
    CHECK_TRUE(s->writable());
    LONGS_EQUAL(1, MUST(s->list_pods()).size());  // the fixture's
}

// A file that is no database: moved aside, the store starts empty (the
// agent rebuilds it), in the normal mode.
TEST(Storage, OpenMovesABadFileAsideAndStartsEmpty) {
    s->close();
    s.reset();  // the connection closed: its -wal checkpointed
    std::filesystem::remove(path + "-wal");
    std::filesystem::remove(path + "-shm");
    spoil(path);
    s = open_state_dir(dir.path());
    CHECK_TRUE(s->mode() == agent::Storage::Mode::Normal);
    CHECK_TRUE(s->writable());
    LONGS_EQUAL(0, MUST(s->list_pods()).size());
    CHECK_TRUE(std::filesystem::exists(path + ".corrupt-" + std::to_string(clock.wall_ms())));
    LONGS_EQUAL(0, moved_aside);  // at the start: rebuilt here, no stop asked
}

// A stateDir too full for the open's migration: the pods run from a copy,
// and the retry opens (and migrates) the file once there is room.
TEST(Storage, OpenOnAFullStateDirRunsFromACopyUntilTheFileOpens) {
    TempDir state;
    const std::string db = open_from_copy(state);
    CHECK_FALSE(s->writable());
    LONGS_EQUAL(1, MUST(s->list_pods()).size());  // the file's
    CHECK_FALSE(s->retry().ok());
    CHECK_TRUE(s->mode() == agent::Storage::Mode::Copy);

    FaultyVfs::set_full(false);
    CHECK_TRUE(s->retry().ok());
    CHECK_TRUE(s->mode() == agent::Storage::Mode::Normal);
    CHECK_TRUE(s->writable());
    LONGS_EQUAL(store::sql::kSchemaVersion, RawDb(db).scalar("PRAGMA user_version"));
    LONGS_EQUAL(2, MUST(s->list_pods()).size());
    LONGS_EQUAL(0, moved_aside);
}

// The file goes bad while the pods run from the copy: the reopen moves it
// aside once and says so (the agent stops to start again); the copy, with
// the writes kept, is written into a new file in its place (a whole
// database: integrity_check), which the next start opens as it is.
TEST(Storage, AFileThatGoesBadWhileRunningFromACopyIsMovedAsideOnceAndTheCopyTakesItsPlace) {
    TempDir state;
    const std::string db = open_from_copy(state);  // pod uid-1 in the file, uid-2 kept
    CHECK_TRUE(MUST(s->put_daemonset(sample_daemonset("agent"))));
    CHECK_TRUE(MUST(s->put_revision(sample_revision("agent", 1))));
    CHECK_TRUE(MUST(s->put_api_daemonset({"kube-system", "agent", R"({"kind":"DaemonSet"})"})));
    CHECK_TRUE(MUST(s->put_queued_event({7, R"({"reason":"SuccessfulCreate"})"})));
    spoil(db);
    FaultyVfs::set_full(false);
    auto first = s->retry();
    CHECK_FALSE(first.ok());
    STRCMP_EQUAL("corrupt", first.error().code_name());
    LONGS_EQUAL(1, moved_aside);
    CHECK_TRUE(std::filesystem::exists(db + ".corrupt-" + std::to_string(clock.wall_ms())));
    CHECK_FALSE(s->retry().ok());
    LONGS_EQUAL(1, moved_aside);
    s->close();
    s.reset();
    CHECK_FALSE(std::filesystem::exists(db + ".saving"));
    {
        RawDb raw(db, SQLITE_OPEN_READONLY);
        STRCMP_EQUAL("ok", raw.rows("PRAGMA integrity_check").c_str());
        LONGS_EQUAL(store::sql::kSchemaVersion, raw.scalar("PRAGMA user_version"));
        STRCMP_EQUAL("uid-1\nuid-2", raw.rows("SELECT uid FROM pods ORDER BY uid").c_str());
        STRCMP_EQUAL("kube-system|agent", raw.rows("SELECT namespace, name FROM api_daemonsets").c_str());
        STRCMP_EQUAL("agent|1|hash-1", raw.rows("SELECT daemonset, revision, hash FROM revisions").c_str());
        STRCMP_EQUAL("7", raw.rows("SELECT seq FROM cluster_events").c_str());
    }
    s = open_state_dir(state.path());  // the next start: the file as it is
    CHECK_TRUE(s->mode() == agent::Storage::Mode::Normal);
    LONGS_EQUAL(2, MUST(s->list_pods()).size());
    LONGS_EQUAL(1, MUST(s->list_api_daemonsets()).size());
    LONGS_EQUAL(1, MUST(s->list_queued_events()).size());
    LONGS_EQUAL(1, MUST(s->list_revisions("kube-system", "agent")).size());
    CHECK_FALSE(std::filesystem::exists(db + ".corrupt-" + std::to_string(clock.wall_ms()) + ".1"));
}

// The disk is full again when the copy is written: nothing half-written is
// left (no <db>.saving; at the path only what the recovery made, which the
// next start opens empty), and the stop happens all the same.
TEST(Storage, ACopyThatCannotBeWrittenInPlaceOfTheBadFileLeavesNothingHalfWritten) {
    TempDir state;
    const std::string db = open_from_copy(state);
    spoil(db);
    // statvfs sees room (the reopen is tried); SQLite's writes find none.
    auto first = s->retry();
    CHECK_FALSE(first.ok());
    STRCMP_EQUAL("corrupt", first.error().code_name());
    LONGS_EQUAL(1, moved_aside);
    CHECK_FALSE(std::filesystem::exists(db + ".saving"));
    CHECK_FALSE(std::filesystem::exists(db + ".saving-journal"));
    FaultyVfs::set_full(false);
    CHECK_FALSE(s->retry().ok());  // moved aside once: never written after
    s->close();
    s.reset();
    LONGS_EQUAL(0, std::filesystem::file_size(db));  // the recovery's empty file, nothing in it
    s = open_state_dir(state.path());
    CHECK_TRUE(s->mode() == agent::Storage::Mode::Normal);
    LONGS_EQUAL(0, MUST(s->list_pods()).size());
}

// Issue 15 §3: the disk work of a full stateDir's recovery does not stall
// the loop. The reopen that succeeds once space returns (open, quick_check,
// the migration) runs off the loop: the loop turns meanwhile, reads the
// copy and keeps what is written; then the kept writes land in the file.
TEST(Storage, TheReopenOnceSpaceReturnsRunsOffTheLoop) {
    TempDir state;
    const std::string db = open_from_copy(state, use_loop());  // uid-1 in the file, uid-2 kept
    hold_disk_work();
    hold.on_held = [this](const std::string&) {
        LONGS_EQUAL(1, MUST(s->list_pods()).size());  // the copy's
        CHECK_TRUE(MUST(s->put_pod(sample_pod("uid-3"))));
    };
    FaultyVfs::set_full(false);
    auto first = s->retry();
    CHECK_FALSE(first.ok());
    STRCMP_EQUAL("busy", first.error().code_name());  // in progress, off the loop
    CHECK_TRUE(run_until([&] { return s->mode() == agent::Storage::Mode::Normal; }));
    LONGS_EQUAL(1, hold.held.size());
    STRCMP_EQUAL("reopen:loop turned", hold.held[0].c_str());
    CHECK_TRUE(s->writable());
    LONGS_EQUAL(0, s->pending());
    LONGS_EQUAL(store::sql::kSchemaVersion, RawDb(db).scalar("PRAGMA user_version"));
    LONGS_EQUAL(3, MUST(s->list_pods()).size());
}

// The copy's write in place of a file gone bad (a backup of up to 32 MiB
// and its fsyncs) runs off the loop too, from a snapshot of the copy: the
// loop reads the copy meanwhile, and a write made then is kept, not half
// in the file; the stop is asked once the copy is written.
TEST(Storage, TheCopyWrittenInPlaceOfABadFileIsWrittenOffTheLoop) {
    TempDir state;
    const std::string db = open_from_copy(state, use_loop());
    hold_disk_work();
    hold.on_held = [this](const std::string& what) {
        if (what != "save") return;
        LONGS_EQUAL(0, moved_aside);
        LONGS_EQUAL(1, MUST(s->list_pods()).size());
        CHECK_TRUE(MUST(s->put_pod(sample_pod("uid-3"))));
    };
    spoil(db);
    FaultyVfs::set_full(false);
    CHECK_FALSE(s->retry().ok());
    CHECK_TRUE(run_until([&] { return moved_aside == 1; }));
    LONGS_EQUAL(2, hold.held.size());
    STRCMP_EQUAL("reopen:loop turned", hold.held[0].c_str());
    STRCMP_EQUAL("save:loop turned", hold.held[1].c_str());
    LONGS_EQUAL(1, s->pending());  // uid-3: not recorded (said at the stop)
    s->close();
    s.reset();
    RawDb raw(db, SQLITE_OPEN_READONLY);
    STRCMP_EQUAL("ok", raw.rows("PRAGMA integrity_check").c_str());
    STRCMP_EQUAL("uid-1\nuid-2", raw.rows("SELECT uid FROM pods ORDER BY uid").c_str());
}

// A file that fails its check, on a full stateDir that cannot take its -shm
// (the last agent's clean stop removed it): the open can neither see that
// it is bad nor move it aside and make a new one. The agent starts all the
// same, from an empty copy (Mode::Copy, said in `storage`), its writes
// kept; once there is room the reopen moves the file aside and the copy,
// with the writes, is written in its place (the existing path).
TEST(Storage, ACorruptFileOnAFullStateDirWithoutItsShmRunsFromAnEmptyCopyUntilThereIsRoom) {
    TempDir state;
    const std::string db = state.file("daemonlet.db");
    write_seeded(db);
    CHECK_FALSE(std::filesystem::exists(db + "-shm"));
    spoil(db, 4096, 4096);  // a page past the header (which stays a WAL database's)
    full_without_shm(true);
    s = open_state_dir(state.path());
    CHECK_TRUE(s->mode() == agent::Storage::Mode::Copy);
    CHECK_FALSE(s->writable());
    CHECK_TEXT(s->status_json()["error"].get<std::string>().find("empty copy") != std::string::npos,
               s->status_json().dump().c_str());
    LONGS_EQUAL(0, MUST(s->list_pods()).size());
    CHECK_TRUE(MUST(s->put_pod(sample_pod("uid-2"))));
    CHECK_FALSE(s->retry().ok());  // still full
    LONGS_EQUAL(0, moved_aside);

    full_without_shm(false);
    auto moved = s->retry();
    CHECK_FALSE(moved.ok());
    STRCMP_EQUAL("corrupt", moved.error().code_name());
    LONGS_EQUAL(1, moved_aside);
    CHECK_TRUE(std::filesystem::exists(db + ".corrupt-" + std::to_string(clock.wall_ms())));
    s->close();
    s.reset();
    {
        RawDb raw(db, SQLITE_OPEN_READONLY);
        STRCMP_EQUAL("ok", raw.rows("PRAGMA integrity_check").c_str());
        STRCMP_EQUAL("uid-2", raw.rows("SELECT uid FROM pods").c_str());
    }
    s = open_state_dir(state.path());  // the next start: the file as it is
    CHECK_TRUE(s->mode() == agent::Storage::Mode::Normal);
    LONGS_EQUAL(1, MUST(s->list_pods()).size());
}

// The copy's check found the file bad, and the open with room finds it
// good (the card's read came back right): it holds what this agent never
// loaded, so it is not written over with the empty copy's changes. The
// agent stops (moved_aside: exit status 1) to start again from it.
TEST(Storage, AFileFoundBadOnAFullDiskThatOpensWithRoomIsNotWrittenOver) {
    TempDir state;
    const std::string db = state.file("daemonlet.db");
    const std::string good = state.file("good.db");
    write_seeded(good);
    std::filesystem::copy_file(good, db);
    spoil(db, 4096, 4096);
    full_without_shm(true);
    s = open_state_dir(state.path());
    CHECK_TRUE(s->mode() == agent::Storage::Mode::Copy);
    CHECK_TRUE(MUST(s->put_pod(sample_pod("uid-2"))));
    std::filesystem::copy_file(good, db, std::filesystem::copy_options::overwrite_existing);

    full_without_shm(false);
    CHECK_FALSE(s->retry().ok());
    LONGS_EQUAL(1, moved_aside);  // the stop asked
    CHECK_FALSE(s->writable());
    s->close();  // its last try does not write either
    s.reset();
    RawDb raw(db, SQLITE_OPEN_READONLY);
    STRCMP_EQUAL("uid-1", raw.rows("SELECT uid FROM pods").c_str());
}

// The same with the file's header destroyed: the open knows it for no
// database and moves it aside, but the full disk will not take a new one.
// The start runs from an empty copy too, and once there is room the reopen
// makes the new file and writes what was kept into it.
TEST(Storage, AFileWithoutItsHeaderOnAFullStateDirRunsFromAnEmptyCopyUntilThereIsRoom) {
    TempDir state;
    const std::string db = state.file("daemonlet.db");
    write_seeded(db);
    spoil(db, 0, 100);  // "SQLite format 3" and the page size gone
    full_without_shm(true);
    s = open_state_dir(state.path());
    CHECK_TRUE(s->mode() == agent::Storage::Mode::Copy);
    CHECK_FALSE(s->writable());
    LONGS_EQUAL(0, moved_aside);  // no stop asked: nothing of the copy is to be saved in a file's place
    LONGS_EQUAL(0, MUST(s->list_pods()).size());
    CHECK_TRUE(MUST(s->put_pod(sample_pod("uid-2"))));
    CHECK_FALSE(s->retry().ok());  // still full

    full_without_shm(false);
    auto reopened = s->retry();
    CHECK_TEXT(reopened.ok(), reopened.ok() ? "" : reopened.error().message.c_str());
    CHECK_TRUE(s->mode() == agent::Storage::Mode::Normal);
    LONGS_EQUAL(0, moved_aside);
    int aside = 0;  // the headerless file, kept for a look
    for (const auto& e : std::filesystem::directory_iterator(state.path()))
        aside += e.path().filename().string().rfind("daemonlet.db.corrupt-", 0) == 0;
    LONGS_EQUAL(1, aside);
    s->close();
    s.reset();
    RawDb raw(db, SQLITE_OPEN_READONLY);
    STRCMP_EQUAL("ok", raw.rows("PRAGMA integrity_check").c_str());
    STRCMP_EQUAL("uid-2", raw.rows("SELECT uid FROM pods").c_str());
}

// The agent stopped while the reopen runs off the loop: the stop waits for
// it and ends it (the migration in the file, what was kept written), and
// the loop's later end of it does nothing.
TEST(Storage, AStopWhileTheReopenRunsWaitsForItAndRecordsWhatWasKept) {
    TempDir state;
    const std::string db = open_from_copy(state, use_loop());  // uid-1 in the file, uid-2 kept
    FaultyVfs::set_full(false);
    STRCMP_EQUAL("busy", s->retry().error().code_name());
    CHECK_TRUE(s->disk_work_running());
    s->close();
    CHECK_FALSE(s->disk_work_running());
    CHECK_TRUE(s->writable());
    LONGS_EQUAL(0, s->pending());
    s.reset();
    uv_run(&loop, UV_RUN_DEFAULT);  // the work's end on the loop: nothing left to do
    LONGS_EQUAL(store::sql::kSchemaVersion, RawDb(db).scalar("PRAGMA user_version"));
    STRCMP_EQUAL("uid-1\nuid-2",
                 RawDb(db, SQLITE_OPEN_READONLY).rows("SELECT uid FROM pods ORDER BY uid").c_str());
}
