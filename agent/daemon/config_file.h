// The agent's configuration file: read by `daemonlet run` at start and by
// the agent on SIGHUP, and by the verbs that find the state directory.
#pragma once

#include <string>

#include "core/config.h"
#include "core/result.h"

namespace daemonlet::agent {

// Reads and validates the agent's configuration file; relative paths in it
// become absolute, and the node name defaults to the host name.
Result<AgentConfig> load_config(const std::string& path);

}  // namespace daemonlet::agent
