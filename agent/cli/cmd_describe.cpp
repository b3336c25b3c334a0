// daemonlet describe ds [NAME]: kubectl describe for this node's
// DaemonSets, plus what kubectl cannot show: this node's decision with every
// reason (core's node_should_run_daemon_pod), the manifest file, a rollback
// in force, and the revisions. Reads the store read-only: works with the
// agent stopped.
#include <algorithm>
#include <cstdio>

#include "agent/cli/cli.h"
#include "agent/cli/cli_flags.h"
#include "agent/cli/operator_view.h"
#include "core/source_merge.h"
#include "platform/system_info.h"

namespace daemonlet::agent {
namespace {

const char* const kDescribeHelp =
    "Usage: daemonlet describe ds [NAME] [-n NAMESPACE | -A]\n"
    "       daemonlet describe pod NAME [-n NAMESPACE]\n"
    "\n"
    "Shows a DaemonSet as kubectl describe does, with this node's decision and\n"
    "its reasons (a taint not tolerated, a selector not matched), where it comes\n"
    "from, its revisions and its recent events; or one pod: its status, who\n"
    "controls it (its DaemonSet, or the Node for a static pod) and its containers.\n";

std::string or_none(const std::string& s) { return s.empty() ? "<none>" : s; }

std::string map_text(const Json& m, const char* sep) {
    std::string out;
    if (m.is_object())
        for (const auto& [k, v] : m.items())
            out += (out.empty() ? "" : sep) + k + "=" + (v.is_string() ? v.get<std::string>() : v.dump());
    return or_none(out);
}

// metav1.FormatLabelSelector.
std::string selector_text(const Json& sel) {
    std::string out = sel.contains("matchLabels") ? map_text(sel["matchLabels"], ",") : "";
    if (out == "<none>") out.clear();
    for (const auto& e : sel.value("matchExpressions", Json::array())) {
        std::string values;
        for (const auto& v : e.value("values", Json::array()))
            values += (values.empty() ? "" : ",") + v.get<std::string>();
        const std::string op = e.value("operator", "");
        std::string term = e.value("key", "");
        if (op == "In") term += " in (" + values + ")";
        if (op == "NotIn") term += " notin (" + values + ")";
        if (op == "DoesNotExist") term = "!" + term;
        out += (out.empty() ? "" : ",") + term;
    }
    return or_none(out);
}

std::string strategy_text(const Json& us) {
    std::string type = us.value("type", "RollingUpdate");
    if (type != "RollingUpdate" || !us.contains("rollingUpdate")) return type;
    const Json& ru = us["rollingUpdate"];
    auto v = [](const Json& x) { return x.is_string() ? x.get<std::string>() : x.dump(); };
    return type + " (maxUnavailable: " + (ru.contains("maxUnavailable") ? v(ru["maxUnavailable"]) : "1") +
           ", maxSurge: " + (ru.contains("maxSurge") ? v(ru["maxSurge"]) : "0") + ")";
}

// The component upstream would name as the event's source.
const char* event_source(const std::string& reason) {
    if (reason == "BackOff" || reason == "SysctlForbidden") return "kubelet";  // its rejectPod's event
    if (reason == "TaintManagerEviction") return "taint-eviction-controller";
    if (reason.rfind("Roll", 0) == 0) return "daemonlet";
    return "daemonset-controller";
}

int describe_one(store::Store& store, const AgentConfig& cfg, const std::string& ns, const std::string& name,
                 std::int64_t now) {
    auto view = view_daemonset(store, cfg, ns, name, now);
    if (!view.ok()) {
        std::fprintf(stderr, "error: %s\n", view.error().message.c_str());
        return 1;
    }
    if (!view.value()) {
        std::fprintf(stderr, "Error from server (NotFound): daemonsets.apps \"%s\" not found\n",
                     name.c_str());
        return 1;
    }
    const DaemonSetView& v = *view.value();
    const Json& obj = v.ds.object;
    const Json& md = obj.value("metadata", Json::object());
    const Json& spec = obj.value("spec", Json::object());
    const Json& tmpl = spec.value("template", Json::object());
    std::printf("Name:           %s\n", name.c_str());
    std::printf("Namespace:      %s\n", ns.c_str());
    std::printf("Selector:       %s\n", selector_text(spec.value("selector", Json::object())).c_str());
    std::printf(
        "Node-Selector:  %s\n",
        map_text(tmpl.value("spec", Json::object()).value("nodeSelector", Json::object()), ",").c_str());
    std::printf("Labels:         %s\n",
                map_text(md.value("labels", Json::object()), "\n                ").c_str());
    std::printf("Annotations:    %s\n",
                map_text(md.value("annotations", Json::object()), "\n                ").c_str());
    const auto& s = v.status;
    std::printf("Desired Number of Nodes Scheduled: %d\n", s.desired);
    std::printf("Current Number of Nodes Scheduled: %d\n", s.current);
    std::printf("Number of Nodes Scheduled with Up-to-date Pods: %d\n", s.updated);
    std::printf("Number of Nodes Scheduled with Available Pods: %d\n", s.available);
    std::printf("Number of Nodes Scheduled with Ready Pods: %d\n", s.ready);
    std::printf("Number of Nodes Misscheduled: %d\n", s.misscheduled);
    int running = 0, waiting = 0, succeeded = 0, failed = 0;
    for (const auto& p : v.pods) {
        if (p.phase == PodPhase::Running) ++running;
        if (p.phase == PodPhase::Pending) ++waiting;
        if (p.phase == PodPhase::Succeeded) ++succeeded;
        if (p.phase == PodPhase::Failed) ++failed;
    }
    std::printf("Pods Status:    %d Running / %d Waiting / %d Succeeded / %d Failed\n", running, waiting,
                succeeded, failed);
    std::printf("Update Strategy:  %s\n",
                strategy_text(spec.value("updateStrategy", Json::object())).c_str());
    const auto parsed = DaemonSetSource::parse(v.row.source);
    std::string source = !parsed              ? v.row.source
                         : parsed->from_api() ? parsed->describe() + " (cached here)"
                                              : parsed->describe();
    std::printf("Source:         %s\n", source.c_str());
    if (v.rollback)
        std::printf("Rolled back:    to template %s, in force until %s changes\n",
                    v.rollback->revision_hash.c_str(), source.c_str());
    std::printf("This node:      %s\n", cfg.node_name.c_str());
    std::printf("  shouldRun:              %s\n", v.decision.should_run ? "true" : "false");
    std::printf("  shouldContinueRunning:  %s\n", v.decision.should_continue_running ? "true" : "false");
    std::printf("  Reasons:%s\n", v.decision.reasons.empty() ? "                <none>" : "");
    for (const auto& r : v.decision.reasons) std::printf("    %s\n", r.c_str());
    std::printf("Pod Template:\n%s", describe_pod_template(tmpl, "  ").c_str());

    auto revs = store.list_revisions(ns, name);
    std::printf("Revisions:\n");
    if (revs.ok() && !revs.value().empty()) {
        std::vector<std::vector<std::string>> rows{{"REVISION", "HASH", "AGE", "CURRENT"}};
        for (const auto& r : revs.value())
            rows.push_back({std::to_string(r.revision), r.hash, short_age(r.created_at_ms, now),
                            r.hash == v.row.template_hash ? "*" : ""});
        print_columns(rows, "  ", 2);
    } else {
        std::printf("  <none>\n");
    }
    auto events = store.list_events(ns, "DaemonSet/" + name, 0);
    if (!events.ok() || events.value().empty()) {
        std::printf("Events:         <none>\n");
        return kExitOk;
    }
    std::printf("Events:\n");
    std::vector<std::vector<std::string>> rows{{"Type", "Reason", "Age", "From", "Message"},
                                               {"----", "------", "----", "----", "-------"}};
    for (const auto& e : events.value())
        rows.push_back({e.type, e.reason, short_age(e.time_ms, now), event_source(e.reason), e.message});
    print_columns(rows, "  ", 2);
    return kExitOk;
}

}  // namespace

int cmd_describe(const std::vector<std::string>& args) {
    if (wants_help(args) || args.empty()) {
        std::fputs(kDescribeHelp, args.empty() ? stderr : stdout);
        std::fputs(kOperatorFlagsHelp, args.empty() ? stderr : stdout);
        return args.empty() ? kExitUsage : kExitOk;
    }
    OperatorFlags flags;
    std::string name;
    bool kind_seen = false, pod_kind = false;
    for (std::size_t i = 0; i < args.size(); ++i) {
        if (flags.consume(args, i)) continue;
        if (!kind_seen && !args[i].empty() && args[i][0] != '-') {
            kind_seen = true;
            const auto slash = args[i].find('/');
            const std::string kind = args[i].substr(0, slash);
            pod_kind = kind == "pod" || kind == "pods" || kind == "po";
            if (!pod_kind && !is_daemonset_kind(kind)) {
                std::fprintf(stderr,
                             "daemonlet describe: the server doesn't have a resource type \"%s\" (ds, pod)\n",
                             kind.c_str());
                return kExitUsage;
            }
            if (slash != std::string::npos) name = args[i].substr(slash + 1);
            continue;
        }
        if (kind_seen && name.empty() && !args[i].empty() && args[i][0] != '-') {
            name = args[i];
            continue;
        }
        std::fprintf(stderr, "daemonlet describe: unexpected argument \"%s\"\n\n%s", args[i].c_str(),
                     kDescribeHelp);
        return kExitUsage;
    }
    auto cfg = load_operator_config(flags);
    if (!cfg.ok()) {
        std::fprintf(stderr, "daemonlet describe: %s\n", cfg.error().message.c_str());
        return kExitUsage;
    }
    auto st = open_store_readonly(cfg.value());
    if (!st.ok()) {
        std::fprintf(stderr, "error: %s\n", st.error().message.c_str());
        return 1;
    }
    const std::int64_t now = platform::wall_clock_ms();
    if (pod_kind) {
        if (name.empty() || flags.all_namespaces) {
            std::fprintf(stderr, "daemonlet describe: describe pod takes one NAME and a namespace\n");
            return kExitUsage;
        }
        return describe_pod(*st.value(), cfg.value(), flags.ns, name);
    }
    if (!name.empty()) {
        if (flags.all_namespaces) {
            std::fprintf(stderr, "error: a resource cannot be retrieved by name across all namespaces\n");
            return kExitUsage;
        }
        return describe_one(*st.value(), cfg.value(), flags.ns, name, now);
    }
    auto sets = st.value()->list_daemonsets();
    if (!sets.ok()) {
        std::fprintf(stderr, "error: %s\n", sets.error().message.c_str());
        return 1;
    }
    int status = kExitOk, shown = 0;
    for (const auto& s : sets.value()) {
        if (!flags.in_scope(s.namespace_)) continue;
        if (shown++) std::printf("\n\n");
        status = std::max(status, describe_one(*st.value(), cfg.value(), s.namespace_, s.name, now));
    }
    if (!shown)
        std::fprintf(stderr, "No resources found%s.\n",
                     flags.all_namespaces ? "" : (" in " + flags.ns + " namespace").c_str());
    return status;
}

}  // namespace daemonlet::agent
