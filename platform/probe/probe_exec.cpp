// The exec probe on the host (pkg/probe/exec as kubelet runs it with
// ExecProbeTimeout): uv_spawn with the container's env and workingDir, in
// its own process group, stdout and stderr into one pipe kept to 10 KiB;
// the group is killed at the timeout. The result is called back once the
// process is reaped and its output drained.
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <vector>

#include "platform/probe/prober_op.h"
#include "platform/shim/shim_protocol.h"

namespace daemonlet::platform {

namespace {

struct ExecOp : Prober::Op {
    uv_process_t proc{};
    uv_pipe_t out{};
    uv_timer_t timer{};
    std::string output;
    std::string command_text;
    std::string spawn_error;
    bool running = false, exited = false, eof = false, timed_out = false, done = false;
    std::int64_t exit_status = 0;
    int term_signal = 0;
    char buf[4096];

    void kill_group() {
        if (running && !exited && proc.pid > 0) ::kill(-proc.pid, SIGKILL);
    }
    void abort() override {
        kill_group();
        maybe_done();  // a spawn failure or a finished process: close now
    }
    void stop_reading() {
        if (eof) return;
        uv_read_stop(reinterpret_cast<uv_stream_t*>(&out));
        eof = true;
        maybe_done();
    }
    void maybe_done() {
        if (!exited || !eof || done) return;
        done = true;
        ProbeResult r;
        r.output = output;
        r.command_output = output;
        if (!spawn_error.empty()) {
            r.outcome = ProbeOutcome::Failure;
            r.output = spawn_error;
        } else if (timed_out) {
            r.outcome = ProbeOutcome::Failure;
            r.output = "command \"" + command_text + "\" timed out";
        } else if (exit_status == 0 && term_signal == 0) {
            r.outcome = ProbeOutcome::Success;
            r.exit_code = 0;
        } else {
            if (term_signal == 0) r.exit_code = static_cast<int>(exit_status);
            r.outcome = ProbeOutcome::Failure;
            if (r.output.empty())
                r.output = term_signal ? "command killed by signal " + std::to_string(term_signal)
                                       : "command exited with " + std::to_string(exit_status);
        }
        close(reinterpret_cast<uv_handle_t*>(&timer));
        close(reinterpret_cast<uv_handle_t*>(&proc));
        close(reinterpret_cast<uv_handle_t*>(&out));
        deliver(std::move(r));
    }
};

}  // namespace

Result<Prober::Id> Prober::run_exec(Id id, const ProbeAction& a, Callback cb) {
    auto* op = new ExecOp;
    op->attach(this, id, std::move(cb));
    for (const auto& c : a.command) op->command_text += (op->command_text.empty() ? "" : " ") + c;

    std::vector<std::string> env_strings;
    bool has_path = false;
    for (const auto& [k, v] : a.env) {
        env_strings.push_back(k + "=" + v);
        has_path = has_path || k == "PATH";
    }
    // As the runtimes do for a container without PATH (shim_protocol.h).
    if (!has_path) env_strings.push_back(std::string("PATH=") + shim::kDefaultPath);
    std::vector<char*> envp, argv;
    for (auto& s : env_strings) envp.push_back(s.data());
    envp.push_back(nullptr);
    std::vector<std::string> args = a.command;
    for (auto& s : args) argv.push_back(s.data());
    argv.push_back(nullptr);
    const std::string cwd = a.working_dir.empty() ? "/" : a.working_dir;

    // One pipe for stdout and stderr (kubelet keeps the combined output).
    uv_file fds[2] = {-1, -1};
    if (int prc = uv_pipe(fds, 0, 0); prc != 0) {
        delete op;
        return Error{ErrorCode::Io, "exec probe: pipe: " + uv_text(prc)};
    }
    uv_pipe_init(loop_, &op->out, 0);
    op->out.data = op;
    ++op->open_handles;
    uv_pipe_open(&op->out, fds[0]);
    uv_stdio_container_t stdio[3];
    stdio[0].flags = UV_IGNORE;
    stdio[1].flags = UV_INHERIT_FD;
    stdio[1].data.fd = fds[1];
    stdio[2].flags = UV_INHERIT_FD;
    stdio[2].data.fd = fds[1];
    uv_process_options_t opts{};
    opts.file = argv[0];
    opts.args = argv.data();
    opts.env = envp.data();
    opts.cwd = cwd.c_str();
    opts.stdio = stdio;
    opts.stdio_count = 3;
    // Its own process group, so that a timeout kills what it started too.
    opts.flags = UV_PROCESS_DETACHED;
    opts.exit_cb = [](uv_process_t* p, std::int64_t status, int sig) {
        auto* o = static_cast<ExecOp*>(p->data);
        o->running = false;
        // Strays of the probe that still hold the pipe open go with it.
        if (!o->eof) ::kill(-p->pid, SIGKILL);
        o->exited = true;
        o->exit_status = status;
        o->term_signal = sig;
        if (o->timed_out) o->stop_reading();
        o->maybe_done();
    };
    op->proc.data = op;
    uv_timer_init(loop_, &op->timer);
    op->timer.data = op;
    ++op->open_handles;
    ++op->open_handles;  // the process handle: closed even when uv_spawn fails
    ops_[id] = op;
    int rc = uv_spawn(loop_, &op->proc, &opts);
    ::close(fds[1]);  // the child has its copy; EOF comes when it and its children exit
    if (rc != 0) {
        // A command that cannot be started fails the probe, as a runtime's
        // exec does (exit 126/127), rather than being an error kubelet
        // throws away: otherwise a probe with a typo would never fail. The
        // failure is called back from the loop, not from inside run().
        op->exited = op->eof = true;
        op->spawn_error = "exec " + op->command_text + ": " + uv_text(rc);
        uv_timer_start(
            &op->timer, [](uv_timer_t* t) { static_cast<ExecOp*>(t->data)->maybe_done(); }, 0, 0);
        return id;
    }
    op->running = true;
    uv_timer_start(
        &op->timer,
        [](uv_timer_t* t) {
            auto* o = static_cast<ExecOp*>(t->data);
            if (o->exited) {
                // It exited in time, but something outside its process
                // group (a daemon it started in its own session) holds the
                // pipe: the timeout ends the wait for more output.
                o->stop_reading();
                return;
            }
            o->timed_out = true;
            o->kill_group();
        },
        static_cast<std::uint64_t>(a.timeout_ms), 0);
    uv_read_start(
        reinterpret_cast<uv_stream_t*>(&op->out),
        [](uv_handle_t* h, std::size_t, uv_buf_t* b) {
            auto* o = static_cast<ExecOp*>(h->data);
            *b = uv_buf_init(o->buf, sizeof o->buf);
        },
        [](uv_stream_t* s, ssize_t n, const uv_buf_t* b) {
            auto* o = static_cast<ExecOp*>(s->data);
            if (n > 0) {
                std::size_t room = kProbeMaxOutput - std::min(kProbeMaxOutput, o->output.size());
                o->output.append(b->base, std::min(room, static_cast<std::size_t>(n)));
                return;
            }
            if (n < 0) {
                uv_read_stop(s);
                o->eof = true;
                o->maybe_done();
            }
        });
    return id;
}

}  // namespace daemonlet::platform
