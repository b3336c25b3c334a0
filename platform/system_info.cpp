#include "platform/system_info.h"

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include <sys/statvfs.h>
#include <sys/sysinfo.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <string_view>

#include "core/strings.h"
#include "platform/file.h"

namespace daemonlet::platform {

std::string host_name() {
    char buf[256] = {};
    if (gethostname(buf, sizeof buf - 1) != 0) return {};
    return buf;
}

std::string machine() {
    struct utsname u {};
    if (uname(&u) != 0) return {};
    return u.machine;
}

std::string kernel_release() {
    struct utsname u {};
    if (uname(&u) != 0) return {};
    return u.release;
}

namespace {
std::int64_t clock_ms(clockid_t id) {
    struct timespec ts {};
    clock_gettime(id, &ts);
    return static_cast<std::int64_t>(ts.tv_sec) * 1000 + ts.tv_nsec / 1'000'000;
}
}  // namespace

std::int64_t wall_clock_ms() { return clock_ms(CLOCK_REALTIME); }
std::int64_t monotonic_ms() { return clock_ms(CLOCK_MONOTONIC); }
std::int64_t since_boot_ms() { return clock_ms(CLOCK_BOOTTIME); }

std::int64_t online_cpus() {
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? n : 1;
}

std::int64_t memory_bytes() {
    long pages = sysconf(_SC_PHYS_PAGES), size = sysconf(_SC_PAGE_SIZE);
    return pages > 0 && size > 0 ? static_cast<std::int64_t>(pages) * size : 0;
}

std::optional<int> oom_score_adj_floor() {
    constexpr unsigned kCapSysResource = 24;  // linux/capability.h CAP_SYS_RESOURCE
    if (auto status = read_file("/proc/self/status", 64 * 1024)) {
        const std::string_view text = status.value();
        const auto at = text.find("\nCapEff:");
        if (at != std::string_view::npos) {
            const unsigned long long eff = std::strtoull(text.data() + at + 9, nullptr, 16);
            if (eff & (1ULL << kCapSysResource)) return std::nullopt;
        }
    }
    auto own = read_file("/proc/self/oom_score_adj", 64);
    return own ? std::atoi(own.value().c_str()) : 0;
}

}  // namespace daemonlet::platform

namespace daemonlet::platform {

namespace {

constexpr std::size_t kSmallFile = 64 * 1024;

std::string first_line(const std::string& path) {
    auto r = read_file(path, kSmallFile);
    if (!r.ok()) return {};
    std::string s = std::move(r).value();
    return trim(s.substr(0, s.find('\n')));
}

std::int64_t number_in(const std::string& path) {
    std::string s = first_line(path);
    char* end = nullptr;
    long long v = std::strtoll(s.c_str(), &end, 10);
    return end != s.c_str() && v > 0 ? static_cast<std::int64_t>(v) : 0;
}

}  // namespace

MemoryInfo read_memory_info() {
    MemoryInfo out;
    auto r = read_file("/proc/meminfo", kSmallFile);
    if (!r.ok()) return out;
    // "MemTotal:       16303404 kB"
    for (std::string_view line : lines_of(r.value())) {
        const auto f = fields_of(line);
        if (f.size() < 2) continue;
        const std::int64_t bytes = std::strtoll(f[1].c_str(), nullptr, 10) * 1024;
        if (f[0] == "MemTotal:") out.total = bytes;
        if (f[0] == "MemAvailable:") out.available = bytes;
    }
    return out;
}

FsInfo read_fs_info(const std::string& path) {
    FsInfo out;
    struct statvfs st {};
    if (::statvfs(path.c_str(), &st) != 0) return out;
    const auto frsize = static_cast<std::int64_t>(st.f_frsize);
    out.capacity = static_cast<std::int64_t>(st.f_blocks) * frsize;
    out.available = static_cast<std::int64_t>(st.f_bavail) * frsize;
    out.inodes = static_cast<std::int64_t>(st.f_files);
    out.inodes_free = static_cast<std::int64_t>(st.f_ffree);
    return out;
}

PidInfo read_pid_info() {
    PidInfo out;
    out.max = number_in("/proc/sys/kernel/pid_max");
    if (std::int64_t threads = number_in("/proc/sys/kernel/threads-max"); threads > 0)
        out.max = out.max > 0 ? std::min(out.max, threads) : threads;
    struct sysinfo si {};
    if (::sysinfo(&si) == 0) out.running = si.procs;
    return out;
}

HostFacts read_host_facts() {
    HostFacts f;
    f.machine_id = first_line("/etc/machine-id");
    f.system_uuid = first_line("/sys/class/dmi/id/product_uuid");
    f.boot_id = first_line("/proc/sys/kernel/random/boot_id");
    f.kernel_version = kernel_release();
    if (auto r = read_file("/etc/os-release", kSmallFile); r.ok()) {
        for (std::string_view line : lines_of(r.value())) {
            if (line.rfind("PRETTY_NAME=", 0) != 0) continue;
            std::string v = trim(line.substr(12));
            if (v.size() >= 2 && (v.front() == '"' || v.front() == '\'') && v.back() == v.front())
                v = v.substr(1, v.size() - 2);
            f.os_image = v;
        }
    }
    if (f.os_image.empty()) f.os_image = "Linux";
    return f;
}

}  // namespace daemonlet::platform

namespace daemonlet::platform {

void return_free_heap() {
#if defined(__GLIBC__)
    ::malloc_trim(0);
#endif
}

}  // namespace daemonlet::platform
