// The DaemonSet's status on this node and kubectl's rollout status message.
// Rows pin: daemon_controller.go updateDaemonSetStatus (Kubernetes 1.25 to
// 1.30: desired when shouldRun, only the oldest pod counted for ready,
// available and updated; a pod where none should run is misscheduled) and
// kubectl rollout_status.go DaemonSetStatusViewer.Status (the messages, the
// order of the checks, RollingUpdate only, observedGeneration).
#include <string>
#include <vector>

#include "core/rollout_status.h"

// CppUTest last: its leak-detection macros redefine new.
#include <CppUTest/TestHarness.h>

using namespace daemonlet;

namespace {

Decision runs() { return Decision{true, true, {}}; }
Decision stays() { return Decision{false, true, {"taint {a=b:NoSchedule} is not tolerated"}}; }
Decision goes() { return Decision{false, false, {"taint {a=b:NoExecute} is not tolerated"}}; }

struct StatusRow {
    const char* name;
    Decision decision;
    std::vector<NodeDaemonPod> pods;
    DaemonSetNodeStatus want;
};

const StatusRow kStatusRows[] = {
    {"updateDaemonSetStatus: shouldRun and no pod: desired 1, nothing else", runs(), {}, {1, 0, 0, 0, 0, 0}},
    {"updateDaemonSetStatus: an updated, ready, available pod counts everywhere",
     runs(),
     {{"a", 1, "new", true, true}},
     {1, 1, 0, 1, 1, 1}},
    {"updateDaemonSetStatus: ready but not yet available (minReadySeconds)",
     runs(),
     {{"a", 1, "new", true, false}},
     {1, 1, 0, 1, 0, 1}},
    {"updateDaemonSetStatus: not ready is not available even if marked so",
     runs(),
     {{"a", 1, "new", false, true}},
     {1, 1, 0, 0, 0, 1}},
    {"updateDaemonSetStatus: an old revision's pod is current but not updated",
     runs(),
     {{"a", 1, "old", true, true}},
     {1, 1, 0, 1, 1, 0}},
    {"updateDaemonSetStatus: podByCreationTimestampAndPhase: the oldest pod (old, surging) is the one "
     "counted",
     runs(),
     {{"b", 2, "new", true, true}, {"a", 1, "old", false, false}},
     {1, 1, 0, 0, 0, 0}},
    {"updateDaemonSetStatus: equal creation times order by name",
     runs(),
     {{"b", 1, "old", true, true}, {"a", 1, "new", true, true}},
     {1, 1, 0, 1, 1, 1}},
    {"updateDaemonSetStatus: !shouldRun with a pod that may stay: misscheduled, not desired",
     stays(),
     {{"a", 1, "new", true, true}},
     {0, 0, 1, 0, 0, 0}},
    {"updateDaemonSetStatus: !shouldRun and no pod: all zero", goes(), {}, {0, 0, 0, 0, 0, 0}},
};

DaemonSet daemonset(const std::string& strategy) {
    DaemonSet ds;
    ds.metadata.name = "agent";
    ds.spec.update_strategy.type = strategy;
    return ds;
}

struct MessageRow {
    const char* name;
    const char* strategy;
    DaemonSetNodeStatus status;
    bool observed;
    const char* message;
    bool done;
    const char* error;
};

const MessageRow kMessageRows[] = {
    {"Status: updated < desired",
     "RollingUpdate",
     {1, 1, 0, 1, 1, 0},
     true,
     "Waiting for daemon set \"agent\" rollout to finish: 0 out of 1 new pods have been updated...",
     false,
     ""},
    {"Status: updated, not available",
     "RollingUpdate",
     {1, 1, 0, 1, 0, 1},
     true,
     "Waiting for daemon set \"agent\" rollout to finish: 0 of 1 updated pods are available...",
     false,
     ""},
    {"Status: updated and available",
     "RollingUpdate",
     {1, 1, 0, 1, 1, 1},
     true,
     "daemon set \"agent\" successfully rolled out",
     true,
     ""},
    {"Status: nothing desired (node not selected) is rolled out",
     "RollingUpdate",
     {0, 0, 0, 0, 0, 0},
     true,
     "daemon set \"agent\" successfully rolled out",
     true,
     ""},
    {"Status: the update check comes before availability",
     "RollingUpdate",
     {1, 1, 0, 0, 0, 0},
     true,
     "Waiting for daemon set \"agent\" rollout to finish: 0 out of 1 new pods have been updated...",
     false,
     ""},
    {"Status: generation > observedGeneration",
     "RollingUpdate",
     {1, 1, 0, 1, 1, 1},
     false,
     "Waiting for daemon set spec update to be observed...",
     false,
     ""},
    {"Status: OnDelete has no rollout status (done, with the error)",
     "OnDelete",
     {1, 1, 0, 1, 1, 0},
     true,
     "",
     true,
     "rollout status is only available for RollingUpdate strategy type"},
};

}  // namespace

TEST_GROUP(RolloutStatus){};

TEST(RolloutStatus, NodeStatusCountsAsTheControllerDoes) {
    for (const auto& row : kStatusRows) {
        DaemonSetNodeStatus got = daemonset_node_status(row.decision, row.pods, "new");
        const std::string where = row.name;
        LONGS_EQUAL_TEXT(row.want.desired, got.desired, where.c_str());
        LONGS_EQUAL_TEXT(row.want.current, got.current, where.c_str());
        LONGS_EQUAL_TEXT(row.want.misscheduled, got.misscheduled, where.c_str());
        LONGS_EQUAL_TEXT(row.want.ready, got.ready, where.c_str());
        LONGS_EQUAL_TEXT(row.want.available, got.available, where.c_str());
        LONGS_EQUAL_TEXT(row.want.updated, got.updated, where.c_str());
    }
}

TEST(RolloutStatus, MessagesAreKubectls) {
    for (const auto& row : kMessageRows) {
        RolloutStatus got = daemonset_rollout_status(daemonset(row.strategy), row.status, row.observed);
        STRCMP_EQUAL_TEXT(row.message, got.message.c_str(), row.name);
        CHECK_EQUAL_TEXT(row.done, got.done, row.name);
        STRCMP_EQUAL_TEXT(row.error, got.error.c_str(), row.name);
    }
}
