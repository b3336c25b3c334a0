// atomic_write on a real directory: pkg/volume/util/atomic_writer_test.go
// (TestWriteOnce, TestUpdate, TestMultipleUpdates, TestValidatePath) and a
// reader running through a stream of updates.
#include <fcntl.h>
#include <linux/capability.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "platform/atomic_writer.h"
#include "platform/volume_setup.h"

#include "tests/file_text.h"

#include <CppUTest/TestHarness.h>

using namespace daemonlet;
using daemonlet::platform::atomic_write;
using daemonlet::testing::mode_of;
using daemonlet::testing::slurp;
namespace fs = std::filesystem;

namespace {

// A root-only test, run by another user: said (ctest -V shows it), not a pass.
#define SKIP_UNLESS_ROOT(why)                 \
    do {                                      \
        UT_PRINT("SKIPPED (not root): " why); \
        TEST_EXIT;                            \
    } while (0)

// The timestamped dirs in `dir`: there is exactly one after a write.
int data_dirs(const std::string& dir) {
    int n = 0;
    for (const auto& e : fs::directory_iterator(dir)) {
        std::string name = e.path().filename().string();
        if (name.rfind("..", 0) == 0 && name != "..data" && !e.is_symlink()) ++n;
    }
    return n;
}

// In a forked child: chown refused from now on, as a file system that
// refuses it (CAP_CHOWN out of the effective set).
bool drop_cap_chown() {
    __user_cap_header_struct head{_LINUX_CAPABILITY_VERSION_3, 0};
    __user_cap_data_struct data[2]{};
    if (::syscall(SYS_capget, &head, data) != 0) return false;
    data[0].effective &= ~(1u << CAP_CHOWN);
    return ::syscall(SYS_capset, &head, data) == 0;
}

// The forked child ran its checks: it exits 0, or with the number of the
// one that failed.
void check_child_succeeded(pid_t pid) {
    int status = 0;
    CHECK_EQUAL(pid, ::waitpid(pid, &status, 0));
    CHECK_TRUE(WIFEXITED(status));
    LONGS_EQUAL(0, WEXITSTATUS(status));
}

}  // namespace

TEST_GROUP(AtomicWriter) {
    std::string dir;
    void setup() override {
        char templ[] = "/tmp/daemonlet-atomic-XXXXXX";
        dir = ::mkdtemp(templ);
    }
    void teardown() override { fs::remove_all(dir); }
    // Every payload path, as a reader sees it through the visible links.
    void check_visible(const VolumePayload& p) {
        for (const auto& [path, f] : p) {
            std::string full = dir + "/" + path;
            STRCMP_EQUAL_TEXT(f.data.c_str(), slurp(full).c_str(), path.c_str());
            LONGS_EQUAL_TEXT(f.mode, mode_of(full), path.c_str());
        }
    }
};

TEST(AtomicWriter, WriteOnceMakesDataLinkTimestampDirAndVisibleLinks) {
    VolumePayload p = {{"foo", {"foo", 0644}}, {"bar/zab.txt", {"zab", 0400}}, {"bar/deep/x", {"x", 0600}}};
    ::umask(077);  // the modes are the payload's whatever the umask
    auto r = atomic_write(dir, p);
    ::umask(022);
    CHECK_TRUE(r.ok());
    CHECK_TRUE(r.value());
    check_visible(p);
    CHECK_TRUE(fs::is_symlink(dir + "/..data"));
    STRCMP_EQUAL("..data/foo", fs::read_symlink(dir + "/foo").c_str());
    STRCMP_EQUAL("..data/bar", fs::read_symlink(dir + "/bar").c_str());
    std::string ts = fs::read_symlink(dir + "/..data").string();
    CHECK_TRUE(ts.rfind("..", 0) == 0 && ts.size() > 22);
    LONGS_EQUAL(0755, mode_of(dir + "/" + ts));
    LONGS_EQUAL(1, data_dirs(dir));
}

// FileProjection.FsUser (the token of a pod that runs as one user): the
// file is that user's (atomic_writer.go writePayloadToDir: os.Lchown), the
// others root's; an owner that changes writes the file again.
TEST(AtomicWriter, FsUserOwnsItsFile) {
    if (::geteuid() != 0) SKIP_UNLESS_ROOT("chown needs root");
    VolumePayload p = {{"token", {"t", 0600, 1234}}, {"ca.crt", {"c", 0644}}};
    CHECK_TRUE(atomic_write(dir, p).value());
    struct stat st {};
    CHECK_TRUE(::stat((dir + "/token").c_str(), &st) == 0);
    LONGS_EQUAL(1234, st.st_uid);
    CHECK_TRUE(::stat((dir + "/ca.crt").c_str(), &st) == 0);
    LONGS_EQUAL(0, st.st_uid);
    p["token"].fs_user = 4321;
    CHECK_TRUE(atomic_write(dir, p).value());
    CHECK_TRUE(::stat((dir + "/token").c_str(), &st) == 0);
    LONGS_EQUAL(4321, st.st_uid);
}

// The pod's fsGroup (pkg/volume/volume_linux.go SetVolumeOwnership, which
// the configMap, secret, downwardAPI and projected plugins' SetUpAt run
// with the writer): every file, directory and link of the volume the
// group's; files mode | 0440 (read-only volume), directories also 0110 and
// setgid; links keep their mode. FsUser stays the token's owner. An
// unchanged payload is not written again.
TEST(AtomicWriter, FsGroupOwnsTheVolumeWithReadOnlyModes) {
    if (::geteuid() != 0) SKIP_UNLESS_ROOT("chown needs root");
    VolumePayload p = {{"token", {"t", 0600, 1234}}, {"ca.crt", {"c", 0644}}, {"keys/api_key", {"k", 0400}}};
    CHECK_TRUE(atomic_write(dir, p, 2500).value());
    auto owner = [&](const std::string& rel, bool follow = true) {
        struct stat st {};
        const std::string path = dir + (rel.empty() ? "" : "/" + rel);
        CHECK_TEXT((follow ? ::stat(path.c_str(), &st) : ::lstat(path.c_str(), &st)) == 0, path.c_str());
        std::ostringstream out;
        out << std::oct << (st.st_mode & 07777) << std::dec << " " << st.st_uid << " " << st.st_gid;
        return out.str();
    };
    STRCMP_EQUAL("640 1234 2500", owner("token").c_str());
    STRCMP_EQUAL("644 0 2500", owner("ca.crt").c_str());
    STRCMP_EQUAL("440 0 2500", owner("keys/api_key").c_str());
    STRCMP_EQUAL("2755 0 2500", owner("keys").c_str());
    STRCMP_EQUAL("2755 0 2500", owner("..data").c_str());
    STRCMP_EQUAL("2750 0 2500", owner("").c_str());  // mkdtemp's 0700
    for (const char* link : {"..data", "token", "keys"})
        STRCMP_EQUAL_TEXT("777 0 2500", owner(link, false).c_str(), link);
    CHECK_FALSE(atomic_write(dir, p, 2500).value());
    // Without the group the payload's own modes come back: a change.
    CHECK_TRUE(atomic_write(dir, p).value());
    check_visible(p);
}

TEST(AtomicWriter, AnUnprivilegedWriterSetsNoOwnersAndDoesNotFail) {
    // The exec runtime runs under an unprivileged agent too: the token of a
    // pod with one runAsUser and an fsGroup is still written (the agent's
    // own), and an unchanged payload is not written again.
    if (::geteuid() != 0) SKIP_UNLESS_ROOT("to become someone else");
    CHECK_EQUAL(0, ::chown(dir.c_str(), 65534, 65534));
    const pid_t pid = ::fork();
    if (pid == 0) {
        if (::setgid(65534) != 0 || ::setuid(65534) != 0) ::_exit(2);
        VolumePayload p = {{"token", {"t", 0600, 1234}}, {"ca.crt", {"c", 0644}}};
        auto first = atomic_write(dir, p, 2500);
        if (!first.ok() || !first.value()) ::_exit(3);
        struct stat st {};
        if (::stat((dir + "/token").c_str(), &st) != 0 || st.st_uid != 65534 || (st.st_mode & 07777) != 0600)
            ::_exit(4);
        auto again = atomic_write(dir, p, 2500);
        ::_exit(again.ok() && !again.value() ? 0 : 5);
    }
    check_child_succeeded(pid);
}

TEST(AtomicWriter, AFileSystemRefusingTheGroupIsReportedAndNotARewriteLoop) {
    // A volume on a file system that refuses chown (here: a root writer
    // without CAP_CHOWN, so every lchown to the pod's group fails with
    // EPERM): the payload is written, the refusal is reported (naming the
    // path and the call), and the next sync of the same payload writes
    // nothing, where it rewrote the whole volume at every sync.
    if (::geteuid() != 0) SKIP_UNLESS_ROOT("to drop a capability");
    const pid_t pid = ::fork();
    if (pid == 0) {
        if (!drop_cap_chown()) ::_exit(2);
        VolumePayload p = {{"ca.crt", {"c", 0644}}, {"keys/api_key", {"k", 0400}}};
        Status owned = Ok{};
        auto first = atomic_write(dir, p, 2500, &owned);
        if (!first.ok() || !first.value()) ::_exit(3);
        if (owned.ok() || owned.error().message.find(dir) == std::string::npos ||
            owned.error().message.find("lchown") == std::string::npos)
            ::_exit(4);
        const std::string before = fs::read_symlink(dir + "/..data").string();
        owned = Ok{};
        auto again = atomic_write(dir, p, 2500, &owned);
        if (!again.ok() || again.value() || fs::read_symlink(dir + "/..data").string() != before) ::_exit(5);
        if (owned.ok()) ::_exit(6);  // still refused: the caller says it once
        if (slurp(dir + "/keys/api_key") != "k") ::_exit(7);
        ::_exit(0);
    }
    check_child_succeeded(pid);
}

TEST(AtomicWriter, AGroupRefusedIsNotAChmodOfEveryFileAtEveryPass) {
    // fsGroup on a file system that refuses the group: the first pass
    // gives the files their group bits (the kubelet's changeFilePermission
    // chmods whatever Lchown said); a later pass (each ConfigMap/Secret
    // change) writes no inode again, where it chmodded every file to the
    // mode it had (its ctime tells).
    if (::geteuid() != 0) SKIP_UNLESS_ROOT("to drop a capability");
    const std::string vol = dir + "/vol", file = vol + "/f";
    fs::create_directories(vol);
    { std::ofstream(file) << "x"; }
    ::chmod(file.c_str(), 0644);
    const pid_t pid = ::fork();
    if (pid == 0) {
        if (!drop_cap_chown()) ::_exit(2);
        if (platform::set_volume_ownership(vol, 2500, false).ok()) ::_exit(3);
        struct stat first {};
        if (::stat(file.c_str(), &first) != 0 || (first.st_mode & 07777) != 0664) ::_exit(4);
        // The clock the kernel stamps inodes with past that ctime, so that
        // a chmod now would change it (a deadline of a second).
        timespec deadline{};
        ::clock_gettime(CLOCK_MONOTONIC, &deadline);
        ++deadline.tv_sec;
        for (;;) {
            timespec now{}, mono{};
            ::clock_gettime(CLOCK_REALTIME_COARSE, &now);
            if (now.tv_sec > first.st_ctim.tv_sec ||
                (now.tv_sec == first.st_ctim.tv_sec && now.tv_nsec > first.st_ctim.tv_nsec))
                break;
            ::clock_gettime(CLOCK_MONOTONIC, &mono);
            if (mono.tv_sec > deadline.tv_sec ||
                (mono.tv_sec == deadline.tv_sec && mono.tv_nsec > deadline.tv_nsec))
                ::_exit(5);
        }
        if (platform::set_volume_ownership(vol, 2500, false).ok()) ::_exit(6);  // still said
        struct stat again {};
        if (::stat(file.c_str(), &again) != 0) ::_exit(7);
        if (again.st_ctim.tv_sec != first.st_ctim.tv_sec || again.st_ctim.tv_nsec != first.st_ctim.tv_nsec)
            ::_exit(8);
        ::_exit(0);
    }
    check_child_succeeded(pid);
}

TEST(AtomicWriter, UnchangedPayloadWritesNothing) {
    VolumePayload p = {{"foo", {"foo", 0644}}};
    CHECK_TRUE(atomic_write(dir, p).value());
    std::string before = fs::read_symlink(dir + "/..data").string();
    auto again = atomic_write(dir, p);
    CHECK_TRUE(again.ok());
    CHECK_FALSE(again.value());
    STRCMP_EQUAL(before.c_str(), fs::read_symlink(dir + "/..data").c_str());
    // A mode change alone is a change (upstream compares content only).
    p["foo"].mode = 0600;
    CHECK_TRUE(atomic_write(dir, p).value());
    check_visible(p);
}

TEST(AtomicWriter, UpdateReplacesContentRemovesDroppedNamesAndTheOldDir) {
    // TestUpdate: "update" and "remove" cases.
    VolumePayload v1 = {
        {"a", {"a1", 0644}}, {"b", {"b1", 0644}}, {"d/x", {"x1", 0644}}, {"d/y", {"y1", 0644}}};
    CHECK_TRUE(atomic_write(dir, v1).value());
    std::string old = fs::read_symlink(dir + "/..data").string();
    VolumePayload v2 = {{"a", {"a2", 0644}}, {"d/x", {"x1", 0644}}, {"c", {"c2", 0444}}};
    CHECK_TRUE(atomic_write(dir, v2).value());
    check_visible(v2);
    CHECK_FALSE(fs::exists(fs::symlink_status(dir + "/b")));
    CHECK_FALSE(fs::exists(dir + "/d/y"));
    CHECK_FALSE(fs::exists(dir + "/" + old));
    LONGS_EQUAL(1, data_dirs(dir));
    // Only a nested file dropped: still a write.
    VolumePayload v3 = {{"a", {"a2", 0644}}, {"c", {"c2", 0444}}, {"d/z", {"z", 0644}}};
    CHECK_TRUE(atomic_write(dir, v3).value());
    check_visible(v3);
    CHECK_FALSE(fs::exists(dir + "/d/x"));
    // An empty payload (a missing optional object): no visible names left.
    CHECK_TRUE(atomic_write(dir, {}).value());
    for (const auto& e : fs::directory_iterator(dir))
        CHECK_TEXT(e.path().filename().string().rfind("..", 0) == 0, e.path().c_str());
}

TEST(AtomicWriter, InvalidPathsAreRefusedBeforeAnyWrite) {
    // TestValidatePath and TestWriteOnce's "invalid payload" rows.
    for (const char* bad : {"/abs", "..dots", "a/../../b", "a/..", "../x"}) {
        auto r = atomic_write(dir, {{bad, {"x", 0644}}});
        CHECK_FALSE_TEXT(r.ok(), bad);
        CHECK_TEXT(r.error().message.find(bad) != std::string::npos, r.error().message.c_str());
    }
    CHECK_FALSE(fs::exists(fs::symlink_status(dir + "/..data")));
    CHECK_TRUE(atomic_write(dir, {{"a..b/c..", {"ok", 0644}}}).ok());
}

TEST(AtomicWriter, AReaderNeverSeesHalfAnUpdate) {
    // Each version's files are long and carry the version; a reader going
    // through the visible paths during 200 updates must only ever read
    // whole files of some version, never a partial or mixed one. A read
    // may find no file in one window that upstream has too: a reader that
    // resolved ..data to the old dir just before the writer removed it
    // (step 12); those are counted, not failed.
    auto content = [](int v, char c) { return "v" + std::to_string(v) + ":" + std::string(64 * 1024, c); };
    auto payload = [&](int v) {
        return VolumePayload{{"conf", {content(v, 'c'), 0644}}, {"sub/key", {content(v, 'k'), 0600}}};
    };
    CHECK_TRUE(atomic_write(dir, payload(0)).value());
    // The reader is another process (CppUTest's leak detector is not
    // thread-safe): it reads until the parent closes `stop`, then reports
    // "reads missing bad" on `result`.
    int stop[2], result[2];
    CHECK_EQUAL(0, ::pipe2(stop, O_CLOEXEC));
    CHECK_EQUAL(0, ::pipe2(result, O_CLOEXEC));
    pid_t reader = ::fork();
    CHECK(reader >= 0);
    if (reader == 0) {
        ::close(stop[1]);
        ::close(result[0]);
        ::fcntl(stop[0], F_SETFL, O_NONBLOCK);
        long reads = 0, missing = 0, bad = 0;
        char c;
        while (::read(stop[0], &c, 1) < 0 && errno == EAGAIN) {
            for (const char* path : {"conf", "sub/key"}) {
                std::string got = slurp(dir + "/" + path);
                ++reads;
                if (got == "<missing>") {
                    ++missing;
                    continue;
                }
                std::size_t colon = got.find(':');
                char fill = std::string(path) == "conf" ? 'c' : 'k';
                bool whole = colon != std::string::npos && got.size() == colon + 1 + 64 * 1024 &&
                             got.find_first_not_of(fill, colon + 1) == std::string::npos;
                if (!whole) ++bad;
            }
        }
        std::string out = std::to_string(reads) + " " + std::to_string(missing) + " " + std::to_string(bad);
        ssize_t n = ::write(result[1], out.data(), out.size());
        ::_exit(n > 0 ? 0 : 1);
    }
    ::close(stop[0]);
    ::close(result[1]);
    int failed_writes = 0, stale = 0;
    for (int v = 1; v <= 200; ++v) {
        VolumePayload p = payload(v);
        if (!atomic_write(dir, p).ok()) ++failed_writes;
        // After each write every visible path resolves to the new content.
        for (const auto& [path, f] : p)
            if (slurp(dir + "/" + path) != f.data) ++stale;
    }
    ::close(stop[1]);
    char buf[128] = {};
    ssize_t n = ::read(result[0], buf, sizeof buf - 1);
    ::close(result[0]);
    int status = 0;
    ::waitpid(reader, &status, 0);
    CHECK(n > 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0);
    long reads = 0, missing = 0, bad = 0;
    std::sscanf(buf, "%ld %ld %ld", &reads, &missing, &bad);
    LONGS_EQUAL(0, failed_writes);
    LONGS_EQUAL(0, stale);
    LONGS_EQUAL_TEXT(0, bad, "partial or mixed reads");
    CHECK_TEXT(reads > missing, buf);
    LONGS_EQUAL(1, data_dirs(dir));
}
