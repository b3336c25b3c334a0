// daemonlet-shim: the monitor of one container, started by the agent's exec
// runtime and meant to outlive it, as conmon and containerd's shims do.
//
//   daemonlet-shim <containerStateDir>
//
// It reads config.json there, starts the container and keeps its exit status
// and logs; the protocol is in shim_protocol.h. The agent starts it in a new
// session with stdin and stdout on /dev/null, stderr on shim.log and fd 3 the
// readiness pipe; every other descriptor it might have inherited is closed
// here, so that it holds nothing of the agent's.
//
// Kept small on purpose: one runs per container on boards with little memory,
// so no iostreams and no printf, and the static build (see CMakeLists.txt).
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "platform/shim/shim_config.h"
#include "platform/shim/shim_monitor.h"
#include "platform/shim/shim_protocol.h"
#include "platform/shim/shim_text.h"

namespace {

using namespace daemonlet::shim;

void say(const char* a, const char* b = "", const char* c = "") {
    char buf[1024];
    Text t(buf, sizeof buf);
    t.str("daemonlet-shim: ").str(a).str(b).str(c).ch('\n');
    write_all(2, t.c_str(), t.size());
}

// Closes every descriptor above the readiness pipe: the agent opens its own
// with O_CLOEXEC, but a library it links might not have.
void close_inherited_fds() {
#ifdef SYS_close_range
    if (::syscall(SYS_close_range, kReadyFd + 1, ~0U, 0) == 0) return;
#endif
    long max = ::sysconf(_SC_OPEN_MAX);
    for (long fd = kReadyFd + 1; fd < (max > 0 ? max : 1024); ++fd) ::close(static_cast<int>(fd));
}

// fds 0-2 must be open, or the files opened next would take their numbers
// and reach the container as its stdio.
void ensure_stdio() {
    for (int fd = 0; fd <= 2; ++fd) {
        if (::fcntl(fd, F_GETFD) >= 0) continue;
        int n = ::open("/dev/null", O_RDWR);
        if (n >= 0 && n != fd) {
            ::dup2(n, fd);
            ::close(n);
        }
    }
}

// Reads config.json (at most kMaxConfigBytes) into a NUL-terminated buffer.
char* read_config(int dir_fd, Text* err) {
    int fd = ::openat(dir_fd, kConfigFile, O_RDONLY | O_CLOEXEC | O_NOCTTY);
    struct stat st {};
    if (fd < 0 || ::fstat(fd, &st) != 0) {
        err->str("config.json: ").str(error_text(errno));
        if (fd >= 0) ::close(fd);
        return nullptr;
    }
    if (!S_ISREG(st.st_mode) || static_cast<std::size_t>(st.st_size) > kMaxConfigBytes) {
        err->str("config.json: not a regular file of at most 1 MiB");
        ::close(fd);
        return nullptr;
    }
    auto size = static_cast<std::size_t>(st.st_size);
    auto* text = static_cast<char*>(std::malloc(size + 1));
    std::size_t got = 0;
    while (text != nullptr && got < size) {
        ssize_t n = ::read(fd, text + got, size - got);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        got += static_cast<std::size_t>(n);
    }
    ::close(fd);
    if (text == nullptr || got != size) {
        err->str("config.json: short read");
        std::free(text);
        return nullptr;
    }
    text[size] = '\0';
    return text;
}

}  // namespace

int main(int argc, char** argv) {
    // A stop request before the loop's signal handlers exist must wait for
    // them rather than kill the shim; run_container() unblocks these.
    sigset_t stop_signals;
    sigemptyset(&stop_signals);
    sigaddset(&stop_signals, SIGTERM);
    sigaddset(&stop_signals, SIGINT);
    sigprocmask(SIG_BLOCK, &stop_signals, nullptr);
    // Writing the readiness byte to an agent that died must not kill us.
    signal(SIGPIPE, SIG_IGN);
    // A file size limit (a unit's LimitFSIZE=) on the container's log fails
    // the write (EFBIG, handled as a full disk), rather than killing the
    // shim and the container's supervision with it. The container itself
    // starts with every signal at its default (uv_spawn, shim_runc).
    signal(SIGXFSZ, SIG_IGN);

    ensure_stdio();
    int ready_fd = ::fcntl(kReadyFd, F_SETFD, FD_CLOEXEC) == 0 ? kReadyFd : -1;
    close_inherited_fds();
    if (argc != 2) {
        say("usage: daemonlet-shim <container-state-dir>");
        return 2;
    }
    ::setsid();  // already a session leader when the agent started us
    int dir_fd = ::open(argv[1], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dir_fd < 0) {
        say(argv[1], ": ", error_text(errno));
        return 1;
    }
    // The shim must not keep a mount busy by its working directory.
    if (::chdir("/") != 0) return 1;
    char err_buf[512];
    Text err(err_buf, sizeof err_buf);
    ShimConfig config;
    char* text = read_config(dir_fd, &err);
    int status = 0;
    if (text == nullptr || !parse_config(text, &config, &err)) {
        char reason[600];
        Text r(reason, sizeof reason);
        r.str("StartError: ").str(err.c_str());
        say(reason);
        status = record_exit(dir_fd, &ready_fd, kExitStartError, 0, reason) == 0 ? 0 : 1;
    } else {
        status = run_container(config, dir_fd, &ready_fd);
    }
    free_config(&config);
    std::free(text);
    ::close(dir_fd);
    return status;
}
