// The reconciler's manage pass for one node: create, keep, prune and remove,
// as the DaemonSet controller's podsShouldBeOnNode does (Kubernetes 1.25 to
// 1.30). Rows are seeded from pkg/controller/daemon/daemon_controller_test.go
// and name the upstream test (and case) they pin; rows marked "issue:" pin a
// rule of our issue, "daemonlet:" a rule upstream leaves implicit. Rolling
// updates are in test_rolling_update.cpp.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/reconcile.h"
#include "tests/core/reconcile_fixture.h"

// CppUTest last: its leak-detection macros redefine new.
#include <CppUTest/TestHarness.h>

using namespace daemonlet;
using namespace daemonlet::testing;

namespace daemonlet::testing {

void check_row(const Row& row) {
    std::vector<DesiredDaemonSet> desired;
    desired.reserve(row.desired.size());
    for (const auto& d : row.desired)
        desired.push_back(DesiredDaemonSet{&d.ds, d.hash, d.revision, d.decision});
    const ReconcilePlan plan = plan_reconcile(desired, row.pods, row.now);

    std::string want_creates, got_creates;
    for (const auto& c : row.creates) want_creates += c + "\n";
    for (const auto& c : plan.create)
        got_creates +=
            c.namespace_ + "/" + c.daemonset + "@" + c.hash + "#" + std::to_string(c.revision) + "\n";
    STRCMP_EQUAL_TEXT(want_creates.c_str(), got_creates.c_str(),
                      (std::string(row.name) + ": creates").c_str());

    std::string want_removes, got_removes;
    for (const auto& r : row.removes) want_removes += std::string(r.uid) + "\n";
    for (const auto& r : plan.remove) got_removes += r.uid + "\n";
    STRCMP_EQUAL_TEXT(want_removes.c_str(), got_removes.c_str(),
                      (std::string(row.name) + ": removes").c_str());
    for (std::size_t i = 0; i < row.removes.size() && i < plan.remove.size(); ++i) {
        const std::string& reason = plan.remove[i].reason;
        const std::string msg = std::string(row.name) + ": reason for " + row.removes[i].uid + " is \"" +
                                reason + "\", expected it to contain \"" + row.removes[i].reason + "\"";
        CHECK_TEXT(!reason.empty() && reason.find(row.removes[i].reason) != std::string::npos, msg.c_str());
    }

    const std::string wake_name = std::string(row.name) + ": wake_at";
    CHECK_EQUAL_TEXT(row.wake.has_value(), plan.wake_at_mono_ms.has_value(), wake_name.c_str());
    if (row.wake && plan.wake_at_mono_ms)
        LONGLONGS_EQUAL_TEXT(*row.wake, *plan.wake_at_mono_ms, wake_name.c_str());
}

}  // namespace daemonlet::testing

namespace {

DaemonSet in_namespace(const char* ns, const char* name) { return daemonset(ns, name); }

DaemonSet min_ready(std::int32_t seconds) {
    DaemonSet ds = daemonset("default", "foo");
    ds.spec.min_ready_seconds = seconds;
    return ds;
}

const Row kManageRows[] = {
    // Create when missing, nothing when present.
    {"TestOneNodeDaemonLaunchesPod: no pod, the node fits: one pod at the current revision",
     {want(daemonset("default", "foo"))},
     {},
     0,
     {"default/foo@h2#2"},
     {},
     std::nullopt},
    {"TestDaemonKillFailedPods 'normal (do nothing)': the current pod runs",
     {want(daemonset("default", "foo"))},
     {pod("a").created(s(10)).ready_at(s(11))},
     s(100),
     {},
     {},
     std::nullopt},
    {"TestDealsWithExistingPods node-1: one pod, not ready yet: nothing to do",
     {want(daemonset("default", "foo"))},
     {pod("a").created(s(10))},
     s(100),
     {},
     {},
     std::nullopt},

    // The node stops matching.
    {"TestSelectorDaemonDeletesUnselectedPods: nodeSelector no longer matches: the pod is removed",
     {want(daemonset("default", "foo"), no_match())},
     {pod("a").created(s(10)).ready_at(s(11))},
     s(100),
     {},
     {{"a",
       "node no longer matches: node(s) didn't match Pod's node affinity/selector; nodeSelector disktype=ssd "
       "does not match"}},
     std::nullopt},
    {"TestNoExecuteTaintedDoesEvicitRunningIntolerantPod: an untolerated NoExecute taint removes the pod",
     {want(daemonset("default", "foo"), no_execute())},
     {pod("a").created(s(10)).ready_at(s(11))},
     s(100),
     {},
     {{"a", "node no longer matches: taint {example.com/maintenance: NoExecute} is not tolerated"}},
     std::nullopt},
    {"podsShouldBeOnNode '!shouldContinueRunning && exists': every pod goes, duplicates included",
     {want(daemonset("default", "foo"), no_execute())},
     {pod("b").created(s(20)), pod("a").created(s(10)).old()},
     s(100),
     {},
     {{"a", "node no longer matches"}, {"b", "node no longer matches"}},
     std::nullopt},
    {"podsShouldBeOnNode: a pod already being deleted is not deleted again",
     {want(daemonset("default", "foo"), no_match())},
     {pod("a").created(s(10)).terminating()},
     s(100),
     {},
     {},
     std::nullopt},
    {"TestSelectorDaemonLaunchesPods: a node outside the selector gets no pod",
     {want(daemonset("default", "foo"), no_match())},
     {},
     s(100),
     {},
     {},
     std::nullopt},

    // NoSchedule only: shouldContinueRunning.
    {"TestNoScheduleTaintedDoesntEvicitRunningIntolerantPod: NoSchedule only: the running pod stays",
     {want(daemonset("default", "foo"), no_schedule())},
     {pod("a").created(s(10)).ready_at(s(11))},
     s(100),
     {},
     {},
     std::nullopt},
    {"TestTaintedNodeDaemonDoesNotLaunchIntolerantPod: NoSchedule only, no pod: none is created",
     {want(daemonset("default", "foo"), no_schedule())},
     {},
     s(100),
     {},
     {},
     std::nullopt},
    {"podsShouldBeOnNode 'shouldContinueRunning': NoSchedule only, duplicates are still pruned",
     {want(daemonset("default", "foo"), no_schedule())},
     {pod("a").created(s(10)), pod("b").created(s(20))},
     s(100),
     {},
     {{"b", "duplicate: the older pod foo-a is kept"}},
     std::nullopt},

    // Duplicates without surge: the oldest stays.
    {"TestDealsWithExistingPods node-2: two pods: the newer is removed",
     {want(daemonset("default", "foo"))},
     {pod("b").created(s(20)).ready_at(s(21)), pod("a").created(s(10)).ready_at(s(11))},
     s(100),
     {},
     {{"b", "duplicate: the older pod foo-a is kept"}},
     std::nullopt},
    {"TestDealsWithExistingPods node-3: five pods: four removed, oldest first in the plan",
     {want(daemonset("default", "foo"))},
     {pod("d").created(s(40)), pod("b").created(s(20)), pod("e").created(s(50)), pod("a").created(s(10)),
      pod("c").created(s(30))},
     s(100),
     {},
     {{"b", "duplicate"}, {"c", "duplicate"}, {"d", "duplicate"}, {"e", "duplicate"}},
     std::nullopt},
    {"podByCreationTimestampAndPhase: same creation time: the smaller name is the older",
     {want(daemonset("default", "foo"))},
     {pod("b").created(s(10)), pod("a").created(s(10))},
     s(100),
     {},
     {{"b", "duplicate: the older pod foo-a is kept"}},
     std::nullopt},
    {"podsShouldBeOnNode without surge: the oldest stays even when it runs the old revision",
     {want(daemonset("default", "foo"))},
     {pod("a").old().created(s(10)).ready_at(s(11)), pod("b").created(s(20)).ready_at(s(21))},
     s(100),
     {},
     {{"b", "duplicate: the older pod foo-a is kept"}},
     std::nullopt},

    // Failed and succeeded pods (restartPolicy Always keeps DaemonSet pods
    // out of these phases; an admission rejection or eviction does not).
    {"TestDaemonKillFailedPods '1 failed pod (kill 1), 0 normal pod (create 0; will create in the next sync)'",
     {want(daemonset("default", "foo"))},
     {pod("f").created(s(10)).phase(PodPhase::Failed)},
     s(100),
     {},
     {{"f", "failed daemon pod"}},
     std::nullopt},
    {"TestDaemonKillFailedPods '1 failed pod (kill 1), 3 normal pods (kill 2)'",
     {want(daemonset("default", "foo"))},
     {pod("f").created(s(5)).phase(PodPhase::Failed), pod("a").created(s(10)), pod("b").created(s(20)),
      pod("c").created(s(30))},
     s(100),
     {},
     {{"f", "failed daemon pod"}, {"b", "duplicate"}, {"c", "duplicate"}},
     std::nullopt},
    {"TestDaemonKillFailedPods 'no pods (create 1)': the failed pod is gone: create",
     {want(daemonset("default", "foo"))},
     {},
     s(101),
     {"default/foo@h2#2"},
     {},
     std::nullopt},
    {"podsShouldBeOnNode: a Succeeded daemon pod is deleted",
     {want(daemonset("default", "foo"))},
     {pod("a").created(s(10)).phase(PodPhase::Succeeded)},
     s(100),
     {},
     {{"a", "succeeded daemon pod"}},
     std::nullopt},
    {"podsShouldBeOnNode 'shouldContinueRunning': NoSchedule only, a failed pod is deleted, none created",
     {want(daemonset("default", "foo"), no_schedule())},
     {pod("f").created(s(10)).phase(PodPhase::Failed)},
     s(100),
     {},
     {{"f", "failed daemon pod"}},
     std::nullopt},

    // Terminating pods.
    {"TestDaemonSetRespectsTermination: only a terminating pod, no surge: nothing is created yet",
     {want(daemonset("default", "foo"))},
     {pod("a").created(s(10)).terminating()},
     s(100),
     {},
     {},
     std::nullopt},
    {"TestDaemonSetRespectsTermination (OnDelete): only a terminating pod: nothing is created yet",
     {want(on_delete())},
     {pod("a").created(s(10)).terminating()},
     s(100),
     {},
     {},
     std::nullopt},
    {"TestGetNodesToDaemonPods 'exclude deleted terminal pods' (PR 118716): a stopped pod holds nothing back",
     {want(daemonset("default", "foo"))},
     {pod("a").created(s(10)).stopped()},
     s(100),
     {"default/foo@h2#2"},
     {},
     std::nullopt},
    {"podsShouldBeOnNode: a terminating pod is no duplicate of the running one",
     {want(daemonset("default", "foo"))},
     {pod("a").created(s(10)).terminating(), pod("b").created(s(20)).ready_at(s(21))},
     s(100),
     {},
     {},
     std::nullopt},

    // Pods of DaemonSets no longer desired.
    {"daemonlet: the DaemonSet was removed: its pod goes (the garbage collector's cascading delete)",
     {},
     {pod("x").in("default", "gone").created(s(10))},
     s(100),
     {},
     {{"x", "DaemonSet default/gone removed"}},
     std::nullopt},
    {"daemonlet: the DaemonSet was removed: a pod already stopping is not removed again",
     {},
     {pod("x").in("default", "gone").created(s(10)).terminating()},
     s(100),
     {},
     {},
     std::nullopt},
    {"daemonlet: DaemonSets are keyed by namespace and name: kube-system/foo is not default/foo",
     {want(daemonset("default", "foo"))},
     {pod("x").in("kube-system", "foo").created(s(10)), pod("a").created(s(20))},
     s(100),
     {},
     {{"x", "DaemonSet kube-system/foo removed"}},
     std::nullopt},

    // Several DaemonSets: one pass, deterministic order.
    {"daemonlet: creates by namespace/name, removals by namespace/name then creation",
     {want(in_namespace("kube-system", "agent")), want(in_namespace("default", "foo"), no_match()),
      want(in_namespace("default", "bar"))},
     {pod("z2").in("default", "zzz").created(s(2)), pod("f1").created(s(5)), pod("o1").in("a-ns", "old").created(s(9)),
      pod("z1").in("default", "zzz").created(s(1))},
     s(100),
     {"default/bar@h2#2", "kube-system/agent@h2#2"},
     {{"o1", "DaemonSet a-ns/old removed"},
      {"f1", "node no longer matches"},
      {"z1", "DaemonSet default/zzz removed"},
      {"z2", "DaemonSet default/zzz removed"}},
     std::nullopt},

    // minReadySeconds wake-up.
    {"updatePod 'changedToReady && MinReadySeconds > 0': re-plan when the ready pod becomes available",
     {want(min_ready(30))},
     {pod("a").created(s(90)).ready_at(s(100))},
     s(110),
     {},
     {},
     s(130)},
    {"daemonlet: an available pod needs no wake-up",
     {want(min_ready(30))},
     {pod("a").created(s(90)).ready_at(s(100))},
     s(130),
     {},
     {},
     std::nullopt},
    {"daemonlet: the earliest wake-up over every DaemonSet wins",
     {want(min_ready(30)), [] {
          Desired d = want(in_namespace("default", "bar"));
          d.ds.spec.min_ready_seconds = 10;
          return d;
      }()},
     {pod("a").created(s(90)).ready_at(s(100)), pod("b").in("default", "bar").created(s(90)).ready_at(s(105))},
     s(110),
     {},
     {},
     s(115)},
};

struct AvailableRow {
    const char* name;
    ObservedPod pod;
    std::int32_t min_ready_seconds;
    std::int64_t now;
    bool expected;
};

const AvailableRow kAvailableRows[] = {
    {"IsPodAvailable: not ready", pod("a").created(0), 0, s(10), false},
    {"IsPodAvailable: minReadySeconds 0: ready is enough", pod("a").ready_at(s(10)), 0, s(10), true},
    {"IsPodAvailable: minReadySeconds 0: no transition time needed", pod("a").ready_no_time(), 0, s(10),
     true},
    {"TestSurgePreservesOldReadyWithUnsatisfiedMinReady: ready at 50, minReady 15, now 60",
     pod("a").ready_at(s(50)), 15, s(60), false},
    {"TestSurgeDeletesOldReadyWithUnsatisfiedMinReady: ready at 50, minReady 15, now 70",
     pod("a").ready_at(s(50)), 15, s(70), true},
    {"daemonlet: inclusive at ready_since + minReadySeconds (upstream since 1.34, PR 132122)",
     pod("a").ready_at(s(50)), 15, s(65), true},
    {"daemonlet: one millisecond before is not available", pod("a").ready_at(s(50)), 15, s(65) - 1, false},
    {"IsPodAvailable: zero LastTransitionTime with minReadySeconds > 0", pod("a").ready_no_time(), 15,
     s(1000), false},
    {"daemonlet: a huge minReadySeconds does not overflow", pod("a").ready_at(s(50)), 2147483647, s(60),
     false},
};

}  // namespace

TEST_GROUP(Reconcile){};

TEST(Reconcile, ManagePassMatchesUpstreamTable) {
    for (const auto& row : kManageRows) check_row(row);
}

TEST(Reconcile, PodAvailableMatchesIsPodAvailable) {
    for (const auto& row : kAvailableRows)
        CHECK_EQUAL_TEXT(row.expected, pod_available(row.pod, row.min_ready_seconds, row.now), row.name);
}

TEST(Reconcile, EveryRemovalCarriesAReason) {
    for (const auto& row : kManageRows) {
        std::vector<DesiredDaemonSet> desired;
        for (const auto& d : row.desired)
            desired.push_back(DesiredDaemonSet{&d.ds, d.hash, d.revision, d.decision});
        for (const auto& r : plan_reconcile(desired, row.pods, row.now).remove)
            CHECK_TEXT(!r.reason.empty(), row.name);
    }
}

// The DaemonSet controller's failedPodsBackoff (1 s doubling to 15 min),
// one pass after another on a kept state: daemon_controller_test.go
// TestDaemonKillFailedPodsBackoff, then Next's doubling and the expiry
// (flowcontrol.Backoff hasExpired: 2 x max without an update).
TEST(Reconcile, FailedPodsAreDeletedUnderTheFailedPodsBackoff) {
    struct Step {
        const char* name;
        std::int64_t now;
        bool surge;
        bool deleted;                      // the Failed pod is deleted in this pass
        std::optional<std::int64_t> wake;  // else kept until then
        std::int64_t backoff_after;        // the entry's back-off after the pass
    };
    const Step steps[] = {
        {"TestDaemonKillFailedPodsBackoff: the first sync deletes the pod, initialising the back-off", s(100),
         false, true, std::nullopt, s(1)},
        {"TestDaemonKillFailedPodsBackoff: an immediate sync is limited by the back-off, which is not raised",
         s(100), false, false, s(101), s(1)},
        {"TestDaemonKillFailedPodsBackoff: just before its end, still in back-off", s(101) - 1, false, false,
         s(101), s(1)},
        {"TestDaemonKillFailedPodsBackoff: at its end, the failed pod is deleted (Next: doubled)", s(101),
         false, true, std::nullopt, s(2)},
        {"Backoff.Next: 2 s later, doubled again", s(103), false, true, std::nullopt, s(4)},
        {"podsShouldBeOnNode with surge: the kept Failed pod holds back its replacement (exists)", s(104),
         true, false, s(107), s(4)},
        {"Backoff hasExpired: 2 x 15 min without an update starts again at 1 s", s(103) + 2 * 900'000 + 1,
         false, true, std::nullopt, s(1)},
    };
    FailedPodsBackoff backoff;
    for (const auto& step : steps) {
        const Desired d = want(step.surge ? surge(num(1)) : daemonset("default", "foo"));
        const std::vector<DesiredDaemonSet> desired{DesiredDaemonSet{&d.ds, d.hash, d.revision, d.decision}};
        const std::vector<ObservedPod> pods{pod("f").created(s(10)).phase(PodPhase::Failed)};
        const ReconcilePlan plan = plan_reconcile(desired, pods, step.now, &backoff);
        CHECK_TEXT(plan.create.empty(), step.name);  // never beside a Failed pod, kept or being deleted
        CHECK_EQUAL_TEXT(step.deleted ? 1u : 0u, plan.remove.size(), step.name);
        CHECK_EQUAL_TEXT(step.wake.has_value(), plan.wake_at_mono_ms.has_value(), step.name);
        if (step.wake && plan.wake_at_mono_ms)
            LONGLONGS_EQUAL_TEXT(*step.wake, *plan.wake_at_mono_ms, step.name);
        const auto& entry = backoff.entries.at({"default", "foo/" + d.ds.metadata.uid + "/" + d.hash});
        LONGLONGS_EQUAL_TEXT(step.backoff_after, entry.backoff_ms, step.name);
    }
}

// Two Failed pods in one pass: the first deletion updates the back-off, so
// the second waits for the next one (upstream's loop over daemonPods).
TEST(Reconcile, OneFailedPodIsDeletedPerBackoffStep) {
    const Desired d = want(daemonset("default", "foo"));
    const std::vector<DesiredDaemonSet> desired{DesiredDaemonSet{&d.ds, d.hash, d.revision, d.decision}};
    const std::vector<ObservedPod> pods{pod("f").created(s(10)).phase(PodPhase::Failed),
                                        pod("g").created(s(20)).phase(PodPhase::Failed)};
    FailedPodsBackoff backoff;
    ReconcilePlan plan = plan_reconcile(desired, pods, s(100), &backoff);
    CHECK_EQUAL(1u, plan.remove.size());
    STRCMP_EQUAL("f", plan.remove[0].uid.c_str());
    CHECK_TRUE(plan.wake_at_mono_ms == s(101));
    // Without a kept state every pass starts afresh: the first goes again.
    CHECK_EQUAL(1u, plan_reconcile(desired, pods, s(100)).remove.size());
}

// failedPodsBackoffKey is "<ds.UID>/<ObservedGeneration>/<node>": a new
// template (here its hash) is not held behind the old one's back-off.
TEST(Reconcile, FailedPodBackoffIsPerTemplate) {
    const std::vector<ObservedPod> pods{pod("f").created(s(10)).phase(PodPhase::Failed)};
    FailedPodsBackoff backoff;
    const Desired old_template = want(daemonset("default", "foo"), runs(), "h2");
    const std::vector<DesiredDaemonSet> old_desired{
        DesiredDaemonSet{&old_template.ds, old_template.hash, old_template.revision, old_template.decision}};
    CHECK_EQUAL(1u, plan_reconcile(old_desired, pods, s(100), &backoff).remove.size());
    CHECK_EQUAL(0u, plan_reconcile(old_desired, pods, s(100) + 500, &backoff).remove.size());  // in back-off
    // The new template's pod Failed too (rejected again): deleted at once.
    const std::vector<ObservedPod> new_pods{pod("g").rev("h3", 3).created(s(11)).phase(PodPhase::Failed)};
    const Desired new_template = want(daemonset("default", "foo"), runs(), "h3", 3);
    const std::vector<DesiredDaemonSet> new_desired{
        DesiredDaemonSet{&new_template.ds, new_template.hash, new_template.revision, new_template.decision}};
    CHECK_EQUAL(1u, plan_reconcile(new_desired, new_pods, s(100) + 500, &backoff).remove.size());
}
