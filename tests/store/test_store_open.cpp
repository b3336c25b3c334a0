// Opening the database: creation 0600, migrations from user_version 0, a
// database from the future refused, recovery from files that are not
// databases (moved aside with their -wal and -shm, a new one created), and
// the read-only open the CLI uses while the agent runs.
#include <sys/stat.h>

#include <chrono>
#include <filesystem>
#include <memory>
#include <string>

#include "store/sql.h"
#include "store/store.h"
#include "tests/store/store_fixture.h"

#include <CppUTest/TestHarness.h>

using namespace daemonlet;
using namespace daemonlet::testing;

namespace {

constexpr std::int64_t kNow = 1'717'000'000'000;
constexpr std::size_t kPage = 4096;  // SQLite's default page size

bool has_prefix(const std::string& s, const std::string& prefix) { return s.rfind(prefix, 0) == 0; }
bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// A store with some of everything, closed again (its WAL checkpointed away).
void fill(const std::string& path, int pods) {
    store::OpenReport report;
    auto s = MUST(store::Store::open(path, kNow, &report));
    auto tx = MUST(s->begin());
    CHECK_TRUE(MUST(s->put_daemonset(sample_daemonset("agent"))));
    for (int i = 0; i < pods; ++i) CHECK_TRUE(MUST(s->put_pod(sample_pod("uid-" + std::to_string(i)))));
    CHECK_TRUE(tx->commit().ok());
}

// A database an agent of schema 2 wrote: pods without pod_ips_json, one pod.
void make_version_two(const std::string& path) {
    RawDb raw(path);
    STRCMP_EQUAL("", raw.exec(store::sql::kMigrations[0].sql).c_str());
    STRCMP_EQUAL("", raw.exec(store::sql::kMigrations[1].sql).c_str());
    STRCMP_EQUAL("", raw.exec("PRAGMA user_version = 2").c_str());
    STRCMP_EQUAL("", raw.exec("INSERT INTO pods VALUES ('uid-1', 'agent-x7k2p', 'ns', 'agent', 'h1', 1, "
                              "'Running', 5, 0, '[]')")
                         .c_str());
}

}  // namespace

TEST_GROUP(StoreOpen) {
    TempDir dir;
    std::string path = dir.file("daemonlet.db");
};

TEST(StoreOpen, ANewDatabaseIsCreatedWithMode0600) {
    const mode_t old = ::umask(022);
    store::OpenReport report;
    auto s = MUST(store::Store::open(path, kNow, &report));
    ::umask(old);
    CHECK_TRUE(report.created);
    CHECK_FALSE(report.recovered);
    CHECK_TRUE(MUST(s->put_pod(sample_pod("uid-1"))));
    // All three files while open: SQLite gives -wal and -shm the database's mode.
    for (const char* suffix : {"", "-wal", "-shm"}) {
        FileStamp st = stamp(path + suffix);
        CHECK_TEXT(st.exists, suffix);
        LONGS_EQUAL_TEXT(0600, st.mode, suffix);
    }
}

TEST(StoreOpen, AStricterUmaskStillGives0600) {
    const mode_t old = ::umask(0277);
    auto s = MUST(store::Store::open(path, kNow, nullptr));
    ::umask(old);
    CHECK_TRUE(MUST(s->put_meta("k", "v")));
    LONGS_EQUAL(0600, stamp(path).mode);
}

TEST(StoreOpen, AnExistingDatabaseIsNarrowedTo0600) {
    fill(path, 1);
    ::chmod(path.c_str(), 0644);
    store::OpenReport report;
    auto s = MUST(store::Store::open(path, kNow, &report));
    CHECK_FALSE(report.created);
    LONGS_EQUAL(0600, stamp(path).mode);
    LONGS_EQUAL(0600, stamp(path + "-wal").mode);
    LONGS_EQUAL(0600, stamp(path + "-shm").mode);
}

TEST(StoreOpen, DataSurvivesReopening) {
    fill(path, 3);
    store::OpenReport report;
    auto s = MUST(store::Store::open(path, kNow, &report));
    CHECK_FALSE(report.created);
    CHECK_FALSE(report.recovered);
    LONGS_EQUAL(3, MUST(s->list_pods()).size());
}

// Store::flush (rollout undo's answer waits on it): an fdatasync of the -wal
// through SQLite's own file; before the first write of a connection there
// may be no -wal open, which is no error. Its durability is the cgroup2 VM's
// power cut (tests/systemd/vm_powercut.sh).
TEST(StoreOpen, FlushBeforeAndAfterWrites) {
    {
        store::OpenReport report;
        auto s = MUST(store::Store::open(path, kNow, &report));
        CHECK_TRUE(s->flush().ok());
        CHECK_TRUE(MUST(s->put_pod(sample_pod("uid-1"))));
        CHECK_TRUE(s->flush().ok());
    }
    auto s = MUST(store::Store::open(path, kNow, nullptr));
    CHECK_TRUE(s->flush().ok());
    LONGS_EQUAL(1, MUST(s->list_pods()).size());
}

TEST(StoreOpen, AnEmptyFileIsANewDatabase) {
    write_bytes(path, "");
    store::OpenReport report;
    auto s = MUST(store::Store::open(path, kNow, &report));
    CHECK_TRUE(report.created);
    CHECK_FALSE(report.recovered);
    CHECK_TRUE(MUST(s->put_pod(sample_pod("uid-1"))));
}

TEST(StoreOpen, MigratesFromUserVersionZero) {
    {
        RawDb raw(path);
        STRCMP_EQUAL("", raw.exec("CREATE TABLE scratch (x); INSERT INTO scratch VALUES (1)").c_str());
        LONGS_EQUAL(0, raw.scalar("PRAGMA user_version"));
    }
    store::OpenReport report;
    auto s = MUST(store::Store::open(path, kNow, &report));
    CHECK_FALSE(report.created);
    CHECK_FALSE(report.recovered);
    RawDb raw(path);
    LONGS_EQUAL(store::sql::kSchemaVersion, raw.scalar("PRAGMA user_version"));
    STRCMP_EQUAL("wal", raw.rows("PRAGMA journal_mode").c_str());
    STRCMP_EQUAL(
        "api_daemonsets\ncluster_events\ndaemonsets\nevents\nmanifest_"
        "files\nmeta\nnode\npods\nrevisions\nrollbacks\n"
        "scratch",
        raw.rows("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name").c_str());
    LONGS_EQUAL(1, raw.scalar("SELECT x FROM scratch"));
    CHECK_TRUE(MUST(s->put_daemonset(sample_daemonset("agent"))));
}

TEST(StoreOpen, MigratesAVersionTwoDatabaseItsPodsWithoutIps) {
    // Schema 2: pods without pod_ips_json. Migration 3 adds it; the pod
    // reads back with no IPs, and takes IPs from then on.
    make_version_two(path);
    auto s = MUST(store::Store::open(path, kNow, nullptr));
    auto pods = MUST(s->list_pods());
    LONGS_EQUAL(1, pods.size());
    CHECK_TRUE(pods[0].pod_ips.empty());
    pods[0].pod_ips = {"10.88.0.5", "fd00:88::5"};
    CHECK_TRUE(MUST(s->put_pod(pods[0])));
    CHECK_FALSE(MUST(s->put_pod(pods[0])));  // unchanged: not written again
    CHECK(MUST(s->list_pods())[0].pod_ips == pods[0].pod_ips);
}

TEST(StoreOpen, MigratesAVersionOneDatabaseKeepingItsRows) {
    // A database written by the previous daemonlet: schema 1 only, with a
    // DaemonSet in it. Migration 2 adds the rollbacks table and keeps the rows.
    {
        RawDb raw(path);
        STRCMP_EQUAL("", raw.exec(store::sql::kMigrations[0].sql).c_str());
        STRCMP_EQUAL("", raw.exec("PRAGMA user_version = 1").c_str());
        STRCMP_EQUAL(
            "", raw.exec("INSERT INTO daemonsets VALUES ('ns', 'agent', 'file:/x.yaml', 1, '{}', 'h1', 5)")
                    .c_str());
    }
    store::OpenReport report;
    auto s = MUST(store::Store::open(path, kNow, &report));
    CHECK_FALSE(report.recovered);
    {
        RawDb raw(path);
        LONGS_EQUAL(store::sql::kSchemaVersion, raw.scalar("PRAGMA user_version"));
        LONGS_EQUAL(1, raw.scalar("SELECT count(*) FROM daemonsets"));
    }
    store::StoredRollback rb{"ns", "agent", "f1", "h0", "{}", 7};
    CHECK_TRUE(MUST(s->put_rollback(rb)));
    CHECK(MUST(s->get_rollback("ns", "agent")) == rb);
}

TEST(StoreOpen, MigratesAVersionThreeDatabaseDroppingTheUnreadResourceVersions) {
    // Schema 3 wrote api.resourceVersion/<scope> and never read it (a new
    // agent lists first, as client-go's reflector does): migration 4 deletes
    // those rows, keeps the other meta, and adds manifest_files, empty.
    {
        RawDb raw(path);
        for (int i = 0; i < 3; ++i) STRCMP_EQUAL("", raw.exec(store::sql::kMigrations[i].sql).c_str());
        STRCMP_EQUAL("", raw.exec("PRAGMA user_version = 3").c_str());
        STRCMP_EQUAL("", raw.exec("INSERT INTO meta VALUES ('api.resourceVersion/', '41'),"
                                  " ('api.resourceVersion/it', '42'), ('api.node', '{}')")
                             .c_str());
    }
    auto s = MUST(store::Store::open(path, kNow, nullptr));
    {
        RawDb raw(path);
        LONGS_EQUAL(store::sql::kSchemaVersion, raw.scalar("PRAGMA user_version"));
        STRCMP_EQUAL("api.node", raw.rows("SELECT key FROM meta ORDER BY key").c_str());
    }
    CHECK_TRUE(MUST(s->list_manifest_files()).empty());
    CHECK_TRUE(MUST(s->put_manifest_file({"/m/a.yaml", "x", false, "", 1})));
}

TEST(StoreOpen, MigratesAVersionFiveDatabaseItsQueuedEventsToOneRowEach) {
    // Schema 5 kept the Events queued for the cluster as one JSON array in
    // meta 'api.events' (rewritten whole for each Event queued): migration 6
    // moves each Event to its own row of cluster_events, in the queue's
    // order, and deletes the array. An element that is no object is no
    // Event (the agent never wrote one) and is left out.
    const std::string a = R"({"eventName":"crasher.1","reason":"BackOff","count":3})";
    const std::string b = R"({"eventName":"crasher.2","reason":"Started","count":1})";
    {
        RawDb raw(path);
        for (int i = 0; i < 5; ++i) STRCMP_EQUAL("", raw.exec(store::sql::kMigrations[i].sql).c_str());
        STRCMP_EQUAL("", raw.exec("PRAGMA user_version = 5").c_str());
        STRCMP_EQUAL("", raw.exec("INSERT INTO meta VALUES ('api.events', '[" + a + ", 7, " + b +
                                  "]'), ('api.node', '{}')")
                             .c_str());
    }
    auto s = MUST(store::Store::open(path, kNow, nullptr));
    auto queued = MUST(s->list_queued_events());
    LONGS_EQUAL(2, queued.size());
    LONGS_EQUAL(1, queued[0].seq);
    STRCMP_EQUAL(a.c_str(), queued[0].json.c_str());
    LONGS_EQUAL(3, queued[1].seq);
    STRCMP_EQUAL(b.c_str(), queued[1].json.c_str());
    CHECK_FALSE(MUST(s->get_meta("api.events")).has_value());
    STRCMP_EQUAL("{}", MUST(s->get_meta("api.node"))->c_str());
    s.reset();
    RawDb raw(path);
    LONGS_EQUAL(store::sql::kSchemaVersion, raw.scalar("PRAGMA user_version"));
}

TEST(StoreOpen, MigratesAVersionSixDatabaseItsApiDaemonSetsToTheirOwnRows) {
    // Schema 6 kept one daemonsets row per name, the version in force: the
    // API server's DaemonSets are those of source 'api'. Migration 7 copies
    // them to api_daemonsets, the API source's own set; a file's is not one.
    {
        RawDb raw(path);
        for (int i = 0; i < 6; ++i) STRCMP_EQUAL("", raw.exec(store::sql::kMigrations[i].sql).c_str());
        STRCMP_EQUAL("", raw.exec("PRAGMA user_version = 6").c_str());
        STRCMP_EQUAL("",
                     raw.exec("INSERT INTO daemonsets VALUES ('it', 'b1', 'api', 1, '{\"v\":1}', 'h1', 5),"
                              " ('it', 'dup', 'file:/m/dup.yaml', 1, '{\"v\":2}', 'h2', 5)")
                         .c_str());
    }
    auto s = MUST(store::Store::open(path, kNow, nullptr));
    auto api = MUST(s->list_api_daemonsets());
    LONGS_EQUAL(1, api.size());
    CHECK_TRUE((api[0] == store::StoredApiDaemonSet{"it", "b1", "{\"v\":1}"}));
    LONGS_EQUAL(2, MUST(s->list_daemonsets()).size());  // kept as they were
    s.reset();
    RawDb raw(path);
    LONGS_EQUAL(store::sql::kSchemaVersion, raw.scalar("PRAGMA user_version"));
}

TEST(StoreOpen, MigratesAnEmptyOrBrokenEventsQueueToNoRows) {
    // The queue emptied ('' in meta), or a value that is no JSON array:
    // no rows, the meta row gone, the database migrated all the same.
    for (const char* value : {"", "not json", "{\"a\":1}"}) {
        TempDir d;
        const std::string p = d.file("daemonlet.db");
        {
            RawDb raw(p);
            for (int i = 0; i < 5; ++i) STRCMP_EQUAL("", raw.exec(store::sql::kMigrations[i].sql).c_str());
            STRCMP_EQUAL("", raw.exec("PRAGMA user_version = 5").c_str());
            STRCMP_EQUAL(
                "", raw.exec(std::string("INSERT INTO meta VALUES ('api.events', '") + value + "')").c_str());
        }
        auto s = MUST(store::Store::open(p, kNow, nullptr));
        CHECK_TEXT(MUST(s->list_queued_events()).empty(), value);
        CHECK_FALSE_TEXT(MUST(s->get_meta("api.events")).has_value(), value);
    }
}

TEST(StoreOpen, ADatabaseFromTheFutureIsRefusedAndLeftAlone) {
    fill(path, 1);
    {
        RawDb raw(path);
        STRCMP_EQUAL("", raw.exec("PRAGMA user_version = 99").c_str());
    }
    store::OpenReport report;
    auto r = store::Store::open(path, kNow, &report);
    CHECK_FALSE(r.ok());
    STRCMP_EQUAL("schema", r.error().code_name());
    CHECK_TEXT(has_prefix(r.error().message, path + ": open: "), r.error().message.c_str());
    CHECK_TEXT(contains(r.error().message, "schema version 99"), r.error().message.c_str());
    CHECK_FALSE(report.recovered);
    CHECK_FALSE(stamp(path + ".corrupt-" + std::to_string(kNow)).exists);
    RawDb raw(path);
    LONGS_EQUAL(99, raw.scalar("PRAGMA user_version"));
    LONGS_EQUAL(1, raw.scalar("SELECT count(*) FROM pods"));
}

TEST(StoreOpen, ErrorsNameThePathAndTheOperation) {
    fill(path, 0);
    auto ro = MUST(store::Store::open_readonly(path));
    auto r = ro->put_meta("k", "v");
    CHECK_FALSE(r.ok());
    STRCMP_EQUAL((path + ": put_meta: attempt to write a readonly database").c_str(),
                 r.error().message.c_str());
}

// ---------------------------------------------------------------------------

TEST_GROUP(StoreRecovery) {
    TempDir dir;
    std::string path = dir.file("daemonlet.db");
    std::string moved = path + ".corrupt-" + std::to_string(kNow);

    // Opens, expects a recovery, and checks the new database works.
    store::OpenReport open_recovering() {
        store::OpenReport report;
        auto s = MUST(store::Store::open(path, kNow, &report));
        CHECK_TRUE(report.recovered);
        CHECK_TRUE(report.created);
        STRCMP_EQUAL(moved.c_str(), report.moved_to.c_str());
        CHECK_TRUE(MUST(s->list_pods()).empty());
        CHECK_TRUE(MUST(s->put_pod(sample_pod("uid-new"))));
        LONGS_EQUAL(1, MUST(s->list_pods()).size());
        LONGS_EQUAL(0600, stamp(path).mode);
        return report;
    }
};

TEST(StoreRecovery, GarbageBytesAreMovedAside) {
    std::string garbage;
    for (int i = 0; i < 8192; ++i) garbage += static_cast<char>((i * 7919) & 0xff);
    write_bytes(path, garbage);
    store::OpenReport report = open_recovering();
    CHECK_TEXT(contains(report.reason, "file is not a database"), report.reason.c_str());
    CHECK_TEXT(has_prefix(report.reason, path + ": open: "), report.reason.c_str());
    CHECK_TRUE(read_bytes(moved) == garbage);  // kept as it was, for inspection
}

TEST(StoreRecovery, ATextFileIsNotADatabase) {
    write_bytes(path, "daemonlet state, I promise\n");
    store::OpenReport report = open_recovering();
    CHECK_TEXT(contains(report.reason, "file is not a database"), report.reason.c_str());
    STRCMP_EQUAL("daemonlet state, I promise\n", read_bytes(moved).c_str());
}

TEST(StoreRecovery, ATruncatedDatabaseIsMovedAside) {
    fill(path, 200);
    const std::int64_t size = stamp(path).size;
    CHECK_TRUE(size > static_cast<std::int64_t>(16 * kPage));
    CHECK_TRUE(::truncate(path.c_str(), static_cast<off_t>(size / 2)) == 0);
    store::OpenReport report = open_recovering();
    CHECK_TEXT(contains(report.reason, "malformed") || contains(report.reason, "quick_check"),
               report.reason.c_str());
    LONGS_EQUAL(size / 2, stamp(moved).size);
}

TEST(StoreRecovery, ADamagedPageFailsQuickCheck) {
    fill(path, 200);
    std::string bytes = read_bytes(path);
    CHECK_TRUE(bytes.size() > 8 * kPage);
    // Overwrite one b-tree page in the middle; the header and schema are intact.
    for (std::size_t i = 6 * kPage; i < 7 * kPage; ++i) bytes[i] = '\x55';
    write_bytes(path, bytes);
    store::OpenReport report = open_recovering();
    CHECK_TEXT(contains(report.reason, "quick_check") || contains(report.reason, "malformed"),
               report.reason.c_str());
}

TEST(StoreRecovery, ADirectoryWhereTheFileShouldBeIsMovedAside) {
    std::filesystem::create_directory(path);
    write_bytes(path + "/inside", "x");
    store::OpenReport report = open_recovering();
    CHECK_TEXT(contains(report.reason, "is a directory"), report.reason.c_str());
    STRCMP_EQUAL("x", read_bytes(moved + "/inside").c_str());
}

TEST(StoreRecovery, TheWalAndShmGoWithTheDatabase) {
    write_bytes(path, std::string(4096, 'g'));
    write_bytes(path + "-wal", "wal bytes");
    write_bytes(path + "-shm", "shm bytes");
    open_recovering();
    // The -wal exactly as it was: the failed open neither checkpointed nor
    // truncated it. The -shm is SQLite's shared-memory index, rebuilt by any
    // open: moved along, its bytes are of no interest.
    STRCMP_EQUAL("wal bytes", read_bytes(moved + "-wal").c_str());
    CHECK_TRUE(stamp(moved + "-shm").exists);
}

TEST(StoreRecovery, AWalWithoutItsDatabaseIsMovedAside) {
    // SQLite would replay it into a new database.
    fill(path, 3);
    write_bytes(path + "-wal", "a WAL of some other database");
    std::filesystem::remove(path);
    store::OpenReport report = open_recovering();
    CHECK_TEXT(contains(report.reason, "-wal exists"), report.reason.c_str());
    STRCMP_EQUAL("a WAL of some other database", read_bytes(moved + "-wal").c_str());
    CHECK_FALSE(stamp(moved).exists);
}

TEST(StoreRecovery, ATakenNameGetsASuffix) {
    write_bytes(path, "first bad file");
    open_recovering();
    write_bytes(path, "second bad file");
    store::OpenReport report;
    auto s = MUST(store::Store::open(path, kNow, &report));
    CHECK_TRUE(report.recovered);
    STRCMP_EQUAL((moved + ".1").c_str(), report.moved_to.c_str());
    STRCMP_EQUAL("first bad file", read_bytes(moved).c_str());
    STRCMP_EQUAL("second bad file", read_bytes(moved + ".1").c_str());
}

// ---------------------------------------------------------------------------

TEST_GROUP(StoreReadonly) {
    TempDir dir;
    std::string path = dir.file("daemonlet.db");
};

TEST(StoreReadonly, ReadsWhileTheWriterHasTheDatabaseOpen) {
    auto writer = MUST(store::Store::open(path, kNow, nullptr));
    CHECK_TRUE(MUST(writer->put_daemonset(sample_daemonset("agent"))));
    CHECK_TRUE(MUST(writer->put_pod(sample_pod("uid-1"))));

    auto reader = MUST(store::Store::open_readonly(path));
    LONGS_EQUAL(1, MUST(reader->list_daemonsets()).size());
    LONGS_EQUAL(1, MUST(reader->list_pods()).size());

    // The writer's open transaction neither blocks the reader nor shows.
    auto tx = MUST(writer->begin());
    CHECK_TRUE(MUST(writer->put_pod(sample_pod("uid-2"))));
    LONGS_EQUAL(1, MUST(reader->list_pods()).size());
    CHECK_TRUE(tx->commit().ok());
    LONGS_EQUAL(2, MUST(reader->list_pods()).size());
}

TEST(StoreReadonly, ReadsAfterTheWriterClosed) {
    fill(path, 2);
    auto reader = MUST(store::Store::open_readonly(path));
    LONGS_EQUAL(2, MUST(reader->list_pods()).size());
    // Writing is refused; an unchanged put is still just a comparison.
    CHECK_FALSE(reader->put_pod(sample_pod("uid-9")).ok());
    CHECK_FALSE(MUST(reader->put_pod(sample_pod("uid-1"))));
}

TEST(StoreReadonly, AMissingDatabaseIsAnErrorAndIsNotCreated) {
    auto r = store::Store::open_readonly(path);
    CHECK_FALSE(r.ok());
    CHECK_TEXT(has_prefix(r.error().message, path + ": open_readonly: "), r.error().message.c_str());
    CHECK_FALSE(stamp(path).exists);
}

TEST(StoreReadonly, NeitherMigratesNorRecovers) {
    {
        RawDb raw(path);
        STRCMP_EQUAL("", raw.exec("CREATE TABLE scratch (x)").c_str());
    }
    auto old = store::Store::open_readonly(path);
    CHECK_FALSE(old.ok());
    STRCMP_EQUAL("schema", old.error().code_name());
    RawDb raw(path);
    LONGS_EQUAL(0, raw.scalar("PRAGMA user_version"));

    write_bytes(path, "not a database at all");
    auto bad = store::Store::open_readonly(path);
    CHECK_FALSE(bad.ok());
    STRCMP_EQUAL("corrupt", bad.error().code_name());
    STRCMP_EQUAL("not a database at all", read_bytes(path).c_str());
}

// A database of an older schema (the agent of a newer build has not
// migrated it: not started yet, or its full stateDir could not take the
// migration) is read from a copy migrated in memory; the file stays as it
// was, and the copy takes no writes.
TEST(StoreReadonly, ReadsAnOlderSchemaFromACopyMigratedInMemory) {
    make_version_two(path);
    for (auto open : {&store::Store::open_readonly, &store::Store::open_copy}) {
        auto reader = MUST(open(path));
        auto pods = MUST(reader->list_pods());
        LONGS_EQUAL(1, pods.size());
        STRCMP_EQUAL("agent-x7k2p", pods[0].name.c_str());
        CHECK_TRUE(pods[0].pod_ips.empty());                         // migration 3's column, in the copy
        LONGS_EQUAL(0, MUST(reader->list_manifest_files()).size());  // migration 4's table
        auto w = reader->put_pod(sample_pod("uid-9"));
        CHECK_FALSE(w.ok());
        STRCMP_EQUAL("read_only", w.error().code_name());
    }
    RawDb raw(path);
    LONGS_EQUAL(2, raw.scalar("PRAGMA user_version"));
    LONGS_EQUAL(0, raw.scalar("SELECT count(*) FROM sqlite_master WHERE name = 'manifest_files'"));
}

// A damaged file is not copied: the agent would run the pods from its
// rows, and the next open (once space returns) would move it aside under
// them. open_copy fails as Store::open does, and leaves the file as it is.
TEST(StoreReadonly, TheAgentsCopyOfADamagedFileFailsAsCorrupt) {
    fill(path, 200);
    std::string bytes = read_bytes(path);
    for (std::size_t i = 6 * kPage; i < 7 * kPage; ++i) bytes[i] = '\x55';
    write_bytes(path, bytes);
    auto copy = store::Store::open_copy(path);
    CHECK_FALSE(copy.ok());
    STRCMP_EQUAL("corrupt", copy.error().code_name());
    CHECK_TEXT(contains(copy.error().message, "quick_check") || contains(copy.error().message, "malformed"),
               copy.error().message.c_str());
    CHECK_TRUE(bytes == read_bytes(path));
}

// The copy needs the EXCLUSIVE lock; a reader holding SHARED (`daemonlet
// get` beside the agent) makes it fail as busy at once, not after the 5 s
// busy timeout: the CLI falls back to an ordinary open, the agent retries.
TEST(StoreReadonly, TheAgentsCopyIsBusyAtOnceBesideAReader) {
    make_version_two(path);
    RawDb reader(path);  // an agent's database is in WAL mode
    STRCMP_EQUAL("",
                 reader.exec("PRAGMA journal_mode = WAL; BEGIN; SELECT count(*) FROM sqlite_master").c_str());
    const auto start = std::chrono::steady_clock::now();
    auto copy = store::Store::open_copy(path);
    const auto took = std::chrono::steady_clock::now() - start;
    CHECK_FALSE(copy.ok());
    STRCMP_EQUAL("busy", copy.error().code_name());
    CHECK_TRUE(took < std::chrono::seconds(1));
}

// A copy in memory is bounded: a database of more than 32 MiB of pages in
// use is refused (too_large) rather than copied.
TEST(StoreReadonly, ACopyOfMoreThan32MiBIsRefused) {
    make_version_two(path);
    {
        RawDb raw(path);
        STRCMP_EQUAL(
            "",
            raw.exec("CREATE TABLE big (b); INSERT INTO big VALUES (zeroblob(33 * 1024 * 1024))").c_str());
    }
    auto copy = store::Store::open_copy(path);
    CHECK_FALSE(copy.ok());
    STRCMP_EQUAL("too_large", copy.error().code_name());
}

// The agent's copy on a full stateDir takes the -wal's transactions too
// (read without the -shm, in exclusive locking mode), writes nothing to the
// file and leaves it to the next open, which migrates it.
TEST(StoreReadonly, TheAgentsCopyReadsTheWalAndLeavesTheFileToTheNextOpen) {
    const std::string ev = R"({"eventName":"crasher.1","reason":"BackOff","count":3})";
    {
        RawDb raw(path);
        for (int i = 0; i < 5; ++i) STRCMP_EQUAL("", raw.exec(store::sql::kMigrations[i].sql).c_str());
        STRCMP_EQUAL("", raw.exec("PRAGMA journal_mode = WAL").c_str());
        STRCMP_EQUAL("", raw.exec("PRAGMA user_version = 5").c_str());
        STRCMP_EQUAL("", raw.exec("INSERT INTO meta VALUES ('api.events', '[" + ev + "]')").c_str());
        // Closed as an agent closes: the -wal stays, with the transactions.
        sqlite3_db_config(raw.get(), SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, nullptr);
    }
    CHECK_TRUE(std::filesystem::file_size(path + "-wal") > 0);
    const auto before = read_bytes(path);
    {
        auto copy = MUST(store::Store::open_copy(path));
        auto queued = MUST(copy->list_queued_events());
        LONGS_EQUAL(1, queued.size());
        STRCMP_EQUAL(ev.c_str(), queued[0].json.c_str());
    }
    CHECK_TRUE(before == read_bytes(path));
    auto s = MUST(store::Store::open(path, kNow, nullptr));
    LONGS_EQUAL(1, MUST(s->list_queued_events()).size());
    s.reset();
    RawDb raw(path);
    LONGS_EQUAL(store::sql::kSchemaVersion, raw.scalar("PRAGMA user_version"));
}
