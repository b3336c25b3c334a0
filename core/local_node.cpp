// The agent's own Node, as a 1.25-1.30 kubelet registers it and the control
// plane settles it (pkg/kubelet/kubelet_node_status.go initialNode and
// updateNode, pkg/util/node GetHostname, the node lifecycle controller's
// doNoScheduleTaintingPass and reconcileNodeLabels). See local_node.h.
#include "core/local_node.h"

#include <algorithm>
#include <string_view>

namespace daemonlet {
namespace {

// k8s.io/kubelet/pkg/apis well_known_labels.go: deprecated, still set.
constexpr const char* kBetaOS = "beta.kubernetes.io/os";
constexpr const char* kBetaArch = "beta.kubernetes.io/arch";

// GetHostname: strings.TrimSpace then strings.ToLower. Node names are ASCII
// (DNS-1123), so ASCII whitespace and case are all that can occur.
std::string hostname_of(std::string_view name) {
    const char* ws = " \t\n\v\f\r";
    const auto first = name.find_first_not_of(ws);
    if (first == std::string_view::npos) return {};
    name = name.substr(first, name.find_last_not_of(ws) - first + 1);
    std::string out(name);
    for (char& c : out)
        if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    return out;
}

// Taint.MatchTaint: the same key and effect (TaintExists, TaintSetDiff).
bool is_unschedulable_taint(const Taint& t) {
    return t.key == taints::kUnschedulable && t.effect == taints::kNoSchedule;
}

Json node_object(const Node& node) {
    Json labels = Json::object();
    for (const auto& [k, v] : node.metadata.labels) labels[k] = v;
    Json spec = Json::object();
    if (node.unschedulable) spec["unschedulable"] = true;
    if (!node.taints.empty()) {
        Json taints = Json::array();
        for (const auto& t : node.taints) {
            Json j = Json::object();
            j["key"] = t.key;
            if (!t.value.empty()) j["value"] = t.value;
            j["effect"] = t.effect;
            if (!t.time_added.empty()) j["timeAdded"] = t.time_added;
            taints.push_back(std::move(j));
        }
        spec["taints"] = std::move(taints);
    }
    Json out = Json::object();
    out["apiVersion"] = "v1";
    out["kind"] = "Node";
    out["metadata"] = Json{{"name", node.metadata.name}, {"labels", std::move(labels)}};
    out["spec"] = std::move(spec);
    return out;
}

}  // namespace

Node make_local_node(const std::string& name, const Labels& labels, const std::vector<Taint>& taints,
                     bool unschedulable, const std::string& os, const std::string& arch) {
    Node node;
    node.metadata.name = hostname_of(name);
    node.unschedulable = unschedulable;

    // initialNode: the automatic labels, then --node-labels over them.
    Labels& ls = node.metadata.labels;
    ls[labels::kHostname] = node.metadata.name;
    for (const auto& [k, v] : labels) ls[k] = v;
    // updateNode puts the real OS and architecture back at every status
    // update; reconcileNodeLabels makes the beta labels follow.
    if (!os.empty()) {
        ls[labels::kOS] = os;
        ls[kBetaOS] = os;
    }
    if (!arch.empty()) {
        ls[labels::kArch] = arch;
        ls[kBetaArch] = arch;
    }

    node.taints = taints;
    const bool has_unschedulable_taint =
        std::any_of(node.taints.begin(), node.taints.end(), is_unschedulable_taint);
    if (unschedulable && !has_unschedulable_taint) {
        Taint t;
        t.key = taints::kUnschedulable;
        t.effect = taints::kNoSchedule;
        node.taints.push_back(t);
    } else if (!unschedulable) {
        std::erase_if(node.taints, is_unschedulable_taint);
    }

    node.object = node_object(node);
    return node;
}

std::string goarch_from_machine(const std::string& m) {
    if (m == "x86_64" || m == "amd64") return "amd64";
    if (m == "aarch64" || m == "arm64") return "arm64";
    if (m == "aarch64_be") return "arm64be";
    if (m == "i386" || m == "i486" || m == "i586" || m == "i686" || m == "x86" || m == "i86pc") return "386";
    if (m == "riscv64" || m == "ppc64le" || m == "ppc64" || m == "s390x") return m;
    if (m == "loongarch64") return "loong64";
    // armv5tel, armv6l, armv7l, armv8l (32-bit userland on a 64-bit core)...
    if (m.rfind("arm", 0) == 0) return "arm";
    return {};
}

}  // namespace daemonlet

namespace daemonlet {

Node merge_cluster_node(const std::string& name, const Labels& labels, const std::vector<Taint>& taints,
                        bool unschedulable, const Node& cluster, const std::string& os,
                        const std::string& arch) {
    Labels merged_labels = labels;
    for (const auto& [k, v] : cluster.metadata.labels) merged_labels[k] = v;
    std::vector<Taint> merged_taints = cluster.taints;
    for (const auto& t : taints) {
        bool present = std::any_of(merged_taints.begin(), merged_taints.end(),
                                   [&](const Taint& c) { return c.key == t.key && c.effect == t.effect; });
        if (!present) merged_taints.push_back(t);
    }
    return make_local_node(name, merged_labels, merged_taints, unschedulable || cluster.unschedulable, os,
                           arch);
}

}  // namespace daemonlet
