// daemonlet rollout history|undo|status ds/NAME: kubectl rollout for this
// node's DaemonSets.
//
// - history reads the store (works with the agent stopped): kubectl's
//   daemonSetHistoryViewer (REVISION CHANGE-CAUSE; --revision=N prints
//   that revision's template).
// - undo asks the running agent: kubectl's DaemonSetRollbacker
//   (agent/daemon/rollbacks.h).
// - status asks the running agent, which pushes every change while
//   --watch (no polling); with the agent stopped it reads the store once.
#include <algorithm>
#include <cstdio>

#include "agent/cli/cli.h"
#include "agent/cli/cli_flags.h"
#include "agent/cli/operator_view.h"
#include "core/json.h"
#include "platform/system_info.h"

namespace daemonlet::agent {
namespace {

const char* const kRolloutHelp =
    "Usage: daemonlet rollout SUBCOMMAND ds/NAME [-n NAMESPACE] [options]\n"
    "\n"
    "  history ds/NAME [--revision=N]        the DaemonSet's revisions, or one revision's template\n"
    "  undo ds/NAME [--to-revision=N]        roll back to the previous revision, or to N\n"
    "  status ds/NAME [--watch=true|false] [--timeout=DURATION]\n"
    "                                        wait until the rollout on this node finishes\n"
    "\n"
    "An undo holds until the manifest file that defines the DaemonSet changes;\n"
    "then the file's template is in force again (docs/operating.md: Rolling back).\n";

int not_found(const std::string& name) {
    std::fprintf(stderr, "Error from server (NotFound): daemonsets.apps \"%s\" not found\n", name.c_str());
    return 1;
}

int history(const AgentConfig& cfg, const std::string& ns, const std::string& name, std::int64_t revision) {
    auto st = open_store_readonly(cfg);
    if (!st.ok()) {
        std::fprintf(stderr, "error: %s\n", st.error().message.c_str());
        return 1;
    }
    auto row = st.value()->get_daemonset(ns, name);
    if (!row.ok()) {
        std::fprintf(stderr, "error: %s\n", row.error().message.c_str());
        return 1;
    }
    if (!row.value()) return not_found(name);
    auto revs = st.value()->list_revisions(ns, name);
    if (!revs.ok()) {
        std::fprintf(stderr, "error: %s\n", revs.error().message.c_str());
        return 1;
    }
    if (revision > 0) {
        for (const auto& r : revs.value()) {
            if (r.revision != revision) continue;
            Json tmpl = Json::parse(r.template_json, nullptr, false);
            std::printf("daemonset.apps/%s with revision #%lld\nPod Template:\n%s", name.c_str(),
                        static_cast<long long>(revision), describe_pod_template(tmpl, "  ").c_str());
            return kExitOk;
        }
        std::fprintf(stderr, "error: unable to find the specified revision\n");
        return 1;
    }
    std::printf("daemonset.apps/%s \n", name.c_str());
    if (revs.value().empty()) {
        std::printf("No rollout history found.\n");
        return kExitOk;
    }
    // CHANGE-CAUSE is the kubernetes.io/change-cause annotation upstream
    // copies into each revision; ours keep the template only.
    std::vector<std::vector<std::string>> rows{{"REVISION", "CHANGE-CAUSE"}};
    for (const auto& r : revs.value()) rows.push_back({std::to_string(r.revision), "<none>"});
    print_columns(rows, "", 2);  // tabwriter.NewWriter(out, 0, 8, 2, ' ', 0)
    std::printf("\n");
    return kExitOk;
}

int undo(const AgentConfig& cfg, const std::string& ns, const std::string& name, std::int64_t to) {
    auto client = connect_agent(cfg);
    if (!client.ok()) {
        std::fprintf(stderr, "error: %s: rollout undo needs it (systemctl start daemonlet)\n",
                     client.error().message.c_str());
        return 1;
    }
    Json req = {{"op", "undo"}, {"namespace", ns}, {"name", name}, {"to_revision", to}};
    auto answer = ask_agent(*client.value(), req, kAnswerTimeoutMs);
    if (!answer.ok()) {
        std::fprintf(stderr, "error: %s\n", answer.error().message.c_str());
        return 1;
    }
    const Json& a = answer.value();
    if (a.contains("error")) {
        if (a.value("error", "") == "NotFound") return not_found(name);
        std::fprintf(stderr, "error: %s\n", a.value("message", "").c_str());
        return 1;
    }
    std::printf("daemonset.apps/%s %s\n", name.c_str(), a.value("result", "").c_str());
    return kExitOk;
}

int print_status(const Json& st) {
    if (!st.value("error", "").empty()) {
        std::fprintf(stderr, "error: %s\n", st.value("error", "").c_str());
        return 1;
    }
    std::printf("%s\n", st.value("message", "").c_str());
    std::fflush(stdout);
    return kExitOk;
}

int status(const AgentConfig& cfg, const std::string& ns, const std::string& name, bool watch,
           std::int64_t timeout_ms) {
    auto client = connect_agent(cfg);
    if (!client.ok()) {
        if (client.error().code != ErrorCode::NotRunning) {
            std::fprintf(stderr, "error: %s\n", client.error().message.c_str());
            return 1;
        }
        // The agent is stopped: what the store says, once.
        auto st = open_store_readonly(cfg);
        if (!st.ok()) {
            std::fprintf(stderr, "error: %s\n", st.error().message.c_str());
            return 1;
        }
        auto v = view_daemonset(*st.value(), cfg, ns, name, platform::wall_clock_ms());
        if (!v.ok()) {
            std::fprintf(stderr, "error: %s\n", v.error().message.c_str());
            return 1;
        }
        if (!v.value()) return not_found(name);
        RolloutStatus r = daemonset_rollout_status(v.value()->ds, v.value()->status, true);
        if (print_status(Json{{"message", r.message}, {"error", r.error}}) != kExitOk) return 1;
        if (r.done) return kExitOk;
        std::fprintf(stderr, "%s: as the agent left it; not watching\n", client.error().message.c_str());
        return 1;
    }
    Json req = {{"op", "rollout_status"}, {"namespace", ns}, {"name", name}, {"watch", watch}};
    if (auto s = client.value()->send(req); !s.ok()) {
        std::fprintf(stderr, "error: %s\n", s.error().message.c_str());
        return 1;
    }
    const std::int64_t wait = timeout_ms == 0 ? -1 : timeout_ms;
    for (bool first = true;; first = false) {
        auto a = client.value()->receive(first ? std::max<std::int64_t>(wait, kAnswerTimeoutMs) : wait);
        if (!a.ok()) {
            if (a.error().code == ErrorCode::Timeout)
                std::fprintf(stderr, "error: timed out waiting for the condition\n");
            else
                std::fprintf(stderr, "error: %s\n", a.error().message.c_str());
            return 1;
        }
        if (a.value().contains("error")) {
            if (a.value().value("error", "") == "NotFound") return not_found(name);
            std::fprintf(stderr, "error: %s\n", a.value().value("message", "").c_str());
            return 1;
        }
        const Json st = a.value().value("status", Json::object());
        if (print_status(st) != kExitOk) return 1;
        if (st.value("done", false) || !watch) return kExitOk;
    }
}

}  // namespace

int cmd_rollout(const std::vector<std::string>& args) {
    if (wants_help(args) || args.empty()) {
        std::fputs(kRolloutHelp, args.empty() ? stderr : stdout);
        std::fputs(kOperatorFlagsHelp, args.empty() ? stderr : stdout);
        return args.empty() ? kExitUsage : kExitOk;
    }
    const std::string sub = args[0];
    if (sub != "history" && sub != "undo" && sub != "status") {
        std::fprintf(stderr, "daemonlet rollout: unknown subcommand \"%s\" (history, undo, status)\n",
                     sub.c_str());
        return kExitUsage;
    }
    OperatorFlags flags;
    std::string name, revision_text, to_text, watch_text = "true", timeout_text = "0";
    for (std::size_t i = 1; i < args.size(); ++i) {
        if (flags.consume(args, i)) continue;
        if (sub == "history" && flag_value(args, i, "--revision", revision_text)) continue;
        if (sub == "undo" && flag_value(args, i, "--to-revision", to_text)) continue;
        if (sub == "status" && (flag_value(args, i, "--timeout", timeout_text) ||
                                flag_value(args, i, "--revision", revision_text)))
            continue;
        if (sub == "status" && (args[i] == "--watch" || args[i] == "-w")) {
            watch_text = "true";
            continue;
        }
        if (sub == "status" && (args[i].rfind("--watch=", 0) == 0 || args[i].rfind("-w=", 0) == 0)) {
            watch_text = args[i].substr(args[i].find('=') + 1);
            continue;
        }
        if (name.empty() && !args[i].empty() && args[i][0] != '-') {
            std::string error;
            name = daemonset_name_arg(args, i, &error);
            if (!error.empty()) {
                std::fprintf(stderr, "daemonlet rollout %s: %s\n", sub.c_str(), error.c_str());
                return kExitUsage;
            }
            continue;
        }
        std::fprintf(stderr, "daemonlet rollout %s: unexpected argument \"%s\"\n\n%s", sub.c_str(),
                     args[i].c_str(), kRolloutHelp);
        return kExitUsage;
    }
    if (name.empty()) {
        std::fprintf(stderr, "daemonlet rollout %s: which DaemonSet? (ds/NAME)\n", sub.c_str());
        return kExitUsage;
    }
    if (flags.all_namespaces) {
        std::fprintf(stderr, "error: a resource cannot be retrieved by name across all namespaces\n");
        return kExitUsage;
    }
    auto number = [&](const char* flag, const std::string& text) -> Result<std::int64_t> {
        if (text.empty()) return std::int64_t{0};
        try {
            std::size_t used = 0;
            long long v = std::stoll(text, &used);
            if (used == text.size()) return static_cast<std::int64_t>(v);
        } catch (...) {
        }
        return Error{ErrorCode::Invalid, std::string(flag) + ": invalid number \"" + text + "\""};
    };
    auto revision = number("--revision", revision_text);
    auto to = number("--to-revision", to_text);
    auto watch = parse_bool_flag("--watch", watch_text);
    auto timeout = parse_timeout_ms("--timeout", timeout_text);
    for (const Error* e : {revision.ok() ? nullptr : &revision.error(), to.ok() ? nullptr : &to.error(),
                           watch.ok() ? nullptr : &watch.error(), timeout.ok() ? nullptr : &timeout.error()})
        if (e) {
            std::fprintf(stderr, "daemonlet rollout %s: %s\n", sub.c_str(), e->message.c_str());
            return kExitUsage;
        }
    auto cfg = load_operator_config(flags);
    if (!cfg.ok()) {
        std::fprintf(stderr, "daemonlet rollout: %s\n", cfg.error().message.c_str());
        return kExitUsage;
    }
    if (sub == "history") return history(cfg.value(), flags.ns, name, revision.value());
    if (sub == "undo") return undo(cfg.value(), flags.ns, name, to.value());
    return status(cfg.value(), flags.ns, name, watch.value(), timeout.value());
}

}  // namespace daemonlet::agent
