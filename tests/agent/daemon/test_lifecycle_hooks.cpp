// The LifecycleHooks component (agent/daemon/lifecycle_hooks.h) on a real
// libuv loop, over a runner that answers as the test says and the fake
// runtime. Pins pkg/kubelet/lifecycle/handlers.go Run as the agent runs it:
// the failure messages, httpGet's any-status success, sleep as a timer cut
// short by the grace period, and the contract (a callback only from the
// loop, none once cancelled).
#include <uv.h>

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "agent/daemon/lifecycle_hooks.h"
#include "tests/agent/daemon/fake_runtime.h"

// CppUTest last: its leak-detection macros redefine new.
#include <CppUTest/TestHarness.h>

using namespace daemonlet;
using daemonlet::agent::HookContainer;
using daemonlet::agent::LifecycleHooks;
using daemonlet::agent::ProbeRunner;
using daemonlet::testing::FakeRuntime;

namespace {

// Keeps each action and its callback until the test answers.
class HeldRunner final : public ProbeRunner {
  public:
    Result<Id> run(const platform::ProbeAction& action, platform::Prober::Callback done) override {
        actions.push_back(action);
        held_[next_] = std::move(done);
        return next_++;
    }
    void cancel(Id id) override { held_.erase(id); }
    void close() override { held_.clear(); }
    void answer(platform::ProbeResult r) {
        auto held = std::move(held_);
        held_.clear();
        for (auto& [id, cb] : held) cb(r);
    }
    std::vector<platform::ProbeAction> actions;

  private:
    Id next_ = 1;
    std::map<Id, platform::Prober::Callback> held_;
};

struct Fixture {
    uv_loop_t loop{};
    FakeRuntime runtime;
    HeldRunner* runner = nullptr;
    std::unique_ptr<LifecycleHooks> hooks;
    std::optional<Status> outcome;
    HookContainer target;

    Fixture() {
        uv_loop_init(&loop);
        runtime.attach_loop(&loop);
        auto r = std::make_unique<HeldRunner>();
        runner = r.get();
        hooks = std::make_unique<LifecycleHooks>(&loop, runtime, std::move(r));
        auto spec = std::make_shared<Container>();
        spec->name = "app";
        spec->ports = {{"http", 8080, 0, "TCP", ""}};
        target.pod = "p_ns(u)";
        target.runtime_id = "fake-1";
        target.spec = spec;
    }
    ~Fixture() {
        hooks->close();
        uv_run(&loop, UV_RUN_DEFAULT);  // the timers' close callbacks
        CHECK_EQUAL(0, uv_loop_close(&loop));
    }
    LifecycleHooks::Id run(const Handler& h, std::int64_t timeout_ms) {
        return hooks->run(h, target, timeout_ms, [this](Status s) { outcome = std::move(s); });
    }
};

}  // namespace

TEST_GROUP(LifecycleHooks){};

TEST(LifecycleHooks, FailedExecIsSaidAsHandlersRun) {
    Fixture f;
    Handler h;
    h.exec = ExecAction{{"sh", "-c", "exit 3"}};
    f.run(h, 1000);
    CHECK_EQUAL(1u, f.runner->actions.size());
    platform::ProbeResult r;
    r.outcome = ProbeOutcome::Failure;
    r.output = "command exited with 3";  // the prober's words for an empty output
    r.exit_code = 3;
    f.runner->answer(r);
    CHECK_TRUE(f.outcome.has_value());
    CHECK_FALSE(f.outcome->ok());
    STRCMP_EQUAL(
        "Exec lifecycle hook ([sh -c exit 3]) for Container \"app\" in Pod \"p_ns(u)\" failed - error: "
        "command 'sh -c exit 3' exited with 3: , message: \"\"",
        f.outcome->error().message.c_str());
}

TEST(LifecycleHooks, HttpGetSucceedsOnAnyResponseAtThePodsPort) {
    Fixture f;
    Handler h;
    h.http_get = HTTPGetAction{};
    h.http_get->path = "/quit";
    h.http_get->port = IntOrString::from_string("http");
    f.run(h, 5000);
    CHECK_EQUAL(1u, f.runner->actions.size());
    const auto& a = f.runner->actions[0];
    CHECK_TRUE(a.any_status);  // runHTTPHandler: only a transport error fails
    CHECK_EQUAL(8080, a.port);
    CHECK_EQUAL(5000, a.timeout_ms);
    f.runner->answer({ProbeOutcome::Success, ""});
    CHECK_TRUE(f.outcome.has_value() && f.outcome->ok());
}

TEST(LifecycleHooks, AnUnresolvablePortFailsFromTheLoopNotInsideRun) {
    Fixture f;
    Handler h;
    h.http_get = HTTPGetAction{};
    h.http_get->path = "/quit";
    h.http_get->port = IntOrString::from_string("admin");  // the container has no such port
    f.run(h, 5000);
    CHECK_FALSE(f.outcome.has_value());
    uv_run(&f.loop, UV_RUN_DEFAULT);
    CHECK_TRUE(f.outcome.has_value());
    CHECK_FALSE(f.outcome->ok());
    CHECK_TRUE(f.outcome->error().message.rfind("HTTP lifecycle hook (/quit) for Container \"app\"", 0) == 0);
}

TEST(LifecycleHooks, SleepIsCutShortByTheTimeout) {
    Fixture f;
    Handler h;
    h.sleep_seconds = 3600;
    const std::uint64_t t0 = uv_hrtime();
    f.run(h, 20);  // a preStop with little grace left
    CHECK_FALSE(f.outcome.has_value());
    uv_run(&f.loop, UV_RUN_DEFAULT);
    CHECK_TRUE(f.outcome.has_value() && f.outcome->ok());
    CHECK_TRUE((uv_hrtime() - t0) / 1'000'000 < 60'000);
    CHECK_EQUAL(0u, f.runner->actions.size());
}

TEST(LifecycleHooks, ACancelledHookNeverCallsBack) {
    Fixture f;
    Handler h;
    h.sleep_seconds = 0;
    auto id = f.run(h, 1000);
    f.hooks->cancel(id);
    uv_run(&f.loop, UV_RUN_DEFAULT);
    CHECK_FALSE(f.outcome.has_value());
}
