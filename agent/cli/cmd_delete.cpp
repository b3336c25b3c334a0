// daemonlet delete pod NAME...: as kubectl delete pod. The running agent
// stops the pod gracefully (terminationGracePeriodSeconds) and its
// DaemonSet's reconcile creates the replacement: with OnDelete this is how
// a new revision reaches the node. Waits, by default, until the pod's
// containers have stopped (the agent answers then).
#include <cstdio>

#include "agent/cli/cli.h"
#include "agent/cli/cli_flags.h"
#include "agent/cli/operator_view.h"

namespace daemonlet::agent {
namespace {

const char* const kDeleteHelp =
    "Usage: daemonlet delete pod NAME... [-n NAMESPACE] [--wait=true|false] [--timeout=DURATION]\n"
    "\n"
    "Deletes pods of this node, as kubectl delete pod: the running agent stops each\n"
    "one gracefully and its DaemonSet then starts a replacement (with OnDelete,\n"
    "of the DaemonSet's current revision); a static pod starts again. DaemonSets\n"
    "and static pods themselves come from the manifest files: remove or edit the\n"
    "file instead.\n"
    "\n"
    "  --wait=true|false     wait until the pod is gone (default true)\n"
    "  --timeout=DURATION    give up waiting after this long (default 0: no limit)\n";

}  // namespace

int cmd_delete(const std::vector<std::string>& args) {
    if (wants_help(args)) {
        std::fputs(kDeleteHelp, stdout);
        std::fputs(kOperatorFlagsHelp, stdout);
        return kExitOk;
    }
    OperatorFlags flags;
    std::string kind, wait_text = "true", timeout_text = "0";
    std::vector<std::string> names;
    for (std::size_t i = 0; i < args.size(); ++i) {
        if (flags.consume(args, i) || flag_value(args, i, "--timeout", timeout_text)) continue;
        if (args[i] == "--wait") {
            wait_text = "true";
            continue;
        }
        if (args[i].rfind("--wait=", 0) == 0) {
            wait_text = args[i].substr(7);
            continue;
        }
        if (!args[i].empty() && args[i][0] != '-') {
            std::string a = args[i];
            if (kind.empty()) {
                auto slash = a.find('/');
                kind = a.substr(0, slash);
                if (slash == std::string::npos) continue;
                a = a.substr(slash + 1);
            }
            names.push_back(a);
            continue;
        }
        std::fprintf(stderr, "daemonlet delete: unexpected argument \"%s\"\n\n%s", args[i].c_str(),
                     kDeleteHelp);
        return kExitUsage;
    }
    auto wait = parse_bool_flag("--wait", wait_text);
    auto timeout = parse_timeout_ms("--timeout", timeout_text);
    if (!wait.ok() || !timeout.ok()) {
        std::fprintf(stderr, "daemonlet delete: %s\n",
                     (!wait.ok() ? wait.error() : timeout.error()).message.c_str());
        return kExitUsage;
    }
    if (is_daemonset_kind(kind)) {
        std::fprintf(stderr,
                     "daemonlet delete: DaemonSets come from the manifest files; remove the file that "
                     "defines it (daemonlet describe ds NAME shows which) instead\n");
        return kExitUsage;
    }
    if (kind != "pod" && kind != "pods" && kind != "po") {
        std::fprintf(stderr, "daemonlet delete: %s\n\n%s",
                     kind.empty() ? "which pod? (delete pod NAME)"
                                  : ("unknown resource \"" + kind + "\" (pod)").c_str(),
                     kDeleteHelp);
        return kExitUsage;
    }
    if (names.empty()) {
        std::fprintf(stderr, "daemonlet delete: which pod? (delete pod NAME)\n");
        return kExitUsage;
    }
    if (flags.all_namespaces) {
        std::fprintf(stderr, "error: a resource cannot be retrieved by name across all namespaces\n");
        return kExitUsage;
    }
    auto cfg = load_operator_config(flags);
    if (!cfg.ok()) {
        std::fprintf(stderr, "daemonlet delete: %s\n", cfg.error().message.c_str());
        return kExitUsage;
    }
    int status = kExitOk;
    for (const auto& name : names) {
        auto client = connect_agent(cfg.value());
        if (!client.ok()) {
            std::fprintf(stderr, "error: %s: deleting a pod needs it (systemctl start daemonlet)\n",
                         client.error().message.c_str());
            return 1;
        }
        Json req = {{"op", "delete_pod"}, {"namespace", flags.ns}, {"name", name}, {"wait", wait.value()}};
        auto answer = ask_agent(*client.value(), req, kAnswerTimeoutMs);
        if (!answer.ok()) {
            std::fprintf(stderr, "error: %s\n", answer.error().message.c_str());
            return 1;
        }
        if (answer.value().contains("error")) {
            const std::string code = answer.value().value("error", "");
            std::fprintf(stderr, "Error from server (%s): %s\n", code.c_str(),
                         answer.value().value("message", "").c_str());
            status = 1;
            continue;
        }
        std::printf("pod \"%s\" deleted\n", name.c_str());
        std::fflush(stdout);
        if (!wait.value()) continue;
        auto gone = client.value()->receive(timeout.value() == 0 ? -1 : timeout.value());
        if (!gone.ok() || !gone.value().value("gone", false)) {
            if (!gone.ok() && gone.error().code == ErrorCode::Timeout)
                std::fprintf(stderr, "error: timed out waiting for the condition on pods/%s\n", name.c_str());
            else
                std::fprintf(stderr, "error: waiting for pods/%s: %s\n", name.c_str(),
                             gone.ok() ? gone.value().dump().c_str() : gone.error().message.c_str());
            return 1;
        }
    }
    return status;
}

}  // namespace daemonlet::agent
