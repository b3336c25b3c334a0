// The board's Node status. Rows pin the kubelet's rules by name:
// pkg/kubelet/eviction (DefaultEvictionHard, thresholdsMet,
// nodeConditionsObservedSince), pkg/kubelet/nodestatus/setters.go
// (MemoryPressureCondition, DiskPressureCondition, PIDPressureCondition,
// ReadyCondition, NodeAddress, MachineInfo), pkg/util/node PatchNodeStatus
// (preparePatchBytesforNodeStatus, fixupPatchForNodeStatusAddresses) and
// kubelet_node_status.go (nodeStatusHasChanged, tryUpdateNodeStatus).
#include <string>

#include "core/cluster_report.h"
#include "core/node_status.h"

// CppUTest last: its leak-detection macros redefine new.
#include <CppUTest/TestHarness.h>

using namespace daemonlet;

namespace {

constexpr std::int64_t Mi = 1 << 20;
constexpr std::int64_t kMin = 60'000;

NodeMeasurements healthy() {
    NodeMeasurements m;
    m.cpus = 4;
    m.memory_capacity = 4096 * Mi;
    m.memory_available = 2048 * Mi;
    m.nodefs_capacity = m.imagefs_capacity = 10000 * Mi;
    m.nodefs_available = m.imagefs_available = 5000 * Mi;
    m.nodefs_inodes = 100000;
    m.nodefs_inodes_free = 50000;
    m.pid_max = 32768;
    m.pids = 200;
    return m;
}

struct PressureRow {
    const char* name;
    NodeMeasurements m;
    std::optional<std::int64_t> pid_threshold;
    NodePressure want;
};

NodeMeasurements with(NodeMeasurements m, void (*f)(NodeMeasurements&)) {
    f(m);
    return m;
}

const PressureRow kPressureRows[] = {
    {"DefaultEvictionHard: nothing met", healthy(), {}, {}},
    {"memory.available<100Mi: 99Mi is pressure",
     with(healthy(), [](NodeMeasurements& m) { m.memory_available = 99 * Mi; }),
     {},
     {true, false, false}},
    {"memory.available<100Mi: exactly 100Mi is not",
     with(healthy(), [](NodeMeasurements& m) { m.memory_available = 100 * Mi; }),
     {},
     {}},
    {"nodefs.available<10%: 9% is DiskPressure",
     with(healthy(),
          [](NodeMeasurements& m) {
              m.nodefs_available = 900 * Mi;
              m.imagefs_capacity = 0;
          }),
     {},
     {false, true, false}},
    {"nodefs.inodesFree<5%",
     with(healthy(), [](NodeMeasurements& m) { m.nodefs_inodes_free = 4999; }),
     {},
     {false, true, false}},
    {"imagefs.available<15%: 14% of the same filesystem is DiskPressure",
     with(healthy(), [](NodeMeasurements& m) { m.imagefs_available = 1400 * Mi; }),
     {},
     {false, true, false}},
    {"thresholdsMet: an unmeasured signal (-1) meets nothing",
     with(healthy(),
          [](NodeMeasurements& m) {
              m.memory_available = -1;
              m.nodefs_available = -1;
              m.imagefs_available = -1;
              m.nodefs_inodes_free = -1;
          }),
     {},
     {}},
    {"pid.available: no default threshold, so no PIDPressure",
     with(healthy(), [](NodeMeasurements& m) { m.pids = 32767; }),
     {},
     {}},
    {"pid.available<1000 when configured",
     with(healthy(), [](NodeMeasurements& m) { m.pids = 31769; }),
     1000,
     {false, false, true}},
};

}  // namespace

TEST_GROUP(NodeStatus){};

TEST(NodeStatus, ThresholdsMetAgainstTheKubeletsDefaults) {
    for (const auto& row : kPressureRows) {
        EvictionThresholds t;
        t.pid_available = row.pid_threshold;
        PressureObservations seen;
        NodePressure got = observe_pressure(row.m, t, 1000, seen);
        CHECK_TEXT(got == row.want, row.name);
    }
}

TEST(NodeStatus, PressureHoldsForTheTransitionPeriodAfterTheThresholdIsNoLongerMet) {
    // nodeConditionsObservedSince with evictionPressureTransitionPeriod 5m.
    EvictionThresholds t;
    PressureObservations seen;
    NodeMeasurements low = healthy();
    low.memory_available = 10 * Mi;
    CHECK(observe_pressure(low, t, 0, seen).memory);
    CHECK(observe_pressure(healthy(), t, 5 * kMin - 1, seen).memory);
    CHECK_FALSE(observe_pressure(healthy(), t, 5 * kMin, seen).memory);
}

TEST(NodeStatus, BinaryQuantitiesAsTheApiServerPrintsThem) {
    struct Row {
        std::int64_t bytes;
        const char* want;
    } rows[] = {{0, "0"},
                {1500, "1500"},
                {1024, "1Ki"},
                {4096 * Mi, "4Gi"},
                {8231120896, "8038204Ki"},
                {1023 * Mi + 1, "1072693249"}};
    for (const auto& r : rows) STRCMP_EQUAL(r.want, binary_quantity(r.bytes).c_str());
}

namespace {

NodeStatusInput input() {
    NodeStatusInput in;
    in.measurements = healthy();
    in.facts.machine_id = "m1";
    in.facts.boot_id = "b1";
    in.facts.architecture = "arm64";
    in.facts.kubelet_version = kubelet_version_string("0.9.0");
    in.ips = {"192.168.1.20", "fd00::20"};
    in.hostname = "board-1";
    return in;
}

const Json& cond(const Json& status, const std::string& type) {
    for (const Json& c : status["conditions"])
        if (c["type"] == type) return c;
    FAIL(("no condition " + type).c_str());
    return status;
}

}  // namespace

TEST(NodeStatus, SettersFillConditionsAddressesCapacityAllocatableAndNodeInfo) {
    Json st = node_status(input(), nullptr, 1'700'000'000'000);
    // setters.go order and reasons.
    const char* order[] = {"MemoryPressure", "DiskPressure", "PIDPressure", "Ready"};
    for (std::size_t i = 0; i < 4; ++i)
        STRCMP_EQUAL(order[i], st["conditions"][i]["type"].get<std::string>().c_str());
    STRCMP_EQUAL("KubeletReady", cond(st, "Ready")["reason"].get<std::string>().c_str());
    STRCMP_EQUAL("True", cond(st, "Ready")["status"].get<std::string>().c_str());
    STRCMP_EQUAL("KubeletHasNoDiskPressure", cond(st, "DiskPressure")["reason"].get<std::string>().c_str());
    // NodeAddress: InternalIPs, then the Hostname.
    CHECK(st["addresses"] == Json::parse(R"([{"type":"InternalIP","address":"192.168.1.20"},
        {"type":"InternalIP","address":"fd00::20"},{"type":"Hostname","address":"board-1"}])"));
    // MachineInfo: allocatable = capacity minus the hard eviction thresholds.
    CHECK(st["capacity"] ==
          Json::parse(R"({"cpu":"4","memory":"4Gi","pods":"110","ephemeral-storage":"10000Mi"})"));
    STRCMP_EQUAL("3996Mi", st["allocatable"]["memory"].get<std::string>().c_str());
    // 10000Mi - int64(10000Mi * float64(float32(0.1))): the kubelet's arithmetic.
    STRCMP_EQUAL("9437183985", st["allocatable"]["ephemeral-storage"].get<std::string>().c_str());
    STRCMP_EQUAL("v1.30.0-daemonlet-0.9.0", st["nodeInfo"]["kubeletVersion"].get<std::string>().c_str());
    STRCMP_EQUAL("linux", st["nodeInfo"]["operatingSystem"].get<std::string>().c_str());
    CHECK_FALSE(st["nodeInfo"].contains("systemUUID"));  // not readable: left out
}

TEST(NodeStatus, ReadyConditionTurnsFalseWithTheRuntimeAndKeepsItsTransitionTimeWhileItHolds) {
    NodeStatusInput in = input();
    Json first = node_status(in, nullptr, 1'700'000'000'000);
    Json node = {{"status", first}};
    Json later = node_status(in, &node, 1'700'000'060'000);
    CHECK(cond(later, "Ready")["lastTransitionTime"] == cond(first, "Ready")["lastTransitionTime"]);
    CHECK(cond(later, "Ready")["lastHeartbeatTime"] != cond(first, "Ready")["lastHeartbeatTime"]);
    in.runtime_ready = false;
    in.runtime_message = "container runtime is down";
    Json down = node_status(in, &node, 1'700'000'060'000);
    STRCMP_EQUAL("False", cond(down, "Ready")["status"].get<std::string>().c_str());
    STRCMP_EQUAL("KubeletNotReady", cond(down, "Ready")["reason"].get<std::string>().c_str());
    CHECK(cond(down, "Ready")["lastTransitionTime"] == cond(down, "Ready")["lastHeartbeatTime"]);
}

TEST(NodeStatus, AMalformedNodeFromTheServerIsTakenAsNoConditions) {
    // Whatever the server sends: wrong types are no condition, never a throw.
    for (const char* text :
         {R"({"status":{"conditions":[{"type":1,"status":true},"x",{"type":"Ready","status":5,
             "lastTransitionTime":7}]},"metadata":{"labels":[]}})",
          R"({"status":[]})", R"([])", R"({"status":{"conditions":{"type":"Ready"}}})"}) {
        Json node = Json::parse(text);
        Json st = node_status(input(), &node, 1'700'000'000'000);
        STRCMP_EQUAL(rfc3339(1'700'000'000'000).c_str(),
                     cond(st, "Ready")["lastTransitionTime"].get<std::string>().c_str());
        Json patch = node_status_patch(node, st, {{"kubernetes.io/os", "linux"}});
        CHECK(patch["status"]["conditions"].size() == 4);
    }
}

TEST(NodeStatus, ReadyAfterTheControllersUnknownIsATransition) {
    // ReadyCondition: a status other than the server's (Unknown, set by the
    // node lifecycle controller) is a transition at now.
    Json node = Json::parse(R"({"status":{"conditions":[{"type":"Ready","status":"Unknown",
        "lastTransitionTime":"2020-01-01T00:00:00Z","reason":"NodeStatusUnknown"}]}})");
    Json st = node_status(input(), &node, 1'700'000'000'000);
    CHECK(cond(st, "Ready")["lastTransitionTime"] == rfc3339(1'700'000'000'000));
    Json patch = node_status_patch(node, st, {});
    bool has_ready = false;
    for (const Json& c : patch["status"]["conditions"]) has_ready = has_ready || c["type"] == "Ready";
    CHECK(has_ready);
}

struct PatchRow {
    const char* name;
    const char* old_node;
    const char* status;
    Labels reconcile;
    const char* want;
};

const PatchRow kPatchRows[] = {
    {"preparePatchBytesforNodeStatus: the same status is an empty patch",
     R"({"metadata":{"labels":{"a":"b"}},"spec":{"taints":[{"key":"k","effect":"NoSchedule"}]},
        "status":{"capacity":{"cpu":"4"}}})",
     R"({"capacity":{"cpu":"4"}})",
     {},
     "{}"},
    {"CreateTwoWayMergePatch: the server's key order is not a change",
     R"({"status":{"addresses":[{"address":"10.0.0.1","type":"InternalIP"}],
        "conditions":[{"status":"True","type":"Ready"}],"nodeInfo":{"bootID":"b","machineID":"m"}}})",
     R"({"addresses":[{"type":"InternalIP","address":"10.0.0.1"}],"conditions":[{"type":"Ready","status":"True"}],
        "nodeInfo":{"machineID":"m","bootID":"b"}})",
     {},
     "{}"},
    {"CreateTwoWayMergePatch: only the changed keys of a map; others' keys stay",
     R"({"status":{"capacity":{"cpu":"4","example.com/dongle":"1","pods":"110"}}})",
     R"({"capacity":{"cpu":"2","pods":"110"}})",
     {},
     R"({"status":{"capacity":{"cpu":"2"}}})"},
    {"patchMergeKey type: changed conditions and $setElementOrder",
     R"({"status":{"conditions":[{"type":"Ready","status":"True"},{"type":"DiskPressure","status":"False"}]}})",
     R"({"conditions":[{"type":"DiskPressure","status":"True"},{"type":"Ready","status":"True"}]})",
     {},
     R"({"status":{"$setElementOrder/conditions":[{"type":"DiskPressure"},{"type":"Ready"}],
        "conditions":[{"type":"DiskPressure","status":"True"}]}})"},
    {"fixupPatchForNodeStatusAddresses: changed addresses replace the list",
     R"({"status":{"addresses":[{"type":"InternalIP","address":"10.0.0.1"}]}})",
     R"({"addresses":[{"type":"InternalIP","address":"10.0.0.2"}]})",
     {},
     R"({"status":{"addresses":[{"type":"InternalIP","address":"10.0.0.2"},{"$patch":"replace"}]}})"},
    {"preparePatchBytesforNodeStatus: first addresses are a plain list",
     R"({"status":{}})",
     R"({"addresses":[{"type":"Hostname","address":"b"}]})",
     {},
     R"({"status":{"addresses":[{"type":"Hostname","address":"b"}]}})"},
    {"tryUpdateNodeStatus: kubernetes.io/os and arch reconciled, admin labels untouched",
     R"({"metadata":{"labels":{"kubernetes.io/arch":"amd64","kubernetes.io/os":"linux","admin":"x"}},
        "status":{}})",
     R"({})", Labels{{"kubernetes.io/os", "linux"}, {"kubernetes.io/arch", "arm64"}},
     R"({"metadata":{"labels":{"kubernetes.io/arch":"arm64"}}})"},
};

TEST(NodeStatus, PatchNodeStatusAsTheKubeletComputesIt) {
    for (const auto& row : kPatchRows) {
        Json got = node_status_patch(Json::parse(row.old_node), Json::parse(row.status), row.reconcile);
        Json want = Json::parse(row.want);
        CHECK_TEXT(got == want, (std::string(row.name) + ": got " + got.dump()).c_str());
    }
}

TEST(NodeStatus, StatusHasChangedIgnoresHeartbeatsAndConditionOrder) {
    // nodeStatusHasChanged, then tryUpdateNodeStatus's report frequency.
    Json a = Json::parse(R"({"conditions":[{"type":"Ready","status":"True","lastHeartbeatTime":"1"},
        {"type":"DiskPressure","status":"False","lastHeartbeatTime":"1"}],"capacity":{"cpu":"4"}})");
    Json b = Json::parse(R"({"conditions":[{"type":"DiskPressure","status":"False","lastHeartbeatTime":"2"},
        {"type":"Ready","status":"True","lastHeartbeatTime":"2"}],"capacity":{"cpu":"4"}})");
    CHECK_FALSE(node_status_changed(a, b));
    b["capacity"]["cpu"] = "2";
    CHECK(node_status_changed(a, b));
    CHECK(status_report_due(false, std::nullopt, 0));
    CHECK_FALSE(status_report_due(false, 0, kNodeStatusReportFrequencyMs - 1));
    CHECK(status_report_due(false, 0, kNodeStatusReportFrequencyMs));
    CHECK(status_report_due(true, 0, 1));
}

TEST(NodeStatus, LateLeaseRenewalRepostsTheStatus) {
    // Departure from tryUpdateNodeStatus (no GET every 10 s): a Lease
    // renewed more than 1.5 intervals after the last one may have been
    // seen stale (tryUpdateNodeHealth: Ready Unknown, tainted unreachable).
    CHECK_FALSE(lease_gap_reposts_status(std::nullopt, 100'000, 10'000));  // first renewal
    CHECK_FALSE(lease_gap_reposts_status(0, 10'000, 10'000));              // on time
    CHECK_FALSE(lease_gap_reposts_status(0, 15'000, 10'000));              // a slow request
    CHECK(lease_gap_reposts_status(0, 15'001, 10'000));                    // paused past it
    CHECK(lease_gap_reposts_status(1'000, 60'000, 10'000));
}

TEST(NodeStatus, RegistrationIsTheLocalNodeWithItsStatus) {
    Json local = Json::parse(R"({"apiVersion":"v1","kind":"Node","metadata":{"name":"b","labels":{"x":"y"}},
        "spec":{"taints":[{"key":"board","effect":"NoSchedule"}]}})");
    Json st = node_status(input(), nullptr, 0);
    Json n = registration_node(local, st);
    CHECK(n["spec"] == local["spec"]);
    CHECK(n["metadata"] == local["metadata"]);
    CHECK(n["status"] == st);
}
