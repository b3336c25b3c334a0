// Real processes. Killed mid-transaction: a child process opens the database
// (after the fork, as the agent must) and commits transactions in a loop;
// the parent SIGKILLs it and reopens. The file must pass integrity_check and
// hold exactly the transactions committed, a prefix, each whole. And the
// CLI's read-only open while another process writes. The processes
// synchronise through pipes: no sleeps.
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <memory>
#include <set>
#include <string>

#include "store/store.h"
#include "tests/store/store_fixture.h"

#include <CppUTest/TestHarness.h>

using namespace daemonlet;
using namespace daemonlet::testing;

namespace {

constexpr int kPodsPerTransaction = 10;
constexpr std::int32_t kMidTransaction = -1;  // reported once the doomed transaction has spilled to the -wal

std::string pod_uid(std::int64_t tx, int j) { return "tx" + std::to_string(tx) + "-" + std::to_string(j); }

// The child: never returns, never runs a test macro, leaves with _exit.
[[noreturn]] void write_until_killed(const std::string& path, int report_fd, int hold_fd,
                                     std::int32_t hold_at) {
    auto die = [](int code) { ::_exit(code); };
    auto opened = store::Store::open(path, 1, nullptr);
    if (!opened) die(2);
    store::Store& s = *opened.value();
    for (std::int32_t i = 1;; ++i) {
        auto tx = s.begin();
        if (!tx) die(3);
        if (i == hold_at) {
            // More than SQLite's page cache (2 MiB): uncommitted pages spill
            // into the -wal before the kill.
            for (int j = 0; j < 400; ++j) {
                PodRecord big = sample_pod("big-" + std::to_string(j));
                big.containers[1].message = std::string(8192, 'm');
                if (!s.put_pod(big).ok()) die(4);
            }
            if (::write(report_fd, &kMidTransaction, sizeof kMidTransaction) != sizeof kMidTransaction)
                die(5);
            char byte;
            (void)::read(hold_fd, &byte, 1);  // blocks until killed
            die(6);
        }
        if (!s.put_meta("seq", std::to_string(i)).ok()) die(7);
        for (int j = 0; j < kPodsPerTransaction; ++j)
            if (!s.put_pod(sample_pod(pod_uid(i, j))).ok()) die(8);
        if (!s.add_event(sample_event("Pod/tx" + std::to_string(i), i)).ok()) die(9);
        if (!tx.value()->commit().ok()) die(10);
        if (::write(report_fd, &i, sizeof i) != sizeof i) die(11);
    }
}

struct Killed {
    std::int32_t last_reported = 0;  // the last transaction the child reported committed
    bool mid_transaction = false;
    int status = 0;
};

// Forks the writer, reads its reports until `kill_after` commits (or the
// mid-transaction report), and SIGKILLs it. No test macro runs while the
// child lives.
Killed run_and_kill(const std::string& path, std::int32_t kill_after, std::int32_t hold_at) {
    int report[2], hold[2];
    if (::pipe2(report, O_CLOEXEC) != 0 || ::pipe2(hold, O_CLOEXEC) != 0) std::abort();
    const pid_t pid = ::fork();
    if (pid < 0) std::abort();
    if (pid == 0) {
        ::close(report[0]);
        ::close(hold[1]);
        write_until_killed(path, report[1], hold[0], hold_at);
    }
    ::close(report[1]);
    ::close(hold[0]);
    Killed k;
    std::int32_t v;
    while (::read(report[0], &v, sizeof v) == sizeof v) {
        if (v == kMidTransaction) {
            k.mid_transaction = true;
            break;
        }
        k.last_reported = v;
        if (v >= kill_after) break;
    }
    ::kill(pid, SIGKILL);
    ::waitpid(pid, &k.status, 0);
    ::close(report[0]);
    ::close(hold[1]);
    return k;
}

// The file is intact and holds transactions 1..seq, each whole, nothing more.
std::int64_t check_committed_prefix(const std::string& path, std::int32_t at_least) {
    {
        RawDb raw(path);
        STRCMP_EQUAL("ok", raw.rows("PRAGMA integrity_check").c_str());
    }
    store::OpenReport report;
    auto s = MUST(store::Store::open(path, 2, &report));
    CHECK_FALSE(report.recovered);
    const std::int64_t seq = std::stoll(MUST(s->get_meta("seq")).value_or("0"));
    CHECK_TEXT(seq >= at_least, std::to_string(seq).c_str());
    std::set<std::string> want;
    for (std::int64_t i = 1; i <= seq; ++i)
        for (int j = 0; j < kPodsPerTransaction; ++j) want.insert(pod_uid(i, j));
    std::set<std::string> got;
    for (const PodRecord& p : MUST(s->list_pods())) got.insert(p.uid);
    CHECK_TRUE(want == got);
    LONGS_EQUAL(seq, MUST(s->list_events("kube-system", "", 0)).size());
    return seq;
}

}  // namespace

TEST_GROUP(StoreCrash) {
    TempDir dir;
    std::string path = dir.file("daemonlet.db");
};

TEST(StoreCrash, KilledInsideATransactionKeepsExactlyWhatWasCommitted) {
    Killed k = run_and_kill(path, 1000, /*hold_at=*/6);
    CHECK_TRUE(WIFSIGNALED(k.status) && WTERMSIG(k.status) == SIGKILL);
    CHECK_TRUE(k.mid_transaction);
    LONGS_EQUAL(5, k.last_reported);
    // The doomed transaction's pages reached the -wal: the kill left
    // uncommitted frames behind, which recovery must ignore.
    CHECK_TEXT(stamp(path + "-wal").size > std::int64_t{1} << 20,
               std::to_string(stamp(path + "-wal").size).c_str());
    LONGS_EQUAL(5, check_committed_prefix(path, 5));
}

TEST(StoreCrash, KilledAnywhereKeepsACommittedPrefix) {
    // The kill lands wherever the child is: between transactions or inside one.
    for (std::int32_t round = 1; round <= 3; ++round) {
        TempDir fresh;
        const std::string db = fresh.file("daemonlet.db");
        Killed k = run_and_kill(db, 20 * round, /*hold_at=*/0);
        CHECK_TRUE(WIFSIGNALED(k.status) && WTERMSIG(k.status) == SIGKILL);
        LONGS_EQUAL(20 * round, k.last_reported);
        check_committed_prefix(db, k.last_reported);
    }
}

TEST(StoreCrash, TheStoreGoesOnAfterTheKill) {
    Killed k = run_and_kill(path, 1000, /*hold_at=*/3);
    CHECK_TRUE(k.mid_transaction);
    auto s = MUST(store::Store::open(path, 2, nullptr));
    CHECK_TRUE(MUST(s->put_meta("seq", "3")));
    CHECK_TRUE(MUST(s->put_pod(sample_pod("after"))));
    LONGS_EQUAL(2 * kPodsPerTransaction + 1, MUST(s->list_pods()).size());
}

// ---------------------------------------------------------------------------
// The CLI's read-only open while the agent, another process, has the
// database open and is in the middle of a transaction.

namespace {

[[noreturn]] void agent_process(const std::string& path, int report_fd, int go_fd) {
    auto die = [](int code) { ::_exit(code); };
    auto report = [&](std::int32_t v) {
        if (::write(report_fd, &v, sizeof v) != sizeof v) die(20);
    };
    auto wait_for_parent = [&] {
        char byte;
        if (::read(go_fd, &byte, 1) != 1) die(21);
    };
    auto opened = store::Store::open(path, 1, nullptr);
    if (!opened) die(22);
    store::Store& s = *opened.value();
    for (int i = 0; i < 3; ++i)
        if (!s.put_pod(sample_pod("committed-" + std::to_string(i))).ok()) die(23);
    report(1);
    auto tx = s.begin();
    if (!tx || !s.put_pod(sample_pod("pending")).ok()) die(24);
    report(2);  // holds the write lock, uncommitted
    wait_for_parent();
    if (!tx.value()->commit().ok()) die(25);
    report(3);
    wait_for_parent();  // until killed
    ::_exit(26);
}

}  // namespace

TEST_GROUP(StoreProcesses) {
    TempDir dir;
    std::string path = dir.file("daemonlet.db");
};

TEST(StoreProcesses, TheReadOnlyOpenReadsWhileAnotherProcessWrites) {
    int report[2], go[2];
    CHECK_TRUE(::pipe2(report, O_CLOEXEC) == 0 && ::pipe2(go, O_CLOEXEC) == 0);
    const pid_t pid = ::fork();
    CHECK_TRUE(pid >= 0);
    if (pid == 0) {
        ::close(report[0]);
        ::close(go[1]);
        agent_process(path, report[1], go[0]);
    }
    ::close(report[1]);
    ::close(go[0]);
    auto next_report = [&] {
        std::int32_t v = 0;
        return ::read(report[0], &v, sizeof v) == sizeof v ? v : -1;
    };
    auto pods = [](store::Store& s) {
        std::string out;
        for (const PodRecord& p : MUST(s.list_pods())) out += (out.empty() ? "" : ",") + p.uid;
        return out;
    };
    // No test macro may leave this block with the child alive.
    std::int32_t first = next_report(), second = next_report();
    auto reader = store::Store::open_readonly(path);
    std::string during = reader.ok() ? pods(*reader.value()) : "open_readonly: " + reader.error().message;
    char byte = 'c';
    const bool sent = ::write(go[1], &byte, 1) == 1;
    std::int32_t third = next_report();
    std::string after = reader.ok() ? pods(*reader.value()) : "";
    ::kill(pid, SIGKILL);
    int status = 0;
    ::waitpid(pid, &status, 0);
    ::close(report[0]);
    ::close(go[1]);

    LONGS_EQUAL(1, first);
    LONGS_EQUAL(2, second);
    CHECK_TRUE(sent);
    LONGS_EQUAL(3, third);
    STRCMP_EQUAL("committed-0,committed-1,committed-2", during.c_str());
    STRCMP_EQUAL("committed-0,committed-1,committed-2,pending", after.c_str());
}
