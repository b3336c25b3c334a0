// Reading a whole file with a size limit: manifests and configuration are
// read this way, so an oversized or special file never exhausts memory.
// Creating directories, and replacing a file's content as a whole.
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

// Writes `text` to `path` with `mode` (umask or not) through
// `path`.tmp-<tag>, renamed over `path`: a reader, a container that
// bind-mounts the file among them, sees the old or the new whole file,
// never part of one; writers with distinct tags never share a temporary
// file. A container that mounted the old file keeps it (a bind mount holds
// the inode).
Status replace_file(const std::string& path, const std::string& text, const std::string& tag,
                    mode_t mode = 0644);

}  // namespace daemonlet::platform
