// Reading a whole file with a size limit: manifests and configuration are
// read this way, so an oversized or special file never exhausts memory.
#pragma once

#include <cstddef>
#include <string>

#include "core/result.h"

namespace daemonlet::platform {

// Reads `path` into memory. Fails, naming the file and the reason, when it
// cannot be opened, is not a regular file, or is larger than max_bytes.
Result<std::string> read_file(const std::string& path, std::size_t max_bytes);

}  // namespace daemonlet::platform
