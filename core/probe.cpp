// The kubelet prober's result logic (pkg/kubelet/prober/worker.go,
// prober_manager.go); see core/probe.h for the rules and where each comes from.
#include "core/probe.h"

namespace daemonlet {

namespace {

// worker.go newWorker: initialValue.
std::optional<bool> initial_value(ProbeKind k) {
    switch (k) {
    case ProbeKind::Readiness: return false;
    case ProbeKind::Liveness: return true;
    case ProbeKind::Startup: return std::nullopt;
    }
    return std::nullopt;
}

}  // namespace

ProbeWorker make_probe_worker(ProbeKind kind, const Probe& spec) {
    ProbeWorker w;
    w.kind = kind;
    w.spec = spec;
    // Before any container runs there is no result (the worker has seen no
    // container ID yet).
    return w;
}

void probe_container_started(ProbeWorker& w) {
    // worker.go doProbe: "if w.containerID.String() != c.ContainerID": set
    // the initial value, onHold = false. resultRun is not reset there, but
    // lastResult carries over only through equal outcomes, so a run spanning
    // two containers would count the old container's failures: kubelet
    // resets it when it puts the worker on hold, which is the only way the
    // container changes under a probe's watch; do the same unconditionally.
    w.result = initial_value(w.kind);
    w.on_hold = false;
    w.last_outcome.reset();
    w.run = 0;
}

void probe_container_stopped(ProbeWorker& w) {
    // worker.go: "if c.State.Running == nil { if !w.containerID.IsEmpty()
    // { Set(Failure) } }". Startup reads Failure too; started is computed
    // from running first, so it does not matter for it.
    w.result = false;
    w.last_outcome.reset();
    w.run = 0;
}

bool probe_due(const ProbeWorker& w, bool started, std::int64_t started_mono_ms, std::int64_t now_mono_ms) {
    if (w.on_hold) return false;
    // "Probe disabled for InitialDelaySeconds": whole seconds, truncated.
    const std::int64_t since_s = (now_mono_ms - started_mono_ms) / 1000;
    if (since_s < w.spec.initial_delay_seconds) return false;
    // The startup probe stops once the container has started; the others
    // wait for it.
    if (started) return w.kind != ProbeKind::Startup;
    return w.kind == ProbeKind::Startup;
}

ProbeRecord probe_record(ProbeWorker& w, ProbeOutcome outcome) {
    ProbeRecord r;
    // "Prober error, throw away the result."
    if (outcome == ProbeOutcome::Unknown || w.on_hold) return r;
    const bool success = outcome == ProbeOutcome::Success;
    if (w.last_outcome == success) {
        ++w.run;
    } else {
        w.last_outcome = success;
        w.run = 1;
    }
    // Below threshold: leave the result unchanged.
    if ((!success && w.run < w.spec.failure_threshold) || (success && w.run < w.spec.success_threshold))
        return r;
    r.result_changed = w.result != success;
    w.result = success;
    if (!success && (w.kind == ProbeKind::Liveness || w.kind == ProbeKind::Startup)) {
        // "The container fails a liveness/startup check, it will need to be
        // restarted. Stop probing until we see a new container ID."
        w.on_hold = true;
        w.run = 0;
        r.kill = true;
    }
    return r;
}

ContainerProbeStatus probe_container_status(bool running, const ProbeWorker* startup,
                                            const ProbeWorker* readiness) {
    ContainerProbeStatus s;
    if (!running) return s;
    // "The check whether there is a probe which hasn't run yet": no startup
    // worker -> started.
    s.started = !startup || startup->result == true;
    if (!s.started) return s;
    // No readinessProbe -> always ready.
    s.ready = !readiness || readiness->result == true;
    return s;
}

const char* to_string(ProbeKind k) {
    switch (k) {
    case ProbeKind::Liveness: return "Liveness";
    case ProbeKind::Readiness: return "Readiness";
    case ProbeKind::Startup: return "Startup";
    }
    return "?";
}

}  // namespace daemonlet
