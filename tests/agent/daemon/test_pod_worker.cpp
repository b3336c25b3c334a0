// The PodWorkers component (agent/daemon/pod_workers.h), the agent's pod
// lifecycle sequence, as it is, over the fake runtime and the fake clock:
// crash-loop back-off figures, init and sidecar ordering, a postStart
// holding the containers after it, a runtime that fails or never answers, a
// start asked again while one is in flight, a pod removed before its
// start's turn or while a start or a restart is pending, the agent
// stopping while an exit is read, restartPolicy Never and OnFailure; the
// pod's termination (a Killing Event per container, the preStop hook
// before the stop and out of its grace, a stop that fails, a pod
// terminated while a start is in flight or queued, terminated once none is left, a
// termination the agent's restart resumes, a finished pod's sidecars); and
// the loop's timers (LoopTimers) on a real libuv loop. Milliseconds of CPU
// for what takes the real agent hours. Image back-off is the real Images
// component's, in test_images.cpp.
//
// PodWorker below is one pod and the Host the agent is to PodWorkers, cut
// down: it keeps the record, launches by name, and, as the agent's
// reconcile does after a timer, advances the pod. A timer is a due time
// the test's clock reaches; the runtime's answers come on settle().
#include <uv.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "agent/daemon/pod_workers.h"
#include "core/pod_lifecycle.h"
#include "core/reconcile.h"
#include "platform/operation_queue.h"
#include "tests/agent/daemon/fake_clock.h"
#include "tests/agent/daemon/fake_runtime.h"

// CppUTest last: its leak-detection macros redefine new.
#include <CppUTest/TestHarness.h>

using namespace daemonlet;
using daemonlet::agent::PodWorkers;
using daemonlet::agent::Timers;
using daemonlet::agent::WorkerContainer;
using daemonlet::testing::FakeClock;
using daemonlet::testing::FakeRuntime;

namespace {

constexpr std::int64_t kSec = 1000;
constexpr std::int64_t kMin = 60 * kSec;

// One-shot timers on the fake clock; they fire in run_due().
class FakeTimers final : public Timers {
  public:
    explicit FakeTimers(FakeClock& clock) : clock_(clock) {}
    Id after(std::int64_t delay_ms, std::function<void()> fire) override {
        delays_.push_back(delay_ms);
        pending_[++next_] = {clock_.monotonic_ms() + delay_ms, std::move(fire)};
        return next_;
    }
    void cancel(Id id) override { pending_.erase(id); }
    void close() override { pending_.clear(); }
    // Fires the timers due by now, in the order they were set; one that an
    // earlier one cancels does not fire, one it sets waits for the next call.
    void run_due() {
        std::vector<Id> due;
        for (const auto& [id, t] : pending_)
            if (t.first <= clock_.monotonic_ms()) due.push_back(id);
        for (Id id : due) {
            auto it = pending_.find(id);
            if (it == pending_.end()) continue;
            std::function<void()> fire = std::move(it->second.second);
            pending_.erase(it);
            fire();
        }
    }
    const std::vector<std::int64_t>& delays() const { return delays_; }

  private:
    FakeClock& clock_;
    Id next_ = 0;
    std::map<Id, std::pair<std::int64_t, std::function<void()>>> pending_;
    std::vector<std::int64_t> delays_;
};

class PodWorker final : private PodWorkers::Host {
  public:
    PodWorker(FakeRuntime& rt, FakeClock& clock, PodRecord rec)
        : rt_(rt),
          rec_(std::move(rec)),
          timers_(new FakeTimers(clock)),
          workers_(*this, rt, ops_, std::unique_ptr<Timers>(timers_), clock) {
        live_.resize(container_count(rec_));
        rt_.set_exit_handler([this](const std::string& id) {
            workers_.on_exit(id);
            rt_.settle();
        });
    }

    PodRecord& rec() { return rec_; }
    // A static pod's restartPolicy (a DaemonSet's is Always).
    void set_restart_policy(std::string policy) { policy_ = std::move(policy); }
    PodPhase phase() {
        update_pod_conditions(rec_, policy_);
        return rec_.phase;
    }
    // A sidecar's startup probe passes: what refresh_readiness reads.
    void startup_passed(std::size_t i) {
        container_at(rec_, i).started = true;
        advance();
    }
    // Restarts whose back-off ran out by now, as the restart timers fire,
    // then the agent's reconcile (start_waiting_containers).
    void run_due() {
        timers_->run_due();
        rt_.settle();
        advance();
    }
    // The delays the restarts were scheduled with, in order.
    const std::vector<std::int64_t>& delays() const { return timers_->delays(); }
    std::string id_of(std::size_t i) const { return live_[i].id; }

    void advance() {
        workers_.advance(rec_.uid);
        rt_.settle();
    }
    // Without the runtime's answers: for what happens while a start is in flight.
    PodWorkers& workers() { return workers_; }
    platform::OperationQueue& ops() { return ops_; }
    // Container `i` is in its postStart hook (true) or done with it.
    void hold(std::size_t i, bool held) { held_[i] = held; }
    // The Host heard that nothing of the pod runs any more (pod_terminated).
    int terminated() const { return terminated_; }
    // Container `i` has a preStop hook (the Host's, pod's grace `grace_s`
    // seconds): it runs until end_pre_stop(), the test's clock its time.
    void set_pre_stop(std::size_t i, std::int64_t grace_s) { pre_stop_[i] = grace_s; }
    bool pre_stop_running(std::size_t i) const { return pre_stop_done_.count(i) != 0; }
    void end_pre_stop(std::size_t i) {
        auto done = std::move(pre_stop_done_.at(i));
        pre_stop_done_.erase(i);
        done.second(done.first, pre_stop_.at(i));
        rt_.settle();
    }
    // The Pod's deletion set this grace period (stop_grace()).
    void set_stop_grace(std::int64_t grace_s) { stop_grace_ = grace_s; }
    int killing_events() const { return killing_; }
    int saved() const { return saved_; }
    // The runtime operations reported as failed (their metric), in order.
    const std::vector<std::string>& failed_ops() const { return failed_ops_; }
    int terminating() const { return terminating_; }
    // The agent forgot the pod (it went): worker_pod() says none.
    void remove() { removed_ = true; }
    // The agent stops (agent_stopping()).
    void stop_agent() { stopping_ = true; }
    int changed() const { return changed_; }
    int finished_while_stopping() const { return finished_while_stopping_; }

  private:
    PodRecord* worker_pod(const std::string& uid) override {
        return uid == rec_.uid && !removed_ ? &rec_ : nullptr;
    }
    WorkerContainer& worker_container(const std::string&, std::size_t index) override { return live_[index]; }
    bool agent_stopping() const override { return stopping_; }
    std::string pod_restart_policy(const PodRecord&) const override { return policy_; }
    bool holds_next(const std::string&, std::size_t index) override { return held_[index]; }
    void refresh_pod(const std::string&) override { update_pod_conditions(rec_, policy_); }
    std::optional<platform::ContainerLaunch> launch_of(const std::string&, std::size_t index) override {
        const ContainerStatus& cs = container_at(rec_, index);
        platform::ContainerLaunch launch;
        launch.pod_uid = rec_.uid;
        launch.container_name = cs.name;
        launch.restart_count = static_cast<std::uint32_t>(cs.restart_count);
        auto c = std::make_shared<Container>();
        c->name = cs.name;
        launch.container = std::move(c);
        return launch;
    }
    void container_started(const std::string&, std::size_t index, const std::string&,
                           std::shared_ptr<const Container>, std::vector<std::pair<std::string, std::string>>,
                           std::int64_t) override {
        // No startup probe on app containers here: started at once.
        ContainerStatus& cs = container_at(rec_, index);
        if (!cs.sidecar) cs.started = true;
    }
    bool container_start_failed(const std::string&, std::size_t index, const Container&,
                                const Error& error) override {
        ContainerStatus& cs = container_at(rec_, index);
        cs.state = ContainerState::Waiting;
        cs.reason = "RunContainerError";
        cs.message = error.message;
        return true;
    }
    void runtime_unavailable(const std::string&, std::size_t, const Error&, bool) override {}
    void container_exiting(const std::string&, std::size_t) override {}
    void container_exited(const std::string&, std::size_t index, ExitAction, std::int64_t,
                          std::int64_t) override {
        container_at(rec_, index).started = false;  // its probes go with it
    }
    void pod_changed(const std::string&, bool) override {
        ++changed_;
        update_pod_conditions(rec_, policy_);
    }
    void pod_terminating(const std::string&, const std::string&) override { ++terminating_; }
    void container_terminating(const std::string&, std::size_t) override {}
    void container_killing(const std::string&, std::size_t) override { ++killing_; }
    bool run_pre_stop(const std::string&, std::size_t index, const std::string& expected,
                      std::function<void(const std::string&, std::int64_t)> done) override {
        const std::string& id = live_[index].id;
        if (!pre_stop_.count(index) || id.empty() || (!expected.empty() && id != expected)) return false;
        if (pre_stop_done_.count(index)) return true;  // one stop, after the hook already running
        pre_stop_done_[index] = {id, std::move(done)};
        return true;
    }
    std::optional<std::int64_t> stop_grace(const std::string&) override { return stop_grace_; }
    void pod_terminated(const std::string&) override { ++terminated_; }
    void pod_finishing(const std::string&) override {}
    void save_pod_record(const std::string&) override { ++saved_; }
    void runtime_operation_done(const char* what, std::uint64_t, bool ok) override {
        if (!ok) failed_ops_.emplace_back(what);
    }
    void operation_finished_while_stopping() override { ++finished_while_stopping_; }

    FakeRuntime& rt_;
    PodRecord rec_;
    std::string policy_ = "Always";
    std::vector<WorkerContainer> live_;
    std::map<std::size_t, bool> held_;
    int terminated_ = 0;
    int saved_ = 0;
    int terminating_ = 0;
    int killing_ = 0;
    std::vector<std::string> failed_ops_;
    std::optional<std::int64_t> stop_grace_;
    std::map<std::size_t, std::int64_t> pre_stop_;
    std::map<std::size_t, std::pair<std::string, std::function<void(const std::string&, std::int64_t)>>>
        pre_stop_done_;
    bool removed_ = false;
    bool stopping_ = false;
    int changed_ = 0;
    int finished_while_stopping_ = 0;
    platform::OperationQueue ops_{4};
    FakeTimers* timers_;  // owned by workers_
    PodWorkers workers_;
};

PodRecord pod_of(const std::vector<std::pair<const char*, char>>& containers) {
    PodRecord p;
    p.uid = "uid-1";
    for (const auto& [name, kind] : containers) {
        ContainerStatus cs;
        cs.name = name;
        cs.sidecar = kind == 's';
        (kind == 'a' ? p.containers : p.init_containers).push_back(cs);
    }
    return p;
}

std::vector<std::string> started_names(const FakeRuntime& rt) {
    std::vector<std::string> out;
    for (const auto& s : rt.started()) out.push_back(s.container_name);
    return out;
}

// The grace period the stop of `id` was given; -1: the launch's.
std::int64_t grace_of(const FakeRuntime& rt, const std::string& id) {
    auto it = rt.stop_graces().find(id);
    return it == rt.stop_graces().end() ? -1 : it->second;
}

std::string joined(const std::vector<std::string>& v) {
    std::string s;
    for (const auto& x : v) s += (s.empty() ? "" : " ") + x;
    return s;
}

}  // namespace

TEST_GROUP(PodWorker){};

TEST(PodWorker, CrashLoopBackOffDoublesFrom10sTo300sAndResetsAfter10MinutesRunning) {
    // kuberuntime doBackOff over flowcontrol.Backoff(10 s, 300 s): each
    // exit after a second's run waits 0, 10, 20, 40, 80, 160, 300, 300 s;
    // a run of more than 10 min forgets it.
    FakeRuntime rt;
    FakeClock clock;
    PodWorker w(rt, clock, pod_of({{"app", 'a'}}));
    w.advance();
    for (int n = 0; n < 8; ++n) {
        clock.advance(kSec);
        rt.exit(w.id_of(0), 1);
        const std::int64_t delay = w.delays().back();
        if (delay > 0) {
            STRCMP_EQUAL("CrashLoopBackOff", w.rec().containers[0].reason.c_str());
            // One millisecond early, it has not restarted.
            clock.advance(delay - 1);
            w.run_due();
            CHECK(w.id_of(0).empty());
            clock.advance(1);
        }
        w.run_due();
        CHECK_FALSE(w.id_of(0).empty());
    }
    const std::vector<std::int64_t> expected{0,         10 * kSec,  20 * kSec,  40 * kSec,
                                             80 * kSec, 160 * kSec, 300 * kSec, 300 * kSec};
    CHECK(expected == w.delays());
    LONGS_EQUAL(8, w.rec().containers[0].restart_count);
    LONGS_EQUAL(9, rt.started().size());
    LONGS_EQUAL(8, rt.started().back().restart_count);

    clock.advance(10 * kMin + 1);
    rt.exit(w.id_of(0), 1);
    LONGS_EQUAL(0, w.delays().back());
    w.run_due();
    clock.advance(kSec);
    rt.exit(w.id_of(0), 1);
    LONGS_EQUAL(10 * kSec, w.delays().back());
}

TEST(PodWorker, InitContainersRunOneAtATimeThenTheAppContainersTogether) {
    // computeInitContainerActions: each init container exits 0 before the
    // next starts; computePodActions: then every app container.
    FakeRuntime rt;
    FakeClock clock;
    PodWorker w(rt, clock, pod_of({{"init-a", 'i'}, {"init-b", 'i'}, {"web", 'a'}, {"log", 'a'}}));
    w.advance();
    STRCMP_EQUAL("init-a", joined(started_names(rt)).c_str());
    clock.advance(kSec);
    rt.exit(w.id_of(0), 0);
    STRCMP_EQUAL("init-a init-b", joined(started_names(rt)).c_str());
    rt.exit(w.id_of(1), 0);
    STRCMP_EQUAL("init-a init-b web log", joined(started_names(rt)).c_str());
}

TEST(PodWorker, FailedInitContainerRestartsWithBackOffAndHoldsTheRest) {
    FakeRuntime rt;
    FakeClock clock;
    PodWorker w(rt, clock, pod_of({{"init", 'i'}, {"web", 'a'}}));
    w.advance();
    clock.advance(kSec);
    rt.exit(w.id_of(0), 1);  // first failure: at once
    w.run_due();
    clock.advance(kSec);
    rt.exit(w.id_of(0), 1);  // then 10 s
    w.run_due();
    STRCMP_EQUAL("init init", joined(started_names(rt)).c_str());
    clock.advance(10 * kSec);
    w.run_due();
    rt.exit(w.id_of(0), 0);
    STRCMP_EQUAL("init init init web", joined(started_names(rt)).c_str());
}

TEST(PodWorker, SidecarStartsAndItsStartupProbeGatesTheNextInitContainer) {
    // KEP-753: a restartPolicy Always init container starts in order, and
    // the next init container waits for its startup probe; it then runs
    // beside the app containers and restarts when it exits.
    FakeRuntime rt;
    FakeClock clock;
    PodWorker w(rt, clock, pod_of({{"proxy", 's'}, {"migrate", 'i'}, {"web", 'a'}}));
    w.advance();
    STRCMP_EQUAL("proxy", joined(started_names(rt)).c_str());
    clock.advance(5 * kSec);
    w.run_due();
    STRCMP_EQUAL("proxy", joined(started_names(rt)).c_str());
    w.startup_passed(0);
    STRCMP_EQUAL("proxy migrate", joined(started_names(rt)).c_str());
    rt.exit(w.id_of(1), 0);
    STRCMP_EQUAL("proxy migrate web", joined(started_names(rt)).c_str());
    CHECK_FALSE(w.id_of(0).empty());
    // The sidecar exits 0: restarted (first exit: at once), the app runs on.
    clock.advance(kSec);
    rt.exit(w.id_of(0), 0);
    w.run_due();
    STRCMP_EQUAL("proxy migrate web proxy", joined(started_names(rt)).c_str());
    CHECK_FALSE(w.id_of(2).empty());
}

TEST(PodWorker, RuntimeDownRetriesFrom100msTo5sWithoutTouchingTheCrashLoopBackOff) {
    // kubelet.go syncLoop: runtimeErrors, a wait from 100 ms doubling up to 5 s.
    FakeRuntime rt;
    FakeClock clock;
    rt.fail_next("start", Error{ErrorCode::Unavailable, "containerd: connection refused"}, 8);
    PodWorker w(rt, clock, pod_of({{"app", 'a'}}));
    w.advance();
    for (int n = 0; n < 7; ++n) {
        clock.advance(w.delays().back());
        w.run_due();
    }
    const std::vector<std::int64_t> expected{100, 200, 400, 800, 1600, 3200, 5000, 5000};
    CHECK(expected == w.delays());
    clock.advance(5000);
    w.run_due();
    CHECK_FALSE(w.id_of(0).empty());
    LONGS_EQUAL(9, rt.calls("start"));
    // Its first crash restarts at once: the outage left no back-off.
    clock.advance(kSec);
    rt.exit(w.id_of(0), 1);
    LONGS_EQUAL(0, w.delays().back());
}

TEST(PodWorker, StopThatFailsLeavesThePodUntilTheExitArrives) {
    // killContainer's error is the sync's (kuberuntime_container.go): the
    // container keeps its instance, nothing starts it again; its exit, when
    // it comes, ends it, and a removed pod's exit restarts nothing
    // (killPodWithSyncResult).
    FakeRuntime rt;
    FakeClock clock;
    PodWorker w(rt, clock, pod_of({{"app", 'a'}}));
    w.advance();
    const std::string id = w.id_of(0);
    rt.fail_next("stop", Error{ErrorCode::Unavailable, "containerd: connection refused"});
    w.workers().terminate("uid-1", "pod removed");
    rt.settle();
    LONGS_EQUAL(1, rt.calls("stop"));
    CHECK(rt.stopped().empty());
    CHECK(std::vector<std::string>{"stop_container"} == w.failed_ops());  // its metric; not retried
    STRCMP_EQUAL(id.c_str(), w.id_of(0).c_str());
    CHECK(w.workers().watched(id));
    LONGS_EQUAL(0, w.terminated());
    rt.exit(id, 143);
    CHECK(w.id_of(0).empty());
    LONGS_EQUAL(1, w.terminated());
    CHECK(w.delays().empty());
    LONGS_EQUAL(1, rt.started().size());
}

TEST(PodWorker, FakeRuntimeKeepsTheRuntimeContract) {
    // A call that fails synchronously never calls back; a started container
    // exits once.
    FakeRuntime rt;
    int exits = 0;
    rt.set_exit_handler([&](const std::string&) { ++exits; });
    rt.fail_next("start", Error{ErrorCode::Runtime, "boom"});
    CHECK_FALSE(rt.start({}).ok());
    auto id = rt.start({});
    CHECK(id.ok());
    rt.exit(id.value(), 0);
    rt.exit(id.value(), 0);
    LONGS_EQUAL(1, exits);
    STRCMP_EQUAL("Completed", rt.inspect(id.value()).value().reason.c_str());
    CHECK(rt.remove(id.value()).ok());
    CHECK_FALSE(rt.inspect(id.value()).ok());
    rt.set_image_missing("nginx:1");
    platform::ContainerLaunch launch;
    Container c;
    c.image = "nginx:1";
    launch.container = std::make_shared<const Container>(c);
    auto missing = rt.start(launch);
    CHECK_FALSE(missing.ok());
    STRCMP_EQUAL("image_not_found", missing.error().code_name());
}

TEST(PodWorker, StaticPodRestartPolicyNeverAndOnFailureFinishThePod) {
    // ShouldContainerBeRestarted and getPhase: Never keeps a container that
    // exited terminated, the pod Succeeded (all exited 0) or Failed;
    // OnFailure restarts a failed one with the back-off and finishes on 0.
    FakeRuntime rt;
    FakeClock clock;
    PodWorker never(rt, clock, pod_of({{"once", 'a'}}));
    never.set_restart_policy("Never");
    never.advance();
    STRCMP_EQUAL("Running", to_string(never.phase()));
    clock.advance(kSec);
    rt.exit(never.id_of(0), 0);
    never.run_due();
    clock.advance(10 * kMin);
    never.run_due();
    LONGS_EQUAL(1, rt.started().size());
    STRCMP_EQUAL("Succeeded", to_string(never.phase()));

    PodWorker failing(rt, clock, pod_of({{"once", 'a'}}));
    failing.set_restart_policy("Never");
    failing.advance();
    rt.exit(failing.id_of(0), 2);
    failing.run_due();
    LONGS_EQUAL(2, rt.started().size());
    STRCMP_EQUAL("Failed", to_string(failing.phase()));

    PodWorker flaky(rt, clock, pod_of({{"flaky", 'a'}}));
    flaky.set_restart_policy("OnFailure");
    flaky.advance();
    clock.advance(kSec);
    rt.exit(flaky.id_of(0), 3);  // restarts at once (the first exit)
    STRCMP_EQUAL("Running", to_string(flaky.phase()));
    flaky.run_due();
    CHECK_FALSE(flaky.id_of(0).empty());
    clock.advance(kSec);
    rt.exit(flaky.id_of(0), 0);
    clock.advance(10 * kMin);
    flaky.run_due();
    LONGS_EQUAL(1, flaky.rec().containers[0].restart_count);
    LONGS_EQUAL(4, rt.started().size());
    STRCMP_EQUAL("Succeeded", to_string(flaky.phase()));
}

TEST(PodWorker, PostStartHoldsTheContainersAfterIt) {
    // kuberuntime startContainer returns after the container's postStart
    // hook: SyncPod starts the next one only then.
    FakeRuntime rt;
    FakeClock clock;
    PodWorker w(rt, clock, pod_of({{"db", 'a'}, {"web", 'a'}}));
    w.hold(0, true);
    w.advance();
    STRCMP_EQUAL("db", joined(started_names(rt)).c_str());
    w.advance();
    STRCMP_EQUAL("db", joined(started_names(rt)).c_str());
    w.hold(0, false);
    w.advance();
    STRCMP_EQUAL("db web", joined(started_names(rt)).c_str());
}

TEST(PodWorker, AStartAskedAgainWhileOneIsInFlightGoesAtOnceWhenThatOneFails) {
    // An image import lands while the start that missed it is in flight:
    // its failure starts it again at once, not after its back-off.
    FakeRuntime rt;
    FakeClock clock;
    PodWorker w(rt, clock, pod_of({{"app", 'a'}}));
    rt.fail_next("start", Error{ErrorCode::Runtime, "exec format error"});
    rt.fail_next("start", Error{ErrorCode::Runtime, "exec format error"});
    clock.advance(kSec);
    w.workers().start("uid-1", 0);
    w.workers().start("uid-1", 0);  // asked again: in flight, not started twice
    LONGS_EQUAL(1, rt.calls("start"));
    rt.settle();  // fails; asked again: at once, fails; then its back-off
    LONGS_EQUAL(2, rt.calls("start"));
    STRCMP_EQUAL("RunContainerError", w.rec().containers[0].reason.c_str());
    const std::vector<std::int64_t> expected{0, 10 * kSec};
    CHECK(expected == w.delays());
    w.run_due();
    LONGS_EQUAL(2, rt.calls("start"));
    clock.advance(10 * kSec);
    w.run_due();
    CHECK_FALSE(w.id_of(0).empty());
}

TEST(PodWorker, APodRemovedBeforeItsStartsTurnNeverStarts) {
    // The pod's operations run in order (one pod worker per pod): a start
    // queued behind another operation finds the pod removed and does not
    // run; the agent hears that the pod may be gone.
    FakeRuntime rt;
    FakeClock clock;
    PodWorker w(rt, clock, pod_of({{"app", 'a'}}));
    platform::OperationQueue::Finished busy;
    w.ops().submit("uid-1", [&](platform::OperationQueue::Finished finished) { busy = std::move(finished); });
    w.workers().start("uid-1", 0);
    w.rec().deleting = true;
    busy();
    rt.settle();
    LONGS_EQUAL(0, rt.calls("start"));
    LONGS_EQUAL(1, w.terminated());
    w.rec().deleting = false;
    w.advance();  // nothing is left starting: it can start again
    LONGS_EQUAL(1, rt.calls("start"));
}

TEST(PodWorker, AStopQueuedBehindAStartStopsTheInstanceThatStartMade) {
    // One pod's operations in order (pod_workers.go: one worker per pod): a
    // pod removed while its container's start is in flight has the
    // container that start made stopped, not left running; a stop for an
    // instance that is gone (a liveness kill that came late) stops nothing.
    FakeRuntime rt;
    FakeClock clock;
    PodWorker w(rt, clock, pod_of({{"app", 'a'}}));
    w.workers().start("uid-1", 0);
    w.workers().stop("uid-1", 0, "", "pod removed", std::nullopt);
    CHECK(rt.stopped().empty());
    rt.settle();
    CHECK_FALSE(w.id_of(0).empty());
    LONGS_EQUAL(1, rt.stopped().size());
    STRCMP_EQUAL(w.id_of(0).c_str(), rt.stopped()[0].c_str());
    w.workers().stop("uid-1", 0, "fake-0", "liveness probe failed", std::nullopt);
    rt.settle();
    LONGS_EQUAL(1, rt.stopped().size());
}

TEST(PodWorker, ARestartTimerOfARemovedPodDoesNothing) {
    // The timer names the pod by its uid: the pod went meanwhile
    // (pod_workers.go: a worker of a pod that is gone syncs nothing).
    FakeRuntime rt;
    FakeClock clock;
    PodWorker w(rt, clock, pod_of({{"app", 'a'}}));
    w.advance();
    clock.advance(kSec);
    rt.exit(w.id_of(0), 1);  // the first crash: a restart at once
    LONGS_EQUAL(1, w.delays().size());
    const int changed = w.changed();
    w.remove();
    w.run_due();
    LONGS_EQUAL(1, rt.calls("start"));
    LONGS_EQUAL(changed, w.changed());
}

TEST(PodWorker, AnExitWhileTheAgentStopsIsLeftForTheNextAgent) {
    // The agent stops and its containers keep running (a restart of the
    // agent adopts them): an exit read meanwhile changes nothing, removes
    // nothing, restarts nothing; the next agent reads it at adoption.
    FakeRuntime rt;
    FakeClock clock;
    PodWorker w(rt, clock, pod_of({{"app", 'a'}}));
    w.advance();
    const std::string id = w.id_of(0);
    const int changed = w.changed();
    w.stop_agent();
    clock.advance(kSec);
    rt.exit(id, 1);
    LONGS_EQUAL(1, rt.calls("inspect"));
    LONGS_EQUAL(0, rt.calls("remove"));
    STRCMP_EQUAL(id.c_str(), w.id_of(0).c_str());
    STRCMP_EQUAL("Running", to_string(w.rec().containers[0].state));
    LONGS_EQUAL(0, w.rec().containers[0].restart_count);
    CHECK(w.delays().empty());
    LONGS_EQUAL(changed, w.changed());
}

TEST(PodWorker, AStartThatFailsOnADeletingPodIsNotRetried) {
    // The pod is being removed while its container's start is in flight:
    // the start's failure schedules no back-off and sets no status; the
    // agent hears that the pod may be gone (killPodWithSyncResult).
    FakeRuntime rt;
    FakeClock clock;
    PodWorker w(rt, clock, pod_of({{"app", 'a'}}));
    rt.fail_next("start", Error{ErrorCode::Runtime, "exec format error"});
    w.workers().start("uid-1", 0);
    w.rec().deleting = true;
    rt.settle();
    LONGS_EQUAL(1, rt.calls("start"));
    CHECK(w.delays().empty());
    CHECK(w.rec().containers[0].reason.empty());
    LONGS_EQUAL(1, w.terminated());
    CHECK_FALSE(w.workers().advance("uid-1"));  // deleting: nothing starts
}

TEST(PodWorker, TerminateKillsEachContainerOnceAndFinishesWhenTheLastStopped) {
    // pod_workers.go terminating -> terminated: every running container is
    // killed once, with one Killing Event each (killContainer); the pod is
    // terminated only once the last one exited, restarting none. A second
    // terminate, and a kill whose caller recorded its own Event, add none.
    FakeRuntime rt;
    FakeClock clock;
    PodWorker w(rt, clock, pod_of({{"a", 'a'}, {"b", 'a'}}));
    w.advance();
    const std::string a = w.id_of(0), b = w.id_of(1);
    w.workers().terminate("uid-1", "DaemonSet deleted");
    w.workers().terminate("uid-1", "DaemonSet deleted");
    rt.settle();
    CHECK(w.rec().deleting);
    LONGS_EQUAL(1, w.terminating());
    LONGS_EQUAL(2, w.killing_events());
    CHECK((std::vector<std::string>{a, b}) == rt.stopped());
    LONGS_EQUAL(-1, grace_of(rt, b));  // no deletion grace: the launch's
    w.set_stop_grace(9);               // ...which a later stop gets
    w.workers().kill("uid-1", 0, a, "liveness probe failed", false);
    rt.settle();
    LONGS_EQUAL(9, grace_of(rt, a));
    LONGS_EQUAL(-1, grace_of(rt, b));
    LONGS_EQUAL(2, w.killing_events());
    rt.exit(a, 143);
    LONGS_EQUAL(0, w.terminated());
    rt.exit(b, 143);
    LONGS_EQUAL(1, w.terminated());
    CHECK(w.delays().empty());
    LONGS_EQUAL(2, rt.started().size());
}

TEST(PodWorker, PreStopRunsBeforeTheStopAndItsTimeComesOutOfTheGrace) {
    // kuberuntime killContainer: the preStop hook first, then the stop with
    // gracePeriod minus the whole seconds the hook took, at least
    // minimumGracePeriodInSeconds (2). Without a hook the stop has the
    // Pod's deletion grace when it set one.
    FakeRuntime rt;
    FakeClock clock;
    PodWorker w(rt, clock, pod_of({{"a", 'a'}, {"b", 'a'}, {"c", 'a'}}));
    w.advance();
    w.set_pre_stop(0, 30);
    w.set_pre_stop(1, 30);
    w.set_stop_grace(5);
    w.workers().terminate("uid-1", "DaemonSet deleted");
    rt.settle();
    CHECK((std::vector<std::string>{w.id_of(2)}) == rt.stopped());  // c has no hook
    LONGS_EQUAL(5, grace_of(rt, w.id_of(2)));
    CHECK(w.pre_stop_running(0) && w.pre_stop_running(1));
    clock.advance(7 * kSec + 900);
    w.end_pre_stop(0);
    LONGS_EQUAL(2, rt.stopped().size());
    LONGS_EQUAL(23, grace_of(rt, w.id_of(0)));
    clock.advance(25 * kSec);
    w.end_pre_stop(1);
    LONGS_EQUAL(3, rt.stopped().size());
    LONGS_EQUAL(2, grace_of(rt, w.id_of(1)));
    LONGS_EQUAL(3, w.killing_events());  // once each, the hook's stop adds none
}

TEST(PodWorker, APodTerminatedWhileItsStartIsInFlightIsKilledOnceItStarted) {
    // kubelet: the pod worker's SyncPod (the start) ends, then
    // syncTerminatingPod's killPod kills every running container
    // (killContainer: the Killing Event, the preStop hook, the stop). So the
    // instance a start in the runtime makes gets its Killing Event and hook
    // once it reported, not before; the pod is terminated with its exit. A
    // start still queued never runs: no Killing Event (killContainersWithSyncResult
    // kills the running ones only).
    FakeRuntime rt;
    FakeClock clock;
    PodWorker w(rt, clock, pod_of({{"app", 'a'}}));
    w.set_pre_stop(0, 30);
    w.workers().start("uid-1", 0);
    w.workers().terminate("uid-1", "DaemonSet deleted");
    LONGS_EQUAL(0, rt.calls("stop"));
    LONGS_EQUAL(0, w.killing_events());
    LONGS_EQUAL(0, w.terminated());
    rt.settle();
    const std::string id = w.id_of(0);
    CHECK_FALSE(id.empty());
    LONGS_EQUAL(1, w.killing_events());
    CHECK(w.pre_stop_running(0));
    CHECK(rt.stopped().empty());
    w.end_pre_stop(0);
    CHECK((std::vector<std::string>{id}) == rt.stopped());
    LONGS_EQUAL(0, w.terminated());
    rt.exit(id, 143);
    LONGS_EQUAL(1, w.terminated());
    CHECK(w.delays().empty());
    LONGS_EQUAL(1, w.killing_events());

    FakeRuntime rq;
    PodWorker q(rq, clock, pod_of({{"app", 'a'}}));
    platform::OperationQueue::Finished busy;
    q.ops().submit("uid-1", [&](platform::OperationQueue::Finished finished) { busy = std::move(finished); });
    q.workers().start("uid-1", 0);  // queued behind the busy operation
    q.workers().terminate("uid-1", "DaemonSet deleted");
    busy();
    rq.settle();
    LONGS_EQUAL(0, rq.calls("start"));
    LONGS_EQUAL(0, q.killing_events());
    LONGS_EQUAL(1, q.terminated());
}

TEST(PodWorker, ATerminationLostWithTheAgentIsResumedAfterItsRestart) {
    // The store says deleting, the containers still run (the agent went
    // away during a preStop hook, with a stop queued, or was killed -9
    // between the two): as kubelet's pod worker resumes killPod for a pod
    // known to be terminating, each container is killed again, its preStop
    // hook first (killContainer); the pod is terminated with the last exit.
    // No second terminating Event.
    FakeRuntime rt;
    FakeClock clock;
    PodWorker w(rt, clock, pod_of({{"a", 'a'}, {"b", 'a'}}));
    w.advance();
    const std::string a = w.id_of(0), b = w.id_of(1);
    w.rec().deleting = true;  // as adopted from the store
    w.set_pre_stop(0, 30);
    w.workers().resume_termination("uid-1");
    rt.settle();
    CHECK((std::vector<std::string>{b}) == rt.stopped());
    CHECK(w.pre_stop_running(0));
    w.end_pre_stop(0);
    CHECK((std::vector<std::string>{b, a}) == rt.stopped());
    LONGS_EQUAL(2, w.killing_events());
    LONGS_EQUAL(0, w.terminating());
    LONGS_EQUAL(0, w.terminated());
    rt.exit(b, 143);
    LONGS_EQUAL(0, w.terminated());
    rt.exit(a, 143);
    LONGS_EQUAL(1, w.terminated());
    CHECK(w.delays().empty());
    LONGS_EQUAL(2, rt.started().size());
}

TEST(PodWorker, AFinishedPodsSidecarsStopOnceAndOneInBackOffStaysTerminated) {
    // KEP-753 (computePodActions): once a pod with restartPolicy Never has
    // finished its app containers, its sidecars are killed, each instance
    // once however often it is asked; a sidecar waiting out its back-off is
    // not started again and shows as it last ended.
    FakeRuntime rt;
    FakeClock clock;
    PodWorker w(rt, clock, pod_of({{"log", 's'}, {"job", 'a'}}));
    w.set_restart_policy("Never");
    w.advance();
    w.startup_passed(0);
    const std::string sidecar = w.id_of(0);
    rt.exit(w.id_of(1), 0);
    w.workers().stop_finished_sidecars("uid-1");
    rt.settle();
    CHECK((std::vector<std::string>{sidecar}) == rt.stopped());
    LONGS_EQUAL(1, w.killing_events());

    FakeRuntime rt2;  // its own: the same uid on one runtime would mix the two
    PodWorker backoff(rt2, clock, pod_of({{"log", 's'}, {"job", 'a'}}));
    backoff.set_restart_policy("Never");
    backoff.advance();
    backoff.startup_passed(0);
    clock.advance(kSec);
    rt2.exit(backoff.id_of(0), 1);  // the first crash: restarted at once
    backoff.run_due();
    clock.advance(kSec);
    rt2.exit(backoff.id_of(0), 1);  // the second: CrashLoopBackOff, 10 s
    STRCMP_EQUAL("CrashLoopBackOff", backoff.rec().init_containers[0].reason.c_str());
    rt2.exit(backoff.id_of(1), 0);
    LONGS_EQUAL(1, backoff.saved());
    STRCMP_EQUAL("Terminated", to_string(backoff.rec().init_containers[0].state));
    const std::size_t started = rt2.started().size();
    clock.advance(10 * kMin);
    backoff.run_due();
    LONGS_EQUAL(started, rt2.started().size());
    CHECK(rt2.stopped().empty());  // nothing to stop: the sidecar is not running
}

TEST(PodWorker, LoopTimersOnARealLoop) {
    // make_loop_timers: a cancelled timer never fires, a timer set from
    // inside a firing one fires, every fired timer's handle is closed;
    // close() closes the pending ones and after() does nothing since, so
    // the loop ends with no handle left.
    uv_loop_t loop;
    uv_loop_init(&loop);
    {
        std::unique_ptr<Timers> timers = daemonlet::agent::make_loop_timers(&loop);
        std::vector<std::string> fired;
        timers->cancel(timers->after(0, [&] { fired.push_back("cancelled"); }));
        std::function<void()> tick = [&] {
            fired.push_back("tick");
            if (fired.size() < 3) timers->after(0, tick);
        };
        timers->after(1, tick);
        uv_run(&loop, UV_RUN_DEFAULT);  // returns once no timer is left
        STRCMP_EQUAL("tick tick tick", joined(fired).c_str());
        timers->after(60 * kMin, [&] { fired.push_back("pending at close"); });
        timers->close();
        timers->after(0, [&] { fired.push_back("after close"); });
        uv_run(&loop, UV_RUN_NOWAIT);  // the close callbacks
        CHECK_FALSE(uv_loop_alive(&loop));
        STRCMP_EQUAL("tick tick tick", joined(fired).c_str());
    }
    LONGS_EQUAL(0, uv_loop_close(&loop));
}
