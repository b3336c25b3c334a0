// The agent's configuration file, read at start and on SIGHUP.
#include "agent/daemon/config_file.h"

#include <climits>
#include <cstdlib>

#include "platform/file.h"
#include "platform/system_info.h"

namespace daemonlet::agent {

Result<AgentConfig> load_config(const std::string& path) {
    auto text = platform::read_file(path, 1024 * 1024);
    if (!text.ok()) return text.error();
    // Relative paths in the file are relative to the file's directory, made
    // absolute here: the shims run with another working directory.
    std::string dir = path.find('/') == std::string::npos ? "." : path.substr(0, path.find_last_of('/'));
    char resolved[PATH_MAX];
    std::string base = ::realpath(dir.empty() ? "/" : dir.c_str(), resolved) ? std::string(resolved) : dir;
    ConfigResult r = parse_agent_config(text.value(), path, base);
    if (!r.errors.empty()) {
        std::string msg;
        for (const auto& e : r.errors) msg += (msg.empty() ? "" : "\n") + e;
        return Error{ErrorCode::Invalid, msg};
    }
    if (r.config.node_name.empty()) r.config.node_name = platform::host_name();
    return r.config;
}

}  // namespace daemonlet::agent
