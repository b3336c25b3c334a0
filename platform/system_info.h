// Facts about the machine the agent runs on.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace daemonlet::platform {

std::string host_name();       // gethostname(), empty on failure
std::string machine();         // uname -m, e.g. "aarch64"
std::string kernel_release();  // uname -r, e.g. "6.1.0-18-arm64"; empty on failure
std::int64_t wall_clock_ms();  // CLOCK_REALTIME, for people and timestamps
std::int64_t monotonic_ms();   // CLOCK_MONOTONIC, for durations that drive decisions
std::int64_t since_boot_ms();  // CLOCK_BOOTTIME: CLOCK_MONOTONIC with the suspends
std::int64_t online_cpus();    // sysconf(_SC_NPROCESSORS_ONLN), at least 1
std::int64_t memory_bytes();   // physical memory, 0 when unknown
// The lowest oom_score_adj this process can give its children: none when
// it has CAP_SYS_RESOURCE (any score), else its own /proc/self/oom_score_adj
// (the kernel refuses a lower one without the capability); 0 when that
// cannot be read.
std::optional<int> oom_score_adj_floor();

// Gives the heap's free pages back to the kernel (glibc's malloc_trim; a
// no-op elsewhere). After a large input is parsed and freed, glibc keeps
// its memory for reuse: a 3 MiB manifest left the agent's anonymous memory
// 9 MB higher in its 32 MiB cgroup, and the next large input (an oversized
// list page) had it OOM-killed.
void return_free_heap();

}  // namespace daemonlet::platform

namespace daemonlet::platform {

// The board's measurements for its Node status (core/node_status.h); a
// value that cannot be read is -1 (or empty), never a guess.
struct MemoryInfo {
    std::int64_t total = 0;       // /proc/meminfo MemTotal, bytes
    std::int64_t available = -1;  // MemAvailable, bytes
};
MemoryInfo read_memory_info();

// statfs(2) of the filesystem holding `path`: what an unprivileged writer
// may use (f_bavail), as cAdvisor reports a filesystem's available bytes.
struct FsInfo {
    std::int64_t capacity = 0, available = -1;
    std::int64_t inodes = 0, inodes_free = -1;
};
FsInfo read_fs_info(const std::string& path);

// kernel.pid_max (bounded by kernel.threads-max, as the kubelet's
// pid.available), and the processes running now (sysinfo(2) procs).
struct PidInfo {
    std::int64_t max = 0, running = -1;
};
PidInfo read_pid_info();

// nodeInfo's facts: /etc/machine-id, /sys/class/dmi/id/product_uuid (often
// readable by root only, absent on most ARM boards), the kernel's boot_id,
// uname -r, /etc/os-release PRETTY_NAME ("Linux" without one).
struct HostFacts {
    std::string machine_id, system_uuid, boot_id, kernel_version, os_image;
};
HostFacts read_host_facts();

}  // namespace daemonlet::platform
