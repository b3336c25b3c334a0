// daemonlet: a DaemonSet node agent for edge boards.
#include <cstdio>
#include <string>
#include <vector>

#include "agent/cli/cli.h"

namespace {

const char* const kUsage =
    "daemonlet: decides and runs Kubernetes DaemonSet pods on this node.\n"
    "\n"
    "Usage: daemonlet COMMAND [OPTIONS]\n"
    "\n"
    "Commands:\n"
    "  run        Run the agent (the systemd service's command)\n"
    "  status     The agent's state: DaemonSets, pods, the API server link\n"
    "  get        List this node's DaemonSets or pods (ds, pods)\n"
    "  describe   Show a DaemonSet (this node's decision and why, revisions, events) or a pod\n"
    "  logs       Print a container's output\n"
    "  delete     Delete a pod (its DaemonSet replaces it; OnDelete's update)\n"
    "  rollout    history, undo and status of a DaemonSet's rollout\n"
    "  eval       Decide whether a node should run a DaemonSet's pod\n"
    "  validate   Check manifest files as the Kubernetes API server would\n"
    "  version    Print the version and the libraries in use\n"
    "\n"
    "Run 'daemonlet COMMAND --help' for a command's options.\n";

}  // namespace

int main(int argc, char** argv) {
    using namespace daemonlet::agent;
    std::vector<std::string> args(argv + 1, argv + argc);
    if (args.empty()) {
        std::fputs(kUsage, stderr);
        return kExitUsage;
    }
    std::string cmd = args.front();
    args.erase(args.begin());
    if (cmd == "-h" || cmd == "--help" || cmd == "help") {
        std::fputs(kUsage, stdout);
        return kExitOk;
    }
    if (cmd == "run") return cmd_run(args);
    if (cmd == "get") return cmd_get(args);
    if (cmd == "status") return cmd_status(args);
    if (cmd == "logs") return cmd_logs(args);
    if (cmd == "describe") return cmd_describe(args);
    if (cmd == "delete") return cmd_delete(args);
    if (cmd == "rollout") return cmd_rollout(args);
    if (cmd == "eval") return cmd_eval(args);
    if (cmd == "validate") return cmd_validate(args);
    if (cmd == "version" || cmd == "--version") return cmd_version(args);
    std::fprintf(stderr, "daemonlet: unknown command \"%s\"\n\n%s", cmd.c_str(), kUsage);
    return kExitUsage;
}
