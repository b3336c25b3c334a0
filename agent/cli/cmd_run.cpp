// daemonlet run --config FILE: the agent, in the foreground (systemd's
// Type=notify service, or a terminal).
#include <malloc.h>

#include <climits>
#include <cstdio>
#include <cstdlib>

#include "agent/cli/cli.h"
#include "agent/cli/cli_flags.h"
#include "agent/daemon/agent.h"
#include "agent/daemon/config_file.h"
#include "core/config.h"
#include "platform/file.h"
#include "platform/log.h"
#include "platform/system_info.h"

namespace daemonlet::agent {
namespace {

const char* const kRunHelp =
    "Usage: daemonlet run [--config FILE] [--log-level LEVEL]\n"
    "\n"
    "Runs the agent: watches the manifest directory, keeps the desired state in\n"
    "SQLite under stateDir, decides for this node and runs the DaemonSets' pods.\n"
    "SIGHUP reloads the configuration; SIGTERM and SIGINT stop the agent and\n"
    "leave the pods running for the next agent to adopt.\n"
    "\n"
    "  --config FILE      the configuration (default: $DAEMONLET_CONFIG, then\n"
    "                     /etc/daemonlet/config.yaml)\n"
    "  --log-level LEVEL  error, warning, notice, info (default) or debug\n";

}  // namespace

int cmd_run(const std::vector<std::string>& args) {
    if (wants_help(args)) {
        std::fputs(kRunHelp, stdout);
        return kExitOk;
    }
    std::string config_path;
    std::string level = "info";
    for (std::size_t i = 0; i < args.size(); ++i) {
        if (flag_value(args, i, "--config", config_path) || flag_value(args, i, "--log-level", level))
            continue;
        std::fprintf(stderr, "daemonlet run: unexpected argument \"%s\"\n\n%s", args[i].c_str(), kRunHelp);
        return kExitUsage;
    }
    using platform::Level;
    if (level == "error")
        platform::set_log_level(Level::Err);
    else if (level == "warning")
        platform::set_log_level(Level::Warning);
    else if (level == "notice")
        platform::set_log_level(Level::Notice);
    else if (level == "debug")
        platform::set_log_level(Level::Debug);
    else if (level != "info") {
        std::fprintf(stderr, "daemonlet run: unknown log level \"%s\"\n", level.c_str());
        return kExitUsage;
    }
    auto found = find_config(config_path);
    if (!found.ok()) {
        platform::log(Level::Err, "not starting: " + found.error().message);
        return kExitUsage;
    }
    config_path = found.value();
    auto cfg = load_config(config_path);
    if (!cfg.ok()) {
        platform::log(Level::Err, "invalid configuration, not starting:\n" + cfg.error().message);
        return kExitUsage;
    }
    // A fixed mmap threshold: a large buffer (an API server list page, up to
    // 4 MiB) is mmap'ed and given back when freed. glibc's default raises
    // the threshold after such a free, and the next one then stays in the
    // heap for good: 12 MiB more RSS for the agent's lifetime on a board.
    mallopt(M_MMAP_THRESHOLD, 256 * 1024);
    Agent agent(std::move(cfg).value(), config_path);
    return agent.run();
}

}  // namespace daemonlet::agent
