#include "platform/exec/exec_runtime_watch.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>

#include "platform/proc_stat.h"

namespace daemonlet::platform::exec {

ShimWatch* ShimWatch::start(uv_loop_t* loop, int pidfd, std::function<void()> on_exit) {
    auto* w = new ShimWatch;
    w->pidfd_ = pidfd;
    w->on_exit_ = std::move(on_exit);
    w->poll_.data = w;
    int r = uv_poll_init(loop, &w->poll_, pidfd);
    if (r != 0) {
        // An uninitialised handle has nothing to close.
        ::close(pidfd);
        delete w;
        errno = -r;
        return nullptr;
    }
    uv_poll_start(&w->poll_, UV_READABLE, on_readable);
    return w;
}

void ShimWatch::on_readable(uv_poll_t* poll, int, int) {
    // Readable (or an error on the fd, which means the same here): the
    // process has exited. The callback may close this watch, so it is moved
    // out first.
    auto* w = static_cast<ShimWatch*>(poll->data);
    uv_poll_stop(poll);
    auto cb = std::move(w->on_exit_);
    w->on_exit_ = nullptr;
    if (cb) cb();
}

int ShimWatch::send_signal(int sig) { return proc::pidfd_send_signal(pidfd_, sig) == 0 ? 0 : errno; }

void ShimWatch::close() {
    on_exit_ = nullptr;
    uv_close(reinterpret_cast<uv_handle_t*>(&poll_), on_closed);
}

void ShimWatch::on_closed(uv_handle_t* handle) {
    auto* w = static_cast<ShimWatch*>(handle->data);
    // The fd goes only now: libuv must not poll a closed (or reused) fd.
    ::close(w->pidfd_);
    delete w;
}

ShimChild* ShimChild::spawn(uv_loop_t* loop, const uv_process_options_t& options,
                            std::function<void(ShimChild*)> on_exit, int* err) {
    auto* c = new ShimChild;
    c->on_exit_ = std::move(on_exit);
    c->process_.data = c;
    uv_process_options_t opts = options;
    opts.exit_cb = on_process_exit;
    *err = uv_spawn(loop, &c->process_, &opts);
    if (*err != 0) {
        // uv_spawn initialised the handle even though it failed: close it.
        c->on_exit_ = nullptr;
        uv_close(reinterpret_cast<uv_handle_t*>(&c->process_), on_closed);
        return nullptr;
    }
    // Its exit is reported through the pidfd watch; this handle only reaps,
    // and must not keep the agent's loop alive.
    uv_unref(reinterpret_cast<uv_handle_t*>(&c->process_));
    return c;
}

void ShimChild::on_process_exit(uv_process_t* process, std::int64_t, int) {
    auto* c = static_cast<ShimChild*>(process->data);
    auto cb = std::move(c->on_exit_);
    c->on_exit_ = nullptr;
    uv_close(reinterpret_cast<uv_handle_t*>(process), on_closed);
    if (cb) cb(c);
}

void ShimChild::close() {
    on_exit_ = nullptr;
    // A shim that has already exited is reaped now rather than left a zombie
    // of the agent; a live one is left running.
    int status;
    ::waitpid(process_.pid, &status, WNOHANG);
    uv_close(reinterpret_cast<uv_handle_t*>(&process_), on_closed);
}

void ShimChild::on_closed(uv_handle_t* handle) { delete static_cast<ShimChild*>(handle->data); }

ReadyWait* ReadyWait::start(uv_loop_t* loop, int fd, std::uint64_t timeout_ms,
                            std::function<void(int)> on_done) {
    auto* w = new ReadyWait;
    w->fd_ = fd;
    w->on_done_ = std::move(on_done);
    w->poll_.data = w;
    w->timer_.data = w;
    int r = uv_poll_init(loop, &w->poll_, fd);
    if (r != 0) {
        ::close(fd);
        delete w;
        errno = -r;
        return nullptr;
    }
    uv_timer_init(loop, &w->timer_);
    w->open_handles_ = 2;
    uv_poll_start(&w->poll_, UV_READABLE, [](uv_poll_t* p, int status, int) {
        auto* self = static_cast<ReadyWait*>(p->data);
        char c = 0;
        ssize_t n = status < 0 ? 0 : ::read(self->fd_, &c, 1);
        if (n < 0 && (errno == EINTR || errno == EAGAIN)) return;  // polled again
        self->finish(n == 1 ? c : 0);
    });
    uv_timer_start(
        &w->timer_, [](uv_timer_t* t) { static_cast<ReadyWait*>(t->data)->finish(-1); }, timeout_ms, 0);
    return w;
}

void ReadyWait::finish(int got) {
    auto cb = std::move(on_done_);
    on_done_ = nullptr;
    close();
    if (cb) cb(got);
}

void ReadyWait::close() {
    if (closing_) return;
    closing_ = true;
    on_done_ = nullptr;
    uv_close(reinterpret_cast<uv_handle_t*>(&poll_), on_closed);
    uv_close(reinterpret_cast<uv_handle_t*>(&timer_), on_closed);
}

void ReadyWait::on_closed(uv_handle_t* handle) {
    auto* w = static_cast<ReadyWait*>(handle->data);
    if (--w->open_handles_ > 0) return;
    ::close(w->fd_);  // only now: libuv must not poll a closed fd
    delete w;
}

}  // namespace daemonlet::platform::exec
