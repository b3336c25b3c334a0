// The kubelet prober's result logic for one container (Kubernetes 1.25 to
// 1.30). Each row is a container with some probes and a sequence of steps
// (the container starts or stops, a probe tick at a monotonic time, a probe
// outcome), with what kubelet does after each step: whether the probe runs,
// whether the container is killed, and the container's started and ready
// fields. Rows name the upstream rule they pin: pkg/kubelet/prober/worker.go
// (doProbe), prober_manager.go (UpdatePodStatus), and the rows of
// worker_test.go (TestDoProbe, TestInitialDelay, TestFailureThreshold,
// TestSuccessThreshold, TestOnHoldOnLivenessOrStartupCheckFailure,
// TestStartupProbe*).
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/probe.h"

// CppUTest last: its leak-detection macros redefine new.
#include <CppUTest/TestHarness.h>

using namespace daemonlet;

namespace {

constexpr auto S = ProbeOutcome::Success;
constexpr auto F = ProbeOutcome::Failure;
constexpr auto U = ProbeOutcome::Unknown;
constexpr auto L = ProbeKind::Liveness;
constexpr auto R = ProbeKind::Readiness;
constexpr auto St = ProbeKind::Startup;

enum class Op {
    Start,    // a new container instance runs (at `now`)
    Stop,     // it stopped running
    Tick,     // a period tick of `kind` at `now`: expect `due`
    Outcome,  // `kind` ran and gave `outcome`: expect `kill`
};

struct Step {
    Op op;
    ProbeKind kind = R;
    std::int64_t now = 0;
    ProbeOutcome outcome = S;
    bool expect = false;  // Tick: due; Outcome: kill
    bool started = false;
    bool ready = false;
};

Step start(std::int64_t now, bool started, bool ready) {
    return {Op::Start, R, now, S, false, started, ready};
}
Step stop() { return {Op::Stop, R, 0, S, false, false, false}; }
Step tick(ProbeKind k, std::int64_t now, bool due, bool started, bool ready) {
    return {Op::Tick, k, now, S, due, started, ready};
}
Step outcome(ProbeKind k, ProbeOutcome o, bool kill, bool started, bool ready) {
    return {Op::Outcome, k, 0, o, kill, started, ready};
}

Probe probe(std::int32_t initial_delay = 0, std::int32_t success = 1, std::int32_t failure = 3) {
    Probe p;
    p.initial_delay_seconds = initial_delay;
    p.success_threshold = success;
    p.failure_threshold = failure;
    return p;
}

struct ProbeRow {
    const char* name;
    std::optional<Probe> liveness, readiness, startup;
    std::vector<Step> steps;
};

const ProbeRow kProbeRows[] = {
    {"UpdatePodStatus: no probes -> started and ready as soon as it runs, not before",
     std::nullopt,
     std::nullopt,
     std::nullopt,
     {stop(), start(0, true, true), stop()}},
    {"newWorker initialValue: readiness starts Failure; one success (successThreshold 1) makes it ready",
     std::nullopt,
     probe(),
     std::nullopt,
     {start(0, true, false), tick(R, 0, true, true, false), outcome(R, S, false, true, true)}},
    {"TestSuccessThreshold: successThreshold 3 needs three successes in a row; a failure restarts the count",
     std::nullopt,
     probe(0, 3, 3),
     std::nullopt,
     {start(0, true, false), outcome(R, S, false, true, false), outcome(R, S, false, true, false),
      outcome(R, F, false, true, false), outcome(R, S, false, true, false), outcome(R, S, false, true, false),
      outcome(R, S, false, true, true)}},
    {"TestFailureThreshold: readiness turns false only after failureThreshold failures, never kills",
     std::nullopt,
     probe(0, 1, 3),
     std::nullopt,
     {start(0, true, false), outcome(R, S, false, true, true), outcome(R, F, false, true, true),
      outcome(R, F, false, true, true), outcome(R, F, false, true, false), outcome(R, F, false, true, false),
      outcome(R, S, false, true, true)}},
    {"TestInitialDelay: no probe while whole seconds since start < initialDelaySeconds (truncated)",
     std::nullopt,
     probe(5),
     std::nullopt,
     {start(1000, true, false), tick(R, 1000, false, true, false), tick(R, 5999, false, true, false),
      tick(R, 6000, true, true, false)}},
    {"worker.go: liveness failure at failureThreshold kills the container and holds until a new one",
     probe(0, 1, 2),
     std::nullopt,
     std::nullopt,
     {start(0, true, true), outcome(L, F, false, true, true), outcome(L, F, true, true, true),
      tick(L, 60000, false, true, true), outcome(L, S, false, true, true), stop(), start(70000, true, true),
      tick(L, 70000, true, true, true), outcome(L, F, false, true, true)}},
    {"worker.go: liveness successes between failures reset the run; a failure below threshold keeps it alive",
     probe(0, 1, 3),
     std::nullopt,
     std::nullopt,
     {start(0, true, true), outcome(L, F, false, true, true), outcome(L, F, false, true, true),
      outcome(L, S, false, true, true), outcome(L, F, false, true, true), outcome(L, F, false, true, true),
      outcome(L, F, true, true, true)}},
    {"prober.go/worker.go: a prober error (Unknown) is thrown away: counts neither way",
     probe(0, 1, 2),
     probe(),
     std::nullopt,
     {start(0, true, false), outcome(R, U, false, true, false), outcome(L, F, false, true, false),
      outcome(L, U, false, true, false), outcome(L, F, true, true, false)}},
    {"TestStartupProbe: until the startup probe succeeds, started=false, ready=false, only startup is due",
     probe(),
     std::nullopt,
     probe(),
     {start(0, false, false), tick(St, 0, true, false, false), tick(L, 0, false, false, false),
      outcome(St, F, false, false, false), outcome(St, S, false, true, true),
      tick(St, 10000, false, true, true), tick(L, 10000, true, true, true)}},
    {"UpdatePodStatus: started but readiness not yet succeeded -> started=true, ready=false",
     std::nullopt,
     probe(),
     probe(),
     {start(0, false, false), tick(R, 0, false, false, false), outcome(St, S, false, true, false),
      tick(R, 10000, true, true, false), outcome(R, S, false, true, true)}},
    {"worker.go: startup failure at failureThreshold kills the container, as liveness",
     std::nullopt,
     std::nullopt,
     probe(0, 1, 2),
     {start(0, false, false), outcome(St, F, false, false, false), outcome(St, F, true, false, false),
      tick(St, 30000, false, false, false), stop(), start(40000, false, false),
      tick(St, 40000, true, false, false)}},
    {"worker.go: a non-running container reads Failure; a new container starts from the initial values",
     std::nullopt,
     probe(),
     std::nullopt,
     {start(0, true, false), outcome(R, S, false, true, true), stop(), start(5000, true, false)}},
};

struct Container3 {
    std::optional<ProbeWorker> l, r, s;
    ProbeWorker* get(ProbeKind k) {
        auto& w = k == L ? l : k == R ? r : s;
        return w ? &*w : nullptr;
    }
};

}  // namespace

TEST_GROUP(Probe){};

TEST(Probe, WorkersFollowTheKubeletProber) {
    for (const auto& row : kProbeRows) {
        Container3 c;
        if (row.liveness) c.l = make_probe_worker(L, *row.liveness);
        if (row.readiness) c.r = make_probe_worker(R, *row.readiness);
        if (row.startup) c.s = make_probe_worker(St, *row.startup);
        bool running = false;
        std::int64_t started_at = 0;
        for (std::size_t i = 0; i < row.steps.size(); ++i) {
            const Step& st = row.steps[i];
            const std::string name = std::string(row.name) + ": step " + std::to_string(i + 1);
            switch (st.op) {
            case Op::Start:
                running = true;
                started_at = st.now;
                for (auto k : {L, R, St})
                    if (auto* w = c.get(k)) probe_container_started(*w);
                break;
            case Op::Stop:
                running = false;
                for (auto k : {L, R, St})
                    if (auto* w = c.get(k)) probe_container_stopped(*w);
                break;
            case Op::Tick: {
                const bool started = probe_container_status(running, c.get(St), c.get(R)).started;
                CHECK_TEXT(c.get(st.kind) != nullptr, name.c_str());
                CHECK_EQUAL_TEXT(st.expect, probe_due(*c.get(st.kind), started, started_at, st.now),
                                 (name + ": due").c_str());
                break;
            }
            case Op::Outcome: {
                CHECK_TEXT(c.get(st.kind) != nullptr, name.c_str());
                ProbeRecord r = probe_record(*c.get(st.kind), st.outcome);
                CHECK_EQUAL_TEXT(st.expect, r.kill, (name + ": kill").c_str());
                break;
            }
            }
            ContainerProbeStatus s = probe_container_status(running, c.get(St), c.get(R));
            CHECK_EQUAL_TEXT(st.started, s.started, (name + ": started").c_str());
            CHECK_EQUAL_TEXT(st.ready, s.ready, (name + ": ready").c_str());
        }
    }
}

TEST(Probe, ResultChangedReportsTransitionsOnly) {
    // Logged once per transition, as kubelet's results manager reports
    // updates only when the cached result changes (results_manager.go Set).
    ProbeWorker w = make_probe_worker(R, probe(0, 1, 1));
    probe_container_started(w);
    CHECK_TRUE(probe_record(w, S).result_changed);
    CHECK_FALSE(probe_record(w, S).result_changed);
    CHECK_TRUE(probe_record(w, F).result_changed);
    CHECK_FALSE(probe_record(w, F).result_changed);
}

TEST(Probe, KindsAreNamedAsKubeletsEvents) {
    STRCMP_EQUAL("Liveness", to_string(L));
    STRCMP_EQUAL("Readiness", to_string(R));
    STRCMP_EQUAL("Startup", to_string(St));
}
