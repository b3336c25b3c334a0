// What the agent's metrics read of its state (AgentMetrics, metrics.h):
// the gauges set when scraped, and /healthz's store check.
#include "agent/daemon/agent.h"
#include "core/pod_lifecycle.h"
#include "platform/log.h"

namespace daemonlet::agent {

using platform::Level;
using platform::log;

void Agent::start_metrics() {
    metrics_ =
        std::make_unique<AgentMetrics>(&loop_, clock_,
                                       AgentMetrics::Hooks{[this](MetricRegistry& r) { collect_metrics(r); },
                                                           [this] { return store_problem(); }});
    probes_->set_observer([this](const std::string& uid, std::size_t index, ProbeKind kind,
                                 ProbeOutcome outcome, const std::string& output) {
        LivePod* found = pods_.find(uid);
        if (!found || index >= found->containers.size()) return;
        LivePod& p = *found;
        // prober_probe_total's results (pkg/kubelet/prober/prober_manager.go).
        const char* result = outcome == ProbeOutcome::Success   ? "successful"
                             : outcome == ProbeOutcome::Failure ? "failed"
                                                                : "unknown";
        metrics_->registry().add("prober_probe_total", {to_string(kind), result, p.rec.namespace_,
                                                        p.rec.daemonset, p.status(index).name});
        // prober.go runProbe: each failed run is an Unhealthy Event.
        if (outcome == ProbeOutcome::Failure)
            record_pod_event(p,
                             unhealthy_event(container_ref(p, index), kind, output, false, clock_.wall_ms()));
    });
    if (auto s = metrics_->start(config_.metrics_bind_address); !s.ok())
        // As the kubelet's healthz server: said, and the agent runs on.
        log(Level::Err, s.error().message + "; /metrics and /healthz are not served");
    else if (!config_.metrics_bind_address.empty())
        log(Level::Info, "serving /metrics and /healthz on http://" + metrics_->address());
}

std::string Agent::store_problem() {
    if (!store_) return "not open";
    // A read through SQLite: a store that cannot answer it cannot keep
    // the agent's state either.
    auto r = store_->get_meta("healthz");
    return r.ok() ? std::string() : r.error().message;
}

void Agent::collect_metrics(MetricRegistry& r) {
    std::size_t running_pods = 0;
    std::map<std::string, double> containers;  // by kubelet's container_state
    for (const char* s : {"created", "running", "exited", "unknown"}) containers[s] = 0;
    std::map<std::vector<std::string>, double> crash_looping;
    for (const auto& [key, d] : desired_)
        crash_looping[{d.ds().metadata.namespace_, d.ds().metadata.name}] = 0;
    for (auto& [uid, p] : pods_) {
        if (p.rec.phase == PodPhase::Running) ++running_pods;
        for (std::size_t i = 0; i < p.containers.size(); ++i) {
            const ContainerStatus& cs = p.status(i);
            const WorkerContainer& lc = p.containers[i];
            // Held (an id) but no longer watched: its exit was reported and
            // its status is being read (PodWorkers::on_exit).
            const bool unreadable = !lc.id.empty() && !workers_->watched(lc.id);
            if (const char* state = runtime_container_state(cs, lc.starting, unreadable))
                containers[state] += 1;
            if (cs.state == ContainerState::Waiting && cs.reason == "CrashLoopBackOff")
                crash_looping[{p.rec.namespace_, p.rec.daemonset}] += 1;
        }
    }
    r.set("kubelet_running_pods", static_cast<double>(running_pods));
    for (const auto& [state, n] : containers) r.set("kubelet_running_containers", {state}, n);
    r.clear("daemonlet_containers_crash_looping");
    for (const auto& [labels, n] : crash_looping) r.set("daemonlet_containers_crash_looping", labels, n);

    r.set("daemonlet_apiserver_configured", config_.api_server.enabled ? 1 : 0);
    r.set("daemonlet_apiserver_connected", cluster_ && cluster_->state() == LinkState::Connected ? 1 : 0);
    if (cluster_) {
        const ClusterLink::Counts c = cluster_->counts();
        const ClusterLink::Counts& b = cluster_counts_before_;  // links a reload replaced
        r.set("daemonlet_apiserver_relists_total", static_cast<double>(b.relists + c.relists));
        r.set("daemonlet_apiserver_watch_restarts_total",
              static_cast<double>(b.watch_restarts + c.watch_restarts));
        r.set("daemonlet_apiserver_events_sent_total", static_cast<double>(b.events_sent + c.events_sent));
        r.set("daemonlet_apiserver_events_dropped_total",
              static_cast<double>(b.events_dropped + c.events_dropped));
        r.set("daemonlet_apiserver_events_queued", static_cast<double>(c.events_queued));
    }
    if (store_) {
        const store::Store::Stats st = store_->stats();
        r.set("daemonlet_store_writes_total", static_cast<double>(st.writes));
        r.set("daemonlet_store_bytes", static_cast<double>(st.bytes));
        r.set("daemonlet_store_flushes_total", static_cast<double>(store_->worker_stats().flushes));
    }
    if (images_ && images_->store_bytes() >= 0)
        r.set("daemonlet_image_store_bytes", static_cast<double>(images_->store_bytes()));
}

// After every reconcile (control.cpp after_reconcile): the DaemonSets by
// source and decision, and the rollouts not done.
void Agent::count_daemonsets(const std::vector<std::pair<const Desired*, bool>>& decided,
                             std::size_t in_progress) {
    MetricRegistry& r = metrics_->registry();
    r.clear("daemonlet_daemonsets");
    for (const char* source : {"file", "api"})
        for (const char* decision : {"run", "not_run"}) r.set("daemonlet_daemonsets", {source, decision}, 0);
    for (const auto& [d, run] : decided)
        r.add("daemonlet_daemonsets", {d->from_api() ? "api" : "file", run ? "run" : "not_run"});
    r.set("daemonlet_rollouts_in_progress", static_cast<double>(in_progress));
}

void Agent::image_operation_done(const char* what, bool ok) {
    if (!metrics_) return;
    metrics_->registry().add(
        std::string(what) == "pull" ? "daemonlet_image_pulls_total" : "daemonlet_image_imports_total",
        {ok ? "success" : "failure"});
}

}  // namespace daemonlet::agent
