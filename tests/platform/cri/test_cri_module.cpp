// make_cri_runtime (platform/cri/cri_loader.cpp) with the real daemonlet-cri.so
// of this build: the module loads with its gRPC, protobuf and abseil
// libraries resolved, its factory runs, and what it refuses it refuses with
// a clear error. No CRI runtime is started: these run natively and, in the
// cross builds, under qemu, where they are the check that the cross-built
// module and the target's gRPC libraries go together
// (toolchains/run-aarch64.sh).
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>
#include <uv.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>

#include "platform/cri/cri_runtime.h"
#include "tests/platform/runtime_fixture.h"

#include <CppUTest/TestHarness.h>
// After TestHarness.h, which they need.
#include <CppUTest/MemoryLeakDetector.h>
#include <CppUTest/MemoryLeakWarningPlugin.h>

using namespace daemonlet;
using namespace daemonlet::platform;

TEST_GROUP(CriModule) {
    uv_loop_t loop;
    std::string dir;
    void setup() override {
        uv_loop_init(&loop);
        char tmpl[] = "/tmp/daemonlet-cri-module-XXXXXX";
        CHECK(::mkdtemp(tmpl) != nullptr);
        dir = tmpl;
        // gRPC keeps process-wide state (its executor and timer threads,
        // the resolvers) from the first channel until exit, allocated
        // through this executable's operator new: not a leak of one test,
        // yet CppUTest would count it in the test and again in its report
        // at exit. What is allocated while the detector is disabled counts
        // in neither; the plugin enables it again after the test.
        MemoryLeakWarningPlugin::getGlobalDetector()->disable();
    }
    void teardown() override {
        uv_run(&loop, UV_RUN_DEFAULT);  // the closes
        LONGS_EQUAL(0, uv_loop_close(&loop));
        std::filesystem::remove_all(dir);
    }
    CriRuntimeOptions options(std::string endpoint) const {
        CriRuntimeOptions o;
        o.endpoint = std::move(endpoint);
        o.runtime_dir = dir + "/runtime";
        o.module = DAEMONLET_CRI_MODULE_PATH;
        return o;
    }
};

TEST(CriModule, AModuleThatCannotBeLoadedIsAnErrorNamingItsPath) {
    auto o = options("unix://" + dir + "/containerd.sock");
    o.module = dir + "/no-such/daemonlet-cri.so";
    auto rt = make_cri_runtime(&loop, o);
    CHECK_FALSE(rt.ok());
    STRCMP_EQUAL("not_found", rt.error().code_name());
    STRCMP_CONTAINS((dir + "/no-such/daemonlet-cri.so").c_str(), rt.error().message.c_str());
}

// The endpoint is checked by the module's own factory: an error from it is
// the module loaded, its libraries resolved, its export found and called.
TEST(CriModule, TheModuleRefusesAnEndpointThatIsNotAUnixSocketPath) {
    auto rt = make_cri_runtime(&loop, options("tcp://127.0.0.1:10010"));
    CHECK_FALSE(rt.ok());
    STRCMP_EQUAL("invalid", rt.error().code_name());
    STRCMP_CONTAINS("runtime.endpoint: \"tcp://127.0.0.1:10010\"", rt.error().message.c_str());
}

// cri_runtime.h: "A runtime that is not up yet is no error: its calls fail
// until it is" (the kubelet, too, starts before its runtime is reachable).
TEST(CriModule, ARuntimeNotUpYetIsMadeAndItsCallsFailUntilItIs) {
    auto rt = make_cri_runtime(&loop, options("unix://" + dir + "/containerd.sock"));
    CHECK_TRUE_TEXT(rt.ok(), rt.ok() ? "" : rt.error().message.c_str());
    STRCMP_EQUAL("cri", rt.value()->name());
    CHECK(std::filesystem::is_directory(dir + "/runtime/logs"));
    auto info = rt.value()->inspect("0123456789abcdef");
    CHECK_FALSE(info.ok());
    CHECK_FALSE(rt.value()->has_image("docker.io/library/busybox:1.36"));
    rt.value()->close();
}

// A CRI endpoint that accepts connections and never answers (containerd
// hung): a start waits on a worker thread, and the loop goes on until the
// start reports the error.
TEST(CriModule, AStartOnAnEndpointThatNeverAnswersDoesNotHoldTheLoop) {
    const std::string path = dir + "/containerd.sock";
    int listener = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::snprintf(addr.sun_path, sizeof addr.sun_path, "%s", path.c_str());
    CHECK(::bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
    CHECK(::listen(listener, 16) == 0);  // never accepted: the kernel's backlog holds them
    auto rt = make_cri_runtime(&loop, options("unix://" + path));
    CHECK_TRUE_TEXT(rt.ok(), rt.ok() ? "" : rt.error().message.c_str());

    auto spec = std::make_shared<PodSpec>();
    auto container = std::make_shared<Container>();
    container->name = "c";
    container->image = "docker.io/library/busybox:1.36";
    ContainerLaunch l;
    l.pod_uid = "uid-1";
    l.pod_name = "pod";
    l.pod_namespace = "ns";
    l.container_name = "c";
    l.pod_spec = spec;
    l.container = container;

    auto ticks = std::make_unique<daemonlet::testing::LoopTicks>(&loop);
    std::optional<Result<std::string>> got;
    auto before = std::chrono::steady_clock::now();
    rt.value()->start_async(l, [&](Result<std::string> id) {
        got = std::move(id);
        ticks->stop();
    });
    const auto call = std::chrono::steady_clock::now() - before;
    CHECK(call < std::chrono::milliseconds(500));
    // Until the start's first call (ImageStatus) gives up.
    while (!got && uv_run(&loop, UV_RUN_ONCE) != 0) {
    }
    const auto gap_ms = ticks->max_gap_ms();
    const int count = ticks->ticks();
    ticks.reset();
    rt.value()->close();
    uv_run(&loop, UV_RUN_DEFAULT);  // the closes
    CHECK(got.has_value());
    CHECK_FALSE(got->ok());
    const std::string why = std::string(got->error().code_name()) + ": " + got->error().message;
    // gRPC gives up on a connection without its SETTINGS frame after
    // about half a second: a start on the loop would have held it that long.
    CHECK_TEXT(gap_ms < 250, ("the loop stalled " + std::to_string(gap_ms) + " ms").c_str());
    CHECK_TEXT(count >= 10, why.c_str());
    ::close(listener);
}
