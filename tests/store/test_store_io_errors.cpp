// I/O errors from below SQLite (a VFS failing the n-th write, sync or
// truncate), so that SQLite's own error handling runs: a failed commit
// leaves the database as it was; an error that makes SQLite roll the whole
// transaction back stops the store from writing the rest of it piecemeal;
// an I/O error at open is not mistaken for corruption.
#include <filesystem>
#include <memory>
#include <string>

#include "store/store.h"
#include "tests/store/faulty_vfs.h"
#include "tests/store/store_fixture.h"

#include <CppUTest/TestHarness.h>

using namespace daemonlet;
using namespace daemonlet::testing;

namespace {

constexpr std::int64_t kNow = 1'717'000'000'000;

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

PodRecord big_pod(int j) {
    PodRecord p = sample_pod("big-" + std::to_string(j));
    p.containers[1].message = std::string(8192, 'm');
    return p;
}

}  // namespace

TEST_GROUP(StoreIoErrors) {
    TempDir dir;
    std::string path = dir.file("daemonlet.db");
    FaultyVfs vfs;  // the default VFS for every connection opened by this test
    std::unique_ptr<store::Store> s;
    void setup() override {
        s = MUST(store::Store::open(path, kNow, nullptr));
        CHECK_TRUE(seed_state(*s).ok());
    }
    void teardown() override {
        FaultyVfs::fail_after(0);
        s.reset();
    }
    void check_intact_and_working(std::int64_t n) {
        {
            RawDb raw(path, SQLITE_OPEN_READONLY);
            STRCMP_EQUAL("ok", raw.rows("PRAGMA integrity_check").c_str());
        }
        CHECK_TRUE(MUST(s->put_meta("probe", std::to_string(n))));
        STRCMP_EQUAL(std::to_string(n).c_str(), MUST(s->get_meta("probe"))->c_str());
    }
};

TEST(StoreIoErrors, AFailedWriteAnywhereInACommitLeavesTheDatabaseAsItWas) {
    const std::string before = dump_state(path);
    std::int64_t n = 1;
    for (;; ++n) {
        FaultyVfs::fail_after(n);
        Status st = roll_out(*s);
        const bool fired = FaultyVfs::fired();
        FaultyVfs::fail_after(0);
        if (!fired) {
            CHECK_TEXT(st.ok(), st.ok() ? "" : st.error().message.c_str());
            break;
        }
        CHECK_FALSE(st.ok());
        CHECK_TEXT(contains(st.error().message, path + ": commit: disk I/O error"),
                   st.error().message.c_str());
        STRCMP_EQUAL_TEXT(before.c_str(), dump_state(path).c_str(),
                          ("failing write " + std::to_string(n)).c_str());
        check_intact_and_working(n);
    }
    CHECK_TEXT(n > 3, std::to_string(n).c_str());  // the commit writes several -wal frames
    CHECK_FALSE(before == dump_state(path));
}

TEST(StoreIoErrors, AfterSQLiteRolledTheTransactionBackNothingMoreIsWritten) {
    const std::string before = dump_state(path);
    {
        auto tx = MUST(s->begin());
        CHECK_TRUE(MUST(s->put_meta("resourceVersion", "2")));
        // Enough to overflow SQLite's page cache: it spills to the -wal in
        // the middle of a put, and that first write fails.
        FaultyVfs::fail_after(1);
        int j = 0;
        Result<bool> r = true;
        for (; j < 1000 && r.ok(); ++j) r = s->put_pod(big_pod(j));
        const bool fired = FaultyVfs::fired();
        FaultyVfs::fail_after(0);
        CHECK_TRUE(fired);
        CHECK_FALSE(r.ok());
        CHECK_TEXT(j > 10, std::to_string(j).c_str());
        // SQLite has ended the transaction; every later write would commit on
        // its own. The store refuses them.
        auto later = s->put_pod(sample_pod("uid-later"));
        CHECK_FALSE(later.ok());
        CHECK_TEXT(contains(later.error().message, "rolled back after an earlier error"),
                   later.error().message.c_str());
        CHECK_FALSE(s->add_event(sample_event("Pod/later", 1)).ok());
        CHECK_FALSE(tx->commit().ok());
    }
    STRCMP_EQUAL(before.c_str(), dump_state(path).c_str());
    check_intact_and_working(1);
}

TEST(StoreIoErrors, AnIoErrorAtOpenIsNotCorruption) {
    std::int64_t n = 1;
    for (;; ++n) {
        TempDir fresh;
        const std::string db = fresh.file("daemonlet.db");
        FaultyVfs::fail_after(n);
        store::OpenReport report;
        auto r = store::Store::open(db, kNow, &report);
        const bool fired = FaultyVfs::fired();
        FaultyVfs::fail_after(0);
        if (!fired) {
            CHECK_TRUE(r.ok());
            break;
        }
        if (r.ok()) continue;  // the failed write was not the store's to see (a checkpoint)
        STRCMP_EQUAL("sqlite", r.error().code_name());
        CHECK_FALSE(report.recovered);
        CHECK_FALSE(stamp(db + ".corrupt-" + std::to_string(kNow)).exists);
        auto again = MUST(store::Store::open(db, kNow, nullptr));
        CHECK_TRUE(MUST(again->put_pod(sample_pod("uid-1"))));
    }
    CHECK_TEXT(n > 1, std::to_string(n).c_str());
}

// A full disk (issue 15 §3): SQLITE_FULL is "no_space", so that the agent
// keeps the write and tries again (agent/daemon/storage.h), and the failed
// transaction leaves nothing behind.
TEST(StoreIoErrors, AFullDiskIsNoSpaceAndLeavesTheDatabaseAsItWas) {
    const std::string before = dump_state(path);
    FaultyVfs::set_full(true);
    Status st = roll_out(*s);
    FaultyVfs::set_full(false);
    CHECK_FALSE(st.ok());
    STRCMP_EQUAL("no_space", st.error().code_name());
    CHECK_TEXT(contains(st.error().message, "full"), st.error().message.c_str());
    STRCMP_EQUAL(before.c_str(), dump_state(path).c_str());
    check_intact_and_working(1);
}

// A copy in memory written in place of a file moved aside (save_copy_to),
// its n-th write or sync failing for n = 1, 2, ...: each failure leaves the
// path as it was and no <path>.saving; the first n that does not fire
// writes the whole copy, the writes applied first included. Only a copy is
// written so.
TEST(StoreIoErrors, ACopyWrittenInPlaceIsWholeOrNotThereAfterAFailureAnywhere) {
    const std::string target = dir.file("new.db");
    write_bytes(target, "the recovery's empty database");
    STRCMP_EQUAL("invalid", s->save_copy_to(target, {}).error().code_name());
    s.reset();  // the copy takes the file's lock for a moment
    auto copy = MUST(store::Store::open_copy(path));
    auto add_pod = [](store::Store& c) -> Status {
        if (auto r = c.put_pod(sample_pod("uid-kept")); !r) return r.error();
        return Ok{};
    };
    std::int64_t n = 1;
    for (;; ++n) {
        FaultyVfs::fail_after(n);
        Status st = copy->save_copy_to(target, add_pod);
        const bool fired = FaultyVfs::fired();
        FaultyVfs::fail_after(0);
        if (!fired) {
            CHECK_TRUE(st.ok());
            break;
        }
        CHECK_FALSE(st.ok());
        STRCMP_EQUAL("the recovery's empty database", read_bytes(target).c_str());
        CHECK_FALSE(std::filesystem::exists(target + ".saving"));
    }
    CHECK_TRUE(n > 2);  // the backup's writes and its sync were each failed once
    CHECK_FALSE(std::filesystem::exists(target + ".saving"));
    LONGS_EQUAL(0600, stamp(target).mode);
    RawDb raw(target, SQLITE_OPEN_READONLY);
    STRCMP_EQUAL("ok", raw.rows("PRAGMA integrity_check").c_str());
    STRCMP_EQUAL("uid-1\nuid-kept", raw.rows("SELECT uid FROM pods ORDER BY uid").c_str());
}
