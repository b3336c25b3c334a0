#include "agent/cli/cli_flags.h"

#include <unistd.h>

#include <cstdlib>

#include "agent/cli/cli.h"
#include "agent/daemon/config_file.h"

namespace daemonlet::agent {

bool OperatorFlags::consume(const std::vector<std::string>& args, std::size_t& i) {
    const std::string& a = args[i];
    if (a == "-A" || a == "--all-namespaces" || a == "--all-namespaces=true") {
        all_namespaces = true;
        return true;
    }
    if (a == "--all-namespaces=false") {
        all_namespaces = false;
        return true;
    }
    if (flag_value(args, i, "--config", config_path)) return true;
    std::string value;
    if (flag_value(args, i, "-n", value) || flag_value(args, i, "--namespace", value)) {
        if (value.empty()) return false;
        ns = value;
        namespace_given = true;
        return true;
    }
    return false;
}

Result<std::string> find_config(const std::string& explicit_path) {
    if (!explicit_path.empty()) return explicit_path;  // its read error names it
    const char* env = std::getenv(kConfigEnv);
    if (env && *env) return std::string(env);
    if (::access(kDefaultConfigPath, F_OK) == 0) return std::string(kDefaultConfigPath);
    return Error{ErrorCode::NotFound, std::string("no configuration file: tried --config (not given), $") +
                                          kConfigEnv + " (not set) and " + kDefaultConfigPath +
                                          " (does not exist)"};
}

Result<AgentConfig> load_operator_config(const OperatorFlags& flags) {
    auto path = find_config(flags.config_path);
    if (!path.ok()) return path.error();
    auto cfg = load_config(path.value());
    const char* env = std::getenv(kConfigEnv);
    if (!cfg.ok() && flags.config_path.empty() && env && path.value() == env)
        return Error{cfg.error().code, cfg.error().message + " (from $" + kConfigEnv + ")"};
    return cfg;
}

Result<std::int64_t> parse_timeout_ms(const std::string& flag, const std::string& value) {
    auto d = parse_duration_ms(value);
    if (!d.ok()) return Error{ErrorCode::Invalid, flag + ": " + d.error().message};
    if (d.value() < 0) return Error{ErrorCode::Invalid, flag + ": must not be negative"};
    return d.value();
}

Result<bool> parse_bool_flag(const std::string& flag, const std::string& value) {
    // strconv.ParseBool: 1, t, T, TRUE, true, True, 0, f, F, FALSE, false, False.
    for (const char* t : {"1", "t", "T", "TRUE", "true", "True"})
        if (value == t) return true;
    for (const char* f : {"0", "f", "F", "FALSE", "false", "False"})
        if (value == f) return false;
    return Error{ErrorCode::Invalid, flag + ": invalid boolean \"" + value + "\" (true or false)"};
}

}  // namespace daemonlet::agent
