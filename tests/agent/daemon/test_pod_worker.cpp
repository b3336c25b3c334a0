// The pod lifecycle's pure decisions (core/pod_lifecycle.h, image_wait.h,
// reconcile.h's back-offs) driven as agent/daemon/pods.cpp drives them, over the
// fake runtime and the fake clock: crash-loop back-off figures, init and
// sidecar ordering, a runtime that fails or never answers, image back-off.
// Milliseconds of CPU for what takes the real agent hours.
//
// PodWorker below is the sequence of agent/daemon/pods.cpp (advance_pod,
// start_container's error paths, on_container_exit, the restart timers) in
// a few lines, without libuv: a timer is a due time the test's clock
// reaches. It holds no decision of its own: every branch is a core call.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/image_wait.h"
#include "core/pod_lifecycle.h"
#include "core/reconcile.h"
#include "tests/agent/daemon/fake_clock.h"
#include "tests/agent/daemon/fake_runtime.h"

// CppUTest last: its leak-detection macros redefine new.
#include <CppUTest/TestHarness.h>

using namespace daemonlet;
using daemonlet::testing::FakeClock;
using daemonlet::testing::FakeRuntime;

namespace {

constexpr std::int64_t kSec = 1000;
constexpr std::int64_t kMin = 60 * kSec;

class PodWorker {
  public:
    PodWorker(FakeRuntime& rt, FakeClock& clock, PodRecord rec)
        : rt_(rt), clock_(clock), rec_(std::move(rec)) {
        live_.resize(container_count(rec_));
        rt_.set_exit_handler([this](const std::string& id) { on_exit(id); });
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
    // Restarts whose back-off ran out by now, as the restart timers fire.
    void run_due() {
        for (std::size_t i = 0; i < live_.size(); ++i)
            if (live_[i].due && *live_[i].due <= clock_.monotonic_ms()) {
                live_[i].due.reset();
                start(i);
            }
        advance();
    }
    // The delays the restarts were scheduled with, in order.
    const std::vector<std::int64_t>& delays() const { return delays_; }
    std::string id_of(std::size_t i) const { return live_[i].id; }

    void advance() {
        std::size_t from = 0;
        for (;;) {
            std::vector<bool> idle;
            for (const auto& lc : live_) idle.push_back(lc.id.empty() && !lc.due);
            const PodStartStep step = next_start_step(rec_, idle, from);
            for (std::size_t i : step.start) start(i);
            if (!step.then_check_sidecar) return;
            if (!sidecar_lets_next_start(container_at(rec_, *step.then_check_sidecar), pod_initialized(rec_)))
                return;
            from = *step.then_check_sidecar + 1;
        }
    }

  private:
    struct Live {
        std::string id;
        std::int64_t started_mono_ms = 0;
        BackoffState backoff;
        std::int64_t runtime_down_ms = 0;
        std::optional<std::int64_t> due;  // a pending restart
    };

    void schedule(std::size_t i, std::int64_t delay) {
        delays_.push_back(delay);
        live_[i].due = clock_.monotonic_ms() + delay;
    }

    void start(std::size_t i) {
        ContainerStatus& cs = container_at(rec_, i);
        Live& lc = live_[i];
        platform::ContainerLaunch launch;
        launch.pod_uid = rec_.uid;
        launch.container_name = cs.name;
        launch.restart_count = static_cast<std::uint32_t>(cs.restart_count);
        auto id = rt_.start(launch);
        if (!id.ok() && id.error().code == ErrorCode::Unavailable) {
            cs.state = ContainerState::Waiting;
            cs.reason = "RunContainerError";
            lc.runtime_down_ms = next_runtime_down_delay(lc.runtime_down_ms);
            schedule(i, lc.runtime_down_ms);
            return;
        }
        lc.runtime_down_ms = 0;
        if (!id.ok()) {
            cs.state = ContainerState::Waiting;
            cs.reason = "RunContainerError";
            schedule(i, next_restart_delay(lc.backoff, 0, BackoffPolicy{}));
            return;
        }
        lc.id = id.value();
        lc.started_mono_ms = clock_.monotonic_ms();
        cs.state = ContainerState::Running;
        cs.reason.clear();
        cs.started_at_ms = clock_.wall_ms();
        // No startup probe on app containers here: started at once.
        if (!cs.sidecar) cs.started = true;
    }

    void on_exit(const std::string& id) {
        std::size_t i = 0;
        while (i < live_.size() && live_[i].id != id) ++i;
        if (i == live_.size()) return;
        ContainerStatus& cs = container_at(rec_, i);
        Live& lc = live_[i];
        auto info = rt_.inspect(id);
        cs.state = ContainerState::Terminated;
        cs.exit_code = info.ok() && info.value().exit_code ? *info.value().exit_code : -1;
        cs.started = false;
        lc.id.clear();
        (void)rt_.remove(id);
        switch (container_exit_action(rec_, i, policy_)) {
        case ExitAction::FinishPod: return;
        case ExitAction::Done: return;  // restartPolicy OnFailure / Never keeps it terminated
        case ExitAction::InitCompleted:
            lc.backoff = {};
            advance();
            return;
        case ExitAction::Restart: {
            const std::int64_t delay =
                next_restart_delay(lc.backoff, clock_.monotonic_ms() - lc.started_mono_ms, BackoffPolicy{});
            cs.restart_count += 1;
            if (delay > 0) set_crash_loop_waiting(cs, delay);
            schedule(i, delay);
            return;
        }
        }
    }

    FakeRuntime& rt_;
    FakeClock& clock_;
    PodRecord rec_;
    std::string policy_ = "Always";
    std::vector<Live> live_;
    std::vector<std::int64_t> delays_;
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
    FakeRuntime rt;
    FakeClock clock;
    PodWorker w(rt, clock, pod_of({{"app", 'a'}}));
    w.advance();
    rt.fail_next("stop", Error{ErrorCode::Unavailable, "containerd: connection refused"});
    w.rec().deleting = true;
    CHECK_FALSE(rt.stop(w.id_of(0)).ok());
    CHECK(rt.stop(w.id_of(0)).ok());
    rt.exit(w.id_of(0), 143);
    // killPodWithSyncResult: a stopping pod's exit restarts nothing.
    CHECK(w.delays().empty());
    LONGS_EQUAL(1, rt.started().size());
}

TEST(PodWorker, ImagePullBackOffPerImageAndAPullThatNeverAnswers) {
    // kubelet's imageBackOff (NewBackOff(10 s, 300 s)) keyed by the image
    // here: failures wait 10 s, then 20 s; containers asking meanwhile back
    // off until retry_at; a pull in flight is joined, however long it takes.
    FakeRuntime rt;
    FakeClock clock;
    rt.set_can_pull(true);
    std::int64_t backoff = 0, retry_at = 0;
    bool running = false;
    auto ask = [&] {
        const ImagePullStep step = image_pull_step(running, retry_at, clock.monotonic_ms());
        if (step == ImagePullStep::Pull) {
            running = true;
            rt.pull_image("busybox:1.36", [&](Status s) {
                running = false;
                if (!s.ok()) {
                    backoff = next_image_pull_backoff(backoff, BackoffPolicy{});
                    retry_at = clock.monotonic_ms() + backoff;
                }
            });
        }
        return step;
    };
    CHECK(ask() == ImagePullStep::Pull);
    CHECK(ask() == ImagePullStep::Join);
    rt.answer_pull(Error{ErrorCode::Unreachable, "registry.example: connection refused"});
    LONGS_EQUAL(10 * kSec, backoff);
    STRCMP_EQUAL("ErrImagePull", image_wait_reason(false, false));
    clock.advance(10 * kSec - 1);
    CHECK(ask() == ImagePullStep::BackOff);
    clock.advance(1);
    CHECK(ask() == ImagePullStep::Pull);
    rt.answer_pull(Error{ErrorCode::Unreachable, "registry.example: connection refused"});
    LONGS_EQUAL(20 * kSec, backoff);
    STRCMP_EQUAL("ImagePullBackOff", image_wait_reason(false, true));
    // The offline rule: unreachable, and the image is in the store.
    CHECK(may_run_local_image(ErrorCode::Unreachable) && rt.has_image("busybox:1.36"));
    // A registry that never answers: an hour later the pull is still
    // joined, never started twice.
    clock.advance(20 * kSec);
    CHECK(ask() == ImagePullStep::Pull);
    clock.advance(60 * kMin);
    CHECK(ask() == ImagePullStep::Join);
    LONGS_EQUAL(3, rt.calls("pull_image"));
    LONGS_EQUAL(1, rt.pending_pulls());
    rt.answer_pull(Ok{});  // answered at the end, so that no callback outlives the test
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
