// The AgentMetrics component (metrics.h): the families, the endpoint, the
// loop-stall watch.
#include "agent/daemon/metrics.h"

#include <algorithm>

namespace daemonlet::agent {

namespace {

// kubelet's buckets (pkg/kubelet/metrics/metrics.go): PodStartDuration's,
// RuntimeOperationsDuration's (ExponentialBuckets(.005, 2.5, 14)) and
// prometheus.DefBuckets for the relist (PLEGRelistDuration).
const std::vector<double> kPodStartBuckets = {0.5, 1,   2,   3,    4,    5,    6,   8,   10,
                                              20,  30,  45,  60,   120,  180,  240, 300, 360,
                                              480, 600, 900, 1200, 1800, 2700, 3600};
std::vector<double> runtime_operation_buckets() {
    std::vector<double> b;
    double v = 0.005;
    for (int i = 0; i < 14; ++i, v *= 2.5) b.push_back(v);
    return b;
}
const std::vector<double> kDefBuckets = {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10};

}  // namespace

AgentMetrics::AgentMetrics(uv_loop_t* loop, const platform::Clock& clock, Hooks hooks)
    : loop_(loop), clock_(clock), hooks_(std::move(hooks)) {
    declare();
}

AgentMetrics::~AgentMetrics() { close(); }

void AgentMetrics::declare() {
    MetricRegistry& r = registry_;
    // Named as the kubelet names them (pkg/kubelet/metrics/metrics.go).
    r.gauge("kubelet_running_pods", "Number of pods that have a running pod sandbox");
    r.gauge("kubelet_running_containers", "Number of containers currently running", {"container_state"});
    r.histogram(
        "kubelet_pod_start_duration_seconds",
        "Duration in seconds from the agent seeing a pod for the first time to the pod starting to run",
        kPodStartBuckets);
    r.counter("kubelet_runtime_operations_total",
              "Cumulative number of runtime operations by operation type.", {"operation_type"});
    r.histogram("kubelet_runtime_operations_duration_seconds", "Duration in seconds of runtime operations.",
                runtime_operation_buckets(), {"operation_type"});
    r.counter("kubelet_runtime_operations_errors_total",
              "Cumulative number of runtime operation errors by operation type.", {"operation_type"});
    r.histogram("kubelet_pleg_relist_duration_seconds",
                "Duration in seconds of one reconcile pass over the desired DaemonSets and the pods (the "
                "agent's relist).",
                kDefBuckets);
    r.counter("prober_probe_total",
              "Cumulative number of a liveness, readiness or startup probe for a container by "
              "result.",
              {"probe_type", "result", "namespace", "daemonset", "container"});
    // The agent's own.
    r.gauge("daemonlet_daemonsets",
            "DaemonSets in force by source (file or api) and decision (run or not_run).",
            {"source", "decision"});
    r.gauge("daemonlet_rollouts_in_progress", "DaemonSets whose rollout on this node is not done.");
    r.counter("daemonlet_rollouts_completed_total",
              "Rollouts of a new template that completed on this node.");
    r.counter("daemonlet_container_restarts_total", "Container restarts after an exit, by DaemonSet.",
              {"namespace", "daemonset"});
    r.gauge("daemonlet_containers_crash_looping", "Containers waiting in CrashLoopBackOff, by DaemonSet.",
            {"namespace", "daemonset"});
    r.counter("daemonlet_image_pulls_total", "Registry pulls by result (success or failure).", {"result"});
    r.counter("daemonlet_image_imports_total", "Image archive imports by result (success or failure).",
              {"result"});
    r.gauge("daemonlet_image_store_bytes",
            "Bytes of the image store (runc runtime), as the image GC counts them.");
    r.gauge("daemonlet_apiserver_configured", "1 when an API server is configured.");
    r.gauge("daemonlet_apiserver_connected", "1 while the link to the API server is Connected, else 0.");
    r.counter("daemonlet_apiserver_watch_restarts_total", "Watches started again after one ended or failed.");
    r.counter("daemonlet_apiserver_relists_total",
              "Full lists of a followed resource (the first one included).");
    r.gauge("daemonlet_apiserver_events_queued", "Events waiting to be sent to the API server.");
    r.counter("daemonlet_apiserver_events_sent_total", "Events sent to the API server.");
    r.counter("daemonlet_apiserver_events_dropped_total", "Events dropped because the queue was full.");
    r.counter("daemonlet_store_writes_total",
              "Rows the store has inserted, updated or deleted since the start.");
    r.gauge("daemonlet_store_bytes", "Bytes of the store's database file and its write-ahead log.");
    r.counter("daemonlet_store_flushes_total",
              "fdatasyncs of the write-ahead log made so that what the agent reported holds across a power "
              "cut (a rollback, a revision recorded, an Event queued).");
    r.histogram("daemonlet_loop_stall_seconds",
                "How late the loop ran a 500 ms timer: how long one loop turn held it.", kDefBuckets);
}

Status AgentMetrics::start(const std::string& address) {
    // Off: the counters only, no socket and no timer.
    if (address.empty()) return Ok{};
    tick_ = new uv_timer_t;
    uv_timer_init(loop_, tick_);
    tick_->data = this;
    last_tick_mono_ms_ = clock_.monotonic_ms();
    uv_timer_start(
        tick_, [](uv_timer_t* t) { static_cast<AgentMetrics*>(t->data)->on_tick(); }, kStallTickMs,
        kStallTickMs);
    // The stall watch must not keep a stopping loop alive by itself.
    uv_unref(reinterpret_cast<uv_handle_t*>(tick_));
    server_ = std::make_unique<platform::HttpServer>(
        loop_, platform::HttpServer::Limits{},
        [this](const std::string&, const std::string& path) -> platform::HttpServer::Reply {
            if (path == "/metrics") return metrics();
            if (path == "/healthz") return healthz();
            return {404, "text/plain; charset=utf-8", "404 page not found\n"};
        });
    if (auto s = server_->start(address); !s.ok()) {
        close();  // the timer too: nothing reads it
        server_.reset();
        return s;
    }
    return Ok{};
}

void AgentMetrics::close() {
    if (server_) server_->close();
    if (tick_) {
        uv_close(reinterpret_cast<uv_handle_t*>(tick_),
                 [](uv_handle_t* h) { delete reinterpret_cast<uv_timer_t*>(h); });
        tick_ = nullptr;
    }
}

void AgentMetrics::on_tick() {
    const std::int64_t now = clock_.monotonic_ms();
    const std::int64_t late =
        std::max<std::int64_t>(0, now - last_tick_mono_ms_ - static_cast<std::int64_t>(kStallTickMs));
    last_tick_mono_ms_ = now;
    registry_.observe("daemonlet_loop_stall_seconds", static_cast<double>(late) / 1000.0);
    if (late > kStallUnhealthyMs) {
        last_bad_stall_mono_ms_ = now;
        last_bad_stall_ms_ = late;
    }
}

void AgentMetrics::count_runtime_operation(const char* type, std::uint64_t started_ns, bool ok) {
    const double seconds = static_cast<double>(uv_hrtime() - started_ns) / 1e9;
    registry_.add("kubelet_runtime_operations_total", {type});
    registry_.observe("kubelet_runtime_operations_duration_seconds", {type}, seconds);
    if (!ok) registry_.add("kubelet_runtime_operations_errors_total", {type});
}

platform::HttpServer::Reply AgentMetrics::healthz() {
    const std::int64_t now = clock_.monotonic_ms();
    // This answer runs on the loop, so the loop turns; what it says is
    // whether a turn lately held it too long (a blocking call, a stuck
    // disk), as the kubelet's syncloop check says its loop fell behind.
    if (last_bad_stall_mono_ms_ >= 0 && now - last_bad_stall_mono_ms_ < kStallMemoryMs)
        return {500, "text/plain; charset=utf-8",
                "loop: a turn held the loop " + std::to_string(last_bad_stall_ms_) + " ms, " +
                    std::to_string((now - last_bad_stall_mono_ms_) / 1000) + " s ago\n"};
    const std::string store = hooks_.store_problem ? hooks_.store_problem() : std::string();
    if (!store.empty()) return {500, "text/plain; charset=utf-8", "store: " + store + "\n"};
    return {200, "text/plain; charset=utf-8", "ok"};
}

platform::HttpServer::Reply AgentMetrics::metrics() {
    if (hooks_.collect) hooks_.collect(registry_);
    return {200, "text/plain; version=0.0.4; charset=utf-8", registry_.render()};
}

}  // namespace daemonlet::agent
