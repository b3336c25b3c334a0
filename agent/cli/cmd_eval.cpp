// daemonlet eval --node NODE_FILE --daemonset DS_FILE: the decision, as JSON.
#include <cstdio>

#include "agent/cli/cli.h"
#include "core/decision.h"
#include "core/template_hash.h"

namespace daemonlet::agent {
namespace {

const char* const kEvalHelp =
    "Usage: daemonlet eval --node NODE_FILE --daemonset DS_FILE [--name NAME]\n"
    "\n"
    "Decides, as the Kubernetes DaemonSet controller does, whether the node in\n"
    "NODE_FILE (a v1 Node) should run the pod of the DaemonSet in DS_FILE, and\n"
    "prints one JSON object:\n"
    "  {\"node\": ..., \"daemonSet\": \"NAMESPACE/NAME\", \"shouldRun\": BOOL,\n"
    "   \"shouldContinueRunning\": BOOL, \"reasons\": [STRING...], \"templateHash\": ...}\n"
    "\n"
    "  --node FILE        the Node manifest (exactly one Node)\n"
    "  --daemonset FILE   the DaemonSet manifest\n"
    "  --name NAME        which DaemonSet, when DS_FILE holds several (NAME or NAMESPACE/NAME)\n"
    "\n"
    "Either file may hold objects of other kinds (a published install file's\n"
    "Namespace, RBAC, ConfigMaps, ...): they are checked as validate checks them\n"
    "and otherwise ignored.\n"
    "\n"
    "Exit status: 0 with the decision; 2 when a file cannot be read or holds an\n"
    "invalid object (errors on stderr), or on usage errors.\n";

int usage(const std::string& msg) {
    std::fprintf(stderr, "daemonlet eval: %s\n\n%s", msg.c_str(), kEvalHelp);
    return kExitUsage;
}

// Loads a file; prints warnings and errors; false when it had errors.
bool load(const std::string& path, LoadedManifest& out) {
    out = load_file(path);
    for (const auto& w : out.warnings) std::fprintf(stderr, "warning: %s\n", w.c_str());
    for (const auto& e : out.errors) std::fprintf(stderr, "%s\n", e.to_string().c_str());
    return out.errors.empty();
}

}  // namespace

int cmd_eval(const std::vector<std::string>& args) {
    if (wants_help(args)) {
        std::fputs(kEvalHelp, stdout);
        return kExitOk;
    }
    std::string node_file, ds_file, name;
    for (std::size_t i = 0; i < args.size(); ++i) {
        if (flag_value(args, i, "--node", node_file) || flag_value(args, i, "--daemonset", ds_file) ||
            flag_value(args, i, "--name", name))
            continue;
        return usage("unexpected argument \"" + args[i] + "\"");
    }
    if (node_file.empty() || ds_file.empty()) return usage("--node and --daemonset are required");

    LoadedManifest node_m, ds_m;
    bool ok = load(node_file, node_m);
    ok = load(ds_file, ds_m) && ok;
    if (!ok) return kExitUsage;

    std::vector<const Node*> nodes;
    for (const auto& o : node_m.objects)
        if (const auto* n = std::get_if<Node>(&o.object)) nodes.push_back(n);
    if (nodes.size() != 1)
        return usage(node_file + ": expected exactly one Node, found " + std::to_string(nodes.size()));

    std::vector<const DaemonSet*> sets;
    for (const auto& o : ds_m.objects) {
        const auto* ds = std::get_if<DaemonSet>(&o.object);
        if (!ds) continue;
        const auto& md = ds->metadata;
        if (name.empty() || name == md.name || name == md.namespace_ + "/" + md.name) sets.push_back(ds);
    }
    if (sets.size() != 1) {
        std::string what = name.empty() ? "" : " named \"" + name + "\"";
        return usage(ds_file + ": expected exactly one DaemonSet" + what + ", found " +
                     std::to_string(sets.size()) + (sets.size() > 1 ? " (choose one with --name)" : ""));
    }

    const Node& node = *nodes.front();
    const DaemonSet& ds = *sets.front();
    Decision d = node_should_run_daemon_pod(node, ds);
    Json out = Json::object();
    out["node"] = node.metadata.name;
    out["daemonSet"] = ds.metadata.namespace_ + "/" + ds.metadata.name;
    out["shouldRun"] = d.should_run;
    out["shouldContinueRunning"] = d.should_continue_running;
    out["reasons"] = d.reasons;
    const Json& spec = ds.object["spec"];
    out["templateHash"] = template_hash(spec["template"], ds.status.collision_count);
    std::printf("%s\n", out.dump(2, ' ', false, Json::error_handler_t::replace).c_str());
    return kExitOk;
}

}  // namespace daemonlet::agent
