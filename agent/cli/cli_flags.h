// The flags every operator command shares (get, describe, logs, delete,
// rollout), parsed in one place: --config FILE with its discovery, and
// kubectl's -n/--namespace and -A/--all-namespaces.
#pragma once

#include <string>
#include <vector>

#include "core/config.h"
#include "core/result.h"

namespace daemonlet::agent {

inline constexpr const char* kDefaultConfigPath = "/etc/daemonlet/config.yaml";
inline constexpr const char* kConfigEnv = "DAEMONLET_CONFIG";

struct OperatorFlags {
    std::string config_path;       // --config, empty when not given
    std::string ns = "default";    // kubectl's default namespace
    bool all_namespaces = false;   // -A
    bool namespace_given = false;  // -n was on the command line

    // Consumes args[i] (and its value) when it is one of the shared flags:
    // --config FILE, -n/--namespace NS, -A/--all-namespaces. Advances i past
    // a separate value. Returns false for anything else, or for a flag
    // missing its value (the caller reports it as unexpected).
    bool consume(const std::vector<std::string>& args, std::size_t& i);

    // True when a namespace matches the scope (-A, or -n's namespace).
    bool in_scope(const std::string& namespace_) const { return all_namespaces || namespace_ == ns; }
};

// The configuration file: --config FILE, else $DAEMONLET_CONFIG, else
// /etc/daemonlet/config.yaml. The error names every place tried.
Result<std::string> find_config(const std::string& explicit_path);

// find_config, then load_config.
Result<AgentConfig> load_operator_config(const OperatorFlags& flags);

// The shared flags' help lines.
inline constexpr const char* kOperatorFlagsHelp =
    "  -n, --namespace NS    the namespace (default: default)\n"
    "  -A, --all-namespaces  every namespace\n"
    "  --config FILE         the agent's configuration (default: $DAEMONLET_CONFIG,\n"
    "                        then /etc/daemonlet/config.yaml)\n";

// "30s", "1m30s", "500ms", "0": a Go duration as kubectl's --timeout takes it.
Result<std::int64_t> parse_timeout_ms(const std::string& flag, const std::string& value);

// "true"/"false" as Go's strconv.ParseBool accepts them for --wait=, --watch=.
Result<bool> parse_bool_flag(const std::string& flag, const std::string& value);

}  // namespace daemonlet::agent
