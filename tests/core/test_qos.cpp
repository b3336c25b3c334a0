// QoS class and OOM score adjustment. Rows pin
// pkg/apis/core/v1/helper/qos/qos_test.go TestGetPodQOS and
// pkg/kubelet/qos/policy_test.go TestGetContainerOOMScoreAdjust (memory
// capacity 4000000000 there, as here).
#include <string>
#include <utility>
#include <vector>

#include "core/qos.h"
#include "core/quantity.h"

// CppUTest last: its leak-detection macros redefine new.
#include <CppUTest/TestHarness.h>

using namespace daemonlet;

namespace {

using Resources = std::vector<std::pair<const char*, const char*>>;

Container container(const char* name, Resources requests, Resources limits) {
    Container c;
    c.name = name;
    for (const auto& [k, v] : requests) c.resources.requests[k] = parse_quantity(v).value();
    for (const auto& [k, v] : limits) c.resources.limits[k] = parse_quantity(v).value();
    return c;
}

struct QosRow {
    const char* name;
    std::vector<Container> containers;
    std::vector<Container> init_containers;
    QOSClass expected;
};

// Made per test, not static: CppUTest's leak check counts what a test leaves.
std::vector<QosRow> qos_rows() {
    return {
        {"TestGetPodQOS: no requests nor limits is BestEffort",
         {container("a", {}, {})},
         {},
         QOSClass::BestEffort},
        {"TestGetPodQOS: cpu and memory limits only are Guaranteed (requests default to them)",
         {container("a", {}, {{"cpu", "100m"}, {"memory", "100Mi"}})},
         {},
         QOSClass::Guaranteed},
        {"TestGetPodQOS: requests equal to limits in every container are Guaranteed",
         {container("a", {{"cpu", "100m"}, {"memory", "100Mi"}}, {{"cpu", "100m"}, {"memory", "100Mi"}}),
          container("b", {{"cpu", "1"}, {"memory", "1Gi"}}, {{"cpu", "1"}, {"memory", "1Gi"}})},
         {},
         QOSClass::Guaranteed},
        {"TestGetPodQOS: a BestEffort container next to a Guaranteed one is Burstable",
         {container("a", {}, {{"cpu", "100m"}, {"memory", "100Mi"}}), container("b", {}, {})},
         {},
         QOSClass::Burstable},
        {"TestGetPodQOS: a request below its limit is Burstable",
         {container("a", {{"cpu", "50m"}, {"memory", "100Mi"}}, {{"cpu", "100m"}, {"memory", "100Mi"}})},
         {},
         QOSClass::Burstable},
        {"TestGetPodQOS: a memory limit without a cpu limit is Burstable",
         {container("a", {}, {{"memory", "100Mi"}})},
         {},
         QOSClass::Burstable},
        {"TestGetPodQOS: only cpu and memory count (ephemeral-storage alone is BestEffort)",
         {container("a", {{"ephemeral-storage", "1Gi"}}, {{"ephemeral-storage", "1Gi"}})},
         {},
         QOSClass::BestEffort},
        {"TestGetPodQOS: zero quantities are none",
         {container("a", {{"cpu", "0"}}, {})},
         {},
         QOSClass::BestEffort},
        {"GetPodQOS counts init containers: a BestEffort init container makes a Guaranteed pod Burstable",
         {container("a", {}, {{"cpu", "100m"}, {"memory", "100Mi"}})},
         {container("init", {}, {})},
         QOSClass::Burstable},
        {"GetPodQOS counts init containers: a requesting init container makes a BestEffort pod Burstable",
         {container("a", {}, {})},
         {container("init", {{"memory", "10Mi"}}, {})},
         QOSClass::Burstable},
    };
}

}  // namespace

TEST_GROUP(PodQos){};

TEST(PodQos, ClassAsGetPodQOS) {
    const auto rows = qos_rows();
    for (const auto& row : rows) {
        PodSpec spec;
        spec.containers = row.containers;
        spec.init_containers = row.init_containers;
        STRCMP_EQUAL_TEXT(to_string(row.expected), to_string(pod_qos_class(spec)), row.name);
    }
}

namespace {

constexpr std::int64_t kCapacity = 4000000000;  // policy_test.go's standardMemoryAmount

struct OomRow {
    const char* name;
    std::vector<Container> containers;
    std::vector<Container> init_containers;
    std::string priority_class;
    std::string which;  // the container asked for
    int expected;
};

std::vector<OomRow> oom_rows() {
    return {
        {"TestGetContainerOOMScoreAdjust bestEffort: 1000 (besteffortOOMScoreAdj)",
         {container("a", {}, {})},
         {},
         "",
         "a",
         1000},
        {"TestGetContainerOOMScoreAdjust guaranteed: -997 (guaranteedOOMScoreAdj)",
         {container("a", {}, {{"cpu", "1"}, {"memory", "1Gi"}})},
         {},
         "",
         "a",
         -997},
        {"TestGetContainerOOMScoreAdjust critical: system-node-critical BestEffort gets -997 "
         "(IsNodeCriticalPod)",
         {container("a", {}, {})},
         {},
         "system-node-critical",
         "a",
         -997},
        {"system-cluster-critical is not node-critical: BestEffort stays 1000",
         {container("a", {}, {})},
         {},
         "system-cluster-critical",
         "a",
         1000},
        {"TestGetContainerOOMScoreAdjust burstable: half the memory requested scores 500",
         {container("a", {{"memory", "2000000000"}}, {})},
         {},
         "",
         "a",
         500},
        {"burstable: requesting all the node's memory floors at 3 (1000 + guaranteedOOMScoreAdj)",
         {container("a", {{"memory", "4000000000"}}, {})},
         {},
         "",
         "a",
         3},
        {"burstable: more than the node's memory floors at 3 too",
         {container("a", {{"memory", "8000000000"}}, {})},
         {},
         "",
         "a",
         3},
        {"burstable: a tiny request that rounds to 1000 gets 999 (below BestEffort)",
         {container("a", {{"memory", "1"}}, {})},
         {},
         "",
         "a",
         999},
        {"burstable: a cpu-only request has no memory request: 999",
         {container("a", {{"cpu", "100m"}}, {})},
         {},
         "",
         "a",
         999},
        {"burstable: a memory limit alone is the request (SetDefaults_Pod): 1000 - 1000*400000000/4e9 = 900",
         {container("a", {}, {{"memory", "400000000"}})},
         {},
         "",
         "a",
         900},
        {"burstable sidecar (1.31+): no higher than the regular container with the least memory",
         {container("a", {{"memory", "2000000000"}}, {})},
         {[] {
             Container c = container("side", {{"memory", "400000000"}}, {});
             c.restart_policy = "Always";
             return c;
         }()},
         "",
         "side",
         500},
    };
}

}  // namespace

TEST_GROUP(OomScoreAdj){};

TEST(OomScoreAdj, AsGetContainerOOMScoreAdjust) {
    const auto rows = oom_rows();
    for (const auto& row : rows) {
        PodSpec spec;
        spec.containers = row.containers;
        spec.init_containers = row.init_containers;
        spec.priority_class_name = row.priority_class;
        const Container* which = nullptr;
        for (const auto& c : spec.containers)
            if (c.name == row.which) which = &c;
        for (const auto& c : spec.init_containers)
            if (c.name == row.which) which = &c;
        CHECK_TEXT(which != nullptr, row.name);
        LONGS_EQUAL_TEXT(row.expected, container_oom_score_adj(spec, *which, kCapacity), row.name);
    }
}

TEST(OomScoreAdj, RestrictedAsContainerdRestrictOOMScoreAdj) {
    // restrictOOMScoreAdj: max(wanted, the current process's score).
    LONGS_EQUAL(0, restrict_oom_score_adj(-997, 0));
    LONGS_EQUAL(500, restrict_oom_score_adj(500, 0));
    LONGS_EQUAL(-500, restrict_oom_score_adj(-997, -500));
    LONGS_EQUAL(-997, restrict_oom_score_adj(-997, std::nullopt));
}
