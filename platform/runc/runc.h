// What the runc runtime does with the `runc` binary (Debian's runc 1.1.5)
// itself: write an OCI bundle's config.json, delete a container. Making
// and starting one is daemonlet-shim's (`runc create`, `runc start`:
// shim_runc.h). A call runs runc to completion (at most kRuncDeadlineMs)
// and blocks the caller.
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

// How many processes of container `id` the kernel's OOM killer has killed:
// the "oom_kill" counter of its memory cgroup, found through runc's own
// record of the container (<runc_root>/<id>/state.json "cgroup_paths"):
// "memory" (cgroup v1) -> memory.oom_control, else "" (the unified
// hierarchy, cgroup v2) -> memory.events; parsed by core's oom_kill_count.
// The cgroup is there until `runc delete` (no runc process stays to delete
// it at the exit: shim_runc.h). Errors: no such container or cgroup any more, or a kernel
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

    // `runc delete --force ID`: kills it if it runs, removes its cgroup and
    // state. No such container is not an error.
    Status remove(const std::string& id) const;

  private:
    using Output = CommandOutput;
    std::vector<std::string> global_args() const;
    Result<Output> execute(const std::vector<std::string>& args) const;

    RuncOptions options_;
};

}  // namespace daemonlet::platform
