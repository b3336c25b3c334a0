// The agent's side of the Probes component (prober_manager.h): which spec a
// running container is probed by, when its probes are added, and what a
// result does. Results feed the containers' started and ready fields
// (refresh_readiness), hence the pod's readiness, minReadySeconds and
// rolling updates; a liveness or startup failure stops the container, and
// the exit path restarts it with restart_count + 1 and crash-loop back-off,
// as kubelet.
#include "agent/daemon/agent.h"
#include "platform/log.h"

namespace daemonlet::agent {

using platform::Level;
using platform::log;

// The container as its pod runs it: the current template, or for a pod of an
// older revision (a rollout in progress, OnDelete, an agent restart in
// between), that revision's template from the store's history, as kubelet
// probes each pod by its own spec.
const Container* Agent::probed_spec(const LivePod& p, std::size_t index) {
    if (const Container* c = container_spec(p, index)) return c;
    const Desired* d = desired_.for_pod(p.rec);
    const DaemonSet* old = d ? desired_.pod_revision(p.rec, d->ds().object) : nullptr;
    return old ? find_container(old->spec.template_.spec, p, index) : nullptr;
}

void Agent::start_probes(const std::string& uid, std::size_t index) {
    LivePod* found = pods_.find(uid);
    if (!found || stopping_) return;
    LivePod& p = *found;
    WorkerContainer& lc = p.containers[index];
    if (lc.id.empty() || probes_->has(uid, index)) return;
    const Container* spec = probed_spec(p, index);
    if (!spec) return;  // the template is not known yet: ensure_probes comes back
    ProbedContainer c;
    c.pod = p.rec.namespace_ + "/" + p.rec.name;
    c.runtime_id = lc.id;
    c.started_mono_ms = lc.started_mono_ms;
    // Init containers have no probes (validation forbids them), except
    // sidecars.
    if (!p.is_init(index) || p.status(index).sidecar) {
        c.spec = spec;
        // As it started; a missing object now leaves the probe without env.
        if (auto env = container_config_.container_env(p, *spec)) c.env = std::move(env.value());
    }
    probes_->add(uid, index, c);
}

// Running containers without probes set up: just started, or adopted before
// their DaemonSet's template was known.
void Agent::ensure_probes() {
    for (auto& [uid, p] : pods_) {
        if (p.rec.deleting) continue;
        bool started = false;
        for (std::size_t i = 0; i < p.containers.size(); ++i) {
            if (p.containers[i].id.empty() || probes_->has(uid, i)) continue;
            start_probes(uid, i);
            started = true;
        }
        // Readiness starts over with the probes (an adopted container is
        // not ready until its readiness probe passes again): store it.
        if (started) {
            refresh_readiness(p);
            pods_.save(p);
        }
    }
}

// A liveness or startup probe failed failureThreshold times: the container
// is stopped, and the exit handler restarts it with restart_count + 1 and
// crash-loop back-off.
void Agent::on_probe_failed(const std::string& uid, std::size_t index, ProbeKind kind) {
    LivePod* found = pods_.find(uid);
    if (!found) return;
    LivePod& p = *found;
    WorkerContainer& lc = p.containers[index];
    if (lc.id.empty()) return;
    const std::string pod_name = p.rec.namespace_ + "/" + p.rec.name;
    // computePodActions' message for killContainer's Killing Event.
    record_pod_event(p, killing_event(container_ref(p, index), &kind, clock_.wall_ms()));
    workers_->kill(uid, index, lc.id, "pod " + pod_name, false);
}

// A container's started or ready changed: the pod's readiness, hence
// availability and rollouts.
void Agent::on_probe_result_changed(const std::string& uid) {
    LivePod* found = pods_.find(uid);
    if (!found) return;
    refresh_readiness(*found);
    pods_.save(*found);
    schedule_reconcile();
}

}  // namespace daemonlet::agent
