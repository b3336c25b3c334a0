// The kubelet's prober, per container and probe kind, as pure state
// machines (Kubernetes 1.25 to 1.30, pkg/kubelet/prober/worker.go doProbe,
// prober_manager.go UpdatePodStatus, results/results_manager.go). The agent
// runs the probe actions (platform/probe_*) on its loop, passes the monotonic
// time in and acts on what these functions return; nothing here reads a
// clock or does I/O.
//
// One ProbeWorker per (container, kind), as kubelet has one worker goroutine:
//
//   container (re)started     probe_container_started: the result goes back
//                             to the kind's initial value (readiness Failure,
//                             liveness Success, startup none) and the worker
//                             leaves its hold (worker.go: "container ID changed")
//   every periodSeconds        probe_due: skipped while on hold, during
//                             initialDelaySeconds (whole seconds since the
//                             container started, truncated as kubelet's
//                             int32(time.Since(StartedAt).Seconds())), and
//                             gated by the startup probe: only the startup
//                             probe runs until the container has started,
//                             and it stops once it has
//   a probe's outcome          probe_record: successThreshold successes or
//                             failureThreshold failures in a row change the
//                             result; a liveness or startup Failure asks for
//                             the container to be killed and puts the worker
//                             on hold until the next container
//   the container's status     probe_container_status: started and ready as
//                             UpdatePodStatus computes them
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "core/model.h"

namespace daemonlet {

enum class ProbeKind { Liveness, Readiness, Startup };

// What one run of a probe action gave (k8s.io/kubernetes/pkg/probe Result,
// as prober.go maps it): Success (Warning counts as success), Failure, or
// Unknown when the prober itself erred; worker.go throws Unknown away.
enum class ProbeOutcome { Success, Failure, Unknown };

struct ProbeWorker {
    ProbeKind kind = ProbeKind::Readiness;
    Probe spec;
    // The results manager's value for the current container; nullopt: none
    // yet (startup's initial value, and everything before a container runs).
    std::optional<bool> result;
    std::optional<bool> last_outcome;  // worker.lastResult
    std::int32_t run = 0;              // worker.resultRun: equal outcomes in a row
    bool on_hold = false;              // worker.onHold: a kill was asked for; wait for a new container
};

// A worker for a container's probe of this kind.
ProbeWorker make_probe_worker(ProbeKind kind, const Probe& spec);

// A new container instance is running: results start over.
void probe_container_started(ProbeWorker& w);

// The container stopped running: readiness and liveness read Failure for the
// old container (worker.go: "if !w.containerID.IsEmpty() ... Set(Failure)").
void probe_container_stopped(ProbeWorker& w);

// Whether the worker probes on this tick. `started` is the container's
// started field (probe_container_status); started_mono_ms when its current
// instance started.
bool probe_due(const ProbeWorker& w, bool started, std::int64_t started_mono_ms, std::int64_t now_mono_ms);

struct ProbeRecord {
    bool result_changed = false;  // the results manager's value changed (log it, refresh readiness)
    bool kill = false;            // liveness / startup crossed failureThreshold: restart the container
};

// Records an outcome of a probe run started when probe_due said so.
ProbeRecord probe_record(ProbeWorker& w, ProbeOutcome outcome);

struct ContainerProbeStatus {
    bool started = false;
    bool ready = false;
};

// UpdatePodStatus for one container: started when running and the startup
// probe (if any) has succeeded; ready when started and the readiness probe
// (if any) has succeeded. Pass nullptr for a kind the container does not have.
ContainerProbeStatus probe_container_status(bool running, const ProbeWorker* startup,
                                            const ProbeWorker* readiness);

// "Liveness", "Readiness", "Startup": kubelet's event wording ("Liveness
// probe failed: ...").
const char* to_string(ProbeKind k);

}  // namespace daemonlet
