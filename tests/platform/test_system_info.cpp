// platform/system_info.h: the board's measurements for its Node status, read
// from this machine's real /proc, statvfs and /etc (the values are the
// machine's; the test checks they are read, and consistent).
#include <sys/statvfs.h>
#include <unistd.h>

#include <string>

#include "platform/system_info.h"

#include <CppUTest/TestHarness.h>

using namespace daemonlet::platform;

TEST_GROUP(SystemInfo){};

TEST(SystemInfo, MemoryIsMemTotalAndMemAvailable) {
    MemoryInfo m = read_memory_info();
    CHECK(m.total > 0);
    CHECK(m.available >= 0 && m.available <= m.total);
    CHECK(m.total <= memory_bytes() + (64 << 20) && m.total >= memory_bytes() - (512 << 20));
}

TEST(SystemInfo, FilesystemIsTheStatvfsOfThePathsFilesystem) {
    FsInfo f = read_fs_info("/tmp");
    struct statvfs st {};
    CHECK(::statvfs("/tmp", &st) == 0);
    LONGS_EQUAL(static_cast<long>(st.f_blocks * st.f_frsize), static_cast<long>(f.capacity));
    CHECK(f.available >= 0 && f.available <= f.capacity);
    CHECK(f.inodes_free <= f.inodes);
    FsInfo missing = read_fs_info("/nonexistent/daemonlet");
    LONGS_EQUAL(-1, static_cast<long>(missing.available));
}

TEST(SystemInfo, PidsAreTheRunningProcessesUnderPidMax) {
    PidInfo p = read_pid_info();
    CHECK(p.max > 0);
    CHECK(p.running > 0 && p.running < p.max);
}

TEST(SystemInfo, HostFactsNameTheKernelBootAndOs) {
    HostFacts f = read_host_facts();
    LONGS_EQUAL(36, static_cast<long>(f.boot_id.size()));  // a UUID
    CHECK(!f.kernel_version.empty());
    CHECK(!f.os_image.empty());
    CHECK(f.os_image.find('"') == std::string::npos);
}
