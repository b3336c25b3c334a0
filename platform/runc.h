// A minimal driver of the `runc` binary (Debian's runc 1.1.5): write an OCI
// bundle's config.json, run the bundle detached, ask its state, signal it,
// delete it. Each call runs runc to completion (at most kRuncDeadlineMs)
// and blocks the caller: meant for the per-container shim, not the agent's
// loop. Not wired into the agent yet (issue 5).
//
// runc's own diagnostics go to <bundle>/runc.log (--log, JSON lines) and
// are quoted in errors; the container's stdout and stderr go to files.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/json.h"
#include "core/result.h"
#include "platform/run_command.h"

namespace daemonlet::platform {

// A runc command that takes longer is killed and reported.
inline constexpr int kRuncDeadlineMs = 30000;

struct RuncOptions {
    std::string binary = "runc";  // found on PATH unless absolute
    std::string root;             // --root: runc's state directory (required)
    // --systemd-cgroup: cgroupsPath is "slice:prefix:name" and systemd
    // creates the cgroup. Off: runc writes cgroupfs itself (cgroup v1 or v2).
    bool systemd_cgroup = false;
};

// `runc state`: the runtime-spec's state of a container.
struct RuncState {
    std::string id;
    std::string status;  // creating, created, running, stopped
    int pid = 0;         // the container's init as the host sees it; 0 when stopped
    std::string bundle;
};

// How many processes of container `id` the kernel's OOM killer has killed:
// the "oom_kill" counter of its memory cgroup, found through runc's own
// record of the container (<runc_root>/<id>/state.json "cgroup_paths"):
// "memory" (cgroup v1) -> memory.oom_control, else "" (the unified
// hierarchy, cgroup v2) -> memory.events; parsed by core's oom_kill_count.
// The cgroup is there until `runc delete` (`runc run --keep` leaves it after
// the exit). Errors: no such container or cgroup any more, or a kernel
// without the counter (before 4.13).
Result<std::uint64_t> container_oom_kills(const std::string& runc_root, const std::string& id);

// This process's effective capabilities (/proc/self/status CapEff) by
// name, for core's OciSpecInput::current_capabilities: a privileged
// container gets what runc itself can give.
Result<std::vector<std::string>> current_capabilities();

class Runc {
  public:
    explicit Runc(RuncOptions options) : options_(std::move(options)) {}

    // Writes `spec` as <bundle>/config.json (created with the directory;
    // written to a temporary file, then renamed).
    static Status write_bundle(const std::string& bundle, const Json& spec);

    // `runc run --detach --pid-file <bundle>/container.pid --bundle <bundle> ID`
    // with stdin /dev/null and the container's stdout and stderr appended
    // to the two files. Returns the container's pid once it runs.
    Result<int> run(const std::string& id, const std::string& bundle, const std::string& stdout_path,
                    const std::string& stderr_path) const;

    // `runc state ID`. Error code "not_found" when runc knows no such container.
    Result<RuncState> state(const std::string& id) const;

    // `runc kill ID SIG` (a signal number). Killing a stopped container is
    // an error from runc.
    Status kill(const std::string& id, int signal) const;

    // `runc delete --force ID`: kills it if it runs, removes its cgroup and
    // state. No such container is not an error.
    Status remove(const std::string& id) const;

  private:
    using Output = CommandOutput;
    std::vector<std::string> global_args(const std::string& log_path) const;
    Result<Output> execute(const std::vector<std::string>& args, int stdout_fd = -1,
                           int stderr_fd = -1) const;

    RuncOptions options_;
};

}  // namespace daemonlet::platform
