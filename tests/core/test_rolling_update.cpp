// Rolling updates on one node: the DaemonSet controller's rollingUpdate
// (pkg/controller/daemon/update.go, Kubernetes 1.25 to 1.30) after its manage
// pass, OnDelete, and pods deleted by the user. Rows are seeded from
// update_test.go and daemon_controller_test.go (the surge tests) and name the
// upstream test they pin; a test spread over several syncs becomes one row
// per sync ("step"). Rows marked "issue:" pin a rule of our issue. The last
// tests drive whole rollouts through a simulated agent and check the
// invariants each strategy promises.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/reconcile.h"
#include "tests/core/reconcile_fixture.h"

// CppUTest last: its leak-detection macros redefine new.
#include <CppUTest/TestHarness.h>

using namespace daemonlet;
using namespace daemonlet::testing;

namespace {

const Row kRollingRows[] = {
    // maxSurge 0: stop the old pod, then start the new one.
    {"TestDaemonSetUpdatesPods step 1: maxUnavailable 1: the available old pod is removed",
     {want(unavailable(num(1)))},
     {pod("a").old().created(s(0)).ready_at(s(1))},
     s(100),
     {},
     {{"a", "rolling update: revision 1 (h1) is replaced by revision 2 (h2) (maxUnavailable 1)"}},
     std::nullopt},
    {"issue: non-surge stops old before starting new (TestDaemonSetUpdatesPods step 2): old still stopping",
     {want(unavailable(num(1)))},
     {pod("a").old().created(s(0)).ready_at(s(1)).terminating()},
     s(110),
     {},
     {},
     std::nullopt},
    {"TestDaemonSetUpdatesPods step 3: the old pod is gone: the new one is created",
     {want(unavailable(num(1)))},
     {},
     s(120),
     {"default/foo@h2#2"},
     {},
     std::nullopt},
    {"TestDaemonSetUpdatesPods step 4: the new pod runs: the update is done",
     {want(unavailable(num(1)))},
     {pod("b").created(s(120)).ready_at(s(125))},
     s(130),
     {},
     {},
     std::nullopt},
    {"TestDaemonSetUpdatesNoTemplateChanged: the pod runs the current revision: nothing is removed",
     {want(unavailable(num(3)))},
     {pod("a").created(s(0)).ready_at(s(1))},
     s(100),
     {},
     {},
     std::nullopt},
    {"TestDaemonSetUpdatesAllOldPodsNotReady: an unavailable old pod is replaced at once",
     {want(unavailable(num(3)))},
     {pod("a").old().created(s(0))},
     s(100),
     {},
     {{"a", "rolling update: revision 1 (h1) is not available, replaced at once by revision 2 (h2)"}},
     std::nullopt},
    {"rollingUpdate maxSurge 0: an old pod ready for less than minReadySeconds is unavailable",
     {want(unavailable(num(1), 30))},
     {pod("a").old().created(s(0)).ready_at(s(90))},
     s(100),
     {},
     {{"a", "is not available, replaced at once"}},
     std::nullopt},
    {"TestGetUnavailableNumbers 'MaxUnavailable in percents' on one node: 50% of 1 is 1: the old pod goes",
     {want(unavailable(pct("50%")))},
     {pod("a").old().created(s(0)).ready_at(s(1))},
     s(100),
     {},
     {{"a", "(maxUnavailable 1)"}},
     std::nullopt},
    {"updatedDesiredNodeCounts: maxUnavailable 0% and no surge fall back to 1: the old pod goes",
     {want(unavailable(pct("0%")))},
     {pod("a").old().created(s(0)).ready_at(s(1))},
     s(100),
     {},
     {{"a", "(maxUnavailable 1)"}},
     std::nullopt},
    {"findUpdatedPodsOnNode 'excess pods': manage prunes the duplicate first, the update waits",
     {want(unavailable(num(1)))},
     {pod("a").old().created(s(0)).ready_at(s(1)), pod("b").old().created(s(5)).ready_at(s(6))},
     s(100),
     {},
     {{"b", "duplicate: the older pod foo-a is kept"}},
     std::nullopt},
    {"rollingUpdate maxSurge 0 on a NoSchedule-only node: the old pod goes within maxUnavailable 1",
     {want(unavailable(num(1)), no_schedule())},
     {pod("a").old().created(s(0)).ready_at(s(1))},
     s(100),
     {},
     {{"a", "(maxUnavailable 1)"}},
     std::nullopt},
    {"rollingUpdate maxSurge 0 on a NoSchedule-only node: the old pod gone, none is created",
     {want(unavailable(num(1)), no_schedule())},
     {},
     s(120),
     {},
     {},
     std::nullopt},
    {"updatedDesiredNodeCounts: NoSchedule only, 10% of 0 desired nodes is 0: the available old pod stays",
     {want(unavailable(pct("10%")), no_schedule())},
     {pod("a").old().created(s(0)).ready_at(s(1))},
     s(100),
     {},
     {},
     std::nullopt},
    {"rollingUpdate maxSurge 0, maxUnavailable 0: an unavailable old pod is still replaced at once",
     {want(unavailable(pct("10%")), no_schedule())},
     {pod("a").old().created(s(0))},
     s(100),
     {},
     {{"a", "is not available, replaced at once"}},
     std::nullopt},

    // maxSurge > 0: start the new pod next to the old one.
    {"TestDaemonSetUpdatesPodsWithMaxSurge t0: the new pod is created while the old one runs",
     {want(surge(num(1), 30))},
     {pod("a").old().created(s(0)).ready_at(s(1))},
     s(100),
     {"default/foo@h2#2"},
     {},
     std::nullopt},
    {"TestDaemonSetUpdatesPodsWithMaxSurge t0 + 5 s: the new pod is not ready: both stay",
     {want(surge(num(1), 30))},
     {pod("a").old().created(s(0)).ready_at(s(1)), pod("b").created(s(100))},
     s(105),
     {},
     {},
     std::nullopt},
    {"TestSurgePreservesOldReadyWithUnsatisfiedMinReady t1: new ready, minReadySeconds not passed: wake",
     {want(surge(num(1), 30))},
     {pod("a").old().created(s(0)).ready_at(s(1)), pod("b").created(s(100)).ready_at(s(110))},
     s(120),
     {},
     {},
     s(140)},
    {"TestSurgeDeletesOldReadyWithUnsatisfiedMinReady t2: the new pod is available: the old one goes",
     {want(surge(num(1), 30))},
     {pod("a").old().created(s(0)).ready_at(s(1)), pod("b").created(s(100)).ready_at(s(110))},
     s(140),
     {},
     {{"a", "rolling update: foo-b of revision 2 (h2) is available"}},
     std::nullopt},
    {"TestDaemonSetUpdatesPodsWithMaxSurge t3: the old pod stops, the new one runs: nothing",
     {want(surge(num(1), 30))},
     {pod("a").old().created(s(0)).ready_at(s(1)).terminating(), pod("b").created(s(100)).ready_at(s(110))},
     s(150),
     {},
     {},
     std::nullopt},
    {"TestDaemonSetUpdatesAllOldPodsNotReadyMaxSurge t=100: the old pod is not ready: surge at once",
     {want(surge(num(3)))},
     {pod("a").old().created(s(0))},
     s(100),
     {"default/foo@h2#2"},
     {},
     std::nullopt},
    {"TestDaemonSetUpdatesAllOldPodsNotReadyMaxSurge t=200: old not ready, new exists: the old one goes",
     {want(surge(num(3)))},
     {pod("a").old().created(s(0)), pod("b").created(s(100))},
     s(200),
     {},
     {{"a", "rolling update: revision 1 (h1) is not ready, foo-b replaces it"}},
     std::nullopt},
    {"TestSurgePreservesReadyOldPods: keep the new pod and the oldest ready old pod, remove the other",
     {want(surge(num(1)))},
     {pod("new").created(s(100)), pod("old").old().created(s(50)).ready_no_time(),
      pod("delete").old().created(s(60)).ready_no_time()},
     s(100),
     {},
     {{"delete", "duplicate: the older pod foo-old of revision 1 (h1) is kept"}},
     std::nullopt},
    {"TestSurgeDeletesUnreadyOldPods: the oldest old pod is unready: it goes, and the excess one too",
     {want(surge(num(1)))},
     {pod("new").created(s(100)), pod("unready").old().created(s(50)),
      pod("delete").old().created(s(60)).ready_no_time()},
     s(100),
     {},
     {{"unready", "is not ready, foo-new replaces it"}, {"delete", "duplicate"}},
     std::nullopt},
    {"TestSurgePreservesOldReadyWithUnsatisfiedMinReady: new ready 10 s of 15: old kept, excess goes",
     {want(surge(num(1), 15))},
     {pod("new").created(s(100)).ready_at(s(50)), pod("old").old().created(s(50)).ready_no_time(),
      pod("delete").old().created(s(60)).ready_no_time()},
     s(60),
     {},
     {{"delete", "duplicate"}},
     s(65)},
    {"TestSurgeDeletesOldReadyWithUnsatisfiedMinReady: new ready 20 s of 15: both old pods go",
     {want(surge(num(1), 15))},
     {pod("new").created(s(100)).ready_at(s(50)), pod("old").old().created(s(50)).ready_no_time(),
      pod("delete").old().created(s(60)).ready_no_time()},
     s(70),
     {},
     {{"old", "is available"}, {"delete", "duplicate"}},
     std::nullopt},
    {"TestSurgeDealsWithExistingPods node-2: two current pods: the newer goes",
     {want(surge(num(1)))},
     {pod("a").created(s(10)), pod("b").created(s(20))},
     s(100),
     {},
     {{"b", "duplicate: the older pod foo-a of revision 2 (h2) is kept"}},
     std::nullopt},
    {"TestSurgeCreatesNewPodWhenAtMaxSurgeAndOldPodDeleted: only a deleted old pod: create at once",
     {want(surge(num(1)))},
     {pod("a").old().created(s(1)).ready_no_time().terminating()},
     s(100),
     {"default/foo@h2#2"},
     {},
     std::nullopt},
    {"SurgeCount: maxSurge 10% of one node rounds up to 1: the new pod starts next to the old one",
     {want(surge(pct("10%")))},
     {pod("a").old().created(s(0)).ready_at(s(1))},
     s(100),
     {"default/foo@h2#2"},
     {},
     std::nullopt},
    {"rollingUpdate surge 'shouldNotRunPodsToDelete': NoSchedule only: the available old pod goes",
     {want(surge(num(1)), no_schedule())},
     {pod("a").old().created(s(0)).ready_at(s(1))},
     s(100),
     {},
     {{"a", "is out of date and the node no longer accepts new pods"}},
     std::nullopt},
    {"updateDaemonSet: rollingUpdate waits for manage's expectations: no surge in a pruning pass",
     {want(surge(num(1)))},
     {pod("a").old().created(s(0)).ready_at(s(1)), pod("b").old().created(s(5)).ready_at(s(6))},
     s(100),
     {},
     {{"b", "duplicate"}},
     std::nullopt},

    // OnDelete and pods deleted by the user.
    {"updateDaemonSet 'OnDelete': the old pod stays until the user deletes it",
     {want(on_delete())},
     {pod("a").old().created(s(0)).ready_at(s(1))},
     s(100),
     {},
     {},
     std::nullopt},
    {"issue: OnDelete, the user deletes the old pod: it is stopped, nothing started yet",
     {want(on_delete())},
     {pod("a").old().created(s(0)).ready_at(s(1)).user_deleted()},
     s(100),
     {},
     {{"a", "deleted by user"}},
     std::nullopt},
    {"issue: OnDelete, the deleted pod is still stopping: nothing (TestDaemonSetRespectsTermination)",
     {want(on_delete())},
     {pod("a").old().created(s(0)).ready_at(s(1)).user_deleted().terminating()},
     s(105),
     {},
     {},
     std::nullopt},
    {"issue: OnDelete, the deleted pod is gone: the current revision is created",
     {want(on_delete())},
     {},
     s(110),
     {"default/foo@h2#2"},
     {},
     std::nullopt},
    {"daemonlet: RollingUpdate, the user deletes the current pod: replaced once it has stopped",
     {want(unavailable(num(1)))},
     {pod("a").created(s(0)).ready_at(s(1)).user_deleted()},
     s(100),
     {},
     {{"a", "deleted by user"}},
     std::nullopt},
    {"daemonlet: with surge a user-deleted pod is replaced at once (a deleted pod does not count)",
     {want(surge(num(1)))},
     {pod("a").created(s(0)).ready_at(s(1)).user_deleted()},
     s(100),
     {"default/foo@h2#2"},
     {{"a", "deleted by user"}},
     std::nullopt},
    {"daemonlet: a user-deleted pod of a removed DaemonSet goes as an orphan",
     {},
     {pod("a").created(s(0)).user_deleted()},
     s(100),
     {},
     {{"a", "DaemonSet default/foo removed"}},
     std::nullopt},
};

// A simulated agent: carries out each plan, stops pods after `stop_ms`, and
// makes created pods ready at the next step.
struct Agent {
    std::vector<ObservedPod> pods;
    std::map<std::string, std::int64_t> stop_requested;  // uid -> when
    std::int64_t stop_ms = s(15);
    int created = 0;
    std::string trace;

    ReconcilePlan step(const Desired& d, std::int64_t now) {
        // The world moves on: stopped pods disappear, new pods turn ready.
        std::erase_if(pods, [&](const ObservedPod& p) {
            auto it = stop_requested.find(p.pod.uid);
            return it != stop_requested.end() && now - it->second >= stop_ms;
        });
        for (auto& p : pods) {
            if (!p.terminating && !p.ready) {
                p.ready = true;
                p.ready_since_mono_ms = now;
            }
        }
        const std::vector<DesiredDaemonSet> desired{DesiredDaemonSet{&d.ds, d.hash, d.revision, d.decision}};
        ReconcilePlan plan = plan_reconcile(desired, pods, now);
        for (const auto& r : plan.remove) {
            for (auto& p : pods) {
                if (p.pod.uid != r.uid) continue;
                p.terminating = true;
                p.pod.deleting = true;
                p.ready = false;
                stop_requested[p.pod.uid] = now;
            }
            trace += "t=" + std::to_string(now / 1000) + " remove " + r.uid + "\n";
        }
        for (const auto& c : plan.create) {
            ObservedPod p = pod(("new" + std::to_string(++created)).c_str()).created(now);
            p.pod.revision_hash = c.hash;
            p.pod.revision = c.revision;
            trace += "t=" + std::to_string(now / 1000) + " create " + p.pod.uid + "\n";
            pods.push_back(p);
        }
        return plan;
    }
};

}  // namespace

TEST_GROUP(RollingUpdate){};

TEST(RollingUpdate, MatchesUpstreamTable) {
    for (const auto& row : kRollingRows) check_row(row);
}

// issue: without surge the old pod is stopped first and the new one started:
// an old and a new pod never exist at the same time, even while one stops.
TEST(RollingUpdate, NonSurgeRolloutNeverOverlapsOldAndNew) {
    const Desired d = want(unavailable(num(1)));
    Agent agent;
    agent.pods.push_back(pod("old").old().created(0).ready_at(0));
    for (std::int64_t now = s(100); now <= s(200); now += s(10)) {
        agent.step(d, now);
        bool has_old = false, has_new = false;
        for (const auto& p : agent.pods) (p.pod.revision_hash == "h1" ? has_old : has_new) = true;
        CHECK_TEXT(!(has_old && has_new), ("old and new pods together at t=" + std::to_string(now)).c_str());
    }
    STRCMP_EQUAL("t=100 remove old\nt=120 create new1\n", agent.trace.c_str());
    LONGS_EQUAL(1, agent.pods.size());
    STRCMP_EQUAL("h2", agent.pods[0].pod.revision_hash.c_str());
}

// update.go surge invariants: an available pod is kept until its replacement
// is available; the agent sleeps until wake_at_mono_ms when nothing else happens.
TEST(RollingUpdate, SurgeRolloutKeepsAnAvailablePodAndWakesForMinReady) {
    const Desired d = want(surge(num(1), 30));
    Agent agent;
    agent.pods.push_back(pod("old").old().created(0).ready_at(0));
    std::int64_t now = s(100);
    for (int i = 0; i < 10; ++i) {
        const ReconcilePlan plan = agent.step(d, now);
        bool available = false;
        for (const auto& p : agent.pods)
            available = available || (!p.terminating && pod_available(p, 30, now));
        CHECK_TEXT(available, ("no available pod at t=" + std::to_string(now)).c_str());
        // Next event: the plan's wake-up, or the next agent tick.
        now = plan.wake_at_mono_ms && plan.create.empty() && plan.remove.empty() ? *plan.wake_at_mono_ms
                                                                                 : now + s(10);
    }
    // Created at 100, ready at 110, available at 140 (woken then), old stopped by 155.
    STRCMP_EQUAL("t=100 create new1\nt=140 remove old\n", agent.trace.c_str());
    LONGS_EQUAL(1, agent.pods.size());
    STRCMP_EQUAL("h2", agent.pods[0].pod.revision_hash.c_str());
}

namespace {

// issue 14 §3: a connected board whose cluster paces the rollout
// (paced_by_cluster). Upstream the DaemonSet controller's rollingUpdate
// (update.go) deletes the old Pod, within maxUnavailable across the fleet,
// or makes the surge Pod; the kubelet replaces nothing for a template
// change and only follows the Pod's deletion (HandlePodUpdates: a
// deletionTimestamp, here deleted_by_user). So the board holds its old pod
// and says so (plan.paced) until then.
struct PacedRow {
    const char* name;
    DaemonSet ds;
    bool cluster_made_new_pod;
    std::vector<ObservedPod> pods;
    const char* creates;  // "" or "default/foo@h2#2"
    const char* removes;  // uids, space-separated
    bool paced;
};

const PacedRow kPacedRows[] = {
    {"issue 14 §3: maxUnavailable 1: the available old pod stays until the controller deletes its Pod",
     unavailable(num(1)),
     false,
     {pod("a").old().created(s(0)).ready_at(s(1))},
     "",
     "",
     true},
    {"issue 14 §3: an old pod that is not available stays too (the controller deletes it first)",
     unavailable(num(1)),
     false,
     {pod("a").old().created(s(0))},
     "",
     "",
     true},
    {"kubelet follows the deletion: the old Pod deleted (deletionTimestamp) stops the old pod",
     unavailable(num(1)),
     false,
     {pod("a").old().created(s(0)).ready_at(s(1)).user_deleted()},
     "",
     "a",
     false},
    {"TestDaemonSetUpdatesPods step 3, paced alike: the old pod gone, the new one starts at once",
     unavailable(num(1)),
     false,
     {},
     "default/foo@h2#2",
     "",
     false},
    {"a pod of the current revision: nothing to hold",
     unavailable(num(1)),
     false,
     {pod("b").created(s(0)).ready_at(s(1))},
     "",
     "",
     false},
    {"OnDelete waits for the user as before, and is not a paced hold",
     on_delete(),
     false,
     {pod("a").old().created(s(0)).ready_at(s(1))},
     "",
     "",
     false},
    {"maxSurge 1: no Pod of the new revision for this node yet: nothing starts",
     surge(num(1)),
     false,
     {pod("a").old().created(s(0)).ready_at(s(1))},
     "",
     "",
     true},
    {"maxSurge 1: the controller made the new revision's Pod here (update.go surge): the new pod starts",
     surge(num(1)),
     true,
     {pod("a").old().created(s(0)).ready_at(s(1))},
     "default/foo@h2#2",
     "",
     false},
    {"maxSurge 1: the new pod available: the old stays until the controller deletes its Pod",
     surge(num(1)),
     true,
     {pod("a").old().created(s(0)).ready_at(s(1)), pod("b").created(s(5)).ready_at(s(6))},
     "",
     "",
     true},
    {"maxSurge 1: the new pod not available yet: nothing to do",
     surge(num(1), 600),
     true,
     {pod("a").old().created(s(0)).ready_at(s(1)), pod("b").created(s(5)).ready_at(s(6))},
     "",
     "",
     false},
    {"maxSurge 1: the old Pod deleted: the old pod stops, the new one runs on",
     surge(num(1)),
     true,
     {pod("a").old().created(s(0)).ready_at(s(1)).user_deleted(), pod("b").created(s(5)).ready_at(s(6))},
     "",
     "a",
     false},
};

}  // namespace

TEST(RollingUpdate, PacedByTheClusterWaitsForTheControllersDeletion) {
    for (const auto& row : kPacedRows) {
        DesiredDaemonSet d{&row.ds, "h2", 2, runs()};
        d.paced_by_cluster = true;
        d.cluster_made_new_pod = row.cluster_made_new_pod;
        const ReconcilePlan plan = plan_reconcile({d}, row.pods, s(100));
        std::string creates, removes;
        for (const auto& c : plan.create)
            creates += c.namespace_ + "/" + c.daemonset + "@" + c.hash + "#" + std::to_string(c.revision);
        for (const auto& r : plan.remove) removes += (removes.empty() ? "" : " ") + r.uid;
        STRCMP_EQUAL_TEXT(row.creates, creates.c_str(), row.name);
        STRCMP_EQUAL_TEXT(row.removes, removes.c_str(), row.name);
        CHECK_EQUAL_TEXT(row.paced, !plan.paced.empty(), row.name);
        if (row.paced) STRCMP_EQUAL_TEXT("default/foo", plan.paced[0].c_str(), row.name);
        // The same pods and DaemonSet without pacing: the board would act
        // wherever the paced plan holds (the hold is real, not idle).
        if (row.paced) {
            d.paced_by_cluster = false;
            const ReconcilePlan alone = plan_reconcile({d}, row.pods, s(100));
            CHECK_TEXT(!alone.create.empty() || !alone.remove.empty(), row.name);
        }
    }
}

namespace {

// issue 14 §3, who paces a cluster DaemonSet's rollout on a board
// (cluster_paces_rollout): the controller while it can act (a kubelet node
// always waits for update.go's rollingUpdate), the board alone once its
// link is judged down or an old pod has no Pod the controller could delete.
struct PacingRow {
    const char* name;
    LinkState link;
    bool judged;
    std::vector<PodInApi> old_pods;
    bool paced;
};

const PacingRow kPacingRows[] = {
    {"connected, the old pod's Pod there: the controller paces (update.go rollingUpdate)",
     LinkState::Connected,
     true,
     {PodInApi::Present},
     true},
    {"connected, no old pod: nothing to hold, paced alike", LinkState::Connected, true, {}, true},
    {"connected, the old pod's Pod not looked for yet: held",
     LinkState::Connected,
     true,
     {PodInApi::Unknown},
     true},
    {"connected, the old pod has no Pod: the controller cannot delete it, the board rolls alone",
     LinkState::Connected,
     true,
     {PodInApi::Absent},
     false},
    {"connected, one old pod's Pod there, another's absent: the board rolls alone",
     LinkState::Connected,
     true,
     {PodInApi::Present, PodInApi::Absent},
     false},
    {"connected, one old pod's Pod absent, another's not known yet: the board rolls alone (waiting "
     "could hold it for good: the other turns Present or Absent, and both roll alone)",
     LinkState::Connected,
     true,
     {PodInApi::Absent, PodInApi::Unknown},
     false},
    {"the same in the other order: the answer does not hang on the pods' order",
     LinkState::Connected,
     true,
     {PodInApi::Unknown, PodInApi::Absent},
     false},
    {"a new link, not judged yet (the agent's start, a reload): held, not connected yet is no outage",
     LinkState::Disconnected,
     false,
     {},
     true},
    {"daemonlet: disconnected, judged (connected once, then 15 s failing): the board rolls alone",
     LinkState::Disconnected,
     true,
     {},
     false},
    {"daemonlet: disconnected and judged, whatever the board last knew of the Pods: alone",
     LinkState::Disconnected,
     true,
     {PodInApi::Present},
     false},
};

// The pacing a board has at `now` for one old pod whose Pod is there.
bool paced_at(Connectivity& link, std::int64_t now_ms) {
    link.tick(now_ms);
    return cluster_paces_rollout(link.state(), link.judged(), {PodInApi::Present});
}

}  // namespace

TEST(RollingUpdate, ClusterPacesTheRolloutWhileItCanAct) {
    for (const auto& row : kPacingRows)
        CHECK_EQUAL_TEXT(row.paced, cluster_paces_rollout(row.link, row.judged, row.old_pods), row.name);
}

// The fallback over time, with the link's own hysteresis (core
// Connectivity, 15 s down): a connected board whose server goes away holds
// the rollout until its link is judged disconnected, then rolls alone.
TEST(RollingUpdate, AConnectedBoardRollsAloneOnceItsLinkGoesDown) {
    Connectivity link;
    link.begin(0);
    link.report(true, 0);
    CHECK(paced_at(link, 3'000));
    CHECK(link.state() == LinkState::Connected);
    link.report(false, 10'000, "dial: connection refused");
    CHECK(paced_at(link, 24'999));
    CHECK_FALSE(paced_at(link, 25'000));
    CHECK(link.state() == LinkState::Disconnected);
}

// An agent started with the server unreachable holds at most 15 s.
TEST(RollingUpdate, AStartedBoardHoldsAtMostUntilItsNewLinkIsJudged) {
    Connectivity link;
    link.begin(1'000);
    CHECK(paced_at(link, 1'000));
    link.report(false, 2'000, "dial: connection refused");
    CHECK(paced_at(link, 15'999));
    CHECK_FALSE(paced_at(link, 16'000));
}
