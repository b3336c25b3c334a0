// Probes of running containers, as kubelet's prober manager runs them: one
// worker per (container, probe kind) with a period timer; the result logic
// is core's (core/probe.h), the actions are platform's (platform/prober.h).
// Results feed the containers' started and ready fields (refresh_readiness),
// hence the pod's readiness, minReadySeconds and rolling updates; a liveness
// or startup failure stops the container, and the exit path restarts it with
// restart_count + 1 and crash-loop back-off, as kubelet.
#include "agent/agent.h"
#include "core/decode.h"
#include "core/pod_network.h"
#include "platform/log.h"
#include "platform/system_info.h"

namespace daemonlet::agent {

using platform::Level;
using platform::log;

namespace {

// What a probe timer fires for, by value: the pod may be gone by then.
struct ProbeTarget {
    void* agent;
    std::string uid;
    std::size_t index;
    std::size_t probe;
};

void close_probe_timer(uv_timer_t*& t) { close_targeted_timer<ProbeTarget>(t); }

const ProbeWorker* worker_of(const std::vector<LiveProbe>& probes, ProbeKind kind) {
    for (const auto& p : probes)
        if (p.worker.kind == kind) return &p.worker;
    return nullptr;
}

}  // namespace

// The container as its pod runs it: the current template, or for a pod of an
// older revision (a rollout in progress, OnDelete, an agent restart in
// between), that revision's template from the store's history, as kubelet
// probes each pod by its own spec.
const Container* Agent::probed_spec(const LivePod& p, std::size_t index) {
    if (const Container* c = container_spec(p, index)) return c;
    const Desired* d = desired_for(p.rec);
    if (!d) return nullptr;
    const std::string key = p.rec.namespace_ + "/" + p.rec.daemonset + "/" + p.rec.revision_hash;
    auto it = old_revisions_.find(key);
    if (it == old_revisions_.end()) {
        auto revs = store_->list_revisions(p.rec.namespace_, p.rec.daemonset);
        if (!revs) return nullptr;
        for (const auto& rev : revs.value()) {
            if (rev.hash != p.rec.revision_hash) continue;
            Json obj = d->ds().object;
            Json tmpl = Json::parse(rev.template_json, nullptr, false);
            if (tmpl.is_discarded() || !tmpl.is_object()) return nullptr;
            obj["spec"]["template"] = std::move(tmpl);
            DaemonSet old;
            if (!decode_daemonset(obj, old).empty()) return nullptr;
            // Bounded: revisions are pruned to revisionHistoryLimit, and this
            // cache starts over rather than grow.
            if (old_revisions_.size() >= 32) old_revisions_.clear();
            it = old_revisions_.emplace(key, std::move(old)).first;
            break;
        }
        if (it == old_revisions_.end()) return nullptr;
    }
    return find_container(it->second.spec.template_.spec, p, index);
}

void Agent::start_probes(const std::string& uid, std::size_t index) {
    auto pit = pods_.find(uid);
    if (pit == pods_.end() || stopping_) return;
    LivePod& p = pit->second;
    LiveContainer& lc = p.containers[index];
    if (lc.probes_started || lc.id.empty()) return;
    const Container* spec = probed_spec(p, index);
    if (!spec) return;  // the template is not known yet: ensure_probes comes back
    stop_probes(lc);
    lc.probes_started = true;
    // Init containers have no probes (validation forbids them), except
    // sidecars.
    if (p.is_init(index) && !p.status(index).sidecar) return;
    const std::pair<ProbeKind, const std::optional<Probe>*> kinds[] = {
        {ProbeKind::Startup, &spec->startup_probe},
        {ProbeKind::Readiness, &spec->readiness_probe},
        {ProbeKind::Liveness, &spec->liveness_probe}};
    const auto env = container_env(p, *spec);
    for (const auto& [kind, probe] : kinds) {
        if (!*probe) continue;
        LiveProbe lp;
        lp.worker = make_probe_worker(kind, **probe);
        probe_container_started(lp.worker);
        // Resolved once per container instance, as kubelet's worker keeps
        // its pod spec: an old pod goes on probing what it runs while a new
        // template is rolled out.
        auto action =
            platform::resolve_probe_action((*probe)->handler, *spec, env, (*probe)->timeout_seconds);
        if (action) {
            lp.action = std::move(action).value();
            if (lp.action.type == platform::ProbeAction::Type::Exec) {
                // In the container when it is not on the host (runc exec),
                // with the container's own env and working directory.
                if (auto in = runtime_->exec_in(lc.id, lp.action.command)) {
                    lp.action.command = std::move(*in);
                    lp.action.env.clear();
                    lp.action.working_dir.clear();
                }
            }
        } else {
            lp.action_error = action.error().message;
            const std::string pod_name = p.rec.namespace_ + "/" + p.rec.name;
            log(Level::Err,
                "pod " + pod_name + " container " + spec->name + ": " + to_string(kind) +
                    " probe cannot run: " + lp.action_error,
                {{"DAEMONLET_POD", pod_name}, {"DAEMONLET_CONTAINER", spec->name}});
        }
        lc.probes.push_back(std::move(lp));
    }
    for (std::size_t k = 0; k < lc.probes.size(); ++k) {
        LiveProbe& lp = lc.probes[k];
        lp.timer = new uv_timer_t;
        uv_timer_init(&loop_, lp.timer);
        lp.timer->data = new ProbeTarget{this, uid, index, k};
        // kubelet's worker probes once at start, then every periodSeconds.
        const auto period = static_cast<std::uint64_t>(std::max(1, lp.worker.spec.period_seconds)) * 1000;
        uv_timer_start(
            lp.timer,
            [](uv_timer_t* t) {
                auto* target = static_cast<ProbeTarget*>(t->data);
                static_cast<Agent*>(target->agent)->on_probe_tick(target->uid, target->index, target->probe);
            },
            0, period);
    }
}

void Agent::stop_probes(LiveContainer& lc) {
    for (auto& lp : lc.probes) {
        if (lp.running && prober_) prober_->cancel(*lp.running);
        close_probe_timer(lp.timer);
    }
    lc.probes.clear();
    lc.probes_started = false;
}

// Running containers without probes set up: just started, or adopted before
// their DaemonSet's template was known.
void Agent::ensure_probes() {
    for (auto& [uid, p] : pods_) {
        if (p.rec.deleting) continue;
        bool started = false;
        for (std::size_t i = 0; i < p.containers.size(); ++i) {
            if (p.containers[i].id.empty() || p.containers[i].probes_started) continue;
            start_probes(uid, i);
            started = true;
        }
        // Readiness starts over with the probes (an adopted container is
        // not ready until its readiness probe passes again): store it.
        if (started) {
            refresh_readiness(p);
            save_pod(p);
        }
    }
}

void Agent::on_probe_tick(const std::string& uid, std::size_t index, std::size_t probe) {
    auto pit = pods_.find(uid);
    if (pit == pods_.end() || stopping_) return;
    LivePod& p = pit->second;
    LiveContainer& lc = p.containers[index];
    if (probe >= lc.probes.size() || lc.id.empty() || p.rec.deleting) return;
    LiveProbe& lp = lc.probes[probe];
    if (lp.running) return;  // kubelet's worker probes synchronously: a tick during a run is dropped
    const ContainerStatus& cs = p.status(index);
    const bool started =
        probe_container_status(cs.state == ContainerState::Running, worker_of(lc.probes, ProbeKind::Startup),
                               worker_of(lc.probes, ProbeKind::Readiness))
            .started;
    if (!probe_due(lp.worker, started, lc.started_mono_ms, clock_.monotonic_ms())) return;
    if (!lp.action_error.empty()) {
        // A named port the container does not declare: kubelet's prober
        // errs on every run (probe.Unknown) and the worker throws the
        // result away, so readiness stays false and liveness never kills.
        on_probe_result(uid, index, probe, {ProbeOutcome::Unknown, lp.action_error});
        return;
    }
    // kubelet probes the pod's address: a container with a network of its
    // own is reached from inside that network. One whose runtime has not
    // made its process yet is not probed at all (an error, not a failure).
    auto ns = runtime_->probe_netns(lc.id);
    if (!ns) {
        on_probe_result(uid, index, probe, {ProbeOutcome::Unknown, ns.error().message});
        return;
    }
    // tcpSocket and httpGet connect to the pod's IP when it has its own
    // (a CRI sandbox's network; kubelet's prober.go runProbe:
    // status.PodIP when the probe sets no host).
    platform::ProbeAction action = lp.action;
    action.netns = std::move(ns).value();
    if (action.type != platform::ProbeAction::Type::Exec) {
        auto net = runtime_->pod_network(lc.id);
        if (!net) {
            on_probe_result(uid, index, probe, {ProbeOutcome::Unknown, net.error().message});
            return;
        }
        action.host = probe_host(lp.action.host, net.value().host_network, net.value().ips);
    }
    auto id = prober_->run(action, [this, uid, index, probe](platform::ProbeResult r) {
        auto it = pods_.find(uid);
        if (it == pods_.end() || probe >= it->second.containers[index].probes.size()) return;
        it->second.containers[index].probes[probe].running.reset();
        on_probe_result(uid, index, probe, std::move(r));
    });
    if (!id) {
        on_probe_result(uid, index, probe, {ProbeOutcome::Unknown, id.error().message});
        return;
    }
    lp.running = id.value();
}

void Agent::on_probe_result(const std::string& uid, std::size_t index, std::size_t probe,
                            platform::ProbeResult r) {
    auto pit = pods_.find(uid);
    if (pit == pods_.end()) return;
    LivePod& p = pit->second;
    LiveContainer& lc = p.containers[index];
    if (probe >= lc.probes.size()) return;
    LiveProbe& lp = lc.probes[probe];
    ContainerStatus& cs = p.status(index);
    const std::string pod_name = p.rec.namespace_ + "/" + p.rec.name;
    const std::string kind = to_string(lp.worker.kind);
    // kubelet records an event per failed run ("Readiness probe failed:
    // ..."); a board's journal gets one line per transition instead.
    if (r.outcome == ProbeOutcome::Failure && !lp.failing) {
        lp.failing = true;
        log(Level::Warning,
            "pod " + pod_name + " container " + cs.name + ": " + kind + " probe failed: " + r.output,
            {{"DAEMONLET_POD", pod_name}, {"DAEMONLET_CONTAINER", cs.name}});
    } else if (r.outcome == ProbeOutcome::Success && lp.failing) {
        lp.failing = false;
        log(Level::Notice, "pod " + pod_name + " container " + cs.name + ": " + kind + " probe succeeded",
            {{"DAEMONLET_POD", pod_name}, {"DAEMONLET_CONTAINER", cs.name}});
    }
    ProbeRecord rec = probe_record(lp.worker, r.outcome);
    if (rec.kill && !lc.id.empty()) {
        // kuberuntime computePodActions: "Container X failed liveness probe,
        // will be restarted". The exit handler does the restart.
        const std::string what = lp.worker.kind == ProbeKind::Liveness ? "liveness" : "startup";
        log(Level::Warning,
            "pod " + pod_name + " container " + cs.name + " failed " + what + " probe, will be restarted",
            {{"DAEMONLET_POD", pod_name}, {"DAEMONLET_CONTAINER", cs.name}});
        stop_container(uid, index, lc.id, "pod " + pod_name);
    }
    if (rec.result_changed) {
        refresh_readiness(p);
        save_pod(p);
        schedule_reconcile();
    }
}

}  // namespace daemonlet::agent
