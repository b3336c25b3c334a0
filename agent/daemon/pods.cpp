// The reconcile loop and the pods: creating and admitting them, and the
// agent's side of the pod workers (PodWorkers::Host, pod_workers.h: the
// launch description, what a start, an exit or a pod's termination does
// here). The starts, exits, restarts and stops themselves are
// PodWorkers'. Adopting what already runs when the agent starts is
// agent/daemon/adopt.cpp.
#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <utility>

#include "agent/daemon/agent.h"
#include "core/decision.h"
#include "core/image_wait.h"
#include "core/pod_lifecycle.h"
#include "core/pod_network.h"
#include "core/sysctl.h"
#include "platform/log.h"
#include "platform/system_info.h"

namespace daemonlet::agent {

using platform::Level;
using platform::log;

namespace {

// "0.3", "12", "300": seconds for people, with a decimal below ten.
std::string seconds(std::int64_t ms) {
    if (ms >= 10'000) return std::to_string(ms / 1000);
    std::string s = std::to_string(ms / 1000) + "." + std::to_string((ms % 1000) / 100);
    return s;
}

}  // namespace

// The template of the pod's own revision: while its DaemonSet rolls, an old
// pod restarts (and probes) as what it was, not as the new template. A
// static pod's is its file's pod, whose UID it has.
Agent::PodSource Agent::pod_source(const PodRecord& rec) const {
    if (rec.is_static()) {
        const StaticPods::Desired* s = static_pods_.of(rec.uid);
        if (!s) return {};
        return {std::shared_ptr<const PodSpec>(s->pod, &s->pod->spec), &s->pod->metadata};
    }
    const Desired* d = desired_.for_pod(rec);
    if (!d || d->hash != rec.revision_hash) return {};
    const PodTemplateSpec& t = d->ds().spec.template_;
    std::shared_ptr<const PodSpec> spec(d->object, &t.spec);
    // What the ServiceAccount admission plugin adds, when the agent follows
    // a cluster (api_access.h); not to static pods, whose mirror pods the
    // plugin leaves alone.
    if (config_.api_server.enabled && api_access_)
        spec = api_access_->admitted(rec.uid, spec, should_automount(d->ds().object));
    return {std::move(spec), &t.metadata};
}

std::string Agent::restart_policy_of(const PodRecord& rec) const {
    if (!rec.is_static()) return "Always";
    const StaticPods::Desired* s = static_pods_.of(rec.uid);
    if (!s || s->pod->spec.restart_policy.empty()) return "Always";
    return s->pod->spec.restart_policy;
}

const Container* Agent::container_spec(const LivePod& p, std::size_t index) const {
    const PodSource src = pod_source(p.rec);
    return src.spec ? find_container(*src.spec, p, index) : nullptr;
}

const Container* Agent::find_container(const PodSpec& spec, const LivePod& p, std::size_t index) {
    return ContainerConfig::find_container(spec, p, index);
}

void Agent::schedule_reconcile(bool next_turn) {
    // Coalesces a burst of triggers into one pass on the next loop turn.
    if (stopping_ || reconcile_pending_ || !reconcile_timer_) return;
    reconcile_pending_ = true;
    uv_timer_start(
        reconcile_timer_,
        [](uv_timer_t* t) {
            auto* self = static_cast<Agent*>(t->data);
            self->reconcile_pending_ = false;
            self->reconcile();
        },
        next_turn ? 1 : 0, 0);
}

void Agent::reconcile() {
    if (stopping_) return;
    check_wall_clock();  // before anything new is recorded on the stepped clock
    // The agent's relist: one pass over the desired DaemonSets and the pods
    // (kubelet_pleg_relist_duration_seconds, the kubelet's PLEG relist).
    struct Timed {
        AgentMetrics* m;
        std::uint64_t t0 = uv_hrtime();
        ~Timed() {
            if (m)
                m->registry().observe("kubelet_pleg_relist_duration_seconds",
                                      static_cast<double>(uv_hrtime() - t0) / 1e9);
        }
    } timed{metrics_.get()};
    // The DaemonSet sync's input (daemonset_sync.h), before this pass's
    // other work changes the table.
    for (auto& [uid, p] : pods_) refresh_readiness(p);
    const DaemonSetSync::Observed observed = ds_sync_.observe(desired_, pods_);
    start_waiting_containers();
    // The static pods (static_pods.h): the stops first, then the starts
    // decided over what the stops left.
    for (const auto& stop : static_pods_.plan_stops()) workers_->terminate(stop.uid, stop.reason);
    for (const auto& start : static_pods_.plan_starts()) {
        if (start.pod)
            create_static_pod(start.uid, *start.pod);
        else
            schedule_reconcile(true);  // after this pass has answered the delete
    }
    const DaemonSetSync::Plan plan = ds_sync_.plan(observed);
    for (const auto& key : plan.newly_paced)
        log(Level::Notice, "DaemonSet " + key +
                               ": its rollout here waits for the DaemonSet controller (the old Pod's "
                               "deletion, or with maxSurge the new Pod; apiServer.rollouts: cluster)");
    for (const auto& r : plan.remove) workers_->terminate(r.uid, r.reason);
    // A few creations per loop turn, the rest planned again on the next
    // one (DaemonSetSync::kCreatesPerTurn).
    for (const auto& c : plan.create) create_pod(c);
    // What was just done changes what is observed (a new pod is running and
    // ready): plan again until nothing is left to do. The planner creates
    // nothing twice, so this converges.
    if (plan.again) schedule_reconcile(plan.next_turn);
    if (plan.wake_in_ms && wake_timer_)
        uv_timer_start(
            wake_timer_, [](uv_timer_t* t) { static_cast<Agent*>(t->data)->schedule_reconcile(); },
            *plan.wake_in_ms, 0);
    update_status();
}

// Containers with neither a process nor a pending restart: those of pods
// adopted from the store whose process is gone, and those that waited for
// their DaemonSet to be known.
void Agent::start_waiting_containers() {
    for (const auto& uid : pods_.uids()) {
        workers_->stop_finished_sidecars(uid);  // adopted finished, its sidecars still running
        if (!workers_->advance(uid)) continue;
        LivePod& p = pods_.at(uid);  // advance started it: it is here
        refresh_readiness(p);
        pods_.save(p);
    }
    ensure_probes();
}

// kubelet's UpdatePodStatus: an init container is ready once it exited 0;
// an app container is started and ready as its startup and readiness probes
// say (core/probe.h); the pod is ready when every app container is, which
// starts the minReadySeconds clock (monotonic) for availability.
void Agent::refresh_readiness(LivePod& p) {
    refresh_pod_ips(p);
    // started and ready as the probes say; until its probes are set up (the
    // template not known yet after a restart of the agent), a container is
    // not taken as ready.
    auto probe_status = [&](std::size_t i) {
        ContainerStatus& c = p.status(i);
        const bool running = c.state == ContainerState::Running && !p.rec.deleting;
        const ContainerProbeStatus st = probes_->status(p.rec.uid, i, running);
        c.started = st.started;
        c.ready = st.ready;
    };
    // Sidecars count for the pod's readiness (1.29+
    // GenerateContainersReadyCondition); regular init containers are not probed.
    for (std::size_t i = 0; i < p.containers.size(); ++i)
        if (!p.is_init(i) || p.status(i).sidecar) probe_status(i);
    const bool ready = update_pod_conditions(p.rec, restart_policy_of(p.rec));
    p.ready_since_mono_ms = ready_since(ready, p.ready_since_mono_ms, clock_.monotonic_ms());
}

// status.podIPs from the runtime's sandbox (every container of a pod is in
// the same one): set once a container runs, kept while none does, changed
// when a new sandbox brings a new address. The runtime keeps each
// container's answer, so this costs one PodSandboxStatus per container. A
// pod in the node's network (hostNetwork, every exec runtime pod) has the
// node's IPs (node_ips.cpp); a runc pod without hostNetwork, alone in a
// network namespace with only loopback, has none.
void Agent::refresh_pod_ips(LivePod& p) {
    for (const auto& lc : p.containers) {
        if (lc.id.empty()) continue;
        auto net = runtime_->pod_network(lc.id);
        if (!net) return;  // the runtime cannot say now: what is known stays
        p.rec.pod_ips = pod_status_ips(net.value().host_network, net.value().ips, node_ips_->ips()).pod_ips;
        return;
    }
}

MetricRegistry* Agent::pod_metrics() { return metrics_ ? &metrics_->registry() : nullptr; }

void Agent::pod_saved() {
    if (api_pods_) api_pods_->changed();
}

void Agent::create_pod(const PodToCreate& c) {
    const Desired* d = desired_.find(c.namespace_ + "/" + c.daemonset);
    if (!d) return;
    const DaemonSet& ds = d->ds();
    LivePod p = ds_sync_.new_pod(c);
    log(Level::Notice,
        "pod " + c.namespace_ + "/" + p.rec.name + " created for DaemonSet " + c.daemonset + " revision " +
            std::to_string(c.revision),
        {{"DAEMONLET_POD", c.namespace_ + "/" + p.rec.name}});
    ds_events_.record(c.namespace_, c.daemonset, "Normal", "SuccessfulCreate", "Created pod: " + p.rec.name);
    // The DaemonSet controller made it; the kubelet admits it, or rejects
    // it (the planner then deletes it under failedPodsBackoff).
    if (auto rejected = admission_.admit(ds.spec.template_.spec)) {
        const std::string what = "pod " + c.namespace_ + "/" + p.rec.name;
        return reject_pod(std::move(p), *rejected, what);
    }
    start_new_pod(std::move(p), ds.spec.template_.spec);
}

void Agent::start_new_pod(LivePod p, const PodSpec& spec) {
    const std::string uid = p.rec.uid;
    PodTable::add_containers(p, spec);
    pods_.add(std::move(p));
    workers_->advance(uid);
    ensure_probes();
    LivePod& added = pods_.at(uid);
    refresh_readiness(added);
    pods_.save(added);
}

void Agent::reject_pod(LivePod p, const PodRejection& rejected, const std::string& what) {
    p.rec.reason = rejected.reason;
    p.rec.message = rejected.message;
    p.rec.phase = PodPhase::Failed;
    const std::string name = p.rec.namespace_ + "/" + p.rec.name;
    log(Level::Warning, what + " rejected: " + rejected.reason + ": " + rejected.message,
        {{"DAEMONLET_POD", name}});
    // The kubelet's event on the pod; here on its DaemonSet (a static pod's
    // is its log line).
    ds_events_.record(p.rec.namespace_, p.rec.daemonset, "Warning", rejected.reason.c_str(),
                      rejected.message + " (pod " + p.rec.name + ")");
    pods_.save(pods_.add(std::move(p)));
}

// The launch description of a container (ContainerConfig,
// container_config.h); nullopt: it waits, its status says why.
std::optional<platform::ContainerLaunch> Agent::launch_of(const std::string& uid, std::size_t index) {
    return container_config_.launch(pods_.at(uid), index);
}

PodRecord* Agent::worker_pod(const std::string& uid) {
    LivePod* p = pods_.find(uid);
    return p ? &p->rec : nullptr;
}

WorkerContainer& Agent::worker_container(const std::string& uid, std::size_t index) {
    return pods_.at(uid).containers[index];
}

void Agent::pod_changed(const std::string& uid, bool reconcile) {
    LivePod& p = pods_.at(uid);
    refresh_readiness(p);
    pods_.save(p);
    if (reconcile) schedule_reconcile();
}

void Agent::runtime_operation_done(const char* what, std::uint64_t t0, bool ok) {
    metrics_->count_runtime_operation(what, t0, ok);
}

// The container runs: startContainer's Created and Started Events (the
// runtimes here create and start in one call), its imageID, probes and
// postStart hook.
void Agent::container_started(const std::string& uid, std::size_t index, const std::string& id,
                              std::shared_ptr<const Container> spec,
                              std::vector<std::pair<std::string, std::string>> env,
                              std::int64_t grace_seconds) {
    LivePod& p = pods_.at(uid);
    const ContainerStatus& cs = p.status(index);
    record_pod_event(p, created_event(container_ref(p, index), cs.started_at_ms));
    record_pod_event(p, started_event(container_ref(p, index), cs.started_at_ms));
    note_image_id(uid, index, id);
    // A pod removed meanwhile: PodWorkers::on_started kills it (Killing,
    // preStop, the stop); an agent that stops records it for the next one
    // to adopt.
    if (!p.rec.deleting && !stopping_) start_probes(uid, index);
    refresh_readiness(p);
    pods_.save(p);
    schedule_reconcile();
    if (!pod_hooks_ || p.containers[index].id.empty()) return;
    PodHooks::Target t = PodHooks::target(p.rec, p.containers[index].id, std::move(spec), grace_seconds);
    t.container.env = std::move(env);
    pod_hooks_->started(uid, index, std::move(t), !p.rec.deleting && !stopping_);
}

void Agent::note_image_id(const std::string& uid, std::size_t index, const std::string& id) {
    if (std::string_view(runtime_->name()) == "exec") return;
    const std::uint64_t t0 = uv_hrtime();
    runtime_->inspect_async(id, [this, uid, index, id, t0](Result<platform::ContainerInfo> info) {
        metrics_->count_runtime_operation("container_status", t0, info.ok());
        if (stopping_ || !info.ok() || info.value().image_ref.empty()) return;
        LivePod* found = pods_.find(uid);
        if (!found || found->containers[index].id != id) return;
        ContainerStatus& cs = found->status(index);
        if (cs.image_id == info.value().image_ref) return;
        cs.image_id = info.value().image_ref;
        pods_.save(*found);
    });
}

// A start failed (PodWorkers handles an unreachable runtime): the
// container waits, as core's start_failure says; true: retried after its
// back-off.
bool Agent::container_start_failed(const std::string& uid, std::size_t index, const Container& spec,
                                   const Error& error) {
    LivePod& p = pods_.at(uid);
    ContainerStatus& cs = p.status(index);
    const StartFailure f =
        start_failure(cs, error, spec.image_pull_policy, runtime_->can_pull(), image_import_dir_of(config_));
    if (f.image_missing) images_->image_missing(spec.image);
    const std::string container = "pod " + p.rec.namespace_ + "/" + p.rec.name + " container " + cs.name;
    if (f.kind == StartFailureKind::Pull) {
        if (f.say) log(Level::Notice, container + ": " + error.message + "; pulling it from its registry");
        images_->request_pull({uid, index}, p.rec, spec, cs);
        return false;  // the pull starts it
    }
    const ContainerRef ref = container_ref(p, index);
    const std::int64_t now = clock_.wall_ms();
    if (f.never_pull_event) record_pod_event(p, never_pull_event(ref, spec.image, now));
    if (f.mount_event)
        record_pod_event(p, warning_event(nullptr, "FailedMount", f.event_message, now));
    else
        record_pod_event(p, failed_event(ref, f.event_message, now));
    if (!f.say) return true;
    switch (f.kind) {
    case StartFailureKind::ImageWait:
        log(Level::Err,
            container + ": " + cs.message + "; retrying with back-off and when an image is imported");
        break;
    case StartFailureKind::ConfigWait:
        log(Level::Err, container + ": " + cs.message + "; retrying with back-off");
        break;
    default: log(Level::Err, container + " did not start: " + cs.message + "; retrying with back-off");
    }
    return true;
}
// The runtime is down, not the container (PodWorkers retries within 5 s of
// its return): its Event, and a log line once per outage.
void Agent::runtime_unavailable(const std::string& uid, std::size_t index, const Error& error, bool first) {
    LivePod& p = pods_.at(uid);
    const ContainerStatus& cs = p.status(index);
    record_pod_event(p, failed_event(container_ref(p, index), error.message, clock_.wall_ms()));
    if (first)
        log(Level::Err, "pod " + p.rec.namespace_ + "/" + p.rec.name + " container " + cs.name +
                            " did not start: " + cs.message + "; retrying until the runtime answers");
}

void Agent::container_killing(const std::string& uid, std::size_t index) {
    LivePod& p = pods_.at(uid);
    record_pod_event(p, killing_event(container_ref(p, index), nullptr, clock_.wall_ms()));
}

std::optional<std::int64_t> Agent::stop_grace(const std::string& uid) {
    LivePod* found = pods_.find(uid);
    return !found ? std::nullopt : found->rec.deletion_grace_seconds;
}

void Agent::close_runtime_when_idle() {
    if (runtime_ && runtime_ops_.running() == 0) runtime_->close();
}

void Agent::container_exiting(const std::string& uid, std::size_t index) {
    probes_->remove(uid, index);
    if (pod_hooks_) pod_hooks_->cancel(uid, index);
}

// What an exit does here, besides its sequence (PodWorkers): its log line,
// and for a restart the restarts counter and the BackOff Events.
void Agent::container_exited(const std::string& uid, std::size_t index, ExitAction action,
                             std::int64_t ran_for_ms, std::int64_t delay_ms) {
    LivePod& p = pods_.at(uid);
    const ContainerStatus& cs = p.status(index);
    const std::string pod_name = p.rec.namespace_ + "/" + p.rec.name;
    if (action == ExitAction::InitCompleted) {
        log(Level::Info, "pod " + pod_name + " init container " + cs.name + " completed",
            {{"DAEMONLET_POD", pod_name}, {"DAEMONLET_CONTAINER", cs.name}});
        return;
    }
    if (action == ExitAction::Done) {
        log(Level::Notice,
            "pod " + pod_name + " container " + cs.name + " exited with " + std::to_string(cs.exit_code) +
                " (" + cs.reason + "); not restarted (restartPolicy " + restart_policy_of(p.rec) + ")",
            {{"DAEMONLET_POD", pod_name}, {"DAEMONLET_CONTAINER", cs.name}});
        return;
    }
    if (action != ExitAction::Restart) return;
    metrics_->registry().add("daemonlet_container_restarts_total", {p.rec.namespace_, p.rec.daemonset});
    log(Level::Warning,
        "pod " + pod_name + " container " + cs.name + " exited with " + std::to_string(cs.exit_code) + " (" +
            cs.reason + ") after " + seconds(ran_for_ms) + " s; restarting in " + seconds(delay_ms) + " s",
        {{"DAEMONLET_POD", pod_name}, {"DAEMONLET_CONTAINER", cs.name}});
    if (delay_ms > 0) {
        ds_events_.backoff(p.rec, cs.name);
        record_pod_event(p, backoff_event(container_ref(p, index), clock_.wall_ms()));
    }
}

void Agent::pod_terminating(const std::string& uid, const std::string& reason) {
    const PodRecord& rec = pods_.at(uid).rec;
    log(Level::Notice, "pod " + rec.namespace_ + "/" + rec.name + " stopping: " + reason,
        {{"DAEMONLET_POD", rec.namespace_ + "/" + rec.name}});
    ds_events_.pod_removed(rec, reason);
}

void Agent::container_terminating(const std::string& uid, std::size_t index) { probes_->remove(uid, index); }

void Agent::pod_terminated(const std::string& uid) {
    LivePod* found = pods_.find(uid);
    if (!found) return;
    log(Level::Notice, "pod " + found->rec.namespace_ + "/" + found->rec.name + " stopped");
    if (auto w = store_->delete_pod(uid); !w.ok()) log(Level::Err, "store: " + w.error().message);
    if (api_pods_) api_pods_->pod_finished(uid, board_pod_status(*found, true));
    probes_->remove_pod(uid);
    if (auto s = config_volumes_->forget(uid); !s) log(Level::Err, "pod volumes: " + s.error().message);
    api_access_->forget(uid);
    static_pods_.pod_gone(uid);
    if (pod_hooks_) pod_hooks_->forget(uid);
    pods_.erase(uid);
    runtime_->pod_removed(uid);
    schedule_reconcile();
    images_->pod_removed(uid);  // its images may be unused now (image GC)
}

}  // namespace daemonlet::agent
