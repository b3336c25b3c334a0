// The local pods: what the agent has started on this node for each
// DaemonSet, as the store keeps them and the reconciler reads them. Plain
// values; times are passed in by the caller, never read here.
//
// Two clocks, on purpose: wall-clock times (Unix milliseconds) are for people
// and for Kubernetes-shaped output (startedAt, AGE); durations that drive
// decisions (crash-loop backoff, minReadySeconds) are measured on the
// monotonic clock by the agent, so a clock jump at boot changes nothing.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace daemonlet {

enum class ContainerState { Waiting, Running, Terminated };

struct ContainerStatus {
    std::string name;
    std::string
        runtime_id;  // the runtime's id for the current instance ("exec://<id>" shape without the scheme)
    ContainerState state = ContainerState::Waiting;
    std::string
        reason;  // Waiting: ContainerCreating, CrashLoopBackOff, ...; Terminated: Completed, Error, OOMKilled
    std::string message;
    std::int32_t restart_count = 0;
    std::int32_t exit_code = 0;       // last termination
    std::int64_t started_at_ms = 0;   // wall clock, current instance
    std::int64_t finished_at_ms = 0;  // wall clock, last termination
    // The last termination's reason and start (with exit_code and
    // finished_at_ms): kubelet's lastState.terminated (its
    // lastTerminationState), kept while the container waits in
    // CrashLoopBackOff or runs again. Empty before the first exit.
    std::string termination_reason;
    std::int64_t termination_started_at_ms = 0;
    // The last termination's runtime id: lastState.terminated.containerID
    // (the current instance's is runtime_id).
    std::string termination_runtime_id;
    // The image the runtime ran it from, as the runtime names it: CRI's
    // ContainerStatus.image_ref (containerd: the repo digest
    // "docker.io/library/busybox@sha256:...", or the image id "sha256:..."),
    // the runc runtime's "<repository>@<manifest digest>"; empty when the
    // runtime has no image (exec) or has not said yet. kubelet's
    // containerStatuses[].imageID.
    std::string image_id;
    // What stopping the current instance needs once its pod's spec is gone
    // (its DaemonSet's revision deleted while it was stopping and the agent
    // went away): core/lifecycle_hook.h stop_record, kept when it starts, as
    // the kubelet keeps it in the container's labels; empty without a
    // preStop hook.
    std::string stop_record;
    bool ready = false;
    bool started = false;  // startup probe passed (or none)
    bool sidecar = false;  // an init container with restartPolicy Always: runs beside the app containers
};

enum class PodPhase { Pending, Running, Succeeded, Failed, Unknown };

struct PodRecord {
    std::string uid;   // random, assigned at creation
    std::string name;  // <daemonset>-<5 random chars>, as upstream's generateName
    std::string namespace_;
    std::string daemonset;  // owner's name (same namespace); empty for a static pod
    // A static pod's manifest file (core/static_pod.h); empty for a
    // DaemonSet's pod.
    std::string source;
    std::string revision_hash;  // controller-revision-hash
    std::int64_t revision = 0;  // the revision number this pod runs
    PodPhase phase = PodPhase::Pending;
    std::int64_t created_at_ms = 0;  // wall clock
    bool deleting = false;           // a stop has been requested; the record goes when it is done
    // Its Pod was deleted through the API with this grace (the Pod's
    // deletionGracePeriodSeconds, core kill_grace_seconds): its containers'
    // stop grace instead of the spec's, kept so that a restarted agent
    // resumes the stop with it, offline too (a departure: the kubelet's
    // kuberuntime labels.go io.kubernetes.pod.deletionGracePeriod is set
    // only when a container is created). None: the spec's grace.
    std::optional<std::int64_t> deletion_grace_seconds;
    std::vector<ContainerStatus> init_containers;  // spec.initContainers, in order
    std::vector<ContainerStatus> containers;
    // status.podIPs: the pod's own IPs, as its runtime's sandbox has them
    // (core/pod_network.h pod_status_ips); empty when it has none.
    std::vector<std::string> pod_ips;
    // status.reason and status.message: set when the pod was rejected at
    // admission (the kubelet's rejectPod: phase Failed), else empty.
    std::string reason;
    std::string message;
    bool is_static() const { return !source.empty(); }
};

// One entry of a DaemonSet's revision history (upstream ControllerRevision).
struct RevisionRecord {
    std::string namespace_;
    std::string daemonset;
    std::int64_t revision = 0;  // 1, 2, ... increasing; an undo re-numbers the restored template
    std::string hash;           // template_hash of the template
    std::string template_json;  // the pod template, canonical JSON
    std::int64_t created_at_ms = 0;
};

const char* to_string(ContainerState s);
const char* to_string(PodPhase p);

// Why the kubelet refuses a pod at admission, as rejectPod records it:
// phase Failed with this reason and message, and nothing runs (core
// admit_static_pod's predicates, core admit_sysctls).
struct PodRejection {
    std::string reason;
    std::string message;
};

// kubectl get pods' READY, STATUS and RESTARTS columns (kubectl
// pkg/cmd/get printers: printPod, Kubernetes 1.28 to 1.30): "Terminating";
// while initializing, the first unfinished init container gives
// Init:<Reason>, Init:ExitCode:N or Init:N/M (a started sidecar counts as
// finished), and RESTARTS counts init containers; after that, a waiting or
// terminated app container's reason, or the phase, and RESTARTS counts app
// containers and sidecars. READY counts sidecars with the app containers.
struct PodColumns {
    std::string status;
    std::int32_t restarts = 0;
    std::size_t ready = 0;  // READY: ready app containers and started, ready sidecars ...
    std::size_t total = 0;  // ... of app containers and sidecars
};
PodColumns pod_columns(const PodRecord& p);

}  // namespace daemonlet
