// daemonlet status: the running agent's state: its node, its DaemonSets
// and pods, its manifest files (the broken ones and why), and its link to the API server (connected or
// disconnected, since when and why, the watches, the Lease, the queued Events), and
// whether its stateDir takes writes (agent/daemon/storage.h).
#include <cstdio>

#include "agent/cli/cli.h"
#include "agent/cli/cli_flags.h"
#include "agent/cli/operator_view.h"

namespace daemonlet::agent {
namespace {

const char* const kStatusHelp =
    "Usage: daemonlet status [-o json]\n"
    "\n"
    "Shows the running agent's state: its node, DaemonSets and pods, and whether it\n"
    "is connected to the Kubernetes API server (with hysteresis: connected after 3 s\n"
    "of a working link, disconnected after 15 s of a failing one), and whether its\n"
    "stateDir takes writes (a full or read-only disk: what changes is kept in memory).\n"
    "\n"
    "  -o json    the same as one JSON object\n";

std::string str(const Json& j, const char* k) {
    return j.contains(k) && j[k].is_string() ? j[k].get<std::string>() : std::string();
}

void print_human(const Json& s) {
    const Json& ds = s["daemonSets"];
    const Json& pods = s["pods"];
    const Json& api = s["apiServer"];
    std::printf("Node:         %s\n", str(s, "node").c_str());
    std::printf("DaemonSets:   %lld (%lld from files, %lld from the cluster", ds.value("total", 0LL),
                ds.value("fromFiles", 0LL), ds.value("fromCluster", 0LL));
    if (ds.value("overriddenByFiles", 0LL) > 0)
        std::printf(", %lld of the cluster's overridden by files", ds.value("overriddenByFiles", 0LL));
    std::printf(")\n");
    // issue 14 §3: rollouts held until the DaemonSet controller deletes the old Pod.
    std::string waiting;
    for (const auto& key : ds.value("waitingForTheCluster", Json::array()))
        if (key.is_string()) waiting += (waiting.empty() ? "" : ", ") + key.get<std::string>();
    if (!waiting.empty())
        std::printf("  Rollouts waiting for the DaemonSet controller: %s\n", waiting.c_str());
    std::printf("Pods:         %lld/%lld running\n", pods.value("running", 0LL), pods.value("total", 0LL));
    if (s.contains("manifests")) {
        const Json& m = s["manifests"];
        std::printf("Manifests:    %lld files\n", m.value("files", 0LL));
        for (const auto& b : m.value("broken", Json::array())) {
            const Json errors = b.value("errors", Json::array());
            std::printf(
                "  Broken:     %s (%s): %s\n", str(b, "path").c_str(),
                b.value("lastGoodInForce", false) ? "its last good version in force" : "nothing in force",
                errors.empty() ? "" : errors[0].get<std::string>().c_str());
        }
    }
    if (s.contains("configObjects")) {
        const Json& c = s["configObjects"];
        std::printf("Config:       %zu ConfigMaps, %zu Secrets (from files)\n",
                    c.value("configMaps", Json::array()).size(), c.value("secrets", Json::array()).size());
    }
    if (s.contains("storage") && !s["storage"].value("writable", true)) {
        const Json& st = s["storage"];
        std::printf("Storage:      not writable since %s: %lld changes not recorded yet\n",
                    str(st, "since").c_str(), st.value("pending", 0LL));
        std::printf("  Error:      %s\n", str(st, "error").c_str());
    } else {
        std::printf("Storage:      writable\n");
    }
    const std::string state = str(api, "state");
    std::printf("API server:   %s", state.c_str());
    if (!str(api, "server").empty()) std::printf(" (%s)", str(api, "server").c_str());
    if (!str(api, "since").empty()) std::printf(" since %s", str(api, "since").c_str());
    std::printf("\n");
    if (!str(api, "lastError").empty()) std::printf("  Last error: %s\n", str(api, "lastError").c_str());
    if (state == "not configured") return;
    std::printf("  Cached:     %lld DaemonSets\n", api.value("cached", 0LL));
    if (api.contains("watches"))
        for (const auto& w : api["watches"]) {
            std::string what =
                str(w, "resource") + (str(w, "namespace").empty() ? "" : " in " + str(w, "namespace"));
            std::printf("  Watch:      %s: %s, resourceVersion %s\n", what.c_str(),
                        w.value("synced", false) ? "synced" : "not synced",
                        str(w, "resourceVersion").c_str());
        }
    if (api.contains("lease"))
        std::printf("  Lease:      %s/%s renewed %s\n", str(api["lease"], "namespace").c_str(),
                    str(s, "node").c_str(),
                    str(api["lease"], "renewed").empty() ? "never" : str(api["lease"], "renewed").c_str());
    if (api.contains("nodeStatus") && api["nodeStatus"].is_object()) {
        const Json& n = api["nodeStatus"];
        std::printf("  Node:       %s %s, status posted %s (%lld posts)\n", str(s, "node").c_str(),
                    n.value("registered", false) ? "registered" : "not registered yet",
                    str(n, "posted").empty() ? "never" : str(n, "posted").c_str(), n.value("posts", 0LL));
        if (!str(n, "lastError").empty()) std::printf("    Error:    %s\n", str(n, "lastError").c_str());
    }
    if (api.contains("podStatus") && api["podStatus"].is_object()) {
        const Json& p = api["podStatus"];
        std::printf(
            "  Pods:       %lld in the API (%lld created, %lld taken, %lld status patches, %lld deleted, "
            "%lld restarts by a deletion, %lld refused)\n",
            p.value("pods", 0LL), p.value("created", 0LL), p.value("taken", 0LL), p.value("patches", 0LL),
            p.value("deleted", 0LL), p.value("restarted", 0LL), p.value("refused", 0LL));
        if (p.value("mirrorPods", 0LL) + p.value("mirrorsCreated", 0LL) > 0)
            std::printf("  Mirrors:    %lld mirror pods (%lld created, %lld deleted)\n",
                        p.value("mirrorPods", 0LL), p.value("mirrorsCreated", 0LL),
                        p.value("mirrorsDeleted", 0LL));
        if (!str(p, "lastError").empty()) std::printf("    Error:    %s\n", str(p, "lastError").c_str());
    }
    if (api.contains("events"))
        std::printf("  Events:     %lld queued, %lld sent, %lld dropped\n",
                    api["events"].value("queued", 0LL), api["events"].value("sent", 0LL),
                    api["events"].value("dropped", 0LL));
}

}  // namespace

int cmd_status(const std::vector<std::string>& args) {
    if (wants_help(args)) {
        std::fputs(kStatusHelp, stdout);
        std::fputs(kOperatorFlagsHelp, stdout);
        return kExitOk;
    }
    OperatorFlags flags;
    std::string output;
    for (std::size_t i = 0; i < args.size(); ++i) {
        if (flags.consume(args, i) || flag_value(args, i, "-o", output) ||
            flag_value(args, i, "--output", output))
            continue;
        std::fprintf(stderr, "daemonlet status: unexpected argument \"%s\"\n\n%s", args[i].c_str(),
                     kStatusHelp);
        return kExitUsage;
    }
    if (!output.empty() && output != "json") {
        std::fprintf(stderr, "daemonlet status: -o %s: only json is supported\n", output.c_str());
        return kExitUsage;
    }
    auto cfg = load_operator_config(flags);
    if (!cfg.ok()) {
        std::fprintf(stderr, "daemonlet status: %s\n", cfg.error().message.c_str());
        return kExitUsage;
    }
    auto client = connect_agent(cfg.value());
    if (!client.ok()) {
        std::fprintf(stderr, "error: %s\n", client.error().message.c_str());
        return 1;
    }
    auto answer = ask_agent(*client.value(), Json{{"op", "status"}}, 10'000);
    if (!answer.ok() || answer.value().contains("error")) {
        std::fprintf(
            stderr, "error: %s\n",
            answer.ok() ? answer.value().value("message", "").c_str() : answer.error().message.c_str());
        return 1;
    }
    if (output == "json")
        std::printf("%s\n", answer.value().dump(2).c_str());
    else
        print_human(answer.value());
    return kExitOk;
}

}  // namespace daemonlet::agent
