// config.json as daemonlet-shim reads it: a small JSON reader that decodes
// strings in place (no allocation but the argv/env pointer arrays), for the
// one document the agent writes (see shim_protocol.h). Unknown members, such
// as the pod's names kept there for people, are skipped.
#pragma once

#include <cstdint>

#include "platform/shim/shim_text.h"

namespace daemonlet::shim {

struct ShimConfig {
    char** argv = nullptr;  // NULL-terminated, pointing into the parsed text
    char** env = nullptr;   // "K=V", NULL-terminated
    const char* cwd = "/";
    const char* log_path = nullptr;
    std::int64_t grace_seconds = 30;
    std::uint64_t log_max_bytes = 0;  // 0: no rotation
    std::uint32_t log_max_files = 1;
};

// Parses the NUL-terminated `text`, which it modifies and which must outlive
// `out`. Returns false with a message in `err` when the document is not a
// config the shim can run.
bool parse_config(char* text, ShimConfig* out, Text* err);

// Frees the pointer arrays of a parsed config.
void free_config(ShimConfig* config);

}  // namespace daemonlet::shim
