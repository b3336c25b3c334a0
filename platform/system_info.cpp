#include "platform/system_info.h"

#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

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

}  // namespace daemonlet::platform
