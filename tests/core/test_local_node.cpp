// The agent's own Node. Rows pin what a 1.25-1.30 kubelet registers and the
// control plane settles (pkg/kubelet/kubelet_node_status.go initialNode and
// updateNode, pkg/util/node GetHostname, the node lifecycle controller's
// doNoScheduleTaintingPass and reconcileNodeLabels); upstream tests these
// through fakes (kubelet_node_status_test.go TestRegisterWithApiServer...),
// so each row names the rule instead. goarch rows map uname -m to Go's GOARCH.
#include <string>
#include <vector>

#include "core/decision.h"
#include "core/local_node.h"

// CppUTest last: its leak-detection macros redefine new.
#include <CppUTest/TestHarness.h>

using namespace daemonlet;

namespace {

const Taint kUnschedulableTaint{taints::kUnschedulable, "", "NoSchedule", {}};

Labels automatic(const std::string& host, const std::string& os, const std::string& arch) {
    return {{"kubernetes.io/hostname", host},
            {"kubernetes.io/os", os},
            {"kubernetes.io/arch", arch},
            {"beta.kubernetes.io/os", os},
            {"beta.kubernetes.io/arch", arch}};
}

Labels with(Labels base, const Labels& extra) {
    for (const auto& [k, v] : extra) base[k] = v;
    return base;
}

struct Row {
    const char* name;
    std::string node_name;
    Labels labels;
    std::vector<Taint> taints;
    bool unschedulable;
    std::string os, arch;
    std::string want_name;
    Labels want_labels;
    std::vector<Taint> want_taints;
};

const Row kRows[] = {
    {"initialNode: automatic labels",
     "board-1",
     {},
     {},
     false,
     "linux",
     "arm64",
     "board-1",
     automatic("board-1", "linux", "arm64"),
     {}},
    {"GetHostname: trimmed and lower-cased",
     " Board-1\n",
     {},
     {},
     false,
     "linux",
     "arm",
     "board-1",
     automatic("board-1", "linux", "arm"),
     {}},
    {"initialNode: configured labels are added",
     "board-1",
     {{"sensors", "bme280"}},
     {},
     false,
     "linux",
     "arm64",
     "board-1",
     with(automatic("board-1", "linux", "arm64"), {{"sensors", "bme280"}}),
     {}},
    {"initialNode: a configured hostname label overwrites the default",
     "board-1",
     {{"kubernetes.io/hostname", "edge"}},
     {},
     false,
     "linux",
     "arm64",
     "board-1",
     with(automatic("board-1", "linux", "arm64"), {{"kubernetes.io/hostname", "edge"}}),
     {}},
    {"updateNode (1.23+): os and arch are reconciled to the real ones",
     "board-1",
     {{"kubernetes.io/arch", "amd64"}, {"kubernetes.io/os", "windows"}},
     {},
     false,
     "linux",
     "arm64",
     "board-1",
     automatic("board-1", "linux", "arm64"),
     {}},
    {"reconcileNodeLabels: beta labels follow the GA ones",
     "board-1",
     {{"beta.kubernetes.io/arch", "amd64"}},
     {},
     false,
     "linux",
     "riscv64",
     "board-1",
     automatic("board-1", "linux", "riscv64"),
     {}},
    {"daemonlet: an unknown arch adds no label and leaves a configured one",
     "board-1",
     {{"kubernetes.io/arch", "mips"}},
     {},
     false,
     "linux",
     "",
     "board-1",
     {{"kubernetes.io/hostname", "board-1"},
      {"kubernetes.io/os", "linux"},
      {"beta.kubernetes.io/os", "linux"},
      {"kubernetes.io/arch", "mips"}},
     {}},
    {"initialNode: configured taints are registered as given",
     "board-1",
     {},
     {{"dedicated", "sensors", "NoSchedule", {}}, {"x", "", "PreferNoSchedule", {}}},
     false,
     "linux",
     "arm64",
     "board-1",
     automatic("board-1", "linux", "arm64"),
     {{"dedicated", "sensors", "NoSchedule", {}}, {"x", "", "PreferNoSchedule", {}}}},
    {"initialNode (#63897): unschedulable adds the unschedulable taint last",
     "board-1",
     {},
     {{"dedicated", "sensors", "NoSchedule", {}}},
     true,
     "linux",
     "arm64",
     "board-1",
     automatic("board-1", "linux", "arm64"),
     {{"dedicated", "sensors", "NoSchedule", {}}, kUnschedulableTaint}},
    {"TaintExists: an unschedulable:NoSchedule taint with a value is not doubled",
     "board-1",
     {},
     {{taints::kUnschedulable, "yes", "NoSchedule", {}}},
     true,
     "linux",
     "arm64",
     "board-1",
     automatic("board-1", "linux", "arm64"),
     {{taints::kUnschedulable, "yes", "NoSchedule", {}}}},
    {"TaintExists: another effect does not count",
     "board-1",
     {},
     {{taints::kUnschedulable, "", "NoExecute", {}}},
     true,
     "linux",
     "arm64",
     "board-1",
     automatic("board-1", "linux", "arm64"),
     {{taints::kUnschedulable, "", "NoExecute", {}}, kUnschedulableTaint}},
    {"doNoScheduleTaintingPass: a schedulable node loses the unschedulable taint",
     "board-1",
     {},
     {{"a", "", "NoSchedule", {}}, kUnschedulableTaint, {"b", "", "NoExecute", {}}},
     false,
     "linux",
     "arm64",
     "board-1",
     automatic("board-1", "linux", "arm64"),
     {{"a", "", "NoSchedule", {}}, {"b", "", "NoExecute", {}}}},
    {"doNoScheduleTaintingPass: only NoSchedule is managed",
     "board-1",
     {},
     {{taints::kUnschedulable, "", "NoExecute", {}}},
     false,
     "linux",
     "arm64",
     "board-1",
     automatic("board-1", "linux", "arm64"),
     {{taints::kUnschedulable, "", "NoExecute", {}}}},
};

struct ArchRow {
    const char* machine;
    const char* goarch;
};

const ArchRow kArchRows[] = {
    {"x86_64", "amd64"},
    {"amd64", "amd64"},
    {"aarch64", "arm64"},
    {"arm64", "arm64"},
    {"aarch64_be", "arm64be"},
    {"armv7l", "arm"},
    {"armv6l", "arm"},
    {"armv5tel", "arm"},
    {"armv8l", "arm"},
    {"arm", "arm"},
    {"i686", "386"},
    {"i586", "386"},
    {"i386", "386"},
    {"x86", "386"},
    {"riscv64", "riscv64"},
    {"ppc64le", "ppc64le"},
    {"ppc64", "ppc64"},
    {"s390x", "s390x"},
    {"loongarch64", "loong64"},
    {"mips", ""},
    {"mips64", ""},
    {"", ""},
    {"X86_64", ""},
    {"sparc64", ""},
};

std::string text(const Labels& ls) {
    std::string out;
    for (const auto& [k, v] : ls) out += k + "=" + v + "\n";
    return out;
}
std::string text(const std::vector<Taint>& ts) {
    std::string out;
    for (const auto& t : ts) out += t.key + "=" + t.value + ":" + t.effect + "\n";
    return out;
}

}  // namespace

TEST_GROUP(LocalNode){};

TEST(LocalNode, MakeLocalNodeFollowsKubelet) {
    for (const auto& row : kRows) {
        const Node n =
            make_local_node(row.node_name, row.labels, row.taints, row.unschedulable, row.os, row.arch);
        STRCMP_EQUAL_TEXT(row.want_name.c_str(), n.metadata.name.c_str(), row.name);
        STRCMP_EQUAL_TEXT(text(row.want_labels).c_str(), text(n.metadata.labels).c_str(), row.name);
        STRCMP_EQUAL_TEXT(text(row.want_taints).c_str(), text(n.taints).c_str(), row.name);
        CHECK_EQUAL_TEXT(row.unschedulable, n.unschedulable, row.name);
    }
}

TEST(LocalNode, GoarchFromMachine) {
    for (const auto& row : kArchRows)
        STRCMP_EQUAL_TEXT(row.goarch, goarch_from_machine(row.machine).c_str(), row.machine);
}

TEST(LocalNode, ObjectIsTheV1Node) {
    const Node n = make_local_node("board-1", {{"sensors", "bme280"}}, {{"dedicated", "", "NoSchedule", {}}},
                                   true, "linux", "arm64");
    STRCMP_EQUAL("v1", n.object["apiVersion"].get<std::string>().c_str());
    STRCMP_EQUAL("Node", n.object["kind"].get<std::string>().c_str());
    STRCMP_EQUAL("board-1", n.object["metadata"]["name"].get<std::string>().c_str());
    STRCMP_EQUAL("bme280", n.object["metadata"]["labels"]["sensors"].get<std::string>().c_str());
    CHECK(n.object["spec"]["unschedulable"].get<bool>());
    LONGS_EQUAL(2, n.object["spec"]["taints"].size());
    CHECK_FALSE(n.object["spec"]["taints"][0].contains("value"));  // omitempty
    STRCMP_EQUAL(taints::kUnschedulable, n.object["spec"]["taints"][1]["key"].get<std::string>().c_str());
}

TEST(LocalNode, CordonedBoardStillRunsDaemonSets) {
    // daemon_controller_test.go TestNodeShouldRunDaemonPod
    // ShouldRunDaemonPodOnUnschedulableNode, with the taint the control plane adds.
    const Node n = make_local_node("board-1", {}, {}, true, "linux", "arm64");
    DaemonSet ds;
    ds.spec.template_.spec.node_selector = {{"kubernetes.io/arch", "arm64"}};
    const Decision d = node_should_run_daemon_pod(n, ds);
    CHECK(d.should_run);
    CHECK(d.should_continue_running);
}

TEST(LocalNode, ClusterNodeMergedOverTheConfiguration) {
    // apiServer.nodeFromCluster: the Node object's labels win a shared key,
    // its taints come with the configured ones of another key/effect, and
    // the node lifecycle controller's not-ready taint reaches the decision
    // (which the DaemonSet controller's automatic tolerations then tolerate,
    // daemon/util AddOrUpdateDaemonPodTolerations).
    Node cluster;
    cluster.metadata.labels = {{"zone", "north"}, {"sensors", "none"}};
    cluster.taints = {{taints::kNotReady, "", "NoExecute", {}}, {"dedicated", "edge", "NoSchedule", {}}};
    const Node n = merge_cluster_node("board-1", {{"sensors", "bme280"}, {"daemonlet.io/board", "true"}},
                                      {{"dedicated", "", "NoSchedule", {}}, {"gpu", "", "NoSchedule", {}}},
                                      false, cluster, "linux", "arm64");
    STRCMP_EQUAL("none", n.metadata.labels.at("sensors").c_str());
    STRCMP_EQUAL("north", n.metadata.labels.at("zone").c_str());
    STRCMP_EQUAL("true", n.metadata.labels.at("daemonlet.io/board").c_str());
    STRCMP_EQUAL("board-1", n.metadata.labels.at("kubernetes.io/hostname").c_str());
    STRCMP_EQUAL("arm64", n.metadata.labels.at("kubernetes.io/arch").c_str());
    STRCMP_EQUAL("node.kubernetes.io/not-ready=:NoExecute\ndedicated=edge:NoSchedule\ngpu=:NoSchedule\n",
                 text(n.taints).c_str());
    CHECK_FALSE(n.unschedulable);
    DaemonSet ds;
    ds.spec.template_.spec.node_selector = {{"daemonlet.io/board", "true"}};
    ds.spec.template_.spec.tolerations = {{"dedicated", "Exists", "", "NoSchedule", {}},
                                          {"gpu", "Exists", "", "NoSchedule", {}}};
    CHECK(node_should_run_daemon_pod(n, ds).should_run);

    // Cordoned on either side: unschedulable, with the taint.
    cluster.unschedulable = true;
    CHECK(merge_cluster_node("board-1", {}, {}, false, cluster, "linux", "arm64").unschedulable);
    cluster.unschedulable = false;
    CHECK(merge_cluster_node("board-1", {}, {}, true, cluster, "linux", "arm64").unschedulable);
}
