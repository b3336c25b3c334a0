// kubectl get pods' STATUS and RESTARTS columns for a local pod, as kubectl's
// printPod computes them (kubectl pkg/cmd/get, printers.go printPod,
// Kubernetes 1.25 to 1.30). Rows pin the init-container cases of its
// TestPrintPod table and the app-container rules after initialization.
#include <string>
#include <vector>

#include "core/pod.h"

// CppUTest last: its leak-detection macros redefine new.
#include <CppUTest/TestHarness.h>

using namespace daemonlet;

namespace {

ContainerStatus c(ContainerState s, const char* reason = "", std::int32_t exit_code = 0,
                  std::int32_t restarts = 0) {
    ContainerStatus cs;
    cs.name = "c";
    cs.state = s;
    cs.ready = s == ContainerState::Running;
    cs.started = s == ContainerState::Running;
    cs.reason = reason;
    cs.exit_code = exit_code;
    cs.restart_count = restarts;
    return cs;
}
constexpr auto W = ContainerState::Waiting;
constexpr auto Ru = ContainerState::Running;
constexpr auto T = ContainerState::Terminated;

ContainerStatus sidecar(ContainerState s, bool started, bool ready, std::int32_t restarts = 0) {
    ContainerStatus cs = c(s, "", 0, restarts);
    cs.sidecar = true;
    cs.started = started;
    cs.ready = ready;
    return cs;
}

struct Row {
    const char* name;
    std::vector<ContainerStatus> init, app;
    PodPhase phase;
    bool deleting;
    const char* status;
    std::int32_t restarts;
    const char* ready = nullptr;  // "R/T", when the row pins it
};

const Row kRows[] = {
    {"printPod: running app containers show the phase", {}, {c(Ru)}, PodPhase::Running, false, "Running", 0},
    {"printPod: a waiting app container's reason",
     {},
     {c(W, "CrashLoopBackOff", 0, 4)},
     PodPhase::Pending,
     false,
     "CrashLoopBackOff",
     4},
    {"printPod: the first container's reason wins (reverse loop)",
     {},
     {c(W, "ErrImagePull"), c(W, "CrashLoopBackOff")},
     PodPhase::Pending,
     false,
     "ErrImagePull",
     0},
    {"printPod: Init:N/M while init container N runs",
     {c(T, "Completed", 0), c(Ru)},
     {c(W, "PodInitializing")},
     PodPhase::Pending,
     false,
     "Init:1/2",
     0},
    {"printPod: Init:<Reason> for a failed init container",
     {c(T, "Error", 1, 2)},
     {c(W, "PodInitializing")},
     PodPhase::Pending,
     false,
     "Init:Error",
     2},
    {"printPod: Init:ExitCode:N when the terminated reason is empty",
     {c(T, "", 3)},
     {c(W, "PodInitializing")},
     PodPhase::Pending,
     false,
     "Init:ExitCode:3",
     0},
    {"printPod: Init:CrashLoopBackOff; RESTARTS counts init containers while initializing",
     {c(W, "CrashLoopBackOff", 0, 5)},
     {c(W, "PodInitializing", 0, 0)},
     PodPhase::Pending,
     false,
     "Init:CrashLoopBackOff",
     5},
    {"printPod: a waiting PodInitializing init container shows Init:0/1",
     {c(W, "PodInitializing")},
     {c(W)},
     PodPhase::Pending,
     false,
     "Init:0/1",
     0},
    {"printPod: after initialization the app containers give PodInitializing",
     {c(T, "Completed", 0, 3)},
     {c(W, "PodInitializing")},
     PodPhase::Pending,
     false,
     "PodInitializing",
     0},
    {"printPod: after initialization RESTARTS counts app containers only",
     {c(T, "Completed", 0, 3)},
     {c(Ru, "", 0, 1)},
     PodPhase::Running,
     false,
     "Running",
     1},
    {"printPod: deletion shows Terminating", {}, {c(Ru)}, PodPhase::Running, true, "Terminating", 0},
    {"printPod: a started sidecar counts as done; the next init container gives Init:1/2",
     {sidecar(Ru, true, true), c(Ru)},
     {c(W, "PodInitializing")},
     PodPhase::Pending,
     false,
     "Init:1/2",
     0,
     "1/2"},
    {"printPod: a sidecar not started yet holds initialization at Init:0/1",
     {sidecar(Ru, false, false)},
     {c(W, "PodInitializing")},
     PodPhase::Pending,
     false,
     "Init:0/1",
     0,
     "0/2"},
    {"printPod: after initialization READY and RESTARTS count sidecars with app containers",
     {sidecar(Ru, true, true, 2)},
     {c(Ru, "", 0, 1)},
     PodPhase::Running,
     false,
     "Running",
     3,
     "2/2"},
    {"printPod: an unready sidecar is not counted ready",
     {sidecar(Ru, true, false)},
     {c(Ru)},
     PodPhase::Running,
     false,
     "Running",
     0,
     "1/2"},
};

}  // namespace

TEST_GROUP(PodColumns){};

TEST(PodColumns, StatusAndRestartsAsKubectlPrintsThem) {
    for (const auto& row : kRows) {
        PodRecord p;
        p.init_containers = row.init;
        p.containers = row.app;
        p.phase = row.phase;
        p.deleting = row.deleting;
        PodColumns got = pod_columns(p);
        STRCMP_EQUAL_TEXT(row.status, got.status.c_str(), row.name);
        LONGS_EQUAL_TEXT(row.restarts, got.restarts, row.name);
        if (row.ready) {
            const std::string ready = std::to_string(got.ready) + "/" + std::to_string(got.total);
            STRCMP_EQUAL_TEXT(row.ready, ready.c_str(), row.name);
        }
    }
}
