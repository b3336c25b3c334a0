// The PodHooks component (agent/daemon/pod_hooks.h) over a hook runner that
// answers as the test says, its deadline on a fake clock, and a Host that
// records what the agent is told. Pins kuberuntime_container.go as the
// agent follows it: startContainer's postStart (a failure stops the
// container, the next one starts after it either way), killContainer's
// executePreStopHook (before the stop, bounded by the grace period, a
// failure or a hook cut at the grace's end still stopping the container),
// and an adopted container's hooks whose env is computed when they run.
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "agent/daemon/pod_hooks.h"
#include "tests/agent/daemon/fake_clock.h"

// CppUTest last: its leak-detection macros redefine new.
#include <CppUTest/TestHarness.h>

using namespace daemonlet;
using daemonlet::agent::HookContainer;
using daemonlet::agent::HookRunner;
using daemonlet::agent::PodHooks;
using daemonlet::testing::FakeClock;

namespace {

// Holds each hook until the test answers it; one still running at its
// deadline fails then, as LifecycleHooks kills it (lifecycle_hooks.h).
class FakeRunner final : public HookRunner {
  public:
    explicit FakeRunner(const FakeClock& clock) : clock_(clock) {}
    struct Op {
        Handler handler;
        HookContainer target;
        std::int64_t timeout_ms = 0;
        std::int64_t deadline_ms = 0;
        Done done;
    };
    Id run(const Handler& h, const HookContainer& c, std::int64_t timeout_ms, Done done) override {
        ops[next_] = {h, c, timeout_ms, clock_.monotonic_ms() + timeout_ms, std::move(done)};
        return next_++;
    }
    void cancel(Id id) override {
        if (ops.erase(id)) ++cancelled;
    }
    // The one hook running ends with `s`.
    void answer(Status s) {
        CHECK_EQUAL(1u, ops.size());
        Done done = std::move(ops.begin()->second.done);
        ops.clear();
        done(std::move(s));
    }
    // The hooks whose deadline has come fail.
    void expire() {
        for (auto it = ops.begin(); it != ops.end();) {
            if (it->second.deadline_ms > clock_.monotonic_ms()) {
                ++it;
                continue;
            }
            Done done = std::move(it->second.done);
            it = ops.erase(it);
            done(Error{ErrorCode::Runtime, "hook timed out"});
        }
    }
    const Op& only() const {
        CHECK_EQUAL(1u, ops.size());
        return ops.begin()->second;
    }
    std::map<Id, Op> ops;
    int cancelled = 0;

  private:
    const FakeClock& clock_;
    Id next_ = 1;
};

class FakeHost final : public PodHooks::Host {
  public:
    std::optional<PodHooks::Env> hook_env(const std::string&, std::size_t, const Container&) override {
        ++env_asked;
        return env_now;
    }
    std::optional<PodHooks::Target> hook_target_now(const std::string&, std::size_t,
                                                    const std::string& id) override {
        ++target_asked;
        if (!target_now) return std::nullopt;
        PodHooks::Target t = *target_now;
        t.container.runtime_id = id;
        return t;
    }
    void post_start_failed(const std::string&, std::size_t, const std::string& id, const Error& e) override {
        said.push_back("postStart failed " + id + ": " + e.message);
    }
    void post_start_ended(const std::string& uid) override { said.push_back("postStart ended " + uid); }
    void pre_stop_failed(const std::string&, std::size_t, const Error& e) override {
        said.push_back("preStop failed: " + e.message);
    }
    std::optional<PodHooks::Env> env_now;
    std::optional<PodHooks::Target> target_now;
    int env_asked = 0;
    int target_asked = 0;
    std::vector<std::string> said;
};

Handler exec(const std::string& cmd) {
    Handler h;
    h.exec = ExecAction{{"sh", "-c", cmd}};
    return h;
}

PodHooks::Target target(const std::string& id, bool post_start, bool pre_stop, std::int64_t grace) {
    auto spec = std::make_shared<Container>();
    spec->name = "app";
    spec->lifecycle = Lifecycle{};
    if (post_start) spec->lifecycle->post_start = exec("post");
    if (pre_stop) spec->lifecycle->pre_stop = exec("pre");
    PodHooks::Target t;
    t.container.pod = "p_ns(u)";
    t.container.runtime_id = id;
    t.container.spec = spec;
    t.container.env = {{"FROM", "launch"}};
    t.grace_seconds = grace;
    return t;
}

struct Fixture {
    FakeClock clock;
    FakeRunner runner{clock};
    FakeHost host;
    PodHooks hooks{host, runner};
    std::vector<std::pair<std::string, std::int64_t>> stops;  // preStop's done: the stop goes on

    bool pre_stop(const std::string& id, std::optional<std::int64_t> grace_override = std::nullopt) {
        return hooks.pre_stop("u", 0, id, grace_override,
                              [this](const std::string& i, std::int64_t g) { stops.emplace_back(i, g); });
    }
};

}  // namespace

TEST_GROUP(PodHooks){};

TEST(PodHooks, PreStopRunsBeforeTheStopWithinTheGrace) {
    // killContainer: executePreStopHook first, bounded by the grace period;
    // the stop only once it ended. A second kill while it runs is the same
    // stop (one hook, one stop).
    Fixture f;
    f.hooks.started("u", 0, target("c1", false, true, 30), true);
    CHECK_TRUE(f.runner.ops.empty());  // no postStart
    CHECK_TRUE(f.pre_stop("c1"));
    CHECK_TRUE(f.runner.only().handler.exec.has_value());
    STRCMP_EQUAL("pre", f.runner.only().handler.exec->command[2].c_str());
    CHECK_EQUAL(30000, f.runner.only().timeout_ms);
    STRCMP_EQUAL("launch", f.runner.only().target.env.at(0).second.c_str());  // as it was launched
    CHECK_TRUE(f.stops.empty());
    CHECK_TRUE(f.pre_stop("c1"));
    CHECK_EQUAL(1u, f.runner.ops.size());
    CHECK_FALSE(f.hooks.post_start_running("u", 0));  // a preStop holds no start back
    f.runner.answer(Ok{});
    CHECK((std::vector<std::pair<std::string, std::int64_t>>{{"c1", 30}}) == f.stops);
    CHECK_TRUE(f.host.said.empty());
}

TEST(PodHooks, AFailedPreStopIsSaidAndTheStopGoesOn) {
    // killContainer: a preStop failure is a FailedPreStopHook Event, the
    // container is stopped all the same.
    Fixture f;
    f.hooks.started("u", 0, target("c1", false, true, 30), true);
    CHECK_TRUE(f.pre_stop("c1"));
    f.runner.answer(Error{ErrorCode::Runtime, "exit 3"});
    CHECK((std::vector<std::string>{"preStop failed: exit 3"}) == f.host.said);
    CHECK((std::vector<std::pair<std::string, std::int64_t>>{{"c1", 30}}) == f.stops);
}

TEST(PodHooks, APreStopStillRunningAtTheGracesEndIsCutAndTheStopGoesOn) {
    // executePreStopHook waits at most the grace period (here the Pod's
    // deletion grace, 5 s, over the spec's 30); then the stop goes on
    // with what is left (grace_after_pre_stop: the minimum, 2 s).
    Fixture f;
    f.hooks.started("u", 0, target("c1", false, true, 30), true);
    CHECK_TRUE(f.pre_stop("c1", 5));
    f.clock.advance(4999);
    f.runner.expire();
    CHECK_TRUE(f.stops.empty());
    f.clock.advance(1);
    f.runner.expire();
    CHECK_TRUE(f.runner.ops.empty());
    CHECK((std::vector<std::pair<std::string, std::int64_t>>{{"c1", 5}}) == f.stops);
    CHECK_EQUAL(1u, f.host.said.size());
}

TEST(PodHooks, NoPreStopOrNoGraceStopsAtOnce) {
    // killContainer runs the hook only when the container has one and the
    // grace period is above 0.
    Fixture f;
    f.hooks.started("u", 0, target("c1", false, false, 30), true);
    CHECK_FALSE(f.pre_stop("c1"));
    f.hooks.started("u", 0, target("c2", false, true, 30), true);
    CHECK_FALSE(f.pre_stop("c2", 0));
    CHECK_TRUE(f.runner.ops.empty());
    CHECK_TRUE(f.stops.empty());
}

TEST(PodHooks, AnAdoptedContainersEnvIsComputedWhenItsHookRuns) {
    // At adoption the sources are not loaded: the env of its hook is the
    // pod's when the hook runs, asked once.
    Fixture f;
    f.hooks.adopted("u", 0, target("c1", false, true, 30));
    CHECK_EQUAL(0, f.host.env_asked);
    f.host.env_now = PodHooks::Env{{"FROM", "now"}};
    CHECK_TRUE(f.pre_stop("c1"));
    CHECK_EQUAL(1, f.host.env_asked);
    CHECK_EQUAL(1u, f.runner.only().target.env.size());
    STRCMP_EQUAL("now", f.runner.only().target.env[0].second.c_str());
    STRCMP_EQUAL("c1", f.runner.only().target.runtime_id.c_str());
}

TEST(PodHooks, AnInstanceNotSeenToStartTakesItsPodsSpecNow) {
    // An instance the component has no target for (another instance's, or
    // none) runs the hooks of its pod's spec now; none known: no hook.
    Fixture f;
    f.hooks.started("u", 0, target("c1", false, true, 30), true);
    CHECK_FALSE(f.pre_stop("c2"));
    CHECK_EQUAL(1, f.host.target_asked);
    f.host.target_now = target("", false, true, 10);
    f.host.env_now = PodHooks::Env{};
    CHECK_TRUE(f.pre_stop("c2"));
    CHECK_EQUAL(1, f.host.env_asked);
    STRCMP_EQUAL("c2", f.runner.only().target.runtime_id.c_str());
    CHECK_EQUAL(10000, f.runner.only().timeout_ms);
}

TEST(PodHooks, AFailedPostStartStopsTheContainerAndTheNextOneStarts) {
    // startContainer: the containers after it wait for its postStart; a
    // failure kills the container (FailedPostStartHook), and SyncPod goes on.
    Fixture f;
    f.hooks.started("u", 0, target("c1", true, false, 30), true);
    CHECK_TRUE(f.hooks.post_start_running("u", 0));
    STRCMP_EQUAL("post", f.runner.only().handler.exec->command[2].c_str());
    f.runner.answer(Error{ErrorCode::Runtime, "exit 1"});
    CHECK_FALSE(f.hooks.post_start_running("u", 0));
    CHECK((std::vector<std::string>{"postStart failed c1: exit 1", "postStart ended u"}) == f.host.said);
}

TEST(PodHooks, NoPostStartForAPodThatStopsAndAStopOrExitCancelsOne) {
    Fixture f;
    f.hooks.started("u", 0, target("c1", true, true, 30), false);  // deleting, or the agent stops
    CHECK_TRUE(f.runner.ops.empty());
    f.hooks.started("u", 0, target("c2", true, true, 30), true);
    // killContainer during postStart: the hook is cancelled, preStop runs.
    CHECK_TRUE(f.pre_stop("c2"));
    CHECK_EQUAL(1, f.runner.cancelled);
    STRCMP_EQUAL("pre", f.runner.only().handler.exec->command[2].c_str());
    // The instance exits: its preStop goes unheard, no stop follows.
    f.hooks.cancel("u", 0);
    CHECK_EQUAL(2, f.runner.cancelled);
    CHECK_TRUE(f.stops.empty());
    CHECK_TRUE(f.host.said.empty());
}

TEST(PodHooks, APodForgottenCancelsItsHooksAndALateAnswerOfAnotherInstanceIsNotHeard) {
    Fixture f;
    f.hooks.started("u", 0, target("c1", true, false, 30), true);
    // The pod goes with its postStart running: the hook is cancelled.
    f.hooks.forget("u");
    CHECK_EQUAL(1, f.runner.cancelled);
    CHECK_TRUE(f.runner.ops.empty());
    // A postStart of c1 whose answer comes once c2 (same uid and index,
    // a static pod's file back) has started: c2's state is not touched.
    f.hooks.started("u", 0, target("c1", true, false, 30), true);
    HookRunner::Done late = std::move(f.runner.ops.begin()->second.done);
    f.runner.ops.clear();
    f.hooks.started("u", 0, target("c2", true, false, 30), true);
    late(Error{ErrorCode::Runtime, "exit 1"});
    CHECK_TRUE(f.host.said.empty());
    CHECK_TRUE(f.hooks.post_start_running("u", 0));  // c2's
    f.runner.answer(Ok{});
    CHECK((std::vector<std::string>{"postStart ended u"}) == f.host.said);
}
