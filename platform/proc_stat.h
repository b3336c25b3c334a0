// Process identity from /proc/<pid>/stat, shared by the agent and the shim.
// A pid alone does not name a process: once it exits, the kernel hands the
// pid out again. A pid together with its start time (field 22, clock ticks
// since boot) does, which is how the agent tells its shim from a stranger.
// C-style (no allocation, no exceptions) so that the shim stays small.
#pragma once

#include <sys/types.h>

#include <cstdint>

namespace daemonlet::proc {

struct ProcStat {
    char state = 0;                // field 3: R, S, D, Z (zombie), ...
    pid_t ppid = 0;                // field 4
    std::uint64_t start_time = 0;  // field 22
};

// Reads /proc/<pid>/stat (pid 0: the calling process). Returns 0 or an errno
// value (ENOENT: no such process).
int read_stat(pid_t pid, ProcStat* out);

// True when `pid` is a live (not zombie) process that started at `start_time`.
bool is_same_process(pid_t pid, std::uint64_t start_time);

// pidfd_open(2), through syscall(2) so that it builds against any C library
// (Linux >= 5.3). Returns the fd (O_CLOEXEC) or -1 with errno set.
int pidfd_open(pid_t pid);

// pidfd_send_signal(2) (Linux >= 5.1). Returns 0 or -1 with errno set.
int pidfd_send_signal(int pidfd, int sig);

}  // namespace daemonlet::proc
