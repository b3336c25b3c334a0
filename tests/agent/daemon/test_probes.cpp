// The Probes component (agent/daemon/prober_manager.h), the real class over a fake
// prober, a fake ticker (the test fires the period timers), the fake
// runtime and the fake clock. Pins kubelet's prober worker
// (prober/worker.go doProbe, prober_manager.go UpdatePodStatus) as the agent
// runs it: thresholds, startup gating, one run at a time, a kill asked once,
// an unresolvable action that never kills.
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "agent/daemon/prober_manager.h"
#include "tests/agent/daemon/fake_clock.h"
#include "tests/agent/daemon/fake_runtime.h"

// CppUTest last: its leak-detection macros redefine new.
#include <CppUTest/TestHarness.h>

using namespace daemonlet;
using daemonlet::agent::ProbedContainer;
using daemonlet::agent::ProbeRunner;
using daemonlet::agent::Probes;
using daemonlet::agent::Ticker;
using daemonlet::testing::FakeClock;
using daemonlet::testing::FakeRuntime;

namespace {

// Runs nothing: keeps each run's callback until the test answers it.
class FakeProber final : public ProbeRunner {
  public:
    struct Run {
        platform::ProbeAction action;
        platform::Prober::Callback done;
    };
    Result<Id> run(const platform::ProbeAction& action, platform::Prober::Callback done) override {
        const Id id = next_++;
        runs_[id] = {action, std::move(done)};
        ++started_;
        return id;
    }
    void cancel(Id id) override { runs_.erase(id); }
    void close() override { runs_.clear(); }

    std::size_t in_flight() const { return runs_.size(); }
    int started() const { return started_; }
    const Run& last() const { return runs_.rbegin()->second; }
    // Answers every run in flight with `outcome`.
    void answer(ProbeOutcome outcome) {
        auto runs = std::move(runs_);
        runs_.clear();
        for (auto& [id, r] : runs) r.done({outcome, "fake"});
    }

  private:
    Id next_ = 1;
    int started_ = 0;
    std::map<Id, Run> runs_;
};

// Period timers the test fires.
class FakeTicker final : public Ticker {
  public:
    Id every(std::uint64_t period_ms, std::function<void()> tick) override {
        const Id id = next_++;
        timers_[id] = {period_ms, std::move(tick)};
        return id;
    }
    void cancel(Id id) override { timers_.erase(id); }

    std::size_t count() const { return timers_.size(); }
    std::uint64_t period_of_first() const { return timers_.begin()->second.first; }
    // Every timer fires once, in the order they were made.
    void fire_all() {
        std::vector<Id> ids;
        for (const auto& [id, t] : timers_) ids.push_back(id);
        for (Id id : ids)
            if (auto it = timers_.find(id); it != timers_.end()) it->second.second();
    }

  private:
    Id next_ = 1;
    std::map<Id, std::pair<std::uint64_t, std::function<void()>>> timers_;
};

Probe exec_probe(std::int32_t success, std::int32_t failure) {
    Probe p;
    p.handler.exec = ExecAction{{"/bin/check"}};
    p.period_seconds = 5;
    p.success_threshold = success;
    p.failure_threshold = failure;
    return p;
}

}  // namespace

TEST_GROUP(Probes) {
    FakeRuntime runtime;
    FakeClock clock;
    FakeProber* prober = nullptr;
    FakeTicker* ticker = nullptr;
    std::unique_ptr<Probes> probes;
    int changes = 0;
    int kills = 0;
    Container spec;

    void setup() override {
        auto p = std::make_unique<FakeProber>();
        auto t = std::make_unique<FakeTicker>();
        prober = p.get();
        ticker = t.get();
        probes = std::make_unique<Probes>(
            runtime, std::move(p), std::move(t), clock,
            [this](const std::string&, std::size_t) { ++changes; },
            [this](const std::string&, std::size_t, ProbeKind) { ++kills; });
        spec.name = "app";
    }
    void teardown() override { probes.reset(); }

    void add() {
        ProbedContainer c;
        c.pod = "kube-system/agent-x";
        c.runtime_id = "fake-1";
        c.started_mono_ms = clock.monotonic_ms();
        c.spec = &spec;
        probes->add("uid-1", 0, c);
    }
    // One period: the timers fire, the runs they started answer.
    void period(ProbeOutcome outcome) {
        clock.advance(5000);
        ticker->fire_all();
        prober->answer(outcome);
    }
    bool ready() { return probes->status("uid-1", 0, true).ready; }
    bool started() { return probes->status("uid-1", 0, true).started; }
};

// UpdatePodStatus: a container whose probes are not set up is neither
// started nor ready; one without probes is both once they are.
TEST(Probes, AContainerWithoutProbesIsReadyOnceAdded) {
    CHECK_FALSE(ready());
    add();
    CHECK_TRUE(started());
    CHECK_TRUE(ready());
    CHECK_EQUAL(0u, ticker->count());
}

// worker.go: readiness starts at Failure, successThreshold successes in a
// row make it ready; failureThreshold failures make it unready again.
TEST(Probes, ReadinessFollowsItsThresholds) {
    spec.readiness_probe = exec_probe(2, 3);
    add();
    CHECK_EQUAL(5000u, ticker->period_of_first());
    CHECK_FALSE(ready());
    period(ProbeOutcome::Success);
    CHECK_FALSE(ready());
    period(ProbeOutcome::Success);
    CHECK_TRUE(ready());
    CHECK_EQUAL(1, changes);
    period(ProbeOutcome::Failure);
    period(ProbeOutcome::Failure);
    CHECK_TRUE(ready());
    period(ProbeOutcome::Failure);
    CHECK_FALSE(ready());
    CHECK_EQUAL(2, changes);
    CHECK_EQUAL(0, kills);
}

// worker.go: failureThreshold liveness failures ask for one kill, then the
// worker is on hold until the next container: no more runs, no more kills.
TEST(Probes, LivenessFailuresAskForOneKill) {
    spec.liveness_probe = exec_probe(1, 3);
    add();
    period(ProbeOutcome::Failure);
    period(ProbeOutcome::Failure);
    CHECK_EQUAL(0, kills);
    period(ProbeOutcome::Failure);
    CHECK_EQUAL(1, kills);
    const int runs = prober->started();
    period(ProbeOutcome::Failure);
    CHECK_EQUAL(runs, prober->started());
    CHECK_EQUAL(1, kills);
}

// worker.go: only the startup probe runs until it has succeeded; then the
// readiness probe runs, and the startup probe no more.
TEST(Probes, TheStartupProbeGatesTheOthers) {
    spec.startup_probe = exec_probe(1, 3);
    spec.readiness_probe = exec_probe(1, 3);
    add();
    CHECK_FALSE(started());
    clock.advance(5000);
    ticker->fire_all();
    CHECK_EQUAL(1u, prober->in_flight());
    prober->answer(ProbeOutcome::Success);
    CHECK_TRUE(started());
    CHECK_FALSE(ready());
    clock.advance(5000);
    ticker->fire_all();
    CHECK_EQUAL(1u, prober->in_flight());
    prober->answer(ProbeOutcome::Success);
    CHECK_TRUE(ready());
}

// kubelet's worker probes synchronously: a tick while a run is in flight
// starts no second run.
TEST(Probes, ATickDuringARunIsDropped) {
    spec.readiness_probe = exec_probe(1, 3);
    add();
    ticker->fire_all();
    ticker->fire_all();
    CHECK_EQUAL(1, prober->started());
}

// A removed container's run in flight is cancelled and its timers stopped.
TEST(Probes, RemoveCancelsRunsAndTimers) {
    spec.readiness_probe = exec_probe(1, 3);
    spec.liveness_probe = exec_probe(1, 3);
    add();
    ticker->fire_all();
    CHECK_EQUAL(2u, prober->in_flight());
    CHECK_EQUAL(2u, ticker->count());
    probes->remove("uid-1", 0);
    CHECK_EQUAL(0u, prober->in_flight());
    CHECK_EQUAL(0u, ticker->count());
    CHECK_FALSE(probes->has("uid-1", 0));
}

// A named port the container does not declare: every run is Unknown
// (prober.go), which the worker throws away: never ready, never killed.
TEST(Probes, AnUnresolvableActionNeverKillsNorReadies) {
    Probe p = exec_probe(1, 1);
    p.handler.exec.reset();
    p.handler.tcp_socket = TCPSocketAction{IntOrString::from_string("metrics"), ""};
    spec.readiness_probe = p;
    spec.liveness_probe = p;
    add();
    for (int i = 0; i < 5; ++i) period(ProbeOutcome::Failure);
    CHECK_EQUAL(0, prober->started());
    CHECK_EQUAL(0, kills);
    CHECK_FALSE(ready());
}
