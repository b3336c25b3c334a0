#include "platform/proc_stat.h"

#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif
#ifndef SYS_pidfd_send_signal
#define SYS_pidfd_send_signal 424
#endif

namespace daemonlet::proc {
namespace {

// Writes the decimal digits of v into out (at least 12 bytes); returns the length.
std::size_t format_pid(pid_t v, char* out) {
    char tmp[12];
    std::size_t n = 0;
    auto u = static_cast<unsigned>(v);
    do {
        tmp[n++] = static_cast<char>('0' + u % 10);
        u /= 10;
    } while (u != 0 && n < sizeof tmp);
    for (std::size_t i = 0; i < n; ++i) out[i] = tmp[n - 1 - i];
    return n;
}

}  // namespace

int read_stat(pid_t pid, ProcStat* out) {
    char path[32] = "/proc/self/stat";
    if (pid > 0) {
        std::memcpy(path, "/proc/", 6);
        std::size_t n = 6 + format_pid(pid, path + 6);
        std::memcpy(path + n, "/stat", 6);
    }
    int fd = ::open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return errno;
    // The line is "pid (comm) state ppid ...": comm is at most 16 bytes but
    // may hold spaces and parentheses, so fields are counted from the last ')'.
    char buf[1024];
    ssize_t got;
    do {
        got = ::read(fd, buf, sizeof buf - 1);
    } while (got < 0 && errno == EINTR);
    int saved = errno;
    ::close(fd);
    if (got < 0) return saved == ESRCH ? ENOENT : saved;
    buf[got] = '\0';
    const char* p = std::strrchr(buf, ')');
    if (p == nullptr || p[1] != ' ') return EINVAL;
    p += 2;
    out->state = *p;
    // Field 3 is the state; skip to field 22, reading field 4 on the way.
    for (int field = 3; field < 22; ++field) {
        p = std::strchr(p, ' ');
        if (p == nullptr) return EINVAL;
        ++p;
        if (field == 3) {
            pid_t ppid = 0;
            for (const char* d = p; *d >= '0' && *d <= '9'; ++d) ppid = ppid * 10 + (*d - '0');
            out->ppid = ppid;
        }
    }
    std::uint64_t v = 0;
    if (*p < '0' || *p > '9') return EINVAL;
    while (*p >= '0' && *p <= '9') v = v * 10 + static_cast<std::uint64_t>(*p++ - '0');
    out->start_time = v;
    return 0;
}

bool is_same_process(pid_t pid, std::uint64_t start_time) {
    if (pid <= 0) return false;
    ProcStat st;
    if (read_stat(pid, &st) != 0) return false;
    return st.state != 'Z' && st.state != 'X' && st.start_time == start_time;
}

int pidfd_open(pid_t pid) { return static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)); }

int pidfd_send_signal(int pidfd, int sig) {
    return static_cast<int>(::syscall(SYS_pidfd_send_signal, pidfd, sig, nullptr, 0));
}

}  // namespace daemonlet::proc
