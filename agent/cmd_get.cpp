// daemonlet get ds|pods: what runs on this node, in kubectl's columns, or as
// Kubernetes-shaped JSON lists. Reads the store read-only, so it works while
// the agent runs and while it is stopped.
#include <algorithm>
#include <cstdio>
#include <map>

#include "agent/cli.h"
#include "core/decision.h"
#include "core/decode.h"
#include "core/local_node.h"
#include "platform/system_info.h"
#include "store/store.h"

namespace daemonlet::agent {
namespace {

const char* const kHelp =
    "Usage: daemonlet get ds|pods [-n NAMESPACE | -A] [-o json] [--config FILE]\n"
    "\n"
    "Lists this node's DaemonSets (NAMESPACE NAME DESIRED CURRENT READY UP-TO-DATE\n"
    "AVAILABLE NODE SELECTOR AGE) or pods (NAMESPACE NAME READY STATUS RESTARTS AGE).\n"
    "-o json prints an apps/v1 DaemonSetList or a v1 PodList.\n"
    "\n"
    "  -n, --namespace NS    only this namespace (default: default)\n"
    "  -A, --all-namespaces  every namespace\n"
    "  -o, --output json     Kubernetes-shaped JSON\n"
    "  --config FILE         the agent's configuration (default /etc/daemonlet/config.yaml)\n";

// kubectl's duration.ShortHumanDuration.
std::string age(std::int64_t since_ms, std::int64_t now_ms) {
    std::int64_t s = (now_ms - since_ms) / 1000;
    if (s < 0) return "<invalid>";
    if (s < 60) return std::to_string(s) + "s";
    if (s < 3600) return std::to_string(s / 60) + "m";
    if (s < 86400) return std::to_string(s / 3600) + "h";
    if (s < 365 * 86400) return std::to_string(s / 86400) + "d";
    return std::to_string(s / (365 * 86400)) + "y";
}

std::string rfc3339(std::int64_t ms) {
    if (ms <= 0) return {};
    time_t t = static_cast<time_t>(ms / 1000);
    struct tm tm {};
    gmtime_r(&t, &tm);
    char buf[32];
    std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
    return buf;
}

void print_table(const std::vector<std::vector<std::string>>& rows) {
    std::vector<std::size_t> w;
    for (const auto& r : rows)
        for (std::size_t i = 0; i < r.size(); ++i) {
            if (w.size() <= i) w.push_back(0);
            w[i] = std::max(w[i], r[i].size());
        }
    for (const auto& r : rows) {
        std::string line;
        for (std::size_t i = 0; i < r.size(); ++i) {
            line += r[i];
            if (i + 1 < r.size()) line += std::string(w[i] - r[i].size() + 3, ' ');
        }
        std::printf("%s\n", line.c_str());
    }
}

// The Ready condition: every app container and every sidecar ready.
bool pod_ready(const PodRecord& p) {
    if (p.containers.empty() || p.deleting) return false;
    auto ready = [](const ContainerStatus& c) { return c.ready; };
    return std::all_of(p.containers.begin(), p.containers.end(), ready) &&
           std::all_of(p.init_containers.begin(), p.init_containers.end(),
                       [](const ContainerStatus& c) { return !c.sidecar || c.ready; });
}

Json pod_json(const PodRecord& p, const std::string& node, const std::string& runtime) {
    Json pod = Json::object();
    pod["apiVersion"] = "v1";
    pod["kind"] = "Pod";
    pod["metadata"] = {{"name", p.name},
                       {"namespace", p.namespace_},
                       {"uid", p.uid},
                       {"creationTimestamp", rfc3339(p.created_at_ms)},
                       {"labels", {{"controller-revision-hash", p.revision_hash}}},
                       {"ownerReferences", Json::array({{{"apiVersion", "apps/v1"},
                                                         {"kind", "DaemonSet"},
                                                         {"name", p.daemonset},
                                                         {"controller", true},
                                                         {"blockOwnerDeletion", true}}})}};
    pod["spec"] = {{"nodeName", node}};
    std::int64_t latest_ready_change = 0;
    auto status_json = [&](const ContainerStatus& c) {
        Json st = Json::object();
        st["name"] = c.name;
        st["ready"] = c.ready;
        st["started"] = c.started;
        st["restartCount"] = c.restart_count;
        if (!c.runtime_id.empty()) st["containerID"] = runtime + "://" + c.runtime_id;
        Json state = Json::object();
        if (c.state == ContainerState::Running) {
            state["running"] = {{"startedAt", rfc3339(c.started_at_ms)}};
        } else if (c.state == ContainerState::Terminated) {
            state["terminated"] = {{"exitCode", c.exit_code},
                                   {"reason", c.reason},
                                   {"startedAt", rfc3339(c.started_at_ms)},
                                   {"finishedAt", rfc3339(c.finished_at_ms)}};
        } else {
            Json w = {{"reason", c.reason}};
            if (!c.message.empty()) w["message"] = c.message;
            state["waiting"] = w;
        }
        st["state"] = state;
        latest_ready_change = std::max(latest_ready_change, c.started_at_ms);
        return st;
    };
    Json statuses = Json::array();
    for (const auto& c : p.containers) statuses.push_back(status_json(c));
    Json init_statuses = Json::array();
    for (const auto& c : p.init_containers) init_statuses.push_back(status_json(c));
    bool ready = pod_ready(p);
    pod["status"] = {{"phase", to_string(p.phase)},
                     {"conditions", Json::array({{{"type", "Ready"},
                                                  {"status", ready ? "True" : "False"},
                                                  {"lastTransitionTime", rfc3339(latest_ready_change)}}})},
                     {"containerStatuses", statuses}};
    if (!p.init_containers.empty()) pod["status"]["initContainerStatuses"] = init_statuses;
    return pod;
}

}  // namespace

int cmd_get(const std::vector<std::string>& args) {
    if (wants_help(args) || args.empty()) {
        std::fputs(kHelp, args.empty() ? stderr : stdout);
        return args.empty() ? kExitUsage : kExitOk;
    }
    std::string what = args[0];
    if (what == "daemonsets" || what == "daemonset" || what == "ds")
        what = "ds";
    else if (what == "pods" || what == "pod" || what == "po")
        what = "pods";
    else {
        std::fprintf(stderr, "daemonlet get: unknown resource \"%s\" (ds or pods)\n", what.c_str());
        return kExitUsage;
    }
    std::string config_path = "/etc/daemonlet/config.yaml", ns = "default", output;
    bool all = false;
    for (std::size_t i = 1; i < args.size(); ++i) {
        if (args[i] == "-A" || args[i] == "--all-namespaces") {
            all = true;
            continue;
        }
        if (flag_value(args, i, "--config", config_path) || flag_value(args, i, "-n", ns) ||
            flag_value(args, i, "--namespace", ns) || flag_value(args, i, "-o", output) ||
            flag_value(args, i, "--output", output))
            continue;
        std::fprintf(stderr, "daemonlet get: unexpected argument \"%s\"\n\n%s", args[i].c_str(), kHelp);
        return kExitUsage;
    }
    if (!output.empty() && output != "json") {
        std::fprintf(stderr, "daemonlet get: unsupported output \"%s\" (json)\n", output.c_str());
        return kExitUsage;
    }
    auto cfg = load_config(config_path);
    if (!cfg.ok()) {
        std::fprintf(stderr, "%s\n", cfg.error().message.c_str());
        return kExitUsage;
    }
    const std::string db = cfg.value().state_dir + "/daemonlet.db";
    auto st = store::Store::open_readonly(db);
    if (!st.ok()) {
        std::fprintf(stderr, "daemonlet get: %s\n", st.error().message.c_str());
        return 1;
    }
    auto& store = *st.value();
    auto pods = store.list_pods();
    if (!pods.ok()) {
        std::fprintf(stderr, "daemonlet get: %s\n", pods.error().message.c_str());
        return 1;
    }
    auto in_scope = [&](const std::string& n) { return all || n == ns; };
    const std::int64_t now = platform::wall_clock_ms();
    const std::string node_name = cfg.value().node_name;

    if (what == "pods") {
        std::vector<PodRecord> list;
        for (const auto& p : pods.value())
            if (in_scope(p.namespace_)) list.push_back(p);
        std::sort(list.begin(), list.end(), [](const PodRecord& a, const PodRecord& b) {
            return std::tie(a.namespace_, a.name) < std::tie(b.namespace_, b.name);
        });
        if (output == "json") {
            Json items = Json::array();
            for (const auto& p : list) items.push_back(pod_json(p, node_name, cfg.value().runtime_type));
            Json out = {
                {"apiVersion", "v1"}, {"kind", "PodList"}, {"metadata", Json::object()}, {"items", items}};
            std::printf("%s\n", out.dump(4).c_str());
            return kExitOk;
        }
        std::vector<std::vector<std::string>> rows{
            {"NAMESPACE", "NAME", "READY", "STATUS", "RESTARTS", "AGE"}};
        for (const auto& p : list) {
            const PodColumns cols = pod_columns(p);
            rows.push_back({p.namespace_, p.name,
                            std::to_string(cols.ready) + "/" + std::to_string(cols.total), cols.status,
                            std::to_string(cols.restarts), age(p.created_at_ms, now)});
        }
        if (rows.size() == 1) {
            std::fprintf(stderr, "No resources found%s.\n", all ? "" : (" in " + ns + " namespace").c_str());
            return kExitOk;
        }
        print_table(rows);
        return kExitOk;
    }

    auto sets = store.list_daemonsets();
    auto stored_node = store.get_node();
    if (!sets.ok() || !stored_node.ok()) {
        std::fprintf(stderr, "daemonlet get: %s\n",
                     (!sets.ok() ? sets.error() : stored_node.error()).message.c_str());
        return 1;
    }
    Node node;
    if (stored_node.value()) {
        node.metadata.name = node_name;
        node.metadata.labels = stored_node.value()->labels;
        node.taints = stored_node.value()->taints;
        node.unschedulable = stored_node.value()->unschedulable;
    }
    Json items = Json::array();
    std::vector<std::vector<std::string>> rows{{"NAMESPACE", "NAME", "DESIRED", "CURRENT", "READY",
                                                "UP-TO-DATE", "AVAILABLE", "NODE SELECTOR", "AGE"}};
    for (const auto& s : sets.value()) {
        if (!in_scope(s.namespace_)) continue;
        DaemonSet ds;
        Json obj = Json::parse(s.object_json, nullptr, false);
        if (obj.is_discarded() || !decode_daemonset(obj, ds).empty()) continue;
        Decision d = node_should_run_daemon_pod(node, ds);
        int current = 0, ready = 0, updated = 0;
        for (const auto& p : pods.value()) {
            if (p.namespace_ != s.namespace_ || p.daemonset != s.name || p.deleting) continue;
            ++current;
            ready += pod_ready(p) ? 1 : 0;
            updated += p.revision_hash == s.template_hash ? 1 : 0;
        }
        int desired = d.should_run ? 1 : 0;
        std::string selector;
        for (const auto& [k, v] : ds.spec.template_.spec.node_selector)
            selector += (selector.empty() ? "" : ",") + k + "=" + v;
        auto revs = store.list_revisions(s.namespace_, s.name);
        std::int64_t created = s.updated_at_ms;
        if (revs.ok())
            for (const auto& r : revs.value()) created = std::min(created, r.created_at_ms);
        rows.push_back({s.namespace_, s.name, std::to_string(desired), std::to_string(current),
                        std::to_string(ready), std::to_string(updated), std::to_string(ready),
                        selector.empty() ? "<none>" : selector, age(created, now)});
        obj["status"] = {{"currentNumberScheduled", current > 0 && desired ? 1 : 0},
                         {"numberMisscheduled", current > 0 && !desired ? 1 : 0},
                         {"desiredNumberScheduled", desired},
                         {"numberReady", ready},
                         {"updatedNumberScheduled", updated},
                         {"numberAvailable", ready},
                         {"numberUnavailable", std::max(0, desired - ready)},
                         {"observedGeneration", s.generation}};
        items.push_back(obj);
    }
    if (output == "json") {
        Json out = {{"apiVersion", "apps/v1"},
                    {"kind", "DaemonSetList"},
                    {"metadata", Json::object()},
                    {"items", items}};
        std::printf("%s\n", out.dump(4).c_str());
        return kExitOk;
    }
    if (rows.size() == 1) {
        std::fprintf(stderr, "No resources found%s.\n", all ? "" : (" in " + ns + " namespace").c_str());
        return kExitOk;
    }
    print_table(rows);
    return kExitOk;
}

}  // namespace daemonlet::agent
