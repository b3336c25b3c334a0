// What the platform tests share: a real libuv loop run until a predicate
// holds or a deadline passes (never a sleep), a temporary state directory, an
// ExecRuntime over it running the real daemonlet-shim, and readers for what
// the shim writes.
#pragma once

#include <sys/types.h>
#include <uv.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "platform/exec/exec_runtime.h"
#include "platform/runtime.h"

namespace daemonlet::testing {

using namespace std::chrono_literals;

// Generous: the deadline only matters when a test fails, and qemu and the
// sanitizers are slow.
inline constexpr std::chrono::milliseconds kDeadline = 20s;

// Runs `loop` until `done()` holds or `timeout` passes; returns done(). A
// short repeating timer wakes the loop so that predicates about the world
// outside it (a file a container writes) are checked again; an event inside
// it (an exit callback) ends the wait at once.
bool run_until(uv_loop_t* loop, const std::function<bool()>& done,
               std::chrono::milliseconds timeout = kDeadline);

// True when these tests run under a user-mode emulator (a cross build's
// tests under qemu): the host's programs, /bin/sh for one, are for another
// machine than this code. The test process cannot exec the cross-built shim
// there (no binfmt_misc), so tests that start containers cannot run; CMake
// registers them for native builds only, and this guards a manual run.
bool under_emulator();

// A container of the pod "ns/pod" (uid "uid-1") named "c", running `argv`.
platform::ContainerLaunch launch(std::vector<std::string> argv);

std::string read_text(const std::string& path);
void write_text(const std::string& path, const std::string& text);

// One record of a CRI log file, checked against the format as it is read.
struct CriRecord {
    std::string stream;  // stdout, stderr
    char tag = 0;        // F, P
    std::string text;
};
// Fails the current test on a line that is not a CRI record.
std::vector<CriRecord> read_cri_log(const std::string& path);

// A child process of the test, spawned and reaped through the loop.
class Child {
  public:
    Child(uv_loop_t* loop, std::vector<std::string> argv);
    ~Child();  // SIGKILL and reap, if still running
    pid_t pid() const { return pid_; }
    bool exited() const { return exited_; }
    void kill_and_reap();

  private:
    uv_loop_t* loop_;
    uv_process_t* process_ = nullptr;
    pid_t pid_ = 0;
    bool exited_ = false;
};

// The largest gap between the callbacks of a 10 ms repeating timer while
// `pending()` holds: how long the loop was held at once.
class LoopTicks {
  public:
    explicit LoopTicks(uv_loop_t* loop) : timer_(new uv_timer_t) {
        uv_timer_init(loop, timer_);
        timer_->data = this;
        last_ = std::chrono::steady_clock::now();
        uv_timer_start(
            timer_,
            [](uv_timer_t* t) {
                auto* self = static_cast<LoopTicks*>(t->data);
                auto now = std::chrono::steady_clock::now();
                self->max_gap_ = std::max(self->max_gap_, now - self->last_);
                self->last_ = now;
                ++self->ticks_;
            },
            10, 10);
    }
    ~LoopTicks() {
        uv_close(reinterpret_cast<uv_handle_t*>(timer_),
                 [](uv_handle_t* h) { delete reinterpret_cast<uv_timer_t*>(h); });
    }
    std::int64_t max_gap_ms() const {
        return std::chrono::duration_cast<std::chrono::milliseconds>(max_gap_).count();
    }
    int ticks() const { return ticks_; }
    // Stops counting (what is pending has reported).
    void stop() { uv_timer_stop(timer_); }
    LoopTicks(const LoopTicks&) = delete;
    LoopTicks& operator=(const LoopTicks&) = delete;

  private:
    uv_timer_t* timer_;  // freed in its close callback
    std::chrono::steady_clock::time_point last_;
    std::chrono::steady_clock::duration max_gap_{};
    int ticks_ = 0;
};

// A loop, a state directory and a runtime, torn down in order: leftover
// shims killed, the runtime closed, the loop closed (it must close: every
// handle released), the directory deleted.
class RuntimeFixture {
  public:
    // Ends the test (as passed, with a note) where it cannot run: see under_emulator().
    void setup();
    void teardown();

    // A runtime over the same state directory, recording exits in `exited`.
    std::unique_ptr<platform::ExecRuntime> make_runtime();
    bool run_until(const std::function<bool()>& done, std::chrono::milliseconds timeout = kDeadline) {
        return testing::run_until(&loop, done, timeout);
    }
    // Starts `l`, failing the test if start() fails.
    std::string start(const platform::ContainerLaunch& l);
    // Waits until the exit handler has been called for `id`, then inspects it.
    // `shim_says`: what the shim's stderr holds, once (none: it is empty).
    platform::ContainerInfo wait_exit(const std::string& id, const std::string& shim_says = "");
    // The container's state.json, read back (shim pid and start time, ...).
    std::int64_t state_field(const std::string& id, const char* key);

    bool set_up = false;
    uv_loop_t loop{};
    std::string dir;  // the runtime's state directory
    std::unique_ptr<platform::ExecRuntime> runtime;
    std::vector<std::string> exited;  // ids, in the order the exit handler saw them
};

}  // namespace daemonlet::testing
