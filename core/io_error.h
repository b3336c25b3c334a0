// The one way a failed system call becomes an Error: code "io", and a
// message naming the file, what was done to it and the system's reason
// ("/var/lib/daemonlet/state.db: open: stat: Permission denied"). Pure: the
// errno is passed in (by default the caller's, read at the call).
#pragma once

#include <cerrno>
#include <string>
#include <string_view>

#include "core/result.h"

namespace daemonlet {

// "PATH: OP: strerror(err)"; "PATH: strerror(err)" when `op` is empty.
Error io_error(const std::string& path, std::string_view op, int err = errno);

}  // namespace daemonlet
