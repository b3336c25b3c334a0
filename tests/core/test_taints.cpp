// Taints and tolerations. Rows from k8s.io/api/core/v1/toleration_test.go
// (TestTolerationToleratesTaint), k8s.io/component-helpers/scheduling/corev1/
// helpers_test.go (TestFindMatchingUntoleratedTaint) and
// pkg/apis/core/v1/helper/helpers_test.go (TestTolerationsTolerateTaintsWithFilter);
// the daemon toleration rows pin AddOrUpdateDaemonPodTolerations and
// AddOrUpdateTolerationInPodSpec (pkg/controller/daemon/util/daemonset_util.go,
// pkg/apis/core/v1/helper/helpers.go), which upstream tests only through
// the controller (TestNotReadyNodeDaemonLaunchesPod and friends).
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/taints.h"

// CppUTest last: its leak-detection macros redefine new.
#include <CppUTest/TestHarness.h>

using namespace daemonlet;

namespace {

Toleration tol(std::string key, std::string op, std::string value, std::string effect,
               std::optional<std::int64_t> seconds = std::nullopt) {
    return Toleration{std::move(key), std::move(op), std::move(value), std::move(effect), seconds};
}
Taint taint(std::string key, std::string value, std::string effect) {
    return Taint{std::move(key), std::move(value), std::move(effect), {}};
}

struct ToleratesRow {
    const char* name;
    Toleration toleration;
    Taint taint;
    bool tolerated;
};

const ToleratesRow kToleratesRows[] = {
    {"TestTolerationToleratesTaint: same key and effect, Exists, taint without value",
     tol("foo", "Exists", "", "NoSchedule"), taint("foo", "", "NoSchedule"), true},
    {"TestTolerationToleratesTaint: same key and effect, Exists, taint with a value",
     tol("foo", "Exists", "", "NoSchedule"), taint("foo", "bar", "NoSchedule"), true},
    {"TestTolerationToleratesTaint: empty key and Exists matches all taints of the effect",
     tol("", "Exists", "", "NoSchedule"), taint("foo", "bar", "NoSchedule"), true},
    {"TestTolerationToleratesTaint: same key, effect and value, Equal",
     tol("foo", "Equal", "bar", "NoSchedule"), taint("foo", "bar", "NoSchedule"), true},
    {"TestTolerationToleratesTaint: same key and effect, different values, Equal",
     tol("foo", "Equal", "value1", "NoSchedule"), taint("foo", "value2", "NoSchedule"), false},
    {"TestTolerationToleratesTaint: same key and value, different effects, Equal",
     tol("foo", "Equal", "bar", "NoSchedule"), taint("foo", "bar", "NoExecute"), false},
    // The Gt/Lt rows come from a later table (TaintTolerationComparisonOperators); in
    // 1.25-1.30 an operator other than Equal/Exists tolerates nothing.
    {"TestTolerationToleratesTaint (later Gt row): Gt tolerates nothing in 1.25-1.30",
     tol("node.kubernetes.io/sla", "Gt", "750", "NoSchedule"),
     taint("node.kubernetes.io/sla", "950", "NoSchedule"), false},
    {"TestTolerationToleratesTaint (later Lt row): Lt tolerates nothing in 1.25-1.30",
     tol("node.kubernetes.io/sla", "Lt", "950", "NoSchedule"),
     taint("node.kubernetes.io/sla", "800", "NoSchedule"), false},
    // toleration.go rules the table leaves implicit.
    {"daemonlet: an effect-less toleration matches every effect", tol("foo", "Exists", "", ""),
     taint("foo", "bar", "NoExecute"), true},
    {"daemonlet: an effect-less toleration matches PreferNoSchedule", tol("foo", "Equal", "bar", ""),
     taint("foo", "bar", "PreferNoSchedule"), true},
    {"daemonlet: empty key, Exists, no effect tolerates everything", tol("", "Exists", "", ""),
     taint("dedicated", "sensors", "NoExecute"), true},
    {"daemonlet: an empty operator means Equal", tol("foo", "", "bar", "NoSchedule"),
     taint("foo", "bar", "NoSchedule"), true},
    {"daemonlet: an empty operator compares values", tol("foo", "", "bar", "NoSchedule"),
     taint("foo", "baz", "NoSchedule"), false},
    {"daemonlet: Equal with empty values", tol("foo", "Equal", "", "NoSchedule"),
     taint("foo", "", "NoSchedule"), true},
    {"daemonlet: Exists ignores the toleration's value", tol("foo", "Exists", "ignored", "NoSchedule"),
     taint("foo", "bar", "NoSchedule"), true},
    {"daemonlet: keys must be equal", tol("foo", "Exists", "", "NoSchedule"), taint("bar", "", "NoSchedule"),
     false},
    {"daemonlet: operators are case sensitive", tol("foo", "exists", "", "NoSchedule"),
     taint("foo", "", "NoSchedule"), false},
    {"daemonlet: tolerationSeconds play no part", tol("foo", "Exists", "", "NoExecute", 0),
     taint("foo", "", "NoExecute"), true},
};

enum class Filter { Nil, None, All, NoExecute, NoScheduleOrNoExecute };

TaintFilter filter_of(Filter f) {
    switch (f) {
    case Filter::Nil: return {};
    case Filter::None: return [](const Taint&) { return false; };
    case Filter::All: return [](const Taint&) { return true; };
    case Filter::NoExecute: return is_no_execute;
    case Filter::NoScheduleOrNoExecute: return is_no_schedule_or_no_execute;
    }
    return {};
}

struct UntoleratedRow {
    const char* name;
    std::vector<Toleration> tolerations;
    std::vector<Taint> taints;
    Filter filter;
    std::optional<Taint> first_untolerated;
    std::size_t untolerated;
};

const UntoleratedRow kUntoleratedRows[] = {
    {"TestFindMatchingUntoleratedTaint: empty tolerations tolerate empty taints",
     {},
     {},
     Filter::All,
     std::nullopt,
     0},
    {"TestFindMatchingUntoleratedTaint: non-empty tolerations tolerate empty taints",
     {tol("foo", "Exists", "", "NoSchedule")},
     {},
     Filter::All,
     std::nullopt,
     0},
    {"TestFindMatchingUntoleratedTaint: tolerations match all taints",
     {tol("foo", "Exists", "", "NoSchedule")},
     {taint("foo", "", "NoSchedule")},
     Filter::All,
     std::nullopt,
     0},
    {"TestFindMatchingUntoleratedTaint: no taints apply to the filter",
     {tol("foo", "Exists", "", "NoSchedule")},
     {taint("bar", "", "NoSchedule")},
     Filter::None,
     std::nullopt,
     0},
    {"TestFindMatchingUntoleratedTaint: nil filter means all taints apply",
     {tol("foo", "Exists", "", "NoSchedule")},
     {taint("bar", "", "NoSchedule")},
     Filter::Nil,
     taint("bar", "", "NoSchedule"),
     1},
    {"TestFindMatchingUntoleratedTaint: NoExecute filter, tolerations match",
     {tol("foo", "Exists", "", "NoExecute")},
     {taint("foo", "", "NoExecute"), taint("bar", "", "NoSchedule")},
     Filter::NoExecute,
     std::nullopt,
     0},
    {"TestFindMatchingUntoleratedTaint (later Gt row): parse error ignored when a later toleration matches",
     {tol("node.kubernetes.io/sla", "Gt", "950", "NoSchedule"),
      tol("node.kubernetes.io/sla", "Exists", "", "NoSchedule")},
     {taint("node.kubernetes.io/sla", "high", "NoSchedule")},
     Filter::All,
     std::nullopt,
     0},
    // The DaemonSet controller's filters.
    {"daemonlet: PreferNoSchedule is outside the placement filter",
     {},
     {taint("soft", "", "PreferNoSchedule")},
     Filter::NoScheduleOrNoExecute,
     std::nullopt,
     0},
    {"daemonlet: the first untolerated taint in node order",
     {tol("a", "Exists", "", "")},
     {taint("a", "", "NoSchedule"), taint("b", "1", "NoSchedule"), taint("c", "", "NoExecute")},
     Filter::NoScheduleOrNoExecute,
     taint("b", "1", "NoSchedule"),
     2},
    {"daemonlet: the keep-running filter looks at NoExecute only",
     {},
     {taint("b", "1", "NoSchedule"), taint("c", "", "NoExecute")},
     Filter::NoExecute,
     taint("c", "", "NoExecute"),
     1},
};

struct DaemonTolerationsRow {
    const char* name;
    std::vector<Toleration> before;
    bool host_network;
    std::vector<Toleration> after;
};

const Toleration kNotReady = tol(taints::kNotReady, "Exists", "", "NoExecute");
const Toleration kUnreachable = tol(taints::kUnreachable, "Exists", "", "NoExecute");
const Toleration kDisk = tol(taints::kDiskPressure, "Exists", "", "NoSchedule");
const Toleration kMemory = tol(taints::kMemoryPressure, "Exists", "", "NoSchedule");
const Toleration kPID = tol(taints::kPIDPressure, "Exists", "", "NoSchedule");
const Toleration kUnschedulable = tol(taints::kUnschedulable, "Exists", "", "NoSchedule");
const Toleration kNetwork = tol(taints::kNetworkUnavailable, "Exists", "", "NoSchedule");
const Toleration kUser = tol("dedicated", "Equal", "user1", "NoSchedule");

const DaemonTolerationsRow kDaemonTolerationRows[] = {
    {"AddOrUpdateDaemonPodTolerations: none before, pod network",
     {},
     false,
     {kNotReady, kUnreachable, kDisk, kMemory, kPID, kUnschedulable}},
    {"AddOrUpdateDaemonPodTolerations: none before, hostNetwork adds network-unavailable",
     {},
     true,
     {kNotReady, kUnreachable, kDisk, kMemory, kPID, kUnschedulable, kNetwork}},
    {"AddOrUpdateDaemonPodTolerations: the template's own come first",
     {kUser},
     false,
     {kUser, kNotReady, kUnreachable, kDisk, kMemory, kPID, kUnschedulable}},
    {"AddOrUpdateTolerationInPodSpec: a matching toleration with tolerationSeconds is replaced in place",
     {kUser, tol(taints::kNotReady, "Exists", "", "NoExecute", 300)},
     false,
     {kUser, kNotReady, kUnreachable, kDisk, kMemory, kPID, kUnschedulable}},
    {"AddOrUpdateTolerationInPodSpec: duplicates are each replaced, not merged",
     {tol(taints::kUnreachable, "Exists", "", "NoExecute", 60),
      tol(taints::kUnreachable, "Exists", "", "NoExecute", 60)},
     false,
     {kUnreachable, kUnreachable, kNotReady, kDisk, kMemory, kPID, kUnschedulable}},
    {"AddOrUpdateTolerationInPodSpec: an effect-less toleration does not match, the daemon one is added",
     {tol(taints::kNotReady, "Exists", "", "")},
     false,
     {tol(taints::kNotReady, "Exists", "", ""), kNotReady, kUnreachable, kDisk, kMemory, kPID,
      kUnschedulable}},
    {"AddOrUpdateTolerationInPodSpec: another operator does not match",
     {tol(taints::kDiskPressure, "Equal", "", "NoSchedule")},
     false,
     {tol(taints::kDiskPressure, "Equal", "", "NoSchedule"), kNotReady, kUnreachable, kDisk, kMemory, kPID,
      kUnschedulable}},
    {"AddOrUpdateDaemonPodTolerations: a template's network-unavailable toleration stays without hostNetwork",
     {kNetwork},
     false,
     {kNetwork, kNotReady, kUnreachable, kDisk, kMemory, kPID, kUnschedulable}},
    {"AddOrUpdateDaemonPodTolerations: already complete, unchanged",
     {kNotReady, kUnreachable, kDisk, kMemory, kPID, kUnschedulable, kNetwork},
     true,
     {kNotReady, kUnreachable, kDisk, kMemory, kPID, kUnschedulable, kNetwork}},
};

std::string text(const Toleration& t) {
    return "{" + t.key + " " + t.op + " " + t.value + " " + t.effect + " " +
           (t.toleration_seconds ? std::to_string(*t.toleration_seconds) : "nil") + "}";
}
std::string text(const std::vector<Toleration>& ts) {
    std::string out;
    for (const auto& t : ts) out += text(t) + "\n";
    return out;
}

}  // namespace

TEST_GROUP(Taints){};

TEST(Taints, ToleratesTaintMatchesUpstreamTable) {
    for (const auto& row : kToleratesRows) {
        CHECK_EQUAL_TEXT(row.tolerated, tolerates_taint(row.toleration, row.taint), row.name);
        CHECK_EQUAL_TEXT(row.tolerated, tolerations_tolerate_taint({row.toleration}, row.taint), row.name);
    }
}

TEST(Taints, FindMatchingUntoleratedTaintMatchesUpstreamTable) {
    for (const auto& row : kUntoleratedRows) {
        const auto found =
            find_matching_untolerated_taint(row.taints, row.tolerations, filter_of(row.filter));
        CHECK_EQUAL_TEXT(row.first_untolerated.has_value(), found.has_value(), row.name);
        if (found) CHECK_TEXT(*row.first_untolerated == *found, row.name);
        const auto all = untolerated_taints(row.taints, row.tolerations, filter_of(row.filter));
        LONGS_EQUAL_TEXT(row.untolerated, all.size(), row.name);
        if (!all.empty()) CHECK_TEXT(all.front() == *found, row.name);
    }
}

TEST(Taints, AddDaemonTolerationsFollowsUpstream) {
    for (const auto& row : kDaemonTolerationRows) {
        PodSpec spec;
        spec.tolerations = row.before;
        spec.host_network = row.host_network;
        add_daemon_tolerations(spec);
        STRCMP_EQUAL_TEXT(text(row.after).c_str(), text(spec.tolerations).c_str(), row.name);
        // Applying them again changes nothing.
        add_daemon_tolerations(spec);
        STRCMP_EQUAL_TEXT(text(row.after).c_str(), text(spec.tolerations).c_str(), row.name);
    }
}

TEST(Taints, DaemonTolerationsTolerateTheConditionTaints) {
    // daemon_controller_test.go TestNotReadyNodeDaemonLaunchesPod,
    // TestUnreachableNodeDaemonLaunchesPod, TestTaintPressureNodeDaemonLaunchesPod.
    PodSpec spec;
    add_daemon_tolerations(spec);
    for (const char* key : {taints::kNotReady, taints::kUnreachable})
        CHECK_TEXT(tolerations_tolerate_taint(spec.tolerations, taint(key, "", "NoExecute")), key);
    for (const char* key :
         {taints::kDiskPressure, taints::kMemoryPressure, taints::kPIDPressure, taints::kUnschedulable})
        CHECK_TEXT(tolerations_tolerate_taint(spec.tolerations, taint(key, "", "NoSchedule")), key);
    CHECK_FALSE(
        tolerations_tolerate_taint(spec.tolerations, taint(taints::kNetworkUnavailable, "", "NoSchedule")));
    CHECK_FALSE(tolerations_tolerate_taint(spec.tolerations, taint(taints::kDiskPressure, "", "NoExecute")));
}

TEST(Taints, TaintToStringMatchesUpstream) {
    STRCMP_EQUAL("dedicated=sensors:NoSchedule",
                 taint_to_string(taint("dedicated", "sensors", "NoSchedule")).c_str());
    STRCMP_EQUAL("node.kubernetes.io/unreachable:NoExecute",
                 taint_to_string(taint(taints::kUnreachable, "", "NoExecute")).c_str());
}

TEST(Taints, MatchTolerationIgnoresTolerationSeconds) {
    CHECK(match_toleration(tol("a", "Exists", "", "NoExecute", 30), tol("a", "Exists", "", "NoExecute")));
    CHECK_FALSE(match_toleration(tol("a", "Exists", "", "NoExecute"), tol("a", "Exists", "", "NoSchedule")));
    CHECK_FALSE(match_toleration(tol("a", "Equal", "", "NoExecute"), tol("a", "", "", "NoExecute")));
}
