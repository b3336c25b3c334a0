// daemonlet get ds|pods: what runs on this node, in kubectl's columns, or as
// Kubernetes-shaped JSON lists. Reads the store read-only, so it works while
// the agent runs and while it is stopped.
#include <algorithm>
#include <cstdio>
#include <map>

#include "agent/cli/cli.h"
#include "agent/cli/cli_flags.h"
#include "agent/cli/operator_view.h"
#include "agent/daemon/node_ips.h"
#include "core/pod_api_status.h"
#include "platform/system_info.h"
#include "store/store.h"

namespace daemonlet::agent {
namespace {

const char* const kGetHelp =
    "Usage: daemonlet get ds|pods [-n NAMESPACE | -A] [-o json] [--config FILE]\n"
    "\n"
    "Lists this node's DaemonSets (NAMESPACE NAME DESIRED CURRENT READY UP-TO-DATE\n"
    "AVAILABLE NODE SELECTOR AGE) or pods (NAMESPACE NAME READY STATUS RESTARTS AGE).\n"
    "-o json prints an apps/v1 DaemonSetList or a v1 PodList.\n"
    "\n"
    "  -o, --output json     Kubernetes-shaped JSON\n";

// A time the store holds, as Kubernetes writes it; null (a zero time, as
// Kubernetes marshals it) when it was recorded before the clock was set
// and the clock is set now (core/wall_clock.h).
Json rfc3339(std::int64_t ms, std::int64_t now) {
    if (ms <= 0) return "";
    auto t = utc_time(ms, now, "%Y-%m-%dT%H:%M:%SZ");
    if (!t) return nullptr;
    return *t;
}

// The images of the pod's own revision's template, init containers first
// (containerStatuses[].image, and imageID with it); none for a static pod
// or a revision the store no longer has.
std::vector<std::string> pod_images(store::Store& store, const PodRecord& p) {
    std::vector<std::string> out;
    if (p.is_static() || p.daemonset.empty()) return out;
    auto revs = store.list_revisions(p.namespace_, p.daemonset);
    if (!revs.ok()) return out;
    for (const auto& r : revs.value()) {
        if (r.hash != p.revision_hash) continue;
        const Json t = Json::parse(r.template_json, nullptr, false);
        if (!t.is_object() || !t.contains("spec") || !t["spec"].is_object()) return out;
        for (const char* list : {"initContainers", "containers"}) {
            if (!t["spec"].contains(list) || !t["spec"][list].is_array()) continue;
            for (const Json& c : t["spec"][list])
                out.push_back(c.is_object() && c.contains("image") && c["image"].is_string()
                                  ? c["image"].get<std::string>()
                                  : std::string());
        }
        return out;
    }
    return out;
}

Json pod_json(const PodRecord& p, const std::string& node, const std::string& runtime,
              const std::vector<std::string>& node_ips, std::vector<std::string> images, std::int64_t now) {
    Json pod = Json::object();
    pod["apiVersion"] = "v1";
    pod["kind"] = "Pod";
    pod["metadata"] = {{"name", p.name},
                       {"namespace", p.namespace_},
                       {"uid", p.uid},
                       {"creationTimestamp", rfc3339(p.created_at_ms, now)},
                       {"labels", {{"controller-revision-hash", p.revision_hash}}},
                       {"ownerReferences", Json::array({{{"apiVersion", "apps/v1"},
                                                         {"kind", "DaemonSet"},
                                                         {"name", p.daemonset},
                                                         {"controller", true},
                                                         {"blockOwnerDeletion", true}}})}};
    if (p.is_static()) {
        // A static pod as its mirror pod shows it: owned by the Node, the
        // kubelet's config annotations (config.hash is the UID), no labels
        // of a controller; daemonlet.io/manifest-file says which file.
        pod["metadata"].erase("labels");
        Json seen = rfc3339(p.created_at_ms, now);  // an annotation is a string: "" when unknown
        if (seen.is_null()) seen = "";
        pod["metadata"]["annotations"] = {{"kubernetes.io/config.hash", p.uid},
                                          {"kubernetes.io/config.mirror", p.uid},
                                          {"kubernetes.io/config.source", "file"},
                                          {"kubernetes.io/config.seen", seen},
                                          {"daemonlet.io/manifest-file", p.source}};
        pod["metadata"]["ownerReferences"] =
            Json::array({{{"apiVersion", "v1"}, {"kind", "Node"}, {"name", node}, {"controller", true}}});
    }
    // Its Pod's deletion grace, kept with the record (a Pod deleted through
    // the API with its own): what its containers are stopped within.
    if (p.deletion_grace_seconds) pod["metadata"]["deletionGracePeriodSeconds"] = *p.deletion_grace_seconds;
    pod["spec"] = {{"nodeName", node}};
    PodStatusContext ctx;
    ctx.runtime = runtime;
    ctx.node_ips = node_ips;
    ctx.images = std::move(images);
    ctx.now_ms = now;
    pod["status"] = pod_api_status(p, ctx);
    return pod;
}

}  // namespace

int cmd_get(const std::vector<std::string>& args) {
    if (wants_help(args) || args.empty()) {
        std::fputs(kGetHelp, args.empty() ? stderr : stdout);
        std::fputs(kOperatorFlagsHelp, args.empty() ? stderr : stdout);
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
    OperatorFlags flags;
    std::string output;
    for (std::size_t i = 1; i < args.size(); ++i) {
        if (flags.consume(args, i) || flag_value(args, i, "-o", output) ||
            flag_value(args, i, "--output", output))
            continue;
        std::fprintf(stderr, "daemonlet get: unexpected argument \"%s\"\n\n%s", args[i].c_str(), kGetHelp);
        return kExitUsage;
    }
    if (!output.empty() && output != "json") {
        std::fprintf(stderr, "daemonlet get: unsupported output \"%s\" (json)\n", output.c_str());
        return kExitUsage;
    }
    const bool all = flags.all_namespaces;
    const std::string& ns = flags.ns;
    auto cfg = load_operator_config(flags);
    if (!cfg.ok()) {
        std::fprintf(stderr, "daemonlet get: %s\n", cfg.error().message.c_str());
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
    auto in_scope = [&](const std::string& n) { return flags.in_scope(n); };
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
            const std::vector<std::string> node_ips = stored_node_ips(store);
            for (const auto& p : list)
                items.push_back(
                    pod_json(p, node_name, cfg.value().runtime_type, node_ips, pod_images(store, p), now));
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
                            std::to_string(cols.restarts), short_age(p.created_at_ms, now)});
        }
        if (rows.size() == 1) {
            std::fprintf(stderr, "No resources found%s.\n", all ? "" : (" in " + ns + " namespace").c_str());
            return kExitOk;
        }
        print_columns(rows, "", 3);
        return kExitOk;
    }

    auto sets = store.list_daemonsets();
    if (!sets.ok()) {
        std::fprintf(stderr, "daemonlet get: %s\n", sets.error().message.c_str());
        return 1;
    }
    Json items = Json::array();
    std::vector<std::vector<std::string>> rows{{"NAMESPACE", "NAME", "DESIRED", "CURRENT", "READY",
                                                "UP-TO-DATE", "AVAILABLE", "NODE SELECTOR", "AGE"}};
    for (const auto& s : sets.value()) {
        if (!in_scope(s.namespace_)) continue;
        // The counts are the DaemonSet controller's for this one node (core/rollout_status.h).
        auto view = view_daemonset(store, cfg.value(), s.namespace_, s.name, now);
        if (!view.ok() || !view.value()) continue;
        const DaemonSetView& v = *view.value();
        const DaemonSetNodeStatus& counts = v.status;
        std::string selector;
        for (const auto& [k, val] : v.ds.spec.template_.spec.node_selector)
            selector += (selector.empty() ? "" : ",") + k + "=" + val;
        auto revs = store.list_revisions(s.namespace_, s.name);
        std::int64_t created = s.updated_at_ms;
        if (revs.ok())
            for (const auto& r : revs.value()) created = std::min(created, r.created_at_ms);
        rows.push_back({s.namespace_, s.name, std::to_string(counts.desired), std::to_string(counts.current),
                        std::to_string(counts.ready), std::to_string(counts.updated),
                        std::to_string(counts.available), selector.empty() ? "<none>" : selector,
                        short_age(created, now)});
        Json obj = v.ds.object;
        obj["status"] = {{"currentNumberScheduled", counts.current},
                         {"numberMisscheduled", counts.misscheduled},
                         {"desiredNumberScheduled", counts.desired},
                         {"numberReady", counts.ready},
                         {"updatedNumberScheduled", counts.updated},
                         {"numberAvailable", counts.available},
                         {"numberUnavailable", std::max(0, counts.desired - counts.available)},
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
    print_columns(rows, "", 3);
    return kExitOk;
}

}  // namespace daemonlet::agent
