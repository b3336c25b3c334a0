// daemonlet-shim's runc mode: the container is made by `runc create` and
// started by `runc start`, as conmon (and containerd's runc shim) do, so that
// no runc process stays per container. The shim is the container's child
// subreaper (PR_SET_CHILD_SUBREAPER): when `runc create` exits, the
// container's init becomes the shim's child, and the shim reaps it as it
// reaps a command it started itself. The container's stdio are the shim's
// pipes, handed to `runc create` (runc passes its stdio to the container
// when there is no terminal), so its logs are the shim's as for any command.
//
// A launch is a runc one when config.json's argv is
//   ["daemonlet-shim:runc", <runc binary>, <runc root>, <bundle>, <id>]
// (kRuncMarker, shim_protocol.h; the runc runtime writes it). runc's own
// diagnostics go to <bundle>/runc.log (JSON lines) and, on failure, one
// line on its stderr (for `runc create`, the container's stderr pipe),
// which the shim reads back as the StartError reason.
#pragma once

#include <sys/types.h>

#include "platform/shim/shim_text.h"

namespace daemonlet::shim {

// Whether `argv` (NULL-terminated) asks for runc mode, and has its five parts.
bool is_runc_launch(char* const* argv);

// Makes the shim the subreaper of its descendants. Returns 0 or an errno.
int become_subreaper();

// `runc create --pid-file <bundle>/container.pid --bundle <bundle> <id>` in a
// session of its own, stdin /dev/null, stdout `out_fd`, stderr `err_fd`
// (the container's), waited for. On success returns 0 and the container's
// init in *pid, now the shim's child; otherwise the exit code to record
// (kExitStartError) and "StartError: runc create: <runc's message>" in
// `reason`, the message being what runc wrote on `err_fd`, read back from
// `err_read` (that pipe's read end) without blocking.
int runc_create(char* const* argv, int out_fd, int err_fd, int err_read, pid_t* pid, Text* reason);

// `runc start <id>`, waited for. 0, or kExitStartError with
// "StartError: runc start: <runc's message>" in `reason`.
int runc_start(char* const* argv, Text* reason);

// The exit of a runc container as `runc run` reported it: a container killed
// by signal N exits 128+N, and its reason is that of any non-zero exit.
void runc_exit_status(int wait_status, int* exit_code, int* term_signal);

}  // namespace daemonlet::shim
