// The real Images component (agent/images.h) over the fake runtime and the
// fake clock: registry pulls, kubelet's per-image back-off
// (pkg/kubelet/images/image_manager.go EnsureImageExists, imageBackOff
// NewBackOff(10 s, 300 s) in pkg/kubelet/kubelet.go), pulls shared by the
// containers that wait for one image, a registry that fails or never
// answers, and the offline deviation for imagePullPolicy Always.
//
// Images is given a real libuv loop and a real SQLite store in a temporary
// directory, but is not opened (no import directory, no daemonlet-image
// jobs): the pull paths create no libuv handle, so no loop runs and time is
// the fake clock's alone. The host below stands in for the agent's pods:
// a container whose start is asked starts as agent/pods.cpp starts it
// (Images::ready_to_start, then the runtime), and a retry is a due time the
// test's clock reaches, as test_pod_worker.cpp does.
#include <uv.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "agent/images.h"
#include "core/image_wait.h"
#include "tests/agent/fake_clock.h"
#include "tests/agent/fake_runtime.h"

// CppUTest last: its leak-detection macros redefine new.
#include <CppUTest/TestHarness.h>

using namespace daemonlet;
using daemonlet::agent::Images;
using daemonlet::agent::ImageWaiter;
using daemonlet::testing::FakeClock;
using daemonlet::testing::FakeRuntime;

namespace {

constexpr std::int64_t kSec = 1000;

// The agent's side, for the test: pods of one container each, started as
// pods.cpp starts them.
class PodsHost final : public Images::Host {
  public:
    struct Pod {
        PodRecord rec;
        Container spec;
        std::string id;                   // running when not empty
        std::optional<std::int64_t> due;  // a retry's monotonic due time
    };

    PodsHost(FakeRuntime& rt, FakeClock& clock) : rt_(rt), clock_(clock) {}
    void attach(Images& images) { images_ = &images; }

    // Pod `uid` of DaemonSet `ds`, one container of `image` with `policy`.
    void add(const std::string& uid, const std::string& ds, const std::string& image,
             const std::string& policy) {
        Pod& p = pods_[uid];
        p.rec.uid = uid;
        p.rec.name = ds + "-" + uid;
        p.rec.namespace_ = "default";
        p.rec.daemonset = ds;
        ContainerStatus cs;
        cs.name = "app";
        p.rec.containers.push_back(cs);
        p.spec.name = "app";
        p.spec.image = image;
        p.spec.image_pull_policy = policy;
    }
    Pod& pod(const std::string& uid) { return pods_.at(uid); }
    ContainerStatus& status(const std::string& uid) { return pods_.at(uid).rec.containers[0]; }
    bool running(const std::string& uid) const { return !pods_.at(uid).id.empty(); }

    // pods.cpp start_container, its image paths.
    void start(const std::string& uid) {
        Pod& p = pods_.at(uid);
        ContainerStatus& cs = p.rec.containers[0];
        const ImageWaiter w{uid, 0};
        if (!images_->ready_to_start(w, p.rec, p.spec, cs)) return;
        platform::ContainerLaunch launch;
        launch.pod_uid = uid;
        launch.container_name = "app";
        launch.container = &p.spec;
        auto id = rt_.start(launch);
        if (!id.ok() && id.error().code == "image_not_found" && p.spec.image_pull_policy != "Never" &&
            rt_.can_pull()) {
            images_->request_pull(w, p.rec, p.spec, cs);
            return;
        }
        if (!id.ok()) {
            cs.state = ContainerState::Waiting;
            cs.reason = image_wait_reason(p.spec.image_pull_policy == "Never", is_image_wait(cs.reason));
            return;
        }
        p.id = id.value();
        cs.state = ContainerState::Running;
        cs.reason.clear();
    }
    // The retries whose time came, as the restart timers fire.
    void run_due() {
        for (auto& [uid, p] : pods_)
            if (p.due && *p.due <= clock_.monotonic_ms()) {
                p.due.reset();
                start(uid);
            }
    }

    // Images::Host
    void images_arrived() override { ++arrivals; }
    Waiting waiting_for_image(const ImageWaiter& w, const std::string& image) override {
        Waiting out;
        auto it = pods_.find(w.uid);
        if (it == pods_.end()) return out;
        out.pod = &it->second.rec;
        if (!it->second.id.empty() || it->second.spec.image != image || it->second.rec.deleting) return out;
        out.spec = &it->second.spec;
        out.status = &it->second.rec.containers[0];
        return out;
    }
    void start_pulled(const ImageWaiter& w) override {
        pods_.at(w.uid).due.reset();
        start(w.uid);
    }
    void retry_image_after(const ImageWaiter& w, std::int64_t delay_ms, bool) override {
        pods_.at(w.uid).due = clock_.monotonic_ms() + delay_ms;
        retries.push_back(delay_ms);
    }
    void pulls_changed() override { ++changes; }
    void record_image_event(const PodRecord& pod, const char*, const char* reason,
                            const std::string&) override {
        events.push_back(pod.daemonset + ":" + reason);
    }
    std::set<std::string> images_in_use() override { return {}; }

    int arrivals = 0;
    int changes = 0;
    std::vector<std::int64_t> retries;  // every retry's delay, in order
    std::vector<std::string> events;    // "daemonset:reason"

  private:
    FakeRuntime& rt_;
    FakeClock& clock_;
    Images* images_ = nullptr;
    std::map<std::string, Pod> pods_;
};

Error unreachable() { return Error{"unreachable", "dial tcp 10.0.0.1:443: connect: network is unreachable"}; }
Error denied() { return Error{"pull_failed", "manifest unknown"}; }

}  // namespace

TEST_GROUP(Images) {
    uv_loop_t loop{};
    std::string dir;
    std::unique_ptr<store::Store> store;
    AgentConfig config;
    FakeRuntime rt;
    FakeClock clock;
    std::unique_ptr<PodsHost> host;
    std::unique_ptr<Images> images;

    void setup() override {
        uv_loop_init(&loop);
        char tmpl[] = "/tmp/images-test-XXXXXX";
        dir = ::mkdtemp(tmpl);
        auto s = store::Store::open(dir + "/state.db", 1, nullptr);
        CHECK_TRUE_TEXT(s.ok(), s.ok() ? "" : s.error().message.c_str());
        store = std::move(s).value();
        config.state_dir = dir;
        rt.set_can_pull(true);
        host = std::make_unique<PodsHost>(rt, clock);
        images =
            std::make_unique<Images>(&loop, config, *store, rt, clock, *host, "/nonexistent/daemonlet-image");
        host->attach(*images);
    }
    void teardown() override {
        images->close();
        images.reset();
        host.reset();
        store.reset();
        uv_run(&loop, UV_RUN_NOWAIT);
        LONGS_EQUAL(0, uv_loop_close(&loop));
        std::error_code ec;
        std::filesystem::remove_all(dir, ec);
    }
};

// image_manager.go: after a failed pull the image backs off 10 s, then twice
// the last wait each time, up to 300 s (flowcontrol.Backoff); the first
// failure is ErrImagePull, the later ones ImagePullBackOff.
TEST(Images, FailedPullsBackOffTenSecondsDoublingToFiveMinutes) {
    rt.set_image_missing("reg.example/app:1");
    host->add("p1", "ds", "reg.example/app:1", "Always");
    host->start("p1");
    LONGS_EQUAL(1, rt.pending_pulls());
    STRCMP_EQUAL("ContainerCreating", host->status("p1").reason.c_str());
    const std::vector<std::int64_t> expected = {10, 20, 40, 80, 160, 300, 300};
    for (std::size_t i = 0; i < expected.size(); ++i) {
        CHECK_TRUE(rt.answer_pull(denied()));
        LONGS_EQUAL(expected[i] * kSec, images->pull_backoff_ms("reg.example/app:1"));
        LONGS_EQUAL(expected[i] * kSec, host->retries.back());
        STRCMP_EQUAL(i == 0 ? "ErrImagePull" : "ImagePullBackOff", host->status("p1").reason.c_str());
        // One millisecond early: no pull yet.
        clock.advance(expected[i] * kSec - 1);
        host->run_due();
        LONGS_EQUAL(0, rt.pending_pulls());
        clock.advance(1);
        host->run_due();
        LONGS_EQUAL(1, rt.pending_pulls());
    }
    LONGS_EQUAL(8, rt.calls("pull_image"));
}

// A container that starts while its image backs off waits for the rest of
// the back-off (ImagePullBackOff) and asks no pull of its own.
TEST(Images, AStartDuringTheBackOffWaitsForItsRest) {
    rt.set_image_missing("reg.example/app:1");
    host->add("p1", "ds", "reg.example/app:1", "IfNotPresent");
    host->add("p2", "ds", "reg.example/app:1", "IfNotPresent");
    host->start("p1");
    CHECK_TRUE(rt.answer_pull(denied()));
    clock.advance(4 * kSec);
    host->start("p2");
    LONGS_EQUAL(1, rt.calls("pull_image"));
    STRCMP_EQUAL("ImagePullBackOff", host->status("p2").reason.c_str());
    LONGS_EQUAL(6 * kSec, host->retries.back());
}

// One pull per image however many containers wait for it (the deviation
// core/image_wait.h names); every one starts when it succeeds, and Pulled is
// recorded once per DaemonSet.
TEST(Images, ContainersWaitingForOneImageShareItsPull) {
    rt.set_image_missing("reg.example/app:1");
    host->add("a1", "ds-a", "reg.example/app:1", "IfNotPresent");
    host->add("a2", "ds-a", "reg.example/app:1", "IfNotPresent");
    host->add("b1", "ds-b", "reg.example/app:1", "IfNotPresent");
    for (const char* uid : {"a1", "a2", "b1"}) host->start(uid);
    LONGS_EQUAL(1, rt.calls("pull_image"));
    CHECK_TRUE(images->pulling("reg.example/app:1"));
    CHECK_TRUE(rt.answer_pull(Ok{}));
    for (const char* uid : {"a1", "a2", "b1"}) CHECK_TRUE_TEXT(host->running(uid), uid);
    int pulled = 0;
    for (const auto& e : host->events) pulled += e.ends_with(":Pulled") ? 1 : 0;
    LONGS_EQUAL(2, pulled);
    LONGS_EQUAL(0, images->pull_backoff_ms("reg.example/app:1"));
    LONGS_EQUAL(1, host->changes);
}

// A pull that fails puts every waiter on the image's back-off; the retry
// (one pull again, shared) succeeds, releases them all and forgets the
// back-off.
TEST(Images, APullThatFailsThenSucceedsReleasesTheWaiters) {
    rt.set_image_missing("reg.example/app:1");
    host->add("p1", "ds", "reg.example/app:1", "Always");
    host->add("p2", "ds", "reg.example/app:1", "Always");
    host->start("p1");
    host->start("p2");
    CHECK_TRUE(rt.answer_pull(denied()));
    CHECK_FALSE(host->running("p1"));
    CHECK_FALSE(host->running("p2"));
    STRCMP_EQUAL("ErrImagePull", host->status("p2").reason.c_str());
    LONGS_EQUAL(2, host->retries.size());
    clock.advance(10 * kSec);
    host->run_due();
    LONGS_EQUAL(2, rt.calls("pull_image"));
    CHECK_TRUE(rt.answer_pull(Ok{}));
    CHECK_TRUE(host->running("p1"));
    CHECK_TRUE(host->running("p2"));
    LONGS_EQUAL(0, images->pull_backoff_ms("reg.example/app:1"));
    CHECK_FALSE(images->pulling("reg.example/app:1"));
}

// A registry that never answers one image holds only the containers that
// wait for it: another image's pull goes on and its container starts.
TEST(Images, APullThatNeverAnswersKeepsOtherImagesGoing) {
    rt.set_image_missing("stuck.example/a:1");
    rt.set_image_missing("reg.example/b:1");
    host->add("a", "ds-a", "stuck.example/a:1", "IfNotPresent");
    host->add("b", "ds-b", "reg.example/b:1", "IfNotPresent");
    // FakeRuntime answers the oldest pull first: b's is asked first and
    // answered; a's is never answered.
    host->start("b");
    host->start("a");
    LONGS_EQUAL(2, rt.pending_pulls());
    CHECK_TRUE(rt.answer_pull(Ok{}));
    CHECK_TRUE(host->running("b"));
    CHECK_FALSE(host->running("a"));
    STRCMP_EQUAL("ContainerCreating", host->status("a").reason.c_str());
    clock.advance(10 * 60 * kSec);
    host->start("a");  // a retry of the stuck one joins it: no second pull
    LONGS_EQUAL(2, rt.calls("pull_image"));
    CHECK_TRUE(images->pulling("stuck.example/a:1"));
    CHECK_FALSE(images->pulling("reg.example/b:1"));
}

// imagePullPolicy Never: Images never pulls; the runtime's miss is
// ErrImageNeverPull (image_manager.go), the container waits for an import.
TEST(Images, NeverNeverPullsAndWaitsAsErrImageNeverPull) {
    rt.set_image_missing("reg.example/app:1");
    host->add("p1", "ds", "reg.example/app:1", "Never");
    host->start("p1");
    LONGS_EQUAL(0, rt.calls("pull_image"));
    STRCMP_EQUAL("ErrImageNeverPull", host->status("p1").reason.c_str());
    CHECK_FALSE(host->running("p1"));
}

// The deliberate deviation from kubelet: imagePullPolicy Always, the
// registry unreachable and the image in the local store: it runs the local
// image, and a start during the back-off does too, without a pull.
TEST(Images, AlwaysWithTheRegistryUnreachableRunsTheLocalImage) {
    host->add("p1", "ds", "reg.example/app:1", "Always");
    host->add("p2", "ds", "reg.example/app:1", "Always");
    host->start("p1");
    LONGS_EQUAL(1, rt.pending_pulls());
    CHECK_FALSE(host->running("p1"));
    CHECK_TRUE(rt.answer_pull(unreachable()));
    CHECK_TRUE(host->running("p1"));
    LONGS_EQUAL(10 * kSec, images->pull_backoff_ms("reg.example/app:1"));
    host->start("p2");
    CHECK_TRUE(host->running("p2"));
    LONGS_EQUAL(1, rt.calls("pull_image"));
}

// Unreachable, but the image is not in the local store: it waits on the
// back-off like any failed pull.
TEST(Images, AlwaysWithTheRegistryUnreachableAndNoLocalImageBacksOff) {
    rt.set_image_missing("reg.example/app:1");
    host->add("p1", "ds", "reg.example/app:1", "Always");
    host->start("p1");
    CHECK_TRUE(rt.answer_pull(unreachable()));
    CHECK_FALSE(host->running("p1"));
    STRCMP_EQUAL("ErrImagePull", host->status("p1").reason.c_str());
    LONGS_EQUAL(10 * kSec, host->retries.back());
}

// A waiter whose pod went while the pull ran is skipped; pod_removed
// forgets what Images held for it.
TEST(Images, APodRemovedDuringThePullIsNotStarted) {
    rt.set_image_missing("reg.example/app:1");
    host->add("p1", "ds", "reg.example/app:1", "IfNotPresent");
    host->start("p1");
    host->pod("p1").rec.deleting = true;
    images->pod_removed("p1");
    CHECK_TRUE(rt.answer_pull(Ok{}));
    CHECK_FALSE(host->running("p1"));
    LONGS_EQUAL(0, host->changes);
}
