// Fault injection, as SQLite tests itself: make the n-th SQLite step fail
// for n = 1, 2, ... through a multi-row change, and after each failure check
// the invariants: nothing half-written (the database is exactly as before),
// the file is intact, and the store goes on working.
#include <memory>
#include <string>

#include "store/store.h"
#include "store/testing.h"
#include "tests/store/store_fixture.h"

#include <CppUTest/TestHarness.h>

using namespace daemonlet;
using namespace daemonlet::testing;

namespace {

constexpr std::int64_t kNow = 1'717'000'000'000;

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

}  // namespace

TEST_GROUP(StoreFaults) {
    TempDir dir;
    std::string path = dir.file("daemonlet.db");
    std::unique_ptr<store::Store> s;
    void setup() override {
        s = MUST(store::Store::open(path, kNow, nullptr));
        CHECK_TRUE(seed_state(*s).ok());
    }
    void teardown() override {
        store::testing::fail_after(0);
        s.reset();
    }

    // The state roll_out produces when nothing fails, made on a twin.
    std::string state_after_roll_out() {
        const std::string twin = dir.file("twin.db");
        auto t = MUST(store::Store::open(twin, kNow, nullptr));
        CHECK_TRUE(seed_state(*t).ok());
        CHECK_TRUE(roll_out(*t).ok());
        return dump_state(twin);
    }

    void check_intact_and_working(std::int64_t n) {
        RawDb raw(path, SQLITE_OPEN_READONLY);
        STRCMP_EQUAL("ok", raw.rows("PRAGMA integrity_check").c_str());
        LONGS_EQUAL(0, raw.scalar("PRAGMA foreign_key_check"));
        CHECK_TRUE(MUST(s->put_meta("probe", std::to_string(n))));
        STRCMP_EQUAL(std::to_string(n).c_str(), MUST(s->get_meta("probe"))->c_str());
    }

    // Fails step n, then n+1, ... of roll_out until it gets through.
    void fail_every_step(bool persistent) {
        const std::string before = dump_state(path);
        const std::string after = state_after_roll_out();
        std::int64_t n = 1;
        for (;; ++n) {
            store::testing::fail_after(n, persistent);
            Status st = roll_out(*s);
            const bool fired = store::testing::fault_fired();
            store::testing::fail_after(0);
            if (!fired) {
                CHECK_TEXT(st.ok(), st.ok() ? "" : st.error().message.c_str());
                break;
            }
            CHECK_FALSE(st.ok());
            CHECK_TEXT(contains(st.error().message, "injected"), st.error().message.c_str());
            CHECK_TEXT(contains(st.error().message, path + ": "), st.error().message.c_str());
            STRCMP_EQUAL_TEXT(before.c_str(), dump_state(path).c_str(),
                              ("failing step " + std::to_string(n)).c_str());
            check_intact_and_working(n);
        }
        STRCMP_EQUAL(after.c_str(), dump_state(path).c_str());
        // Every step of the change was failed once: BEGIN, the compares and
        // writes, the savepoints, COMMIT.
        CHECK_TEXT(n > 25, std::to_string(n).c_str());
    }
};

TEST(StoreFaults, AnyFailedStepOfATransactionLeavesNothingWritten) { fail_every_step(false); }

TEST(StoreFaults, AStepFailingForGoodLeavesNothingWritten) { fail_every_step(true); }

TEST(StoreFaults, AnyFailedStepOfALoneEventLeavesNothingWritten) {
    const std::string before = dump_state(path);
    std::int64_t n = 1;
    for (;; ++n) {
        store::testing::fail_after(n);
        auto r = s->add_event(sample_event("Pod/agent-x7k2p", 7));
        const bool fired = store::testing::fault_fired();
        store::testing::fail_after(0);
        if (!fired) break;
        CHECK_FALSE(r.ok());
        STRCMP_EQUAL(before.c_str(), dump_state(path).c_str());
        check_intact_and_working(n);
    }
    LONGS_EQUAL(6, n);  // BEGIN, insert, two trims, COMMIT, then success
    LONGS_EQUAL(1, MUST(s->list_events("kube-system", "Pod/agent-x7k2p", 0)).size());
}

TEST(StoreFaults, AFailedEventInsideATransactionIsUndoneAloneAndTheRestCommits) {
    std::int64_t n = 1;
    for (;; ++n) {
        auto tx = MUST(s->begin());
        PodRecord a = sample_pod("uid-a" + std::to_string(n));
        CHECK_TRUE(MUST(s->put_pod(a)));
        store::testing::fail_after(n);
        auto ev = s->add_event(sample_event("Pod/a" + std::to_string(n), 1));
        const bool fired = store::testing::fault_fired();
        store::testing::fail_after(0);
        CHECK_TRUE(MUST(s->put_pod(sample_pod("uid-b" + std::to_string(n)))));
        CHECK_TRUE(tx->commit().ok());
        const auto events = MUST(s->list_events("kube-system", "Pod/a" + std::to_string(n), 0)).size();
        if (!fired) {
            LONGS_EQUAL(1, events);
            break;
        }
        CHECK_FALSE(ev.ok());
        LONGS_EQUAL(0, events);
    }
    LONGS_EQUAL(6, n);  // SAVEPOINT, insert, two trims, RELEASE, then success
    LONGS_EQUAL(1 + 2 * n, MUST(s->list_pods()).size());
}

TEST(StoreFaults, AnyFailedStepOfOpeningLeavesNoHalfSchema) {
    std::int64_t n = 1;
    for (;; ++n) {
        TempDir fresh;
        const std::string db = fresh.file("daemonlet.db");
        store::testing::fail_after(n);
        auto r = store::Store::open(db, kNow, nullptr);
        const bool fired = store::testing::fault_fired();
        store::testing::fail_after(0);
        if (!fired) {
            CHECK_TRUE(r.ok());
            break;
        }
        CHECK_FALSE(r.ok());
        // An I/O error is not corruption: nothing is moved aside.
        STRCMP_EQUAL("sqlite", r.error().code_name());
        CHECK_FALSE(stamp(db + ".corrupt-" + std::to_string(kNow)).exists);
        {
            RawDb raw(db);
            const std::int64_t version = raw.scalar("PRAGMA user_version");
            const std::int64_t tables = raw.scalar("SELECT count(*) FROM sqlite_master");
            CHECK_TEXT((version == 0 && tables == 0) || (version == 1 && tables > 6),
                       std::to_string(n).c_str());
        }
        auto again = MUST(store::Store::open(db, kNow, nullptr));
        CHECK_TRUE(MUST(again->put_pod(sample_pod("uid-1"))));
    }
    CHECK_TEXT(n > 6, std::to_string(n).c_str());
}
