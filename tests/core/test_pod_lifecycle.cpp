// The pure pod lifecycle (core/pod_lifecycle.h): which containers start
// next, what an exit leads to, the pod's phase and readiness. Rows name the
// kubelet rule they pin: kuberuntime_manager.go computePodActions and
// computeInitContainerActions (init containers one at a time, sidecars from
// KEP-753), status/generate.go and kubelet_pods.go getPhase.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/pod_lifecycle.h"

// CppUTest last: its leak-detection macros redefine new.
#include <CppUTest/TestHarness.h>

using namespace daemonlet;

namespace {

enum class Kind { Init, Sidecar, App };

// One container of a row's pod.
struct C {
    Kind kind;
    ContainerState state = ContainerState::Waiting;
    std::int32_t exit_code = 0;
    bool started = false;  // startup probe passed
    bool ready = false;
    bool idle = true;  // no process, no pending restart
    std::int64_t started_at_ms = 0;
};

C init(ContainerState s = ContainerState::Waiting, std::int32_t exit_code = 0, bool idle = true) {
    return {Kind::Init, s, exit_code, false, false, idle, 0};
}
C sidecar(ContainerState s = ContainerState::Waiting, bool started = false, bool idle = true) {
    return {Kind::Sidecar, s, 0, started, started, idle, 0};
}
C app(ContainerState s = ContainerState::Waiting, bool idle = true, std::int64_t started_at_ms = 0) {
    return {Kind::App, s, 0, false, false, idle, started_at_ms};
}
const C kRunningInit = init(ContainerState::Running, 0, false);
const C kDoneInit = init(ContainerState::Terminated, 0, true);

PodRecord make_pod(const std::vector<C>& cs, std::vector<bool>* idle = nullptr) {
    PodRecord p;
    for (const auto& c : cs) {
        ContainerStatus s;
        s.name = "c" + std::to_string(p.init_containers.size() + p.containers.size());
        s.state = c.state;
        s.exit_code = c.exit_code;
        s.started = c.started;
        s.ready = c.ready;
        s.started_at_ms = c.started_at_ms;
        s.sidecar = c.kind == Kind::Sidecar;
        (c.kind == Kind::App ? p.containers : p.init_containers).push_back(s);
    }
    if (idle) {
        // Init containers come first whatever the row's order.
        for (const auto& c : cs)
            if (c.kind != Kind::App) idle->push_back(c.idle);
        for (const auto& c : cs)
            if (c.kind == Kind::App) idle->push_back(c.idle);
    }
    return p;
}

struct StartRow {
    const char* name;
    std::vector<C> pod;
    std::size_t from;
    std::vector<std::size_t> start;
    std::optional<std::size_t> then_check_sidecar;
};

const StartRow kStartRows[] = {
    {"computePodActions: no init containers, every app container starts together",
     {app(), app()},
     0,
     {0, 1},
     std::nullopt},
    {"computeInitContainerActions: the first init container starts first, alone",
     {init(), init(), app()},
     0,
     {0},
     std::nullopt},
    {"computeInitContainerActions: a running init container holds the next one back",
     {kRunningInit, init(), app()},
     0,
     {},
     std::nullopt},
    {"computeInitContainerActions: after one exits 0, the next starts",
     {kDoneInit, init(), app()},
     0,
     {1},
     std::nullopt},
    {"computePodActions: all init containers done, the app containers start",
     {kDoneInit, kDoneInit, app(), app()},
     0,
     {2, 3},
     std::nullopt},
    {"computeInitContainerActions: a failed init container waiting to restart holds everything back",
     {init(ContainerState::Waiting, 1, false), app()},
     0,
     {},
     std::nullopt},
    {"computeInitContainerActions: a failed init container with no pending restart starts again",
     {init(ContainerState::Terminated, 1, true), app()},
     0,
     {0},
     std::nullopt},
    {"KEP-753: an idle sidecar starts, then its startup probe decides whether the scan goes on",
     {sidecar(), init(), app()},
     0,
     {0},
     0},
    {"KEP-753: a running sidecar whose startup probe has not passed holds the next init container back",
     {sidecar(ContainerState::Running, false, false), init(), app()},
     0,
     {},
     std::nullopt},
    {"KEP-753: a started sidecar lets the next init container start",
     {sidecar(ContainerState::Running, true, false), init(), app()},
     0,
     {1},
     std::nullopt},
    {"KEP-753: the scan resumes past a sidecar the caller just started",
     {sidecar(ContainerState::Running, true, false), init(), app()},
     1,
     {1},
     std::nullopt},
    {"KEP-753: a sidecar after the init containers, started, lets the app containers start",
     {kDoneInit, sidecar(ContainerState::Running, true, false), app(), app()},
     0,
     {2, 3},
     std::nullopt},
    {"computePodActions: once initialized, init containers are not run again and a sidecar's restart blocks "
     "nothing",
     {init(), sidecar(ContainerState::Waiting, false, false), app(ContainerState::Waiting, true, 1000)},
     0,
     {2},
     std::nullopt},
    {"computePodActions: once initialized, an idle sidecar is started again (restartPolicy Always)",
     {kDoneInit, sidecar(), app(ContainerState::Running, false, 1000)},
     0,
     {1},
     1},
    {"daemonlet: an app container with a process or a pending restart is not started again",
     {app(ContainerState::Running, false), app(ContainerState::Waiting, false), app()},
     0,
     {2},
     std::nullopt},
    {"daemonlet: a terminated app container without a pending restart is left to its exit path",
     {app(ContainerState::Terminated, true), app()},
     0,
     {1},
     std::nullopt},
    {"daemonlet: an empty pod starts nothing", {}, 0, {}, std::nullopt},
};

}  // namespace

TEST_GROUP(PodLifecycle){};

TEST(PodLifecycle, NextStartStepFollowsKubeletOrdering) {
    for (const auto& row : kStartRows) {
        std::vector<bool> idle;
        const PodRecord pod = make_pod(row.pod, &idle);
        const PodStartStep step = next_start_step(pod, idle, row.from);
        std::string got, want;
        for (auto i : step.start) got += std::to_string(i) + " ";
        for (auto i : row.start) want += std::to_string(i) + " ";
        STRCMP_EQUAL_TEXT(want.c_str(), got.c_str(), row.name);
        CHECK_TEXT(step.then_check_sidecar == row.then_check_sidecar, row.name);
    }
}

TEST(PodLifecycle, SidecarLetsNextStartOnceStartedOrInitialized) {
    ContainerStatus s;
    s.sidecar = true;
    s.state = ContainerState::Running;
    CHECK_FALSE_TEXT(sidecar_lets_next_start(s, false), "KEP-753: running, startup probe not passed");
    s.started = true;
    CHECK_TEXT(sidecar_lets_next_start(s, false), "KEP-753: running and started");
    s.state = ContainerState::Waiting;
    CHECK_FALSE_TEXT(sidecar_lets_next_start(s, false), "KEP-753: a sidecar that is not running holds");
    CHECK_TEXT(sidecar_lets_next_start(s, true), "computePodActions: initialized, nothing is held");
}

namespace {

struct ExitRow {
    const char* name;
    std::vector<C> pod;
    bool deleting;
    std::size_t index;
    ExitAction expected;
};

const ExitRow kExitRows[] = {
    {"computeInitContainerActions: an init container that exits 0 is done",
     {init(ContainerState::Terminated, 0), app()},
     false,
     0,
     ExitAction::InitCompleted},
    {"computeInitContainerActions: an init container that fails restarts (pod restartPolicy Always)",
     {init(ContainerState::Terminated, 1), app()},
     false,
     0,
     ExitAction::Restart},
    {"KEP-753: a sidecar that exits 0 restarts (its restartPolicy Always)",
     {sidecar(ContainerState::Terminated), app()},
     false,
     0,
     ExitAction::Restart},
    {"computePodActions: an app container that exits 0 restarts (restartPolicy Always)",
     {app(ContainerState::Terminated)},
     false,
     0,
     ExitAction::Restart},
    {"killPodWithSyncResult: a stopping pod restarts nothing",
     {init(ContainerState::Terminated, 0), app(ContainerState::Terminated)},
     true,
     1,
     ExitAction::FinishPod},
};

}  // namespace

TEST(PodLifecycle, ContainerExitAction) {
    for (const auto& row : kExitRows) {
        PodRecord pod = make_pod(row.pod);
        pod.deleting = row.deleting;
        CHECK_TEXT(container_exit_action(pod, row.index) == row.expected, row.name);
    }
}

TEST(PodLifecycle, CrashLoopWaitingSaysKubeletsMessage) {
    ContainerStatus cs;
    cs.name = "web";
    set_crash_loop_waiting(cs, 20'000);
    CHECK(cs.state == ContainerState::Waiting);
    STRCMP_EQUAL("CrashLoopBackOff", cs.reason.c_str());
    STRCMP_EQUAL("back-off 20s restarting failed container=web", cs.message.c_str());
}

TEST(PodLifecycle, CrashLoopPolicyIsTheConfigurationsWithKubeletsReset) {
    AgentConfig config;
    config.backoff_initial_ms = 1'000;
    config.backoff_max_ms = 8'000;
    const BackoffPolicy p = crash_loop_policy(config);
    LONGS_EQUAL(1'000, p.initial_ms);
    LONGS_EQUAL(8'000, p.max_ms);
    LONGS_EQUAL(600'000, p.reset_after_ms);
}

namespace {

struct ConditionsRow {
    const char* name;
    std::vector<C> pod;
    bool deleting;
    bool ready;
    PodPhase phase;
};

C ready_app() { return {Kind::App, ContainerState::Running, 0, true, true, false, 1}; }
C running_unready_app() { return {Kind::App, ContainerState::Running, 0, true, false, false, 1}; }

const ConditionsRow kConditionsRows[] = {
    {"getPhase: every app container running is Running; all ready is Ready",
     {ready_app(), ready_app()},
     false,
     true,
     PodPhase::Running},
    {"GeneratePodReadyCondition: one app container not ready, the pod is not",
     {ready_app(), running_unready_app()},
     false,
     false,
     PodPhase::Running},
    {"getPhase: an app container waiting keeps the pod Pending",
     {ready_app(), app()},
     false,
     false,
     PodPhase::Pending},
    {"getPhase: initializing is Pending", {kRunningInit, app()}, false, false, PodPhase::Pending},
    {"GeneratePodReadyCondition (1.29+): an unready sidecar keeps the pod unready",
     {sidecar(ContainerState::Running, false, false), ready_app()},
     false,
     false,
     PodPhase::Running},
    {"GeneratePodReadyCondition (1.29+): a ready sidecar and ready app containers, ready",
     {sidecar(ContainerState::Running, true, false), ready_app()},
     false,
     true,
     PodPhase::Running},
    {"daemonlet: a stopping pod is neither ready nor Running", {ready_app()}, true, false, PodPhase::Pending},
    {"daemonlet: a pod without app containers is never ready", {kDoneInit}, false, false, PodPhase::Pending},
};

}  // namespace

TEST(PodLifecycle, PodConditionsFromContainers) {
    for (const auto& row : kConditionsRows) {
        PodRecord pod = make_pod(row.pod);
        pod.deleting = row.deleting;
        CHECK_EQUAL_TEXT(row.ready, update_pod_conditions(pod), row.name);
        STRCMP_EQUAL_TEXT(to_string(row.phase), to_string(pod.phase), row.name);
    }
}

TEST(PodLifecycle, InitContainerReadyOnceCompletedStartedWhileRunning) {
    PodRecord pod = make_pod({kDoneInit, kRunningInit, init(ContainerState::Terminated, 2), app()});
    update_pod_conditions(pod);
    CHECK_TEXT(pod.init_containers[0].ready, "status: an init container that exited 0 is ready");
    CHECK_FALSE(pod.init_containers[0].started);
    CHECK_FALSE(pod.init_containers[1].ready);
    CHECK_TEXT(pod.init_containers[1].started, "status: a running init container is started");
    CHECK_FALSE_TEXT(pod.init_containers[2].ready, "status: a failed init container is not ready");
}

TEST(PodLifecycle, ReadySinceKeptWhileReadyAndResetWhenNot) {
    CHECK_TEXT(ready_since(true, std::nullopt, 5) == std::optional<std::int64_t>(5), "becomes ready now");
    CHECK_TEXT(ready_since(true, 2, 5) == std::optional<std::int64_t>(2),
               "stays ready: minReadySeconds runs on");
    CHECK_TEXT(!ready_since(false, 2, 5), "not ready: minReadySeconds starts over");
}

// restartPolicy OnFailure and Never (static pods): what an exit leads to and
// the pod's phase.
namespace {

C app_exited(std::int32_t exit_code) {
    return {Kind::App, ContainerState::Terminated, exit_code, false, false, true, 1};
}
// A container that exited and waits to restart (CrashLoopBackOff): lastState.terminated.
C app_backing_off(std::int32_t exit_code) {
    return {Kind::App, ContainerState::Waiting, exit_code, false, false, true, 1};
}

struct PolicyExitRow {
    const char* name;
    std::vector<C> pod;
    std::size_t index;
    const char* policy;
    ExitAction expected;
};

const PolicyExitRow kPolicyExitRows[] = {
    {"ShouldContainerBeRestarted: Never keeps an app container that exited 0 terminated",
     {app_exited(0)},
     0,
     "Never",
     ExitAction::Done},
    {"ShouldContainerBeRestarted: Never keeps a failed app container terminated",
     {app_exited(2)},
     0,
     "Never",
     ExitAction::Done},
    {"ShouldContainerBeRestarted: OnFailure keeps an app container that exited 0 terminated",
     {app_exited(0)},
     0,
     "OnFailure",
     ExitAction::Done},
    {"ShouldContainerBeRestarted: OnFailure restarts a failed app container",
     {app_exited(1)},
     0,
     "OnFailure",
     ExitAction::Restart},
    {"ShouldContainerBeRestarted: Always restarts one that exited 0",
     {app_exited(0)},
     0,
     "Always",
     ExitAction::Restart},
    {"computeInitContainerActions: a failed init container under Never fails the pod (not restarted)",
     {init(ContainerState::Terminated, 1), app()},
     0,
     "Never",
     ExitAction::Done},
    {"computeInitContainerActions: a failed init container under OnFailure restarts",
     {init(ContainerState::Terminated, 1), app()},
     0,
     "OnFailure",
     ExitAction::Restart},
    {"computeInitContainerActions: an init container that exits 0 under Never is done",
     {init(ContainerState::Terminated, 0), app()},
     0,
     "Never",
     ExitAction::InitCompleted},
    {"KEP-753: a sidecar restarts whatever the pod's restartPolicy",
     {sidecar(ContainerState::Terminated), app()},
     0,
     "Never",
     ExitAction::Restart},
    {"computePodActions: keepCount 0 sets KillPod and clears InitContainersToStart: a finished pod's sidecar "
     "is not restarted (Never)",
     {sidecar(ContainerState::Terminated), app_exited(0)},
     0,
     "Never",
     ExitAction::Done},
    {"computePodActions: the same under OnFailure once every app container exited 0",
     {sidecar(ContainerState::Terminated), app_exited(0)},
     0,
     "OnFailure",
     ExitAction::Done},
    {"computePodActions: OnFailure with a failed app container restarting keeps its sidecar",
     {sidecar(ContainerState::Terminated), app_exited(1)},
     0,
     "OnFailure",
     ExitAction::Restart},
};

struct PhaseRow {
    const char* name;
    std::vector<C> pod;
    const char* policy;
    PodPhase expected;
};

const PhaseRow kPhaseRows[] = {
    {"getPhase: Never, every container exited 0: Succeeded",
     {app_exited(0), app_exited(0)},
     "Never",
     PodPhase::Succeeded},
    {"getPhase: Never, one exited 1: Failed", {app_exited(0), app_exited(1)}, "Never", PodPhase::Failed},
    {"getPhase: Never, one still running: Running",
     {app(ContainerState::Running, false), app_exited(1)},
     "Never",
     PodPhase::Running},
    {"getPhase: OnFailure, every container exited 0: Succeeded",
     {app_exited(0)},
     "OnFailure",
     PodPhase::Succeeded},
    {"getPhase: OnFailure, a failed one restarting: Running",
     {app_exited(1)},
     "OnFailure",
     PodPhase::Running},
    {"getPhase: OnFailure, a failed one backing off (lastState): Running",
     {app_backing_off(1)},
     "OnFailure",
     PodPhase::Running},
    {"getPhase: a container not started yet: Pending", {app()}, "Never", PodPhase::Pending},
    {"getPhase: Never, a failed regular init container: Failed",
     {init(ContainerState::Terminated, 1), app()},
     "Never",
     PodPhase::Failed},
    {"getPhase: OnFailure, a failed init container restarting: Pending",
     {init(ContainerState::Terminated, 1), app()},
     "OnFailure",
     PodPhase::Pending},
    {"getPhase: Never, init done, app exited 0: Succeeded",
     {kDoneInit, app_exited(0)},
     "Never",
     PodPhase::Succeeded},
};

}  // namespace

TEST(PodLifecycle, ExitActionFollowsRestartPolicy) {
    for (const auto& row : kPolicyExitRows) {
        PodRecord pod = make_pod(row.pod);
        CHECK_TEXT(container_exit_action(pod, row.index, row.policy) == row.expected, row.name);
    }
}

namespace {

struct SidecarStopRow {
    const char* name;
    std::vector<C> pod;
    const char* policy;
    std::vector<std::size_t> stop;
};

const SidecarStopRow kSidecarStopRows[] = {
    {"computePodActions: Never, the app container exited 0: KillPod stops the running sidecars, the last "
     "declared first (KEP-753's reverse termination order)",
     {sidecar(ContainerState::Running, true, false), kDoneInit, sidecar(ContainerState::Running, true, false),
      app_exited(0)},
     "Never",
     {2, 0}},
    {"computePodActions: Never, the app container failed: Failed, the sidecar stops",
     {sidecar(ContainerState::Running, true, false), app_exited(1)},
     "Never",
     {0}},
    {"computePodActions: an app container still runs: keepCount > 0, nothing stops",
     {sidecar(ContainerState::Running, true, false), app(ContainerState::Running, false), app_exited(0)},
     "Never",
     {}},
    {"computePodActions: OnFailure, a failed app container restarts: its sidecar stays",
     {sidecar(ContainerState::Running, true, false), app_exited(1)},
     "OnFailure",
     {}},
    {"restartPolicy Always (every DaemonSet pod): the pod never finishes, nothing stops",
     {sidecar(ContainerState::Running, true, false), app_exited(0)},
     "Always",
     {}},
    {"computePodActions: InitContainersToStart cleared: a sidecar waiting out its back-off is not started "
     "again",
     {sidecar(ContainerState::Waiting), app_exited(0)},
     "Never",
     {0}},
    {"a sidecar already stopped is not stopped again",
     {sidecar(ContainerState::Terminated), app_exited(0)},
     "Never",
     {}},
};

}  // namespace

TEST(PodLifecycle, FinishedPodStopsItsSidecars) {
    for (const auto& row : kSidecarStopRows) {
        const PodRecord pod = make_pod(row.pod);
        std::string got, want;
        for (auto i : sidecars_to_stop(pod, row.policy)) got += std::to_string(i) + " ";
        for (auto i : row.stop) want += std::to_string(i) + " ";
        STRCMP_EQUAL_TEXT(want.c_str(), got.c_str(), row.name);
    }
}

TEST(PodLifecycle, PhaseFollowsGetPhaseForOnFailureAndNever) {
    for (const auto& row : kPhaseRows) {
        PodRecord pod = make_pod(row.pod);
        for (auto& c : pod.containers)
            if (c.state == ContainerState::Waiting && c.started_at_ms) c.termination_reason = "Error";
        STRCMP_EQUAL_TEXT(to_string(row.expected), to_string(pod_phase(pod, row.policy)), row.name);
        update_pod_conditions(pod, row.policy);
        STRCMP_EQUAL_TEXT(to_string(row.expected), to_string(pod.phase), row.name);
    }
}

TEST(PodLifecycle, RejectedPodStaysFailedWithItsReason) {
    // kubelet's rejectPod: phase Failed, status.reason the predicate's name.
    PodRecord pod;
    pod.reason = "NodeAffinity";
    update_pod_conditions(pod, "Always");
    STRCMP_EQUAL("Failed", to_string(pod.phase));
    STRCMP_EQUAL("NodeAffinity", pod_columns(pod).status.c_str());
}

// kubelet_running_containers' container_state: each row names the kubelet
// rule it pins (pleg/generic.go updateRunningPodAndContainerMetrics counts
// the runtime's containers by kubecontainer.State; kuberuntime_container.go
// toKubeContainerState maps CRI's states, CONTAINER_UNKNOWN to unknown).
TEST(PodLifecycle, RuntimeContainerStateAsTheKubeletCountsIt) {
    struct Row {
        const char* name;
        ContainerState state;
        bool starting;
        bool unreadable;
        const char* want;  // nullptr: not counted
    };
    const Row rows[] = {
        {"toKubeContainerState: CONTAINER_RUNNING is running", ContainerState::Running, false, false,
         "running"},
        {"toKubeContainerState: CONTAINER_EXITED is exited", ContainerState::Terminated, false, false,
         "exited"},
        {"toKubeContainerState: CONTAINER_CREATED (a start in flight) is created", ContainerState::Waiting,
         true, false, "created"},
        {"updateRunningPodAndContainerMetrics: a container waiting for its back-off is not in the runtime",
         ContainerState::Waiting, false, false, nullptr},
        {"toKubeContainerState: CONTAINER_UNKNOWN, a running container whose status is not read, is unknown",
         ContainerState::Running, false, true, "unknown"},
        {"toKubeContainerState: unknown wins over a start asked again", ContainerState::Waiting, true, true,
         "unknown"},
    };
    for (const Row& row : rows) {
        ContainerStatus cs;
        cs.state = row.state;
        const char* got = runtime_container_state(cs, row.starting, row.unreadable);
        STRCMP_EQUAL_TEXT(row.want ? row.want : "(none)", got ? got : "(none)", row.name);
    }
}

// A start that failed, as the container's waiting status (start_failure):
// kuberuntime startContainer's errors, image_manager.go EnsureImageExists
// (ErrImagePull, ImagePullBackOff, ErrImageNeverPull), generateContainerConfig
// (CreateContainerConfigError), the volume manager (ContainerCreating,
// FailedMount) and RunContainerError.
TEST(PodLifecycle, AFailedStartWaitsAsTheKubeletSays) {
    struct Row {
        const char* name;
        ErrorCode code;
        const char* policy;
        bool can_pull;
        const char* reason_before;
        const char* message_before;
        StartFailureKind kind;
        const char* reason;  // the waiting reason after; for Pull the one before, kept
        bool say;
        bool image_missing;
        bool never_pull_event;
        bool mount_event;
        const char* event_message;
    };
    using K = StartFailureKind;
    const Row rows[] = {
        {"EnsureImageExists: IfNotPresent and absent pulls; the first failure says so and restores a GC'd "
         "archive",
         ErrorCode::ImageNotFound, "IfNotPresent", true, "ContainerCreating", "", K::Pull,
         "ContainerCreating", true, true, false, false, ""},
        {"a pull asked again within the same wait is not said again", ErrorCode::ImageNotFound, "Always",
         true, "ErrImagePull", "x", K::Pull, "ErrImagePull", false, false, false, false, ""},
        {"ErrImageNeverPull: policy Never never pulls, even where the runtime could",
         ErrorCode::ImageNotFound, "Never", true, "ContainerCreating", "", K::ImageWait, "ErrImageNeverPull",
         true, true, true, false, "ErrImageNeverPull"},
        {"ErrImagePull: a runtime that cannot pull waits for an import", ErrorCode::ImageNotFound,
         "IfNotPresent", false, "ContainerCreating", "", K::ImageWait, "ErrImagePull", true, true, false,
         false, "ErrImagePull"},
        {"ImagePullBackOff: the same wait again is not said again", ErrorCode::ImageNotFound, "IfNotPresent",
         false, "ErrImagePull", "x", K::ImageWait, "ImagePullBackOff", false, false, false, false,
         "ImagePullBackOff"},
        {"CreateContainerConfigError: its Failed Event carries the message", ErrorCode::ContainerConfig, "",
         true, "ContainerCreating", "", K::ConfigWait, "CreateContainerConfigError", true, false, false,
         false, "runAsNonRoot"},
        {"CreateContainerConfigError: the same message again is not said again", ErrorCode::ContainerConfig,
         "", true, "CreateContainerConfigError", "runAsNonRoot", K::ConfigWait, "CreateContainerConfigError",
         false, false, false, false, "runAsNonRoot"},
        {"CreateContainerConfigError: a new message is said", ErrorCode::ContainerConfig, "", true,
         "CreateContainerConfigError", "a sysctl", K::ConfigWait, "CreateContainerConfigError", true, false,
         false, false, "runAsNonRoot"},
        {"a volume that cannot be set up: ContainerCreating and FailedMount on the Pod",
         ErrorCode::VolumeSetup, "", true, "ContainerCreating", "", K::ConfigWait, "ContainerCreating", true,
         false, false, true, "runAsNonRoot"},
        {"RunContainerError: any other failure, said every time", ErrorCode::Runtime, "", true,
         "RunContainerError", "runAsNonRoot", K::RunError, "RunContainerError", true, false, false, false,
         "runAsNonRoot"},
    };
    for (const Row& row : rows) {
        ContainerStatus cs;
        cs.state = ContainerState::Terminated;  // the exit before
        cs.reason = row.reason_before;
        cs.message = row.message_before;
        const std::string message =
            row.code == ErrorCode::ImageNotFound ? "image busybox is absent" : "runAsNonRoot";
        const StartFailure f =
            start_failure(cs, Error{row.code, message}, row.policy, row.can_pull, "/imports");
        CHECK_TEXT(f.kind == row.kind, row.name);
        CHECK_TEXT((cs.state == ContainerState::Waiting) == (row.kind != K::Pull), row.name);
        STRCMP_EQUAL_TEXT(row.reason, cs.reason.c_str(), row.name);
        CHECK_EQUAL_TEXT(row.say, f.say, row.name);
        CHECK_EQUAL_TEXT(row.image_missing, f.image_missing, row.name);
        CHECK_EQUAL_TEXT(row.never_pull_event, f.never_pull_event, row.name);
        CHECK_EQUAL_TEXT(row.mount_event, f.mount_event, row.name);
        STRCMP_EQUAL_TEXT(row.event_message, f.event_message.c_str(), row.name);
        if (row.kind == K::Pull) {
            STRCMP_EQUAL_TEXT(row.message_before, cs.message.c_str(), row.name);  // left as it was
        } else if (row.kind == K::ImageWait) {
            STRCMP_EQUAL_TEXT("image busybox is absent; import it into /imports", cs.message.c_str(),
                              row.name);
        } else {
            STRCMP_EQUAL_TEXT("runAsNonRoot", cs.message.c_str(), row.name);
        }
    }
}
