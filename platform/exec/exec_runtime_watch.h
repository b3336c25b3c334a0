// libuv handles of the exec runtime, each owning its memory: freed in its own
// uv_close callback, which touches nothing else, so the runtime may go as
// soon as it has closed them (libuv docs/src/handle.rst).
#pragma once

#include <sys/types.h>
#include <uv.h>

#include <cstdint>
#include <functional>

namespace daemonlet::platform::exec {

// Watches one shim through a pidfd, which becomes readable when the process
// exits: this works for shims that are not our children (adopted after an
// agent restart) as for those that are. on_exit runs once, from the loop,
// unless close() comes first.
class ShimWatch {
  public:
    // Takes ownership of `pidfd` (closed on failure too). Returns nullptr
    // with errno set when libuv refuses the fd.
    static ShimWatch* start(uv_loop_t* loop, int pidfd, std::function<void()> on_exit);

    ShimWatch(const ShimWatch&) = delete;
    ShimWatch& operator=(const ShimWatch&) = delete;

    // pidfd_send_signal(2): no pid reuse race. Returns 0 or an errno.
    int send_signal(int sig);
    // Stops watching; the memory goes in the close callback. The object must
    // not be used afterwards.
    void close();

  private:
    ShimWatch() = default;
    ~ShimWatch() = default;
    static void on_readable(uv_poll_t* poll, int status, int events);
    static void on_closed(uv_handle_t* handle);

    uv_poll_t poll_{};
    int pidfd_ = -1;
    std::function<void()> on_exit_;
};

// A shim the runtime spawned, reaped through libuv when it exits while the
// runtime lives. on_exit runs once when it has been reaped, unless close()
// comes first; close() leaves the process running (a shim outlives the agent)
// and unwatched.
class ShimChild {
  public:
    // uv_spawn; returns nullptr with the libuv error in *err.
    static ShimChild* spawn(uv_loop_t* loop, const uv_process_options_t& options,
                            std::function<void(ShimChild*)> on_exit, int* err);

    ShimChild(const ShimChild&) = delete;
    ShimChild& operator=(const ShimChild&) = delete;

    pid_t pid() const { return process_.pid; }
    void close();

  private:
    ShimChild() = default;
    ~ShimChild() = default;
    static void on_process_exit(uv_process_t* process, std::int64_t exit_status, int term_signal);
    static void on_closed(uv_handle_t* handle);

    uv_process_t process_{};
    std::function<void(ShimChild*)> on_exit_;
};

// Waits, on the loop, for a spawned shim's readiness byte on `fd` (the
// pipe's read end), at most `timeout_ms`: on_done runs once with the byte,
// 0 at EOF (the shim died first) or -1 on timeout, unless close() comes
// first. How a start waits for its shim without blocking the loop.
class ReadyWait {
  public:
    // Takes ownership of `fd` (closed on failure too). Returns nullptr with
    // errno set when libuv refuses the fd.
    static ReadyWait* start(uv_loop_t* loop, int fd, std::uint64_t timeout_ms,
                            std::function<void(int)> on_done);

    ReadyWait(const ReadyWait&) = delete;
    ReadyWait& operator=(const ReadyWait&) = delete;

    void close();

  private:
    ReadyWait() = default;
    ~ReadyWait() = default;
    void finish(int got);
    static void on_closed(uv_handle_t* handle);

    uv_poll_t poll_{};
    uv_timer_t timer_{};
    int fd_ = -1;
    int open_handles_ = 0;
    bool closing_ = false;
    std::function<void(int)> on_done_;
};

}  // namespace daemonlet::platform::exec
