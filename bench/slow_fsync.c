/* slow_fsync: an LD_PRELOAD library that makes fsync and fdatasync of a
 * file not on a tmpfs take SLOW_FSYNC_MS milliseconds longer, as on an SD
 * card whose flush takes hundreds of milliseconds (issue 15 §3), and
 * appends one line per delayed call
 * ("<pid> <tid> fsync|fdatasync <fd>") to SLOW_FSYNC_LOG when it is set.
 * bench_stall --fsync-delay-ms N runs the agent (and its shims) under it:
 * the agent's loop is one thread, so a flush on it holds the loop that long. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static void slow_down(const char* what, int fd) {
    /* Memory is not the card: a tmpfs (the pods' secret volumes) flushes at once. */
    struct statfs fs;
    if (fstatfs(fd, &fs) == 0 && fs.f_type == TMPFS_MAGIC) return;
    const char* ms = getenv("SLOW_FSYNC_MS");
    long n = ms ? atol(ms) : 0;
    if (n > 0) {
        struct timespec ts = {n / 1000, (n % 1000) * 1000000L};
        while (nanosleep(&ts, &ts) != 0) {
        }
    }
    const char* log = getenv("SLOW_FSYNC_LOG");
    if (!log) return;
    int out = open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (out < 0) return;
    char line[96];
    int len =
        snprintf(line, sizeof line, "%ld %ld %s %d\n", (long)getpid(), (long)syscall(SYS_gettid), what, fd);
    if (len > 0) (void)!write(out, line, (size_t)len);
    close(out);
}

int fsync(int fd) {
    static int (*real)(int);
    if (!real) real = (int (*)(int))dlsym(RTLD_NEXT, "fsync");
    slow_down("fsync", fd);
    return real(fd);
}

int fdatasync(int fd) {
    static int (*real)(int);
    if (!real) real = (int (*)(int))dlsym(RTLD_NEXT, "fdatasync");
    slow_down("fdatasync", fd);
    return real(fd);
}
