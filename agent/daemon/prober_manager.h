// The Probes component: kubelet's prober manager (pkg/kubelet/prober
// prober_manager.go). One worker per (container, probe kind), each with its
// period and its run in flight; the result logic is core's (core/probe.h),
// the actions platform's (platform/probe/prober.h). The agent adds a container's
// probes when it starts, removes them when it stops, and hears back when a
// container's started/ready changes or when a liveness or startup probe
// failed (it then stops the container; the exit path restarts it).
//
// Probes exist only for a running container: the agent removes them on its
// exit and when its pod is being deleted.
#pragma once

#include <uv.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/model.h"
#include "core/probe.h"
#include "core/result.h"
#include "platform/clock.h"
#include "platform/probe/prober.h"
#include "platform/runtime.h"

namespace daemonlet::agent {

// Runs probe actions: platform::Prober on the loop (make_loop_prober), a
// fake in tests. Its contract is platform::Prober's: run() fails
// synchronously or calls back exactly once, unless cancelled or closed.
class ProbeRunner {
  public:
    using Id = platform::Prober::Id;
    virtual ~ProbeRunner() = default;
    virtual Result<Id> run(const platform::ProbeAction& action, platform::Prober::Callback done) = 0;
    virtual void cancel(Id id) = 0;
    virtual void close() = 0;
};
std::unique_ptr<ProbeRunner> make_loop_prober(uv_loop_t* loop);

// Repeating timers: uv timers on the loop (make_loop_ticker), a fake in
// tests that fires them when it says.
class Ticker {
  public:
    using Id = std::uint64_t;
    virtual ~Ticker() = default;
    // `tick` at once (on a later loop turn), then every `period_ms`, until cancel(id).
    virtual Id every(std::uint64_t period_ms, std::function<void()> tick) = 0;
    virtual void cancel(Id id) = 0;
};
std::unique_ptr<Ticker> make_loop_ticker(uv_loop_t* loop);

// A running container whose probes are added.
struct ProbedContainer {
    std::string pod;  // "namespace/name", for the log
    std::string runtime_id;
    std::int64_t started_mono_ms = 0;  // when this instance started
    // Its spec as its pod runs it; nullptr: not probed (a regular init
    // container: validation forbids probes there).
    const Container* spec = nullptr;
    std::vector<std::pair<std::string, std::string>> env;  // the container's, for exec probes
};

class Probes {
  public:
    // Container `index` of pod `uid`: its started or ready result changed.
    using ResultChanged = std::function<void(const std::string& uid, std::size_t index)>;
    // Its liveness or startup probe (`kind`) crossed failureThreshold: stop it.
    using Failed = std::function<void(const std::string& uid, std::size_t index, ProbeKind kind)>;

    // `runtime` places the probes (probe_netns, pod_network, exec_in).
    Probes(platform::Runtime& runtime, std::unique_ptr<ProbeRunner> runner, std::unique_ptr<Ticker> ticker,
           const platform::Clock& clock, ResultChanged changed, Failed failed);
    Probes(const Probes&) = delete;
    Probes& operator=(const Probes&) = delete;
    ~Probes();

    // Starts the container's probes (startup, readiness, liveness, as its
    // spec has them), replacing any it had.
    void add(const std::string& uid, std::size_t index, const ProbedContainer& c);
    // Stops them: runs cancelled, timers stopped.
    void remove(const std::string& uid, std::size_t index);
    void remove_pod(const std::string& uid);
    // Whether add was called for the container's current instance (it may
    // have no probe).
    bool has(const std::string& uid, std::size_t index) const;
    // kubelet's UpdatePodStatus for the container: not started nor ready
    // until its probes are added.
    ContainerProbeStatus status(const std::string& uid, std::size_t index, bool running) const;
    // Everything removed, the runner closed.
    void close();

    // Every run's outcome, for prober_probe_total (the agent's metrics),
    // and its output (what a failure says: the Pod's Unhealthy Event).
    using Observed = std::function<void(const std::string& uid, std::size_t index, ProbeKind, ProbeOutcome,
                                        const std::string& output)>;
    void set_observer(Observed observed) { observed_ = std::move(observed); }

  private:
    struct Worker {
        ProbeWorker worker;
        platform::ProbeAction action;  // resolved when the container started
        std::string action_error;      // why it could not be resolved (a named port the container lacks)
        std::optional<Ticker::Id> timer;
        std::optional<ProbeRunner::Id> running;
        bool failing = false;  // the last outcome was a failure (log once per transition)
    };
    struct Entry {
        std::string pod;
        std::string container;
        std::string runtime_id;
        std::int64_t started_mono_ms = 0;
        std::vector<Worker> workers;
        const ProbeWorker* worker(ProbeKind kind) const;  // nullptr: the container has none of this kind
    };
    using Key = std::pair<std::string, std::size_t>;

    void stop(Entry& e);
    void tick(const Key& key, std::size_t probe);
    void record(const Key& key, std::size_t probe, platform::ProbeResult r);

    platform::Runtime& runtime_;
    std::unique_ptr<ProbeRunner> runner_;
    std::unique_ptr<Ticker> ticker_;
    const platform::Clock& clock_;
    ResultChanged changed_;
    Failed failed_;
    Observed observed_;
    std::map<Key, Entry> entries_;
    bool closed_ = false;
};

}  // namespace daemonlet::agent
