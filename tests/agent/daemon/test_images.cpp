// The real Images component (agent/daemon/images.h) over the fake runtime and the
// fake clock: registry pulls, kubelet's per-image back-off
// (pkg/kubelet/images/image_manager.go EnsureImageExists, imageBackOff
// NewBackOff(10 s, 300 s) in pkg/kubelet/kubelet.go), pulls shared by the
// containers that wait for one image, a registry that fails or never
// answers, and the offline deviation for imagePullPolicy Always.
//
// Images is given a real libuv loop and a real SQLite store in a temporary
// directory. The pull groups do not open it (no import directory, no
// daemonlet-image jobs): the pull paths create no libuv handle, so no loop
// runs and time is the fake clock's alone. The import group (ImageImports)
// opens it with a shell script in daemonlet-image's place and runs the real
// loop until a predicate holds, within a deadline: imports are child
// processes, whose time is real. The host below stands in for the agent's pods:
// a container whose start is asked starts as agent/daemon/pods.cpp starts it
// (Images::ready_to_start, then the runtime), and a retry is a due time the
// test's clock reaches, as test_pod_worker.cpp does.
#include <uv.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "agent/daemon/images.h"
#include "core/image_wait.h"
#include "tests/agent/daemon/fake_clock.h"
#include "tests/agent/daemon/fake_runtime.h"
#include "tests/agent/daemon/run_until.h"

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
        launch.container = std::make_shared<const Container>(p.spec);
        auto id = rt_.start(launch);
        if (!id.ok() && id.error().code == ErrorCode::ImageNotFound && p.spec.image_pull_policy != "Never" &&
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

Error unreachable() {
    return Error{ErrorCode::Unreachable, "dial tcp 10.0.0.1:443: connect: network is unreachable"};
}
Error denied() { return Error{ErrorCode::PullFailed, "manifest unknown"}; }

}  // namespace

// What both groups run on: a real loop and store in a temporary directory,
// the fake runtime and clock, the pods' host.
struct ImagesEnv : public Utest {
    uv_loop_t loop{};
    std::string dir;
    std::unique_ptr<store::Store> store;
    AgentConfig config;
    FakeRuntime rt;
    FakeClock clock;
    std::unique_ptr<PodsHost> host;
    std::unique_ptr<Images> images;

    void make_env() {
        uv_loop_init(&loop);
        char tmpl[] = "/tmp/images-test-XXXXXX";
        dir = ::mkdtemp(tmpl);
        auto s = store::Store::open(dir + "/state.db", 1, nullptr);
        CHECK_TRUE_TEXT(s.ok(), s.ok() ? "" : s.error().message.c_str());
        store = std::move(s).value();
        config.state_dir = dir;
        host = std::make_unique<PodsHost>(rt, clock);
    }
    void drop_env() {
        stop_images();
        host.reset();
        store.reset();
        LONGS_EQUAL(0, uv_loop_close(&loop));
        std::error_code ec;
        std::filesystem::remove_all(dir, ec);
    }
    // An agent's start: a new Images on the same store; `open`: with the
    // import directory and daemonlet-image's jobs (runc, cri).
    void start_images(const std::string& image_tool, bool open) {
        images = std::make_unique<Images>(&loop, config, *store, rt, clock, *host, image_tool);
        host->attach(*images);
        if (!open) return;
        images->open();
        images->start();
    }
    // An agent's stop: closed, its handles closed on the loop.
    void stop_images() {
        if (!images) return;
        images->close();
        CHECK_TRUE(run_until([] { return false; }));
        images.reset();
    }
    bool run_until(const std::function<bool()>& done, std::int64_t deadline_ms = 10'000) {
        return testing::run_until(&loop, done, deadline_ms);
    }
};

// clang-format does not know TEST_GROUP_BASE.
// clang-format off
TEST_GROUP_BASE(Images, ImagesEnv) {
    void setup() override {
        make_env();
        rt.set_can_pull(true);
        start_images("/nonexistent/daemonlet-image", false);
    }
    void teardown() override { drop_env(); }
};
// clang-format on

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

// An import that lands while a pull of the same image runs: the pull then
// fails (an offline board), but the image is in the store, so IfNotPresent
// starts at once rather than backing off (found in agent.image_gc under
// ASan: the container waited the whole back-off).
TEST(Images, APullThatFailsAfterAnImportBroughtTheImageStartsTheWaiters) {
    rt.set_image_missing("reg.example/app:1");
    host->add("p1", "ds", "reg.example/app:1", "IfNotPresent");
    host->start("p1");
    CHECK_TRUE(images->pulling("reg.example/app:1"));
    rt.set_image_missing("reg.example/app:1", false);  // the import landed
    CHECK_TRUE(rt.answer_pull(unreachable()));
    CHECK_TRUE(host->running("p1"));
    LONGS_EQUAL(0, host->retries.size());
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

namespace {

// daemonlet-image's place: each call appended to calls.log; `import FILE`
// prints one image, `list` the images imported so far.
const char* const kFakeImageTool = R"SH(#!/bin/sh
dir=$(dirname "$0")
echo "$1" >> "$dir/calls.log"
case "$1" in
import) for a; do f=$a; done
        [ -f "$dir/full" ] && { echo "$f: No space left on device"; exit 1; }
        [ -f "$dir/bad" ] && { echo "$f: not a tar archive"; exit 1; }
        b=$(basename "$f" .tar)
        echo "{\"name\":\"example.com/$b:1\",\"digest\":\"sha256:$b\"}"
        echo "example.com/$b:1 sha256:$b" >> "$dir/stored" ;;
list)   printf '['; sep=''
        if [ -f "$dir/stored" ]; then
            while read -r n d; do printf '%s{"name":"%s","digest":"%s"}' "$sep" "$n" "$d"; sep=,; done < "$dir/stored"
        fi
        echo ']' ;;
esac
)SH";

std::string read_text(const std::string& path) {
    std::ifstream in(path);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

int count_lines(const std::string& text, const std::string& line) {
    int n = 0;
    std::istringstream in(text);
    for (std::string l; std::getline(in, l);) n += l == line ? 1 : 0;
    return n;
}

}  // namespace

// clang-format off
TEST_GROUP_BASE(ImageImports, ImagesEnv) {
    void setup() override {
        make_env();
        config.image_import_dir = dir + "/import";
        std::filesystem::create_directories(config.image_import_dir);
        std::ofstream(dir + "/image-tool") << kFakeImageTool;
        std::filesystem::permissions(dir + "/image-tool", std::filesystem::perms::owner_all);
    }
    void teardown() override { drop_env(); }
    void start_images() { ImagesEnv::start_images(dir + "/image-tool", true); }
    std::string calls() const { return read_text(dir + "/calls.log"); }
};
// clang-format on

// An archive dropped in the import directory is imported by daemonlet-image
// and the containers waiting for an image are told at once; what it gave is
// kept in the store's images.imports.
TEST(ImageImports, AnArchiveIsImportedAndTheImageWaitsAreRetried) {
    std::ofstream(config.image_import_dir + "/app.tar") << "an archive";
    start_images();
    CHECK_TRUE(run_until([&] { return host->arrivals == 1; }));
    LONGS_EQUAL(1, count_lines(calls(), "import"));
    auto meta = store->get_meta("images.imports");
    CHECK_TRUE(meta.ok() && meta.value());
    const Json records = Json::parse(*meta.value());
    const Json& rec = records.at(config.image_import_dir + "/app.tar");
    STRCMP_EQUAL("imported", rec.at("outcome").get<std::string>().c_str());
    STRCMP_EQUAL("sha256:app", rec.at("images").at(0).at("digest").get<std::string>().c_str());
}

// A restart imports only what changed: the unchanged archive whose image the
// store still lists is not imported again, a new one is.
TEST(ImageImports, ARestartImportsOnlyWhatChanged) {
    std::ofstream(config.image_import_dir + "/app.tar") << "an archive";
    start_images();
    CHECK_TRUE(run_until([&] { return host->arrivals == 1; }));
    stop_images();
    std::ofstream(config.image_import_dir + "/other.tar") << "another archive";
    start_images();
    CHECK_TRUE(run_until([&] { return host->arrivals == 2; }));
    LONGS_EQUAL(1, count_lines(calls(), "list"));
    LONGS_EQUAL(2, count_lines(calls(), "import"));
    auto meta = store->get_meta("images.imports");
    CHECK_TRUE(meta.ok() && meta.value());
    LONGS_EQUAL(2, Json::parse(*meta.value()).size());
}

// The archive that waited for space then fails for another reason (here: it
// is found bad; containerd down is the same): status no longer says it
// waits for space, where it said so until another archive got through.
TEST(ImageImports, AnArchiveWaitingForSpaceThatFailsOtherwiseWaitsNoMore) {
    std::ofstream(dir + "/full") << "";
    std::ofstream(config.image_import_dir + "/app.tar") << "an archive";
    start_images();
    CHECK_TRUE(run_until([&] { return images->status().contains("importWaitsForSpace"); }));
    std::filesystem::remove(dir + "/full");
    std::ofstream(dir + "/bad") << "";
    std::ofstream(config.image_import_dir + "/app.tar") << "the archive again";  // looked at again
    auto recorded = [&] {  // the bad archive's outcome kept: on_imported has run
        auto meta = store->get_meta("images.imports");
        return meta.ok() && meta.value() &&
               Json::parse(*meta.value()).contains(config.image_import_dir + "/app.tar");
    };
    CHECK_TRUE(run_until(recorded));
    CHECK_FALSE(images->status().contains("importWaitsForSpace"));
}
