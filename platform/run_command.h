// Runs a command to completion and blocks the caller: stdin /dev/null,
// stdout and stderr captured (or to given fds), killed after a deadline.
// For short commands whose answer the caller needs before it can go on
// (runc's state, daemonlet-image prepare); a long one belongs on the loop.
#pragma once

#include <string>
#include <vector>

#include "core/result.h"

namespace daemonlet::platform {

struct CommandOutput {
    int exit_code = -1;  // 128 + signal when killed by one
    std::string out;     // each kept to 1 MiB
    std::string err;
};

// Runs `args` (args[0] found on PATH unless it holds a '/'). stdout and
// stderr go to the given fds, or are captured when -1. Errors: "not_found"
// when it cannot be started, "timeout" when it ran longer than
// `deadline_ms` (it is killed and reaped), "io" for a pipe.
Result<CommandOutput> run_command(const std::vector<std::string>& args, int deadline_ms, int stdout_fd = -1,
                                  int stderr_fd = -1);

}  // namespace daemonlet::platform
