// Before daemonlet-shim starts the container's command it checks what a
// shell or runc would refuse, so that the failure reads as theirs do:
// "exec: \"nope\": executable file not found in $PATH" (127), permission
// denied (126), a missing working directory (128, as containerd reports any
// failure to start).
#pragma once

#include <cstddef>

#include "platform/shim/shim_text.h"

namespace daemonlet::shim {

// 0 when `cwd` is a directory; otherwise kExitStartError with the reason.
int check_cwd(const char* cwd, Text* reason);

// Finds the program `name` names, as execvp would with the container's own
// PATH (from `env`, "K=V" entries, NULL-terminated; or kDefaultPath): a name
// with a slash is a path (relative to `cwd`), otherwise each PATH entry is
// tried. Writes the program's path into out[cap] and returns 0, or returns
// kExitNotFound / kExitNotExecutable with the reason.
int resolve_command(const char* name, char* const* env, const char* cwd, char* out, std::size_t cap,
                    Text* reason);

}  // namespace daemonlet::shim
