// NodeShouldRunDaemonPod. Rows from pkg/controller/daemon/daemon_controller_test.go:
// TestNodeShouldRunDaemonPod (placement rows), and the single-node outcome of
// the placement and taint tests (TestSelectorDaemonLaunchesPods,
// TestNameDaemonSetLaunchesPods, TestNodeAffinityDaemonLaunchesPods,
// TestTaintedNodeDaemonDoesNotLaunchIntolerantPod,
// TestNoExecuteTaintedDoesEvicitRunningIntolerantPod, ...): a create there is
// should_run here, a delete of a running pod is !should_continue_running.
// Rows marked "daemonlet:" pin a rule of NodeShouldRunDaemonPod those tests
// leave implicit.
#include <optional>
#include <string>
#include <vector>

#include "core/decision.h"

// CppUTest last: its leak-detection macros redefine new.
#include <CppUTest/TestHarness.h>

using namespace daemonlet;

namespace {

// daemon_controller_test.go fixtures.
const Labels kSimpleDaemonSetLabel = {{"name", "simple-daemon"}, {"type", "production"}};
const Labels kSimpleDaemonSetLabel2 = {{"name", "simple-daemon"}, {"type", "test"}};
const Labels kSimpleNodeLabel = {{"color", "blue"}, {"speed", "fast"}};
const Labels kSimpleNodeLabel2 = {{"color", "red"}, {"speed", "fast"}};
const Toleration kNoScheduleToleration{"dedicated", "", "user1", "NoSchedule", std::nullopt};
const Taint kNoScheduleTaint{"dedicated", "user1", "NoSchedule", {}};
const Taint kNoExecuteTaint{"dedicated", "user1", "NoExecute", {}};
const Taint kNotReadyTaint{taints::kNotReady, "", "NoExecute", "2024-01-01T00:00:00Z"};
const Taint kUnreachableTaint{taints::kUnreachable, "", "NoExecute", "2024-01-01T00:00:00Z"};
const char* const kNoScheduleReason = "taint {dedicated=user1:NoSchedule} is not tolerated";
const char* const kNoExecuteReason = "taint {dedicated=user1:NoExecute} is not tolerated";
const char* const kAffinityReason = "node(s) didn't match Pod's node affinity/selector";

// Default member initializers keep -Wmissing-field-initializers quiet about
// the fields a row leaves out.
struct Tmpl {
    std::string node_name{};
    Labels node_selector{};
    std::optional<Affinity> affinity{};
    std::vector<Toleration> tolerations{};
    bool host_network = false;
    int host_port = 0;
};

struct NodeSpec {
    std::string name{};
    Labels labels{};
    std::vector<Taint> taints{};
    bool unschedulable = false;
};

struct Row {
    const char* name;
    NodeSpec node;
    Tmpl tmpl;
    bool should_run;
    bool should_continue_running;
    std::vector<std::string> reasons;
};

Affinity required(std::vector<NodeSelectorTerm> terms) {
    Affinity a;
    a.node_affinity = NodeAffinity{NodeSelector{std::move(terms)}, {}};
    return a;
}
Affinity type_in(const char* value) { return required({NodeSelectorTerm{{{"type", "In", {value}}}, {}}}); }
Affinity color_in_blue() { return required({NodeSelectorTerm{{{"color", "In", {"blue"}}}, {}}}); }

const Row kRows[] = {
    // TestNodeShouldRunDaemonPod, node "test-node" labelled simpleDaemonSetLabel.
    {"TestNodeShouldRunDaemonPod: ShouldRunDaemonPod",
     {"test-node", kSimpleDaemonSetLabel},
     {},
     true,
     true,
     {}},
    {"TestNodeShouldRunDaemonPod: ErrPodNotFitsHostPorts is left to the kubelet",
     {"test-node", kSimpleDaemonSetLabel},
     {.host_port = 666},
     true,
     true,
     {}},
    {"TestNodeShouldRunDaemonPod: ErrPodNotMatchHostName",
     {"test-node", kSimpleDaemonSetLabel},
     {.node_name = "other-node"},
     false,
     false,
     {"template nodeName \"other-node\" does not match node \"test-node\""}},
    {"TestNodeShouldRunDaemonPod: ErrNodeSelectorNotMatch",
     {"test-node", kSimpleDaemonSetLabel},
     {.node_selector = kSimpleDaemonSetLabel2},
     false,
     false,
     {kAffinityReason, "nodeSelector requires type=test but the node has type=production"}},
    {"TestNodeShouldRunDaemonPod: ShouldRunDaemonPod with a matching nodeSelector",
     {"test-node", kSimpleDaemonSetLabel},
     {.node_selector = kSimpleDaemonSetLabel},
     true,
     true,
     {}},
    {"TestNodeShouldRunDaemonPod: ErrPodAffinityNotMatch",
     {"test-node", kSimpleDaemonSetLabel},
     {.affinity = type_in("test")},
     false,
     false,
     {kAffinityReason, "nodeSelectorTerms[0] {type in (test)} does not match the node"}},
    {"TestNodeShouldRunDaemonPod: ShouldRunDaemonPod with a matching affinity",
     {"test-node", kSimpleDaemonSetLabel},
     {.affinity = type_in("production")},
     true,
     true,
     {}},
    {"TestNodeShouldRunDaemonPod: ShouldRunDaemonPodOnUnschedulableNode",
     {"test-node", kSimpleDaemonSetLabel, {}, true},
     {},
     true,
     true,
     {}},

    // Placement tests, one node at a time.
    {"TestSelectorDaemonLaunchesPods: labelled node",
     {"node-4", kSimpleNodeLabel},
     {.node_selector = kSimpleNodeLabel},
     true,
     true,
     {}},
    {"TestSelectorDaemonLaunchesPods: unlabelled node",
     {"node-0", {}},
     {.node_selector = kSimpleNodeLabel},
     false,
     false,
     {kAffinityReason, "nodeSelector requires color=blue but the node has no label color",
      "nodeSelector requires speed=fast but the node has no label speed"}},
    {"TestBadSelectorDaemonDoesNothing",
     {"node-4", kSimpleNodeLabel},
     {.node_selector = kSimpleNodeLabel2},
     false,
     false,
     {kAffinityReason, "nodeSelector requires color=red but the node has color=blue"}},
    {"TestNameDaemonSetLaunchesPods: node-0", {"node-0", {}}, {.node_name = "node-0"}, true, true, {}},
    {"TestNameDaemonSetLaunchesPods: node-1",
     {"node-1", {}},
     {.node_name = "node-0"},
     false,
     false,
     {"template nodeName \"node-0\" does not match node \"node-1\""}},
    {"TestBadNameDaemonSetDoesNothing",
     {"node-4", {}},
     {.node_name = "node-10"},
     false,
     false,
     {"template nodeName \"node-10\" does not match node \"node-4\""}},
    {"TestNameAndSelectorDaemonSetLaunchesPods",
     {"node-6", kSimpleNodeLabel},
     {.node_name = "node-6", .node_selector = kSimpleNodeLabel},
     true,
     true,
     {}},
    {"TestInconsistentNameSelectorDaemonSetDoesNothing",
     {"node-0", {}},
     {.node_name = "node-0", .node_selector = kSimpleNodeLabel},
     false,
     false,
     {kAffinityReason, "nodeSelector requires color=blue but the node has no label color",
      "nodeSelector requires speed=fast but the node has no label speed"}},
    {"TestNodeAffinityDaemonLaunchesPods: labelled node",
     {"node-4", kSimpleNodeLabel},
     {.affinity = color_in_blue()},
     true,
     true,
     {}},
    {"TestNodeAffinityDaemonLaunchesPods: unlabelled node",
     {"node-0", {}},
     {.affinity = color_in_blue()},
     false,
     false,
     {kAffinityReason, "nodeSelectorTerms[0] {color in (blue)} does not match the node"}},

    // Taint tests.
    {"TestTaintedNodeDaemonDoesNotLaunchIntolerantPod (+ "
     "TestNoScheduleTaintedDoesntEvicitRunningIntolerantPod)",
     {"tainted", {}, {kNoScheduleTaint}},
     {},
     false,
     true,
     {kNoScheduleReason}},
    {"TestNoExecuteTaintedDoesEvicitRunningIntolerantPod",
     {"tainted", {}, {kNoExecuteTaint}},
     {},
     false,
     false,
     {kNoExecuteReason}},
    {"TestTaintedNodeDaemonLaunchesToleratePod",
     {"tainted", {}, {kNoScheduleTaint}},
     {.tolerations = {kNoScheduleToleration}},
     true,
     true,
     {}},
    {"TestNotReadyNodeDaemonLaunchesPod", {"tainted", {}, {kNotReadyTaint}}, {}, true, true, {}},
    {"TestUnreachableNodeDaemonLaunchesPod", {"tainted", {}, {kUnreachableTaint}}, {}, true, true, {}},
    {"TestNodeDaemonLaunchesToleratePod",
     {"node-0", {}},
     {.tolerations = {kNoScheduleToleration}},
     true,
     true,
     {}},
    {"TestTaintPressureNodeDaemonLaunchesPod",
     {"resources-pressure",
      {},
      {{taints::kDiskPressure, "", "NoSchedule", {}},
       {taints::kMemoryPressure, "", "NoSchedule", {}},
       {taints::kPIDPressure, "", "NoSchedule", {}}}},
     {},
     true,
     true,
     {}},
    {"TestNetworkUnavailableNodeDaemonLaunchesPod: the condition alone is no taint",
     {"network-unavailable", {}},
     {},
     true,
     true,
     {}},

    // NodeShouldRunDaemonPod rules.
    {"daemonlet: network-unavailable taint, pod network",
     {"n", {}, {{taints::kNetworkUnavailable, "", "NoSchedule", {}}}},
     {},
     false,
     true,
     {"taint {node.kubernetes.io/network-unavailable:NoSchedule} is not tolerated"}},
    {"daemonlet: network-unavailable taint, hostNetwork",
     {"n", {}, {{taints::kNetworkUnavailable, "", "NoSchedule", {}}}},
     {.host_network = true},
     true,
     true,
     {}},
    {"daemonlet: cordoned node (unschedulable taint) still runs daemons",
     {"n", {}, {{taints::kUnschedulable, "", "NoSchedule", {}}}, true},
     {},
     true,
     true,
     {}},
    {"daemonlet: PreferNoSchedule never blocks",
     {"n", {}, {{"soft", "", "PreferNoSchedule", {}}}},
     {},
     true,
     true,
     {}},
    {"daemonlet: every untolerated taint is a reason; NoExecute stops a running pod",
     {"n", {}, {kNoScheduleTaint, kNoExecuteTaint}},
     {},
     false,
     false,
     {kNoScheduleReason, kNoExecuteReason}},
    {"daemonlet: NoExecute tolerated, NoSchedule not: keep running",
     {"n", {}, {kNoScheduleTaint, kNoExecuteTaint}},
     {.tolerations = {{"dedicated", "Equal", "user1", "NoExecute", {}}}},
     false,
     true,
     {kNoScheduleReason}},
    {"daemonlet: an effect-less toleration tolerates both effects",
     {"n", {}, {kNoScheduleTaint, kNoExecuteTaint}},
     {.tolerations = {{"dedicated", "Exists", "", "", {}}}},
     true,
     true,
     {}},
    {"daemonlet: Exists with an empty key tolerates everything",
     {"n", {}, {kNoScheduleTaint, kNoExecuteTaint, {"other", "x", "NoExecute", {}}}},
     {.tolerations = {{"", "Exists", "", "", {}}}},
     true,
     true,
     {}},
    {"daemonlet: the template's own NoExecute toleration with seconds still tolerates",
     {"n", {}, {kNoExecuteTaint}},
     {.tolerations = {{"dedicated", "Exists", "", "NoExecute", 30}}},
     true,
     true,
     {}},
    {"daemonlet: a nodeName mismatch is the only reason",
     {"n", {}, {kNoExecuteTaint}},
     {.node_name = "m"},
     false,
     false,
     {"template nodeName \"m\" does not match node \"n\""}},
    {"daemonlet: an affinity mismatch wins over taints",
     {"n", {}, {kNoScheduleTaint}},
     {.node_selector = {{"zone", "a"}}},
     false,
     false,
     {kAffinityReason, "nodeSelector requires zone=a but the node has no label zone"}},
    {"daemonlet: preferred affinity never blocks",
     {"n", {}},
     {.affinity =
          [] {
              Affinity a;
              a.node_affinity =
                  NodeAffinity{std::nullopt, {{1, NodeSelectorTerm{{{"zone", "In", {"a"}}}, {}}}}};
              return a;
          }()},
     true,
     true,
     {}},
    {"daemonlet: matchFields metadata.name, as the controller writes it, on that node",
     {"node-0", {}},
     {.affinity = required({NodeSelectorTerm{{}, {{"metadata.name", "In", {"node-0"}}}}})},
     true,
     true,
     {}},
    {"daemonlet: matchFields metadata.name on another node",
     {"node-1", {}},
     {.affinity = required({NodeSelectorTerm{{}, {{"metadata.name", "In", {"node-0"}}}}})},
     false,
     false,
     {kAffinityReason, "nodeSelectorTerms[0] {metadata.name=node-0} does not match the node"}},
    {"daemonlet: an unparsable term is skipped when another matches",
     {"n", {{"zone", "a"}}},
     {.affinity = required({NodeSelectorTerm{{{"zone", "Gt", {"north"}}}, {}},
                            NodeSelectorTerm{{{"zone", "In", {"a"}}}, {}}})},
     true,
     true,
     {}},
    {"daemonlet: an unparsable term alone refuses the node and says why",
     {"n", {{"zone", "a"}}},
     {.affinity = required({NodeSelectorTerm{{{"zone", "Gt", {"north"}}}, {}}})},
     false,
     false,
     {kAffinityReason,
      "ignored a required node affinity term that does not parse: "
      "nodeSelectorTerms[0].matchExpressions[0].values[0]: "
      "Invalid value: \"north\": for 'Gt', 'Lt' operators, the value must be an integer"}},
    {"daemonlet: an empty required selector matches no node",
     {"n", {{"zone", "a"}}},
     {.affinity = required({})},
     false,
     false,
     {kAffinityReason, "required node affinity has no nodeSelectorTerms, so it matches no node"}},
};

DaemonSet daemon_set(const Tmpl& t) {
    DaemonSet ds;
    ds.metadata.name = "simple";
    ds.metadata.namespace_ = "default";
    ds.spec.update_strategy.type = "RollingUpdate";
    ds.spec.template_.metadata.labels = kSimpleDaemonSetLabel;
    PodSpec& s = ds.spec.template_.spec;
    s.node_name = t.node_name;
    s.node_selector = t.node_selector;
    s.affinity = t.affinity;
    s.tolerations = t.tolerations;
    s.host_network = t.host_network;
    Container c;
    c.name = "daemon";
    c.image = "foo/bar";
    if (t.host_port) c.ports.push_back(ContainerPort{"", t.host_port, t.host_port, "TCP", ""});
    s.containers.push_back(c);
    return ds;
}

Node node_of(const NodeSpec& n) {
    Node node;
    node.metadata.name = n.name;
    node.metadata.labels = n.labels;
    node.taints = n.taints;
    node.unschedulable = n.unschedulable;
    return node;
}

std::string joined(const std::vector<std::string>& v) {
    std::string out;
    for (const auto& s : v) out += s + "\n";
    return out;
}

}  // namespace

TEST_GROUP(Decision){};

TEST(Decision, NodeShouldRunDaemonPodMatchesUpstreamTable) {
    for (const auto& row : kRows) {
        const Decision d = node_should_run_daemon_pod(node_of(row.node), daemon_set(row.tmpl));
        CHECK_EQUAL_TEXT(row.should_run, d.should_run, row.name);
        CHECK_EQUAL_TEXT(row.should_continue_running, d.should_continue_running, row.name);
        STRCMP_EQUAL_TEXT(joined(row.reasons).c_str(), joined(d.reasons).c_str(), row.name);
    }
}

TEST(Decision, UpdateStrategyDoesNotChangePlacement) {
    // TestNodeShouldRunDaemonPod runs every row under OnDelete and RollingUpdate.
    for (const auto& row : kRows) {
        DaemonSet ds = daemon_set(row.tmpl);
        ds.spec.update_strategy.type = "OnDelete";
        const Decision d = node_should_run_daemon_pod(node_of(row.node), ds);
        CHECK_EQUAL_TEXT(row.should_run, d.should_run, row.name);
        CHECK_EQUAL_TEXT(row.should_continue_running, d.should_continue_running, row.name);
    }
}

TEST(Decision, TemplateTolerationsAreNotModified) {
    // NewPod works on a copy: the DaemonSet itself keeps its own tolerations.
    const DaemonSet ds = daemon_set({.tolerations = {kNoScheduleToleration}});
    (void)node_should_run_daemon_pod(node_of({"n", {}, {kNotReadyTaint}}), ds);
    LONGS_EQUAL(1, ds.spec.template_.spec.tolerations.size());
}
