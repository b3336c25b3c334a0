// RuncRuntime's registry pulls (platform/runc/runc_pull.cpp) against a stand-in
// daemonlet-image (a real /bin/sh script, run through the real Prober on a
// real loop): one process per image however many callers wait for it, each
// caller called back once from the loop, never from inside pull_image();
// daemonlet-image's error line becomes the Status code the agent decides
// on; has_image reads `daemonlet-image list` with the reference normalised.
#include <sys/stat.h>
#include <uv.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "platform/exec/exec_runtime.h"
#include "platform/runc/runc_runtime.h"
#include "tests/platform/runtime_fixture.h"

#include <CppUTest/TestHarness.h>

using namespace daemonlet;
using namespace daemonlet::platform;
using daemonlet::testing::run_until;

namespace {

const char* const kDigest = "sha256:68b28343fb1a087b9b1918da46fb15e313c6de001ad0f687ea2a40f8e2a8ce41";

// Records each call's arguments, then acts as the image named last says.
std::string fake_image_tool(const std::string& dir) {
    const std::string path = dir + "/daemonlet-image";
    std::ofstream(path)
        << "#!/bin/sh\n"
           "echo \"$*\" >> '"
        << dir
        << "/calls'\n"
           "[ \"$1\" = list ] && { echo '[{\"name\":\"docker.io/library/busybox:latest\","
           "\"digest\":\""
        << kDigest
        << "\"}]'; exit 0; }\n"
           "for last; do :; done\n"
           "case \"$last\" in\n"
           "  ok/*) echo '{\"name\":\"x\",\"digest\":\"y\"}' ;;\n"
           "  bad/*) echo \"daemonlet-image: warning: auth file readable by others\" >&2\n"
           "         echo \"daemonlet-image: unauthorized: image $last: registry r: refused\" >&2;"
           " exit 1 ;;\n"
           "  *) echo garbage; exit 1 ;;\n"
           "esac\n";
    ::chmod(path.c_str(), 0755);
    return path;
}

std::vector<std::string> lines_of(const std::string& path) {
    std::ifstream in(path);
    std::vector<std::string> out;
    for (std::string line; std::getline(in, line);) out.push_back(line);
    return out;
}

}  // namespace

TEST_GROUP(RuncPull) {
    uv_loop_t loop{};
    std::string dir;
    std::unique_ptr<RuncRuntime> runtime;

    void setup() override {
        uv_loop_init(&loop);
        char tmpl[] = "/tmp/daemonlet-pull-XXXXXX";
        dir = ::mkdtemp(tmpl);
        auto exec = make_exec_runtime(&loop, dir + "/runtime", DAEMONLET_SHIM_PATH);
        CHECK_TEXT(exec.ok(), exec.ok() ? "" : exec.error().message.c_str());
        runtime = std::make_unique<RuncRuntime>(
            std::move(exec).value(),
            ImageTool{fake_image_tool(dir), dir + "/images", false, {"--auth-file", "/x.json"}},
            dir + "/runtime", "/bin/true", std::vector<std::string>{});
        runtime->enable_pulls(&loop);
    }
    void teardown() override {
        runtime->close();
        uv_run(&loop, UV_RUN_DEFAULT);
        runtime.reset();
        LONGS_EQUAL(0, uv_loop_close(&loop));
        std::system(("rm -rf '" + dir + "'").c_str());
    }
};

TEST(RuncPull, CallersOfTheSameImageShareOneProcessAndAreEachCalledBackOnce) {
    CHECK_TRUE(runtime->can_pull());
    int first = 0, second = 0, other = 0;
    Status a = Ok{}, b = Error{ErrorCode::Invalid, "unset"};
    runtime->pull_image("ok/img:1", [&](Status s) {
        ++first;
        a = s;
    });
    runtime->pull_image("ok/img:1", [&](Status s) {
        ++second;
        b = s;
    });
    runtime->pull_image("ok/other:1", [&](Status) { ++other; });
    LONGS_EQUAL_TEXT(0, first + second + other, "called back inside pull_image()");
    CHECK_TRUE(run_until(&loop, [&] { return first && second && other; }));
    run_until(
        &loop, [] { return false; }, std::chrono::milliseconds(50));
    LONGS_EQUAL(1, first);
    LONGS_EQUAL(1, second);
    CHECK_TRUE(a.ok());
    CHECK_TRUE(b.ok());
    // One process per image. The two run at once, so their lines come in
    // either order.
    auto calls = lines_of(dir + "/calls");
    std::sort(calls.begin(), calls.end());
    LONGS_EQUAL(2, calls.size());
    STRCMP_EQUAL(("pull --store " + dir + "/images --auth-file /x.json ok/img:1").c_str(), calls[0].c_str());
    STRCMP_EQUAL(("pull --store " + dir + "/images --auth-file /x.json ok/other:1").c_str(),
                 calls[1].c_str());
}

TEST(RuncPull, TheErrorLinesCodeIsTheStatusCode) {
    std::vector<Status> got;
    runtime->pull_image("bad/img:1", [&](Status s) { got.push_back(s); });
    runtime->pull_image("odd/img:1", [&](Status s) { got.push_back(s); });
    CHECK_TRUE(run_until(&loop, [&] { return got.size() == 2; }));
    for (const Status& s : got) {
        CHECK_FALSE(s.ok());
        if (s.error().code == ErrorCode::Unauthorized) {
            // The warning line before it is not taken for the error.
            STRCMP_EQUAL("image bad/img:1: registry r: refused", s.error().message.c_str());
        } else {
            STRCMP_EQUAL("pull_failed", s.error().code_name());
            CHECK_TEXT(s.error().message.find("odd/img:1") != std::string::npos, s.error().message.c_str());
            CHECK_TEXT(s.error().message.find("garbage") != std::string::npos, s.error().message.c_str());
        }
    }
    CHECK_TRUE(got[0].error().code == ErrorCode::Unauthorized ||
               got[1].error().code == ErrorCode::Unauthorized);
}

TEST(RuncPull, AFailedPullCanBeAskedForAgain) {
    int calls = 0;
    runtime->pull_image("bad/img:1", [&](Status) { ++calls; });
    CHECK_TRUE(run_until(&loop, [&] { return calls == 1; }));
    runtime->pull_image("bad/img:1", [&](Status) { ++calls; });
    CHECK_TRUE(run_until(&loop, [&] { return calls == 2; }));
    LONGS_EQUAL(2, lines_of(dir + "/calls").size());
}

TEST(RuncPull, HasImageNormalisesTheReferenceAndMatchesDigests) {
    CHECK_TRUE(runtime->has_image("busybox"));  // docker.io/library/busybox:latest
    CHECK_TRUE(runtime->has_image("docker.io/library/busybox:latest"));
    CHECK_TRUE(runtime->has_image(std::string("busybox@") + kDigest));
    CHECK_FALSE(runtime->has_image("busybox:1.36"));
    CHECK_FALSE(runtime->has_image("example.com/busybox"));
    CHECK_FALSE(runtime->has_image("Not A Reference"));
}
