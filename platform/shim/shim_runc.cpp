#include "platform/shim/shim_runc.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <initializer_list>

#include "platform/shim/shim_protocol.h"

extern char** environ;

namespace daemonlet::shim {
namespace {

enum Part { kMarker, kBinary, kRoot, kBundle, kId, kParts };

// Runs `args` (NULL-terminated) in a session of its own with stdin
// /dev/null and the given stdout and stderr, default signal dispositions
// and no blocked signals, and waits for it. It is killed if the shim dies
// first (the agent gives up on a start that hangs and kills the shim): no
// runc command outlives the shim. Returns its wait status, or -1 with errno.
int run(char* const* args, int out_fd, int err_fd) {
    const pid_t shim = ::getpid();
    const pid_t pid = ::fork();
    if (pid < 0) return -1;
    if (pid == 0) {
        ::prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (::getppid() != shim) ::_exit(127);
        ::setsid();
        int null = ::open("/dev/null", O_RDONLY);
        if (null < 0 || ::dup2(null, 0) < 0 || ::dup2(out_fd, 1) < 0 || ::dup2(err_fd, 2) < 0) ::_exit(127);
        struct sigaction dfl {};
        dfl.sa_handler = SIG_DFL;
        for (int sig = 1; sig < NSIG; ++sig) ::sigaction(sig, &dfl, nullptr);
        sigset_t none;
        sigemptyset(&none);
        ::sigprocmask(SIG_SETMASK, &none, nullptr);
        ::execve(args[0], args, environ);
        char buf[512];
        Text t(buf, sizeof buf);
        t.str("cannot run ").str(args[0]).str(": ").str(error_text(errno)).ch('\n');
        write_all(2, t.c_str(), t.size());
        ::_exit(127);
    }
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0)
        if (errno != EINTR) return -1;
    return status;
}

// What runc said on the pipe `fd` (read without blocking), its last
// non-empty line, into `reason`; else its exit status.
void add_message(int fd, int status, Text* reason) {
    char buf[2048];
    std::size_t len = 0;
    int flags = ::fcntl(fd, F_GETFL);
    ::fcntl(fd, F_SETFL, flags | O_NONBLOCK);
    for (;;) {
        ssize_t n = ::read(fd, buf + len, sizeof buf - 1 - len);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        len += static_cast<std::size_t>(n);
        if (len == sizeof buf - 1) break;
    }
    ::fcntl(fd, F_SETFL, flags);
    while (len > 0 && (buf[len - 1] == '\n' || buf[len - 1] == ' ')) --len;
    std::size_t start = len;
    while (start > 0 && buf[start - 1] != '\n') --start;
    if (len > start) {
        reason->mem(buf + start, len - start);
    } else if (status < 0) {
        reason->str(error_text(errno));
    } else if (WIFSIGNALED(status)) {
        reason->str("killed by signal ").num(WTERMSIG(status));
    } else {
        reason->str("exit status ").num(WEXITSTATUS(status));
    }
}

// runc's global options, then `verb`: argv for run().
struct Command {
    char log[4096];
    char* args[16];
    int n = 0;
    Command(char* const* argv, const char* verb) {
        Text t(log, sizeof log);
        t.str(argv[kBundle]).str("/runc.log");
        const char* global[] = {argv[kBinary], "--root",       argv[kRoot], "--log",
                                log,           "--log-format", "json",      verb};
        for (const char* a : global) args[n++] = const_cast<char*>(a);
        args[n] = nullptr;
    }
    Command& add(const char* a) {
        args[n++] = const_cast<char*>(a);
        args[n] = nullptr;
        return *this;
    }
};

}  // namespace

bool is_runc_launch(char* const* argv) {
    if (argv == nullptr || argv[0] == nullptr || std::strcmp(argv[0], kRuncMarker) != 0) return false;
    for (int i = 1; i < kParts; ++i)
        if (argv[i] == nullptr || argv[i][0] == '\0') return false;
    return argv[kParts] == nullptr;
}

int become_subreaper() { return ::prctl(PR_SET_CHILD_SUBREAPER, 1) == 0 ? 0 : errno; }

int runc_create(char* const* argv, int out_fd, int err_fd, int err_read, pid_t* pid, Text* reason) {
    char pid_file[4096];
    Text pf(pid_file, sizeof pid_file);
    pf.str(argv[kBundle]).str("/container.pid");
    ::unlink(pid_file);
    Command create(argv, "create");
    create.add("--pid-file").add(pid_file).add("--bundle").add(argv[kBundle]).add(argv[kId]);
    int status = run(create.args, out_fd, err_fd);
    if (status != 0) {
        reason->str("StartError: runc create: ");
        add_message(err_read, status, reason);
        return kExitStartError;
    }
    char text[32] = {0};
    int fd = ::open(pid_file, O_RDONLY | O_CLOEXEC);
    ssize_t n = fd >= 0 ? ::read(fd, text, sizeof text - 1) : -1;
    if (fd >= 0) ::close(fd);
    char* end = nullptr;
    long value = n > 0 ? std::strtol(text, &end, 10) : 0;
    if (value <= 0 || (end != nullptr && *end != '\0' && *end != '\n')) {
        reason->str("StartError: runc create: ").str(pid_file).str(" holds no process id");
        return kExitStartError;
    }
    *pid = static_cast<pid_t>(value);
    return 0;
}

int runc_start(char* const* argv, Text* reason) {
    int pipe_fds[2];
    if (::pipe2(pipe_fds, O_CLOEXEC) != 0) {
        reason->str("StartError: runc start: pipe: ").str(error_text(errno));
        return kExitStartError;
    }
    Command start(argv, "start");
    start.add(argv[kId]);
    int status = run(start.args, pipe_fds[1], pipe_fds[1]);
    ::close(pipe_fds[1]);
    int code = 0;
    if (status != 0) {
        reason->str("StartError: runc start: ");
        add_message(pipe_fds[0], status, reason);
        code = kExitStartError;
    }
    ::close(pipe_fds[0]);
    return code;
}

void runc_exit_status(int wait_status, int* exit_code, int* term_signal) {
    *term_signal = 0;
    *exit_code = WIFSIGNALED(wait_status) ? 128 + WTERMSIG(wait_status) : WEXITSTATUS(wait_status);
}

}  // namespace daemonlet::shim
