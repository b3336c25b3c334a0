#include "platform/shim/shim_monitor.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <uv.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <initializer_list>

#include "platform/proc_stat.h"
#include "platform/shim/shim_command.h"
#include "platform/shim/shim_log.h"
#include "platform/shim/shim_protocol.h"
#include "platform/shim/shim_runc.h"
#include "platform/shim/shim_text.h"

namespace daemonlet::shim {
namespace {

// After the container's process exits, its output is read until both pipes
// reach EOF; a daemonized grandchild may hold them open for ever, so this long.
constexpr std::uint64_t kDrainMs = 2000;

// The whole state of one shim. Static: one container per shim, and its line
// buffers cost resident memory only for the pages a long line touches.
struct Monitor {
    uv_loop_t loop;
    uv_process_t process;
    uv_pipe_t out;
    uv_pipe_t err;
    uv_signal_t sigterm;
    uv_signal_t sigint;
    uv_signal_t sigchld;  // runc mode: the container's init is reaped here
    uv_timer_t timer;
    CriLog log;
    LineSplitter out_lines{"stdout", &log};
    LineSplitter err_lines{"stderr", &log};
    const ShimConfig* config = nullptr;
    int dir_fd = -1;
    int* ready_fd = nullptr;
    pid_t pid = 0;
    bool running = false;
    bool stopping = false;
    bool finished = false;
    bool runc = false;
    int open_pipes = 0;
    int exit_code = 0;
    int term_signal = 0;
    int status = 0;
};

Monitor m;

void close_handle(uv_handle_t* h) {
    if (!uv_is_closing(h)) uv_close(h, nullptr);
}

// Signals the container's process group (its own: it was started in a new
// session); a process that left the group is still signalled itself.
void signal_container(int sig) {
    if (!m.running) return;
    if (::kill(-m.pid, sig) != 0) ::kill(m.pid, sig);
}

void close_signals() {
    close_handle(reinterpret_cast<uv_handle_t*>(&m.timer));
    close_handle(reinterpret_cast<uv_handle_t*>(&m.sigterm));
    close_handle(reinterpret_cast<uv_handle_t*>(&m.sigint));
    if (m.runc) close_handle(reinterpret_cast<uv_handle_t*>(&m.sigchld));
}

void finish() {
    if (m.finished) return;
    m.finished = true;
    char reason[64];
    Text r(reason, sizeof reason);
    int code = m.exit_code;
    if (m.term_signal != 0) {
        code = 128 + m.term_signal;
        const char* abbrev = ::sigabbrev_np(m.term_signal);
        if (abbrev != nullptr)
            r.str("SIG").str(abbrev);
        else
            r.str("signal ").num(m.term_signal);
    } else {
        r.str(code == 0 ? "Completed" : "Error");
    }
    m.log.close();
    if (record_exit(m.dir_fd, m.ready_fd, code, m.term_signal, reason) != 0) m.status = 1;
    uv_timer_stop(&m.timer);
    close_signals();
}

void on_pipe_closed(uv_handle_t*) {
    if (--m.open_pipes == 0 && !m.running) finish();
}

LineSplitter* lines_of(uv_handle_t* h) {
    return h == reinterpret_cast<uv_handle_t*>(&m.out) ? &m.out_lines : &m.err_lines;
}

void end_pipe(uv_stream_t* s) {
    auto* h = reinterpret_cast<uv_handle_t*>(s);
    if (uv_is_closing(h)) return;
    uv_read_stop(s);
    lines_of(h)->finish();
    uv_close(h, on_pipe_closed);
}

void on_alloc(uv_handle_t* h, std::size_t, uv_buf_t* buf) {
    LineSplitter* lines = lines_of(h);
    *buf = uv_buf_init(lines->space(), static_cast<unsigned>(lines->space_size()));
}

void on_read(uv_stream_t* s, ssize_t nread, const uv_buf_t*) {
    if (nread > 0)
        lines_of(reinterpret_cast<uv_handle_t*>(s))->commit(static_cast<std::size_t>(nread));
    else if (nread < 0)
        end_pipe(s);
}

void on_timer(uv_timer_t*) {
    if (m.running) {
        signal_container(SIGKILL);  // the grace period is over
    } else {
        end_pipe(reinterpret_cast<uv_stream_t*>(&m.out));  // draining took too long
        end_pipe(reinterpret_cast<uv_stream_t*>(&m.err));
    }
}

// The grace period of this stop: stop_grace when the agent wrote one (a
// preStop hook took part of it), else config.json's.
std::int64_t stop_grace_seconds() {
    std::int64_t grace = m.config->grace_seconds;
    int fd = ::openat(m.dir_fd, kStopGraceFile, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return grace;
    char buf[24] = {};
    ssize_t n = ::read(fd, buf, sizeof buf - 1);
    ::close(fd);
    if (n <= 0) return grace;
    char* end = nullptr;
    errno = 0;
    long long v = std::strtoll(buf, &end, 10);
    if (errno != 0 || end == buf || v < 0) return grace;
    return static_cast<std::int64_t>(v);
}

void on_stop_signal(uv_signal_t*, int) {
    if (!m.running || m.stopping) return;
    m.stopping = true;
    signal_container(SIGTERM);
    std::int64_t grace = stop_grace_seconds();
    if (grace <= 0) {
        signal_container(SIGKILL);
        return;
    }
    if (grace > 86400 * 365) grace = 86400 * 365;
    uv_timer_start(&m.timer, on_timer, static_cast<std::uint64_t>(grace) * 1000, 0);
}

void container_exited(int exit_code, int term_signal) {
    m.exit_code = exit_code;
    m.term_signal = term_signal;
    // Whatever the process left behind in its group goes with it, as the
    // rest of a container goes when its pid 1 exits.
    ::kill(-m.pid, SIGKILL);
    m.running = false;
    if (m.open_pipes == 0) {
        finish();
    } else {
        uv_timer_stop(&m.timer);
        uv_timer_start(&m.timer, on_timer, kDrainMs, 0);
    }
}

void on_container_exit(uv_process_t* p, std::int64_t exit_status, int term_signal) {
    uv_close(reinterpret_cast<uv_handle_t*>(p), nullptr);
    container_exited(static_cast<int>(exit_status), term_signal);
}

// runc mode: reaps every child that has exited (the container's init, and
// any orphan of it that the subreaper inherited), the init's exit ending
// the container.
void reap_children(uv_signal_t* = nullptr, int = 0) {
    for (;;) {
        int status = 0;
        pid_t pid = ::waitpid(-1, &status, WNOHANG);
        if (pid < 0 && errno == EINTR) continue;
        if (pid <= 0) return;
        if (pid == m.pid && m.running) {
            int code = 0, sig = 0;
            runc_exit_status(status, &code, &sig);
            container_exited(code, sig);
        }
    }
}

int write_state() {
    proc::ProcStat self, child;
    if (proc::read_stat(0, &self) != 0 || proc::read_stat(m.pid, &child) != 0) return EIO;
    char buf[256];
    Text t(buf, sizeof buf);
    t.ch('{').key(kShimPid).num(::getpid());
    t.ch(',').key(kShimStartTime).unum(self.start_time);
    t.ch(',').key(kPid).num(m.pid);
    t.ch(',').key(kPidStartTime).unum(child.start_time);
    t.ch(',').key(kStartedAt).num(now_ms()).str("}\n");
    return write_file_atomic(m.dir_fd, kStateFile, t.c_str(), t.size());
}

int spawn_runc(Text* reason);

// Starts the container's process; on failure fills `reason` and returns the
// exit code to record.
int spawn(Text* reason) {
    const ShimConfig& c = *m.config;
    if (m.runc) return spawn_runc(reason);
    char file[PATH_MAX];
    int code = check_cwd(c.cwd, reason);
    if (code == 0) code = resolve_command(c.argv[0], c.env, c.cwd, file, sizeof file, reason);
    if (code != 0) return code;
    int err = m.log.open(c.log_path, c.log_max_bytes, c.log_max_files);
    if (err != 0) {
        reason->str("StartError: open log ").str(c.log_path).str(": ").str(error_text(err));
        return kExitStartError;
    }

    uv_pipe_init(&m.loop, &m.out, 0);
    uv_pipe_init(&m.loop, &m.err, 0);
    m.open_pipes = 2;
    uv_stdio_container_t stdio[3];
    stdio[0].flags = UV_IGNORE;
    stdio[1].flags = static_cast<uv_stdio_flags>(UV_CREATE_PIPE | UV_WRITABLE_PIPE);
    stdio[1].data.stream = reinterpret_cast<uv_stream_t*>(&m.out);
    stdio[2].flags = static_cast<uv_stdio_flags>(UV_CREATE_PIPE | UV_WRITABLE_PIPE);
    stdio[2].data.stream = reinterpret_cast<uv_stream_t*>(&m.err);
    static char* no_env[] = {nullptr};
    uv_process_options_t opts{};
    opts.exit_cb = on_container_exit;
    opts.file = file;
    opts.args = c.argv;
    opts.env = c.env != nullptr ? c.env : no_env;
    opts.cwd = c.cwd;
    opts.flags = UV_PROCESS_DETACHED;  // setsid: the container's own process group
    opts.stdio_count = 3;
    opts.stdio = stdio;
    int r = uv_spawn(&m.loop, &m.process, &opts);
    if (r != 0) {
        uv_close(reinterpret_cast<uv_handle_t*>(&m.process), nullptr);
        uv_close(reinterpret_cast<uv_handle_t*>(&m.out), on_pipe_closed);
        uv_close(reinterpret_cast<uv_handle_t*>(&m.err), on_pipe_closed);
        reason->str("StartError: exec: ").json(c.argv[0]).str(": ").str(uv_strerror(r));
        return r == UV_ENOENT                                             ? kExitNotFound
               : (r == UV_EACCES || r == uv_translate_sys_error(ENOEXEC)) ? kExitNotExecutable
                                                                          : kExitStartError;
    }
    m.pid = m.process.pid;
    m.running = true;
    uv_read_start(reinterpret_cast<uv_stream_t*>(&m.out), on_alloc, on_read);
    uv_read_start(reinterpret_cast<uv_stream_t*>(&m.err), on_alloc, on_read);
    return 0;
}

// runc mode: `runc create` with the log pipes as the container's stdout
// and stderr, then `runc start`; the container's init is then the shim's
// child (subreaper), reaped by reap_children.
int spawn_runc(Text* reason) {
    const ShimConfig& c = *m.config;
    if (int err = become_subreaper(); err != 0) {
        reason->str("StartError: prctl(PR_SET_CHILD_SUBREAPER): ").str(error_text(err));
        return kExitStartError;
    }
    if (int err = m.log.open(c.log_path, c.log_max_bytes, c.log_max_files); err != 0) {
        reason->str("StartError: open log ").str(c.log_path).str(": ").str(error_text(err));
        return kExitStartError;
    }
    int out[2] = {-1, -1}, errp[2] = {-1, -1};
    if (::pipe2(out, O_CLOEXEC) != 0 || ::pipe2(errp, O_CLOEXEC) != 0) {
        reason->str("StartError: pipe: ").str(error_text(errno));
        for (int fd : {out[0], out[1], errp[0], errp[1]})
            if (fd >= 0) ::close(fd);
        return kExitStartError;
    }
    uv_pipe_init(&m.loop, &m.out, 0);
    uv_pipe_init(&m.loop, &m.err, 0);
    uv_pipe_open(&m.out, out[0]);
    uv_pipe_open(&m.err, errp[0]);
    m.open_pipes = 2;
    pid_t pid = 0;
    int code = runc_create(c.argv, out[1], errp[1], errp[0], &pid, reason);
    ::close(out[1]);  // the container holds them now
    ::close(errp[1]);
    if (code == 0) {
        m.pid = pid;
        m.running = true;
        code = runc_start(c.argv, reason);
        if (code != 0) {
            // Created, never started: it goes, and its end is the start's failure.
            ::kill(pid, SIGKILL);
            while (::waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
            }
            m.running = false;
        }
    }
    if (code != 0) {
        uv_close(reinterpret_cast<uv_handle_t*>(&m.out), on_pipe_closed);
        uv_close(reinterpret_cast<uv_handle_t*>(&m.err), on_pipe_closed);
        return code;
    }
    uv_read_start(reinterpret_cast<uv_stream_t*>(&m.out), on_alloc, on_read);
    uv_read_start(reinterpret_cast<uv_stream_t*>(&m.err), on_alloc, on_read);
    return 0;
}

}  // namespace

void signal_ready(int* ready_fd, char what) {
    if (ready_fd == nullptr || *ready_fd < 0) return;
    write_all(*ready_fd, &what, 1);  // EPIPE when the agent is gone: nobody is waiting
    ::close(*ready_fd);
    *ready_fd = -1;
}

int record_exit(int dir_fd, int* ready_fd, int exit_code, int signal, const char* reason) {
    char buf[4096];
    Text t(buf, sizeof buf);
    t.ch('{').key(kExitCode).num(exit_code);
    t.ch(',').key(kSignal).num(signal);
    t.ch(',').key(kReason).json(reason);
    t.ch(',').key(kFinishedAt).num(now_ms()).str("}\n");
    int err = write_file_atomic(dir_fd, kExitFile, t.c_str(), t.size());
    signal_ready(ready_fd, kReadyExited);
    return err;
}

int run_container(const ShimConfig& config, int dir_fd, int* ready_fd) {
    m.config = &config;
    m.dir_fd = dir_fd;
    m.ready_fd = ready_fd;
    m.runc = is_runc_launch(config.argv);
    if (uv_loop_init(&m.loop) != 0) return 1;
    uv_timer_init(&m.loop, &m.timer);
    uv_signal_init(&m.loop, &m.sigterm);
    uv_signal_init(&m.loop, &m.sigint);
    uv_signal_start(&m.sigterm, on_stop_signal, SIGTERM);
    uv_signal_start(&m.sigint, on_stop_signal, SIGINT);
    if (m.runc) {
        // Before `runc create`: an init that exits at once is still reaped.
        uv_signal_init(&m.loop, &m.sigchld);
        uv_signal_start(&m.sigchld, reap_children, SIGCHLD);
    }
    // main() blocked these until the handlers above were in place.
    sigset_t stop_signals;
    sigemptyset(&stop_signals);
    sigaddset(&stop_signals, SIGTERM);
    sigaddset(&stop_signals, SIGINT);
    sigprocmask(SIG_UNBLOCK, &stop_signals, nullptr);

    char reason_buf[PATH_MAX + 256];
    Text reason(reason_buf, sizeof reason_buf);
    int code = spawn(&reason);
    if (code != 0) {
        m.exit_code = code;
        m.finished = true;
        m.log.close();
        if (record_exit(dir_fd, ready_fd, code, 0, reason.c_str()) != 0) m.status = 1;
        close_signals();
    } else if (write_state() != 0) {
        // Without state.json the agent cannot tell this container from a
        // stranger: stop it now; its exit is recorded as usual.
        write_all(2, "daemonlet-shim: cannot write state.json\n", 40);
        on_stop_signal(&m.sigterm, SIGTERM);
        signal_container(SIGKILL);
    } else {
        signal_ready(ready_fd, kReadyRunning);
    }
    uv_run(&m.loop, UV_RUN_DEFAULT);
    if (uv_loop_close(&m.loop) != 0) {
        write_all(2, "daemonlet-shim: handles left open at exit\n", 42);
        return 1;
    }
    return m.status;
}

}  // namespace daemonlet::shim
