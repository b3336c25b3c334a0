// The exec runtime: a container is its command run directly on the host (no
// image, no isolation) under a daemonlet-shim that outlives the agent. The
// files under the state directory are the whole truth (shim_protocol.h), so a
// fresh runtime over the same directory re-adopts what an earlier agent
// started, even one killed with SIGKILL.
//
// Lifetime, as libuv handles: the runtime holds a pidfd watch per running
// container and a process handle per shim it spawned until reaped. close()
// (also run by the destructor) closes them all, leaving every shim and
// container running; the loop then finishes its close callbacks, which need
// nothing from the runtime, and uv_loop_close() succeeds.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "core/result.h"
#include "platform/runtime.h"

struct uv_loop_s;

namespace daemonlet::platform {

namespace exec {
class ShimWatch;
class ShimChild;
class ReadyWait;
}  // namespace exec

class ExecRuntime final : public Runtime {
  public:
    // `state_dir` and `shim_path` are made absolute: the shim runs in "/".
    ExecRuntime(uv_loop_s* loop, std::string state_dir, std::string shim_path);
    ~ExecRuntime() override;
    ExecRuntime(const ExecRuntime&) = delete;
    ExecRuntime& operator=(const ExecRuntime&) = delete;

    const char* name() const override { return "exec"; }
    void set_exit_handler(std::function<void(const std::string& id)> handler) override;

    // Writes config.json, spawns the shim (detached: its own session, stdio
    // on /dev/null and shim.log) and waits, at most start_timeout, for it to
    // report the container started, or exited: a command that cannot start
    // is an exit with a StartError reason, reported through the exit handler
    // like any other. Blocks the loop for that long (a fork and an exec).
    Result<std::string> start(const ContainerLaunch& launch) override;
    // The same, without blocking: the fork and exec happen in the call, the
    // shim's report is waited for on the loop. After close(), a start in
    // flight never calls back; its shim and container run on.
    void start_async(ContainerLaunch launch, std::function<void(Result<std::string>)> done) override;
    // SIGTERM to the shim, which passes it on to the container's process
    // group and sends SIGKILL after the grace period. A container that has
    // already exited is not an error. An unwatched running one is watched
    // from now on, so its exit reaches the handler.
    Status stop(const std::string& id) override;
    // Written to the container's stop_grace (shim_protocol.h), read by its
    // shim when the stop comes.
    void set_stop_grace(const std::string& id, std::int64_t grace_seconds) override;
    Result<ContainerInfo> inspect(const std::string& id) override;
    // Every container in the state directory. A running one whose shim is
    // alive and is the recorded process (pid and start time) is watched; one
    // whose shim is gone without an exit.json (killed; or its pid reused) is
    // recorded and reported as exited (137, ContainerStatusUnknown), and what
    // is left of its container is killed.
    Result<std::vector<ContainerInfo>> adopt_all() override;
    // Deletes the container's state directory; the log stays. Refuses a
    // running container. Removing an unknown id succeeds.
    Status remove(const std::string& id) override;
    void close() override;

    void set_start_timeout(std::chrono::milliseconds timeout) { start_timeout_ = timeout; }

  private:
    struct Spawned {
        int pidfd = -1;
        pid_t pid = 0;
        int ready_fd = -1;  // the readiness pipe's read end
    };
    struct Prepared {
        std::string id;
        std::string dir;
        Spawned spawned;
    };
    struct Starting {
        exec::ReadyWait* wait;
        int pidfd;
    };
    static ContainerLaunch resolved(const ContainerLaunch& launch);
    // Everything up to the shim spawned: validation, config.json, uv_spawn.
    Result<Prepared> prepare(const ContainerLaunch& launch);
    Result<Spawned> spawn_shim(const std::string& dir);
    // Once the shim reported (`got`: its byte, 0 at EOF, -1 on timeout):
    // watched, or undone. Takes the pidfd.
    Result<std::string> finish_start(const std::string& id, const std::string& dir, const Spawned& spawned,
                                     int got);
    // Undoes a start that failed after the shim was spawned: kills the shim
    // and any container it started, deletes the state.
    void abandon(const std::string& dir, pid_t shim_pid);
    Status watch(const std::string& id, int pidfd);
    void on_shim_exit(const std::string& id);

    uv_loop_s* loop_;
    std::string state_dir_;
    std::string shim_path_;
    std::chrono::milliseconds start_timeout_{10000};
    std::function<void(const std::string&)> on_exit_;
    std::map<std::string, exec::ShimWatch*> watches_;  // running containers, by id
    std::set<exec::ShimChild*> children_;              // shims spawned and not yet reaped
    std::map<std::string, Starting> starting_;         // starts waiting for their shim's report
    bool closed_ = false;
};

// The agent's way to make one: creates the state directory (0700) if need
// be and fails, saying why, when the shim is not an executable file or the
// kernel has no pidfds (Linux < 5.3).
Result<std::unique_ptr<Runtime>> make_exec_runtime(uv_loop_s* loop, std::string state_dir,
                                                   std::string shim_path);

}  // namespace daemonlet::platform
