// The pure decisions of a pod's lifecycle on this node, as the kubelet makes
// them for a pod it runs: which container starts next (init containers one
// at a time, sidecars kept running beside the rest, then the app
// containers), what an exit leads to, the crash-loop back-off's waiting
// status, and the pod's phase and readiness from its containers. The agent
// (agent/daemon/pods.cpp) measures, calls the runtime and carries these out; every
// input here is a plain value and `now` is passed in.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/config.h"
#include "core/pod.h"
#include "core/reconcile.h"
#include "core/result.h"

namespace daemonlet {

// The crash-loop back-off of the agent's configuration (crashLoopBackoff's
// initial and max; kubelet's NewBackOff(10 s, 300 s) by default).
BackoffPolicy crash_loop_policy(const AgentConfig& config);

// Container `i` of a pod: init containers first, then app containers.
const ContainerStatus& container_at(const PodRecord& pod, std::size_t i);
ContainerStatus& container_at(PodRecord& pod, std::size_t i);
std::size_t container_count(const PodRecord& pod);

// Whether the pod is initialized: an app container has started once.
// Regular init containers do not run again, and a sidecar's restart holds
// nothing back (kuberuntime computePodActions: initialization is done once
// the app containers have been created).
bool pod_initialized(const PodRecord& pod);

// Whether a sidecar (an init container with restartPolicy Always) lets the
// next init container start: it runs and its startup probe passed, or the
// pod is initialized (KEP-753; kuberuntime computeInitContainerActions).
bool sidecar_lets_next_start(const ContainerStatus& sidecar, bool initialized);

// What advancing a pod starts now. `idle[i]`: container i has neither a
// process nor a pending restart. Scanning from init container `from`:
//   - a regular init container that completed (exit 0), or any once the pod
//     is initialized, is passed; the first other one starts if idle, and
//     nothing after it is looked at (one at a time, in order);
//   - an idle sidecar starts; whether the scan goes on past it depends on
//     its status once started (its startup probe): `then_check_sidecar` is
//     its index, and the caller, after starting it and refreshing its
//     status, scans again from the next index when sidecar_lets_next_start;
//     a sidecar already running is checked here and blocks or is passed;
//   - past the init containers, every idle app container that has not
//     terminated starts (they start together).
struct PodStartStep {
    std::vector<std::size_t> start;                 // in this order
    std::optional<std::size_t> then_check_sidecar;  // the last of `start`, a sidecar
};
PodStartStep next_start_step(const PodRecord& pod, const std::vector<bool>& idle, std::size_t from = 0);

// Whether a container that exited with `exit_code` is started again under
// the pod's restartPolicy (kubelet pkg/kubelet/container/helpers.go
// ShouldContainerBeRestarted): Always yes, OnFailure when it failed, Never no.
bool container_restarts(const std::string& restart_policy, std::int32_t exit_code);

// What a container's exit leads to, its status already terminated:
//   FinishPod      the pod is stopping: it goes once its last container has;
//   InitCompleted  a regular init container exited 0: the next one starts,
//                  its back-off forgotten;
//   Done           the pod's restartPolicy (a static pod's OnFailure or
//                  Never, container_restarts) keeps it terminated; a failed
//                  regular init container under Never fails the pod
//                  (kuberuntime computePodActions / computeInitContainerActions);
//   Restart        anything else, after the crash-loop back-off: sidecars
//                  (restartPolicy Always of their own) unless the pod is
//                  finished (sidecars_to_stop: then Done), failed init
//                  containers unless the pod's policy is Never.
enum class ExitAction { FinishPod, InitCompleted, Done, Restart };
ExitAction container_exit_action(const PodRecord& pod, std::size_t index,
                                 const std::string& restart_policy = "Always");

// The sidecars to stop because the pod's regular containers are done: under
// restartPolicy OnFailure or Never once the phase is Succeeded or Failed
// (pod_phase, which leaves sidecars out), nothing is kept running
// (kuberuntime_manager.go computePodActions: keepCount == 0 and nothing to
// start sets KillPod, and InitContainersToStart is cleared "to prevent the
// restartable init containers to keep pod alive"). The indices of the
// sidecars not terminated (running, or waiting out a crash-loop back-off:
// not started again), the last declared first (sidecars stop in reverse
// order, KEP-753).
// Empty under Always, or while a regular container runs or restarts.
std::vector<std::size_t> sidecars_to_stop(const PodRecord& pod, const std::string& restart_policy);

// The pod's phase as kubelet_pods.go getPhase gives it for restartPolicy
// OnFailure and Never (static pods): a pod rejected at admission is Failed;
// under Never a failed regular init container fails the pod; pending init
// containers, or an app container waiting without having run, keep it
// Pending; one running app container (none unknown) makes it Running; once
// every app container has terminated and none restarts (container_restarts),
// Succeeded when all exited 0, else Failed (Never); OnFailure with a failed
// one restarting is Running.
PodPhase pod_phase(const PodRecord& pod, const std::string& restart_policy);

// kubelet_running_containers' container_state of one container, as the
// kubelet counts its runtime's containers by kubecontainer.State
// (pkg/kubelet/pleg/generic.go updateRunningPodAndContainerMetrics;
// kuberuntime_container.go toKubeContainerState maps CRI's
// CONTAINER_UNKNOWN, a state the runtime cannot tell, to "unknown"):
//   "unknown"  the agent holds a runtime container whose state it cannot
//              tell: the runtime reported it gone (an exit, or for CRI a
//              container no longer running or CONTAINER_UNKNOWN) and its
//              status (inspect, CRI ContainerStatus) has not answered yet,
//              as while the runtime is slow or down;
//   "running", "exited" as the status says; "created" while a start is
//              asked for and has not reported;
//   nullptr    no container in the runtime (waiting for a back-off, an
//              image): the kubelet lists none, so counts none.
const char* runtime_container_state(const ContainerStatus& cs, bool starting, bool state_unreadable);

// The status of a container waiting `delay_ms` > 0 to restart: Waiting,
// CrashLoopBackOff, and kubelet's message ("back-off 20s restarting failed
// container=NAME", kuberuntime_manager.go doBackOff).
void set_crash_loop_waiting(ContainerStatus& cs, std::int64_t delay_ms);

// What a container start that failed leads to (kuberuntime startContainer's
// error as the container's waiting status; the runtime's own unavailability
// is PodWorkers'), `cs` the container's status before it:
//   Pull        the image is absent, its imagePullPolicy is not Never and
//               the runtime can pull: a pull starts it (images.h); the
//               status is left as it is;
//   ImageWait   absent and no pull: ErrImageNeverPull for Never, else
//               ErrImagePull then ImagePullBackOff (image_wait_reason,
//               image_manager.go EnsureImageExists), waiting for an import
//               into `import_dir`; its Failed Event (and ErrImageNeverPull's);
//   ConfigWait  generateContainerConfig failed (CreateContainerConfigError:
//               runAsNonRoot, a sysctl, the image's user; Failed Event) or
//               a volume cannot be set up (ContainerCreating; the volume
//               manager's FailedMount Event on the Pod);
//   RunError    anything else: RunContainerError, its Failed Event.
// Every kind but Pull sets `cs` Waiting and is retried after the crash-loop
// back-off. `say`: the line the agent logs is due (once per wait; a
// ConfigWait once per message; a RunError every time). `image_missing`:
// the first failure of a wait for an absent image (an archive image GC
// removed comes back, image_gc.cpp).
enum class StartFailureKind { Pull, ImageWait, ConfigWait, RunError };
struct StartFailure {
    StartFailureKind kind = StartFailureKind::RunError;
    bool say = false;
    bool image_missing = false;
    bool never_pull_event = false;  // ErrImageNeverPull's Event before the Failed one
    bool mount_event = false;       // FailedMount on the Pod instead of the container's Failed
    std::string event_message;      // the Failed Event's
};
StartFailure start_failure(ContainerStatus& cs, const Error& error, const std::string& image_pull_policy,
                           bool runtime_can_pull, const std::string& import_dir);

// kubelet's status generation for what is not probed: a regular init
// container is ready once it exited 0 and started while it runs; the pod is
// Running once every app container runs, else Pending (kubelet_pods.go
// getPhase for restartPolicy Always); it is ready when every app container
// and every sidecar is ready (status/generate.go GeneratePodReadyCondition,
// sidecars counted since 1.29), never while it stops or without app
// containers. Sidecars' and app containers' started and ready come from
// their probes and are read, not set. Under restartPolicy OnFailure or
// Never the phase is pod_phase's; a rejected pod (status.reason set) stays
// Failed. Returns whether the pod is ready.
bool update_pod_conditions(PodRecord& pod, const std::string& restart_policy = "Always");

// The moment the pod became ready (monotonic), kept while it stays ready:
// the start of minReadySeconds for availability (podutil.IsPodAvailable).
std::optional<std::int64_t> ready_since(bool ready, std::optional<std::int64_t> since,
                                        std::int64_t now_mono_ms);

}  // namespace daemonlet
