// The NodeState component (agent/daemon/node_state.h) over a real SQLite
// store: the Node in force from the configuration and, with
// apiServer.nodeFromCluster, the cluster's Node (core merge_cluster_node),
// when it changed (every DaemonSet is re-evaluated then), what an offline
// boot restores, and the Node registerNode posts (the kubelet's
// initialNode).
#include <memory>
#include <string>
#include <vector>

#include "agent/daemon/node_state.h"
#include "agent/daemon/version.h"
#include "core/strings.h"
#include "tests/agent/daemon/fake_clock.h"
#include "tests/store/store_fixture.h"

#include <CppUTest/TestHarness.h>
// After TestHarness.h, which it needs.
#include <CppUTest/MemoryLeakWarningPlugin.h>

using namespace daemonlet;
using namespace daemonlet::testing;

namespace {

constexpr std::int64_t kStoreNow = 1'767'225'600'000;

// "key=value:effect" each, in order, for one readable comparison.
std::string node_taints_text(const std::vector<Taint>& taints) {
    std::vector<std::string> parts;
    for (const auto& t : taints) parts.push_back(t.key + "=" + t.value + ":" + t.effect);
    return join(parts, ",");
}

Taint node_taint(const std::string& key, const std::string& value, const std::string& effect) {
    Taint t;
    t.key = key;
    t.value = value;
    t.effect = effect;
    return t;
}

// The Node as the API server sends it: status and bookkeeping included.
Json api_node(const std::string& name, const Json& labels, const Json& spec) {
    return Json{{"apiVersion", "v1"},
                {"kind", "Node"},
                {"metadata", {{"name", name}, {"resourceVersion", "7"}, {"labels", labels}}},
                {"spec", spec},
                {"status", {{"phase", "Running"}}}};
}

ReflectorChanges node_upserted(Json node) {
    ReflectorChanges ch;
    ch.objects.push_back(std::move(node));
    return ch;
}

}  // namespace

TEST_GROUP(NodeState) {
    TempDir dir;
    std::string path = dir.file("daemonlet.db");
    FakeClock clock;
    AgentConfig config;
    std::unique_ptr<store::Store> store;
    std::unique_ptr<agent::NodeState> state;

    void setup() override {
        config.node_name = "board";
        config.node_labels = {{"zone", "a"}, {"role", "edge"}};
        config.node_taints = {node_taint("dedicated", "board", "NoSchedule")};
        config.api_server.enabled = true;
        config.api_server.node_from_cluster = true;
        store = MUST(store::Store::open(path, kStoreNow, nullptr));
    }
    // The agent's start: the stored cluster Node, then the Node in force.
    bool start() {
        state = std::make_unique<agent::NodeState>(config, *store, clock);
        state->load();
        return state->refresh();
    }
    // A reflector's changes as the agent hands them on: a refresh when the
    // cluster's Node changed. Whether the Node in force changed.
    bool deliver(ReflectorChanges ch) { return state->on_api_node(std::move(ch)) && state->refresh(); }
    std::string label(const std::string& key) {
        auto it = state->node().metadata.labels.find(key);
        return it == state->node().metadata.labels.end() ? "<none>" : it->second;
    }
    store::StoredNode stored() {
        auto n = MUST(store->get_node());
        CHECK_TRUE(n.has_value());
        return n.value_or(store::StoredNode{});
    }
    // A Node of the cluster that differs from the configuration in each field.
    Json cluster_node() {
        return api_node(
            "board", {{"zone", "b"}, {"rack", "1"}},
            {{"taints", Json::array({{{"key", "gpu"}, {"value", "yes"}, {"effect", "NoExecute"}}})},
             {"unschedulable", true}});
    }
};

// Without nodeFromCluster the configuration alone describes the board (the
// kubelet's --node-labels and --register-with-taints); a Node the cluster
// sends changes nothing. Mutation tried: refresh merging whenever a
// cluster Node is known (node_from_cluster not checked) -> fails.
TEST(NodeState, WithoutNodeFromClusterTheConfigurationAloneDescribesTheBoard) {
    config.api_server.node_from_cluster = false;
    CHECK_TRUE(start());  // the first Node in force is a change: it is stored
    STRCMP_EQUAL("board", state->name().c_str());
    STRCMP_EQUAL("a", label("zone").c_str());
    STRCMP_EQUAL("board", label("kubernetes.io/hostname").c_str());
    STRCMP_EQUAL("dedicated=board:NoSchedule", node_taints_text(state->node().taints).c_str());
    CHECK_FALSE(state->node().unschedulable);
    CHECK_TRUE(stored() == (store::StoredNode{state->node().metadata.labels, state->node().taints, false}));

    state->on_api_node(node_upserted(cluster_node()));
    CHECK_FALSE(state->refresh());
    STRCMP_EQUAL("a", label("zone").c_str());
    STRCMP_EQUAL("<none>", label("rack").c_str());
    STRCMP_EQUAL("dedicated=board:NoSchedule", node_taints_text(state->node().taints).c_str());
}

// nodeFromCluster: the cluster's labels over the configured ones, its
// taints plus the configured ones of another key and effect, unschedulable
// when either says so (core merge_cluster_node), stored with put_node; the
// unschedulable taint follows as the kubelet's node lifecycle keeps it.
// Mutation tried: refresh with make_local_node only (no merge) -> fails.
TEST(NodeState, NodeFromClusterMergesTheClusterNodeAndReportsTheChange) {
    CHECK_TRUE(start());
    CHECK_TRUE(deliver(node_upserted(cluster_node())));
    STRCMP_EQUAL("b", label("zone").c_str());
    STRCMP_EQUAL("edge", label("role").c_str());
    STRCMP_EQUAL("1", label("rack").c_str());
    STRCMP_EQUAL("gpu=yes:NoExecute,dedicated=board:NoSchedule,node.kubernetes.io/unschedulable=:NoSchedule",
                 node_taints_text(state->node().taints).c_str());
    CHECK_TRUE(state->node().unschedulable);
    CHECK_TRUE(stored() == (store::StoredNode{state->node().metadata.labels, state->node().taints, true}));
}

// The same Node again (a resync, a relist, a status update: a new
// resourceVersion, another status) is no change: no store write, no
// re-evaluation. Mutation tried: storing the whole object rather than
// node_subset's fields -> on_api_node reports the status change.
TEST(NodeState, TheSameNodeAgainIsNoChange) {
    start();
    CHECK_TRUE(deliver(node_upserted(cluster_node())));
    Json again = cluster_node();
    again["metadata"]["resourceVersion"] = "8";
    again["status"]["phase"] = "Pending";
    // Sentinels in the store: a write would replace them.
    MUST(store->put_meta("api.node", "sentinel"));
    const store::StoredNode sentinel{{{"sentinel", "1"}}, {}, false};
    MUST(store->put_node(sentinel));
    CHECK_FALSE(state->on_api_node(node_upserted(again)));
    CHECK_FALSE(state->refresh());
    ReflectorChanges relist = node_upserted(cluster_node());
    relist.replace = true;
    CHECK_FALSE(state->on_api_node(std::move(relist)));
    CHECK_FALSE(state->refresh());
    STRCMP_EQUAL("sentinel", MUST(store->get_meta("api.node")).value_or("<none>").c_str());
    CHECK_TRUE(stored() == sentinel);
}

// registerNode's status (the kubelet's setNodeStatus): the runtime's
// version as it answers, else "<runtime>://" (the exec runtime names
// daemonlet's version); Ready's runtime condition false while a container
// waits for a down runtime; the hostname is the Node's name.
TEST(NodeState, TheNodeStatusNamesTheRuntimeAndItsReadiness) {
    // The host's facts (machine id, boot id, ...) are read once per process
    // and kept (a function-local static): read first outside CppUTest's
    // leak detector.
    MemoryLeakWarningPlugin::saveAndDisableNewDeleteOverloads();
    {
        const AgentConfig plain;
        (void)agent::NodeState(plain, *store, clock).measure_status({});
    }
    MemoryLeakWarningPlugin::restoreNewDeleteOverloads();
    config.state_dir = dir.path();
    config.runtime_type = "exec";
    start();
    agent::NodeState::StatusInputs in;
    in.ips = {"10.0.0.2"};
    in.container_waits_for_runtime = true;
    NodeStatusInput s = state->measure_status(in);
    STRCMP_EQUAL((std::string("exec://") + agent::daemonlet_version()).c_str(),
                 s.facts.container_runtime_version.c_str());
    CHECK_FALSE(s.runtime_ready);
    STRCMP_EQUAL("container runtime is down", s.runtime_message.c_str());
    STRCMP_EQUAL("board", s.hostname.c_str());
    LONGS_EQUAL(1, s.ips.size());
    STRCMP_EQUAL("10.0.0.2", s.ips[0].c_str());
    CHECK_TRUE(s.measurements.memory_capacity > 0);  // read from this machine

    config.runtime_type = "runc";
    in.runtime_version = "runc://1.1.5";
    in.container_waits_for_runtime = false;
    s = state->measure_status(in);
    STRCMP_EQUAL("runc://1.1.5", s.facts.container_runtime_version.c_str());
    CHECK_TRUE(s.runtime_ready);
    in.runtime_version.clear();
    in.runtime_name = "runc";
    STRCMP_EQUAL("runc://", state->measure_status(in).facts.container_runtime_version.c_str());
}

// unschedulable alone (kubectl cordon) is a change of the Node in force,
// stored as such (the unschedulable taint follows it, so the taints change
// with it too). Mutation tried: put_node storing unschedulable false -> fails.
TEST(NodeState, ACordonAloneIsAChange) {
    start();
    Json node = cluster_node();
    node["spec"]["unschedulable"] = false;
    CHECK_TRUE(deliver(node_upserted(node)));
    CHECK_FALSE(state->node().unschedulable);
    node["spec"]["unschedulable"] = true;
    CHECK_TRUE(deliver(node_upserted(node)));
    CHECK_TRUE(state->node().unschedulable);
    CHECK_TRUE(stored().unschedulable);
}

// The Node deleted, or a relist without it: the configuration alone
// describes the board again, and the store forgets the cluster's Node.
// Mutation tried: on_api_node ignoring `deleted` (only a relist resets)
// -> the first half fails.
TEST(NodeState, TheNodeGoneFallsBackToTheConfiguration) {
    start();
    CHECK_TRUE(deliver(node_upserted(cluster_node())));
    ReflectorChanges gone;
    gone.deleted.push_back(cluster_node());
    CHECK_TRUE(deliver(std::move(gone)));
    STRCMP_EQUAL("a", label("zone").c_str());
    STRCMP_EQUAL("<none>", label("rack").c_str());
    STRCMP_EQUAL("dedicated=board:NoSchedule", node_taints_text(state->node().taints).c_str());
    CHECK_FALSE(state->node().unschedulable);
    STRCMP_EQUAL("", MUST(store->get_meta("api.node")).value_or("<absent>").c_str());

    CHECK_TRUE(deliver(node_upserted(cluster_node())));
    ReflectorChanges relist;
    relist.replace = true;  // the whole collection: without this node
    relist.objects.push_back(api_node("other", {{"zone", "c"}}, Json::object()));
    CHECK_TRUE(deliver(std::move(relist)));
    STRCMP_EQUAL("a", label("zone").c_str());
    CHECK_FALSE(state->node().unschedulable);
}

// The cluster's Node survives a restart: an offline boot places pods as
// the connected agent did (its first refresh is the merged Node).
// Mutation tried: load() not reading "api.node" -> fails.
TEST(NodeState, TheClusterNodeSurvivesARestart) {
    start();
    CHECK_TRUE(deliver(node_upserted(cluster_node())));
    state.reset();
    store.reset();
    store = MUST(store::Store::open(path, kStoreNow, nullptr));
    CHECK_TRUE(start());
    STRCMP_EQUAL("b", label("zone").c_str());
    STRCMP_EQUAL("1", label("rack").c_str());
    CHECK_TRUE(state->node().unschedulable);
    // The same Node from the cluster once it connects: no change.
    CHECK_FALSE(state->on_api_node(node_upserted(cluster_node())));
}

// A cluster Node that does not decode keeps the configuration's labels and
// taints (logged), rather than a half-read Node. Mutation tried: merging
// the partly decoded Node despite its errors -> fails.
TEST(NodeState, AClusterNodeThatDoesNotDecodeKeepsTheConfiguration) {
    start();
    Json bad = cluster_node();
    bad["spec"]["unschedulable"] = "yes";
    CHECK_TRUE(state->on_api_node(node_upserted(bad)));
    CHECK_FALSE(state->refresh());
    STRCMP_EQUAL("a", label("zone").c_str());
    STRCMP_EQUAL("<none>", label("rack").c_str());
    STRCMP_EQUAL("dedicated=board:NoSchedule", node_taints_text(state->node().taints).c_str());
}

// The Node reflector's other objects are not this board's: ignored.
// Mutation tried: on_api_node without the name check -> fails.
TEST(NodeState, AnotherNodesObjectIsIgnored) {
    start();
    CHECK_FALSE(
        state->on_api_node(node_upserted(api_node("other", {{"zone", "c"}}, {{"unschedulable", true}}))));
    CHECK_FALSE(state->refresh());
    STRCMP_EQUAL("a", label("zone").c_str());
    CHECK_FALSE(state->node().unschedulable);
    STRCMP_EQUAL("<absent>", MUST(store->get_meta("api.node")).value_or("<absent>").c_str());
}

// registerNode posts the kubelet's initialNode: the automatic labels and
// nodeLabels, registerWithTaints (not nodeTaints, which are the board's
// own placement), and the unschedulable taint when nodeUnschedulable
// (kubelet_node_status.go initialNode). Mutation tried: nodeTaints in the
// registration -> fails.
TEST(NodeState, TheRegistrationUsesRegisterWithTaintsAndTheUnschedulableTaint) {
    config.api_server.register_with_taints = {node_taint("registered", "", "NoExecute")};
    config.node_unschedulable = true;
    start();
    Json object = state->registration_object();
    STRCMP_EQUAL("board", object["metadata"]["name"].get<std::string>().c_str());
    STRCMP_EQUAL("a", object["metadata"]["labels"]["zone"].get<std::string>().c_str());
    CHECK_TRUE(object["spec"]["unschedulable"].get<bool>());
    std::vector<std::string> taints;
    for (const Json& t : object["spec"]["taints"])
        taints.push_back(t["key"].get<std::string>() + ":" + t["effect"].get<std::string>());
    STRCMP_EQUAL("registered:NoExecute,node.kubernetes.io/unschedulable:NoSchedule",
                 join(taints, ",").c_str());
}
