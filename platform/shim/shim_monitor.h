// What daemonlet-shim does with the container: starts its process through
// libuv (uv_spawn, in a session and process group of its own, stdout and
// stderr on pipes into the CRI log), records state.json, forwards a stop
// request (SIGTERM to the shim) as SIGTERM to the container's process group
// and SIGKILL after the grace period, and once the process has exited and its
// output is drained records exit.json. Start failures are recorded as an
// exit too (127, 126 or 128 and a "StartError: ..." reason), never a hang.
#pragma once

#include "platform/shim/shim_config.h"

namespace daemonlet::shim {

// Runs the container to its end. `dir_fd` is the container's state
// directory; `ready_fd` (or -1) gets one byte once state.json or exit.json is
// written, and is closed. Returns the shim's exit status: 0 once exit.json is
// written, 1 when even that failed.
int run_container(const ShimConfig& config, int dir_fd, int* ready_fd);

// Records the container's end in exit.json and signals readiness (if not done
// yet) with kReadyExited. Returns 0 or an errno.
int record_exit(int dir_fd, int* ready_fd, int exit_code, int signal, const char* reason);

// Writes `what` on *ready_fd and closes it (once; a no-op when it is -1).
void signal_ready(int* ready_fd, char what);

}  // namespace daemonlet::shim
