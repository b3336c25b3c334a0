// Reading a whole file with a size limit: manifests and configuration are
// read this way, so an oversized or special file never exhausts memory.
// And creating directories.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <string>

#include "core/result.h"

namespace daemonlet::platform {

// Reads `path` into memory. Fails, naming the file and the reason, when it
// cannot be opened, is not a regular file, or is larger than max_bytes.
Result<std::string> read_file(const std::string& path, std::size_t max_bytes);

// mkdir -p: creates `path` and its missing parents with `mode` (less the
// umask); directories already there are left as they are.
Status make_dirs(const std::string& path, mode_t mode = 0777);

}  // namespace daemonlet::platform
