#include "platform/system_info.h"

#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include <cstdlib>
#include <string_view>

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

namespace {
std::int64_t clock_ms(clockid_t id) {
    struct timespec ts {};
    clock_gettime(id, &ts);
    return static_cast<std::int64_t>(ts.tv_sec) * 1000 + ts.tv_nsec / 1'000'000;
}
}  // namespace

std::int64_t wall_clock_ms() { return clock_ms(CLOCK_REALTIME); }
std::int64_t monotonic_ms() { return clock_ms(CLOCK_MONOTONIC); }

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
