// The Probes component (prober_manager.h): kubelet's prober manager and its
// workers (prober/worker.go doProbe) on the agent's loop.
#include "agent/daemon/prober_manager.h"

#include <algorithm>

#include "core/pod_network.h"
#include "platform/log.h"

namespace daemonlet::agent {

using platform::Level;
using platform::log;

namespace {

class LoopProber final : public ProbeRunner {
  public:
    explicit LoopProber(uv_loop_t* loop) : prober_(loop) {}
    Result<Id> run(const platform::ProbeAction& action, platform::Prober::Callback done) override {
        return prober_.run(action, std::move(done));
    }
    void cancel(Id id) override { prober_.cancel(id); }
    void close() override { prober_.close(); }

  private:
    platform::Prober prober_;
};

class LoopTicker final : public Ticker {
  public:
    explicit LoopTicker(uv_loop_t* loop) : loop_(loop) {}
    ~LoopTicker() override {
        while (!timers_.empty()) cancel(timers_.begin()->first);
    }
    Id every(std::uint64_t period_ms, std::function<void()> tick) override {
        auto* t = new uv_timer_t;
        uv_timer_init(loop_, t);
        t->data = new std::function<void()>(std::move(tick));
        uv_timer_start(
            t, [](uv_timer_t* h) { (*static_cast<std::function<void()>*>(h->data))(); }, 0, period_ms);
        const Id id = next_++;
        timers_[id] = t;
        return id;
    }
    // The function is freed with the timer, in its close callback, as libuv
    // requires: a tick may cancel its own timer.
    void cancel(Id id) override {
        auto it = timers_.find(id);
        if (it == timers_.end()) return;
        uv_close(reinterpret_cast<uv_handle_t*>(it->second), [](uv_handle_t* h) {
            delete static_cast<std::function<void()>*>(h->data);
            delete reinterpret_cast<uv_timer_t*>(h);
        });
        timers_.erase(it);
    }

  private:
    uv_loop_t* loop_;
    Id next_ = 1;
    std::map<Id, uv_timer_t*> timers_;
};

}  // namespace

std::unique_ptr<ProbeRunner> make_loop_prober(uv_loop_t* loop) { return std::make_unique<LoopProber>(loop); }
std::unique_ptr<Ticker> make_loop_ticker(uv_loop_t* loop) { return std::make_unique<LoopTicker>(loop); }

Probes::Probes(platform::Runtime& runtime, std::unique_ptr<ProbeRunner> runner,
               std::unique_ptr<Ticker> ticker, const platform::Clock& clock, ResultChanged changed,
               Failed failed)
    : runtime_(runtime),
      runner_(std::move(runner)),
      ticker_(std::move(ticker)),
      clock_(clock),
      changed_(std::move(changed)),
      failed_(std::move(failed)) {}

Probes::~Probes() { close(); }

void Probes::close() {
    if (closed_) return;
    for (auto& [key, e] : entries_) stop(e);
    entries_.clear();
    runner_->close();
    closed_ = true;
}

void Probes::stop(Entry& e) {
    for (auto& w : e.workers) {
        if (w.running) runner_->cancel(*w.running);
        if (w.timer) ticker_->cancel(*w.timer);
    }
    e.workers.clear();
}

void Probes::remove(const std::string& uid, std::size_t index) {
    auto it = entries_.find({uid, index});
    if (it == entries_.end()) return;
    stop(it->second);
    entries_.erase(it);
}

void Probes::remove_pod(const std::string& uid) {
    for (auto it = entries_.lower_bound({uid, 0}); it != entries_.end() && it->first.first == uid;) {
        stop(it->second);
        it = entries_.erase(it);
    }
}

const ProbeWorker* Probes::Entry::worker(ProbeKind kind) const {
    for (const auto& w : workers)
        if (w.worker.kind == kind) return &w.worker;
    return nullptr;
}

bool Probes::has(const std::string& uid, std::size_t index) const { return entries_.count({uid, index}) > 0; }

ContainerProbeStatus Probes::status(const std::string& uid, std::size_t index, bool running) const {
    auto it = entries_.find({uid, index});
    if (it == entries_.end()) return {};
    return probe_container_status(running, it->second.worker(ProbeKind::Startup),
                                  it->second.worker(ProbeKind::Readiness));
}

void Probes::add(const std::string& uid, std::size_t index, const ProbedContainer& c) {
    if (closed_) return;
    remove(uid, index);
    const Key key{uid, index};
    Entry& e = entries_[key];
    e.pod = c.pod;
    e.runtime_id = c.runtime_id;
    e.started_mono_ms = c.started_mono_ms;
    if (!c.spec) return;
    const Container& spec = *c.spec;
    e.container = spec.name;
    const std::pair<ProbeKind, const std::optional<Probe>*> kinds[] = {
        {ProbeKind::Startup, &spec.startup_probe},
        {ProbeKind::Readiness, &spec.readiness_probe},
        {ProbeKind::Liveness, &spec.liveness_probe}};
    for (const auto& [kind, probe] : kinds) {
        if (!*probe) continue;
        Worker w;
        w.worker = make_probe_worker(kind, **probe);
        probe_container_started(w.worker);
        // Resolved once per container instance, as kubelet's worker keeps
        // its pod spec: an old pod goes on probing what it runs while a new
        // template is rolled out.
        auto action =
            platform::resolve_probe_action((*probe)->handler, spec, c.env, (*probe)->timeout_seconds);
        if (action) {
            w.action = std::move(action).value();
            if (w.action.type == platform::ProbeAction::Type::Exec) {
                // In the container when it is not on the host (runc exec),
                // with the container's own env and working directory.
                if (auto in = runtime_.exec_in(c.runtime_id, w.action.command)) {
                    w.action.command = std::move(*in);
                    w.action.env.clear();
                    w.action.working_dir.clear();
                }
            }
        } else {
            w.action_error = action.error().message;
            log(Level::Err,
                "pod " + c.pod + " container " + spec.name + ": " + to_string(kind) +
                    " probe cannot run: " + w.action_error,
                {{"DAEMONLET_POD", c.pod}, {"DAEMONLET_CONTAINER", spec.name}});
        }
        e.workers.push_back(std::move(w));
    }
    for (std::size_t k = 0; k < e.workers.size(); ++k) {
        // kubelet's worker probes once at start, then every periodSeconds.
        const auto period =
            static_cast<std::uint64_t>(std::max(1, e.workers[k].worker.spec.period_seconds)) * 1000;
        e.workers[k].timer = ticker_->every(period, [this, key, k] { tick(key, k); });
    }
}

void Probes::tick(const Key& key, std::size_t probe) {
    auto it = entries_.find(key);
    if (it == entries_.end() || probe >= it->second.workers.size()) return;
    Entry& e = it->second;
    Worker& w = e.workers[probe];
    if (w.running) return;  // kubelet's worker probes synchronously: a tick during a run is dropped
    const bool started =
        probe_container_status(true, e.worker(ProbeKind::Startup), e.worker(ProbeKind::Readiness)).started;
    if (!probe_due(w.worker, started, e.started_mono_ms, clock_.monotonic_ms())) return;
    if (!w.action_error.empty()) {
        // A named port the container does not declare: kubelet's prober
        // errs on every run (probe.Unknown) and the worker throws the
        // result away, so readiness stays false and liveness never kills.
        record(key, probe, {ProbeOutcome::Unknown, w.action_error});
        return;
    }
    // kubelet probes the pod's address: a container with a network of its
    // own is reached from inside that network. One whose runtime has not
    // made its process yet is not probed at all (an error, not a failure).
    auto ns = runtime_.probe_netns(e.runtime_id);
    if (!ns) {
        record(key, probe, {ProbeOutcome::Unknown, ns.error().message});
        return;
    }
    // tcpSocket and httpGet connect to the pod's IP when it has its own
    // (a CRI sandbox's network; kubelet's prober.go runProbe:
    // status.PodIP when the probe sets no host).
    platform::ProbeAction action = w.action;
    action.netns = std::move(ns).value();
    if (action.type != platform::ProbeAction::Type::Exec) {
        auto net = runtime_.pod_network(e.runtime_id);
        if (!net) {
            record(key, probe, {ProbeOutcome::Unknown, net.error().message});
            return;
        }
        action.host = probe_host(w.action.host, net.value().host_network, net.value().ips);
    }
    auto id = runner_->run(action, [this, key, probe](platform::ProbeResult r) {
        auto found = entries_.find(key);
        if (found == entries_.end() || probe >= found->second.workers.size()) return;
        found->second.workers[probe].running.reset();
        record(key, probe, std::move(r));
    });
    if (!id) {
        record(key, probe, {ProbeOutcome::Unknown, id.error().message});
        return;
    }
    w.running = id.value();
}

void Probes::record(const Key& key, std::size_t probe, platform::ProbeResult r) {
    auto it = entries_.find(key);
    if (it == entries_.end() || probe >= it->second.workers.size()) return;
    Entry& e = it->second;
    Worker& w = e.workers[probe];
    const std::string kind = to_string(w.worker.kind);
    if (observed_) observed_(key.first, key.second, w.worker.kind, r.outcome, r.output);
    // kubelet records an event per failed run ("Readiness probe failed:
    // ..."); a board's journal gets one line per transition instead.
    if (r.outcome == ProbeOutcome::Failure && !w.failing) {
        w.failing = true;
        log(Level::Warning,
            "pod " + e.pod + " container " + e.container + ": " + kind + " probe failed: " + r.output,
            {{"DAEMONLET_POD", e.pod}, {"DAEMONLET_CONTAINER", e.container}});
    } else if (r.outcome == ProbeOutcome::Success && w.failing) {
        w.failing = false;
        log(Level::Notice, "pod " + e.pod + " container " + e.container + ": " + kind + " probe succeeded",
            {{"DAEMONLET_POD", e.pod}, {"DAEMONLET_CONTAINER", e.container}});
    }
    const ProbeRecord rec = probe_record(w.worker, r.outcome);
    if (rec.kill) {
        // kuberuntime computePodActions: "Container X failed liveness probe,
        // will be restarted". The exit path does the restart.
        const std::string what = w.worker.kind == ProbeKind::Liveness ? "liveness" : "startup";
        log(Level::Warning,
            "pod " + e.pod + " container " + e.container + " failed " + what + " probe, will be restarted",
            {{"DAEMONLET_POD", e.pod}, {"DAEMONLET_CONTAINER", e.container}});
        failed_(key.first, key.second, w.worker.kind);
    }
    // The callbacks may have removed the container's probes: `e` and `w` are not read after.
    if (rec.result_changed) changed_(key.first, key.second);
}

}  // namespace daemonlet::agent
