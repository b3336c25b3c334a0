// RuncRuntime's start through the real daemonlet-shim in runc mode
// (shim_runc.h), with a stand-in runc (a /bin/sh script) and a stand-in
// daemonlet-image, so that it runs without root: the shim runs `runc
// create` (which leaves the "container", a sleep, behind as conmon's runc
// does) and `runc start`, becomes that process's parent (subreaper), and
// reports the start only after `runc start` returned; no runc process
// stays. The exit code is runc run's (128+N for signal N, reason Error),
// the container's output is its CRI log, and a create that runc refuses
// is a StartError with runc's message. start_async calls back on the loop.
#include <sys/stat.h>
#include <uv.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <fstream>
#include <functional>
#include <memory>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

#include "core/model.h"
#include "core/strings.h"
#include "platform/exec/exec_runtime.h"
#include "platform/exec/shim_state.h"
#include "platform/proc_stat.h"
#include "platform/runc/runc_runtime.h"
#include "platform/shim/shim_protocol.h"
#include "tests/platform/runtime_fixture.h"

#include <CppUTest/TestHarness.h>

using namespace daemonlet;
using namespace daemonlet::platform;
using daemonlet::testing::read_text;
using daemonlet::testing::run_until;

namespace {

// `daemonlet-image prepare` printing an image config without layers.
std::string fake_image_tool(const std::string& dir) {
    const std::string path = dir + "/daemonlet-image";
    std::ofstream(path) << "#!/bin/sh\n"
                           "echo '{\"architecture\":\"amd64\",\"os\":\"linux\","
                           "\"rootfs\":{\"type\":\"layers\",\"diff_ids\":[]},\"config\":{}}'\n";
    ::chmod(path.c_str(), 0755);
    return path;
}

// runc as the shim calls it: --root R --log L --log-format json VERB ...
// `create --pid-file P --bundle B ID` leaves a process behind (the
// container: it says hello, then sleeps) and records its pid; the
// bundle's "refuse" file makes it fail as runc does, its "hang" file
// makes it hang (its pid in <dir>/hang.pid). `start` notes in
// <dir>/started that it ran, after a pause: the start must wait for it.
// `--version` and `--root R delete --force ID` (noted as "delete ID" in
// <dir>/calls once done, ID in <dir>/deleting as it begins) wait, while
// <dir>/gated exists, up to 5 s for <dir>/gate ("late" noted when it never
// came).
std::string fake_runc(const std::string& dir) {
    const std::string path = dir + "/runc";
    std::ofstream(path)
        << "#!/bin/sh\n"
           "case \"$1 $3\" in\n"
           "  '--version '*|*' delete')\n"
           "    [ \"$3\" = delete ] && echo \"$5\" >> '"
        << dir
        << "/deleting'\n"
           "    i=0; while [ -e '"
        << dir << "/gated' ] && [ ! -e '" << dir
        << "/gate' ] && [ $i -lt 500 ]; do sleep 0.01; i=$((i+1)); done\n"
           "    late=; [ -e '"
        << dir << "/gated' ] && [ ! -e '" << dir
        << "/gate' ] && late=' late'\n"
           "    [ \"$1\" = --version ] && { echo \"runc version 1.1.5+test$late\"; exit 0; }\n"
           "    echo \"delete $5$late\" >> '"
        << dir
        << "/calls'; exit 0 ;;\n"
           "esac\n"
           "verb=$7\n"
           "echo \"$verb\" >> '"
        << dir
        << "/calls'\n"
           "case $verb in\n"
           "  create)\n"
           "    [ -e \"${11}/refuse\" ] && { echo 'runc create failed: exec: no such file' >&2;"
           " exit 1; }\n"
           "    [ -e \"${11}/hang\" ] && { echo $$ > '"
        << dir
        << "/hang.pid'; exec sleep 1000; }\n"
           "    (echo hello; exec sleep 1000) &\n"
           "    echo $! > \"$9\" ;;\n"
           "  start) sleep 0.2; echo yes > '"
        << dir
        << "/started' ;;\n"
           "esac\n";
    ::chmod(path.c_str(), 0755);
    return path;
}

// ContainerLaunch's pod_spec and container, raw pointers or shared ones.
template <class P, class T>
void point(P& to, const std::shared_ptr<T>& what) {
    if constexpr (std::is_pointer_v<P>)
        to = what.get();
    else
        to = what;
}

// Whether `pid` is a live process (not gone, not a zombie).
bool alive(pid_t pid) {
    const std::string stat = read_text("/proc/" + std::to_string(pid) + "/stat");
    const auto paren = stat.rfind(')');
    return paren != std::string::npos && paren + 2 < stat.size() && stat[paren + 2] != 'Z';
}

pid_t parent_of(pid_t pid) {
    proc::ProcStat st;
    return proc::read_stat(pid, &st) == 0 ? st.ppid : 0;
}

}  // namespace

TEST_GROUP(RuncShim) {
    uv_loop_t loop{};
    std::string dir;
    std::unique_ptr<RuncRuntime> runtime;
    std::vector<std::string> exited;
    std::shared_ptr<PodSpec> pod = std::make_shared<PodSpec>();
    std::shared_ptr<Container> container = std::make_shared<Container>();

    void setup() override {
        uv_loop_init(&loop);
        char tmpl[] = "/tmp/daemonlet-runc-shim-XXXXXX";
        dir = ::mkdtemp(tmpl);
        fake_image_tool(dir);
        fake_runc(dir);
        make_runtime();
        container->name = "c";
        container->image = "busybox";
        container->command = {"sh"};
        pod->containers = {*container};
    }
    void teardown() override {
        runtime->close();
        uv_run(&loop, UV_RUN_DEFAULT);
        runtime.reset();
        LONGS_EQUAL(0, uv_loop_close(&loop));
        std::system(("rm -rf '" + dir + "'").c_str());
    }
    // A runtime over dir (the one before closed), whose exec runtime gives
    // up on a shim's start after `start_timeout` (zero: its default).
    void make_runtime(std::chrono::milliseconds start_timeout = {}) {
        auto exec = make_exec_runtime(&loop, dir + "/runtime", DAEMONLET_SHIM_PATH);
        CHECK_TEXT(exec.ok(), exec.ok() ? "" : exec.error().message.c_str());
        if (start_timeout.count() > 0)
            dynamic_cast<ExecRuntime&>(*exec.value()).set_start_timeout(start_timeout);
        exec.value()->attach_loop(&loop);
        if (runtime) runtime->close();
        runtime = std::make_unique<RuncRuntime>(
            std::move(exec).value(), ImageTool{dir + "/daemonlet-image", dir + "/images", false, {}},
            dir + "/runtime", dir + "/runc", std::vector<std::string>{});
        runtime->attach_loop(&loop);
        runtime->set_exit_handler([this](const std::string& id) { exited.push_back(id); });
    }
    // The prepare (after it printed the config) leaves `file` in each
    // bundle: "refuse" or "hang", for the stand-in runc's create.
    void prepare_leaves(const char* file) {
        std::ofstream(dir + "/daemonlet-image", std::ios::app)
            << "for a; do case $a in */rootfs) touch \"${a%/rootfs}/" << file << "\";; esac; done\n";
    }
    ContainerLaunch launch() {
        ContainerLaunch l = testing::launch({});
        point(l.pod_spec, pod);
        point(l.container, container);
        return l;
    }
    // start_async, run to its one callback (`meanwhile` done once the call
    // returned, before the loop runs): what it reported.
    Result<std::string> start_result(const std::function<void()>& meanwhile = {}) {
        int calls = 0;
        Result<std::string> got = Error{ErrorCode::Invalid, "unset"};
        runtime->start_async(launch(), [&](Result<std::string> r) {
            ++calls;
            got = std::move(r);
        });
        LONGS_EQUAL_TEXT(0, calls, "called back inside start_async()");
        if (meanwhile) meanwhile();
        CHECK_TRUE(run_until(&loop, [&] { return calls > 0; }));
        LONGS_EQUAL(1, calls);
        return got;
    }
    // start_result's id, or "" with the test failed.
    std::string start(const std::function<void()>& meanwhile = {}) {
        auto got = start_result(meanwhile);
        CHECK_TEXT(got.ok(), got.ok() ? "" : got.error().message.c_str());
        return got.value();
    }
    ContainerInfo wait_exit(const std::string& id) {
        CHECK_TRUE(run_until(&loop, [&] { return !exited.empty() && exited.back() == id; }));
        auto info = runtime->inspect(id);
        CHECK_TEXT(info.ok(), info.ok() ? "" : info.error().message.c_str());
        return info.value();
    }
};

TEST(RuncShim, TheStartIsReportedOnceRuncStartHasRunAndTheShimParentsTheContainer) {
    const std::string id = start();
    // runc start had returned: the container had been told to run.
    STRCMP_EQUAL("yes\n", read_text(dir + "/started").c_str());
    STRCMP_EQUAL("create\nstart\n", read_text(dir + "/calls").c_str());
    auto info = runtime->inspect(id);
    CHECK_TRUE(info.ok() && info.value().running);
    // The pid reported is the container's process (the one runc's pid file
    // names), and the shim is its parent: runc create has exited and no
    // runc process stays.
    const pid_t pid = info.value().pid;
    const std::string bundle = runtime->bundle_dir(id);
    LONGS_EQUAL(std::atoi(read_text(bundle + "/container.pid").c_str()), pid);
    auto record = exec::read_record(dir + "/runtime", id);
    CHECK_TRUE(record.ok());
    LONGS_EQUAL(record.value().shim_pid, parent_of(pid));
    CHECK_TRUE(run_until(
        &loop, [&] { return testing::read_text(info.value().log_path).find("hello") != std::string::npos; }));
    CHECK_TEXT(read_text(info.value().log_path).find(" stdout F hello\n") != std::string::npos,
               read_text(info.value().log_path).c_str());

    // A stop: SIGTERM to the container's process; its exit as runc run
    // reported one (128 + SIGTERM, Error).
    CHECK_TRUE(runtime->stop(id).ok());
    ContainerInfo end = wait_exit(id);
    LONGS_EQUAL(128 + SIGTERM, end.exit_code.value_or(-1));
    STRCMP_EQUAL("Error", end.reason.c_str());
}

TEST(RuncShim, ACreateRuncRefusesIsAStartErrorWithRuncsMessage) {
    prepare_leaves("refuse");
    const std::string id = start();
    ContainerInfo end = wait_exit(id);
    LONGS_EQUAL(shim::kExitStartError, end.exit_code.value_or(-1));
    STRCMP_EQUAL("StartError: runc create: runc create failed: exec: no such file", end.reason.c_str());
    STRCMP_EQUAL("create\n", read_text(dir + "/calls").c_str());
}

TEST(RuncShim, ARuncThatHangsDiesWithTheShimTheAgentGaveUpOn) {
    // runc create hangs; the start waits 300 ms.
    prepare_leaves("hang");
    make_runtime(std::chrono::milliseconds(300));
    int calls = 0;
    Result<std::string> got = std::string();
    runtime->start_async(launch(), [&](Result<std::string> r) {
        ++calls;
        got = std::move(r);
    });
    CHECK_TRUE(run_until(&loop, [&] { return calls > 0; }));
    CHECK_FALSE(got.ok());
    STRCMP_EQUAL("shim", got.error().code_name());
    // runc create, which the shim was waiting for, went with the shim.
    const pid_t hung = std::atoi(read_text(dir + "/hang.pid").c_str());
    CHECK_TRUE(hung > 0);
    CHECK_TRUE(run_until(&loop, [&] { return !alive(hung); }));
}

TEST(RuncShim, StartAsyncReturnsBeforeTheBundleIsPreparedOffTheLoop) {
    // The prepare waits (up to 5 s) for a gate that the test opens only
    // after start_async returned: a prepare on the loop would hold the call
    // that long, then fail.
    std::ofstream(dir + "/daemonlet-image", std::ios::app)
        << "i=0; while [ ! -e '" << dir << "/gate' ] && [ $i -lt 500 ]; do sleep 0.01; i=$((i+1)); done\n"
        << "[ -e '" << dir << "/gate' ] || exit 1\n";
    const std::string id = start([&] { std::ofstream(dir + "/gate") << "open\n"; });
    CHECK_TRUE(std::ifstream(runtime->bundle_dir(id) + "/config.json").good());
    CHECK_TRUE(runtime->stop(id).ok());
    wait_exit(id);
}

TEST(RuncShim, AnImageNotInTheStoreIsCalledBackOnTheLoopWithTheBundleGone) {
    std::ofstream(dir + "/daemonlet-image") << "#!/bin/sh\nexit 2\n";
    auto got = start_result();
    CHECK_FALSE(got.ok());
    STRCMP_EQUAL("image_not_found", got.error().code_name());
    STRCMP_EQUAL("image \"busybox\" is not in the image store", got.error().message.c_str());
    std::error_code ec;
    CHECK_TRUE(std::filesystem::is_empty(dir + "/runtime/bundles", ec) || ec);
}

TEST(RuncShim, LeftoversFoundAtAdoptionAreDeletedOffTheLoopBeforeAnyStart) {
    // Bundles without the shim's state: starts an agent crash cut short.
    // runc's delete and --version wait for a gate the test opens only once
    // adopt_all returned and a start was asked: run on the loop, each would
    // hold adopt_all 5 s and say "late".
    std::ofstream(dir + "/gated") << "";
    std::vector<std::string> leftovers = {std::string(32, 'a'), std::string(32, 'b'), std::string(32, 'c')};
    for (const auto& id : leftovers) std::filesystem::create_directories(runtime->bundle_dir(id) + "/rootfs");
    auto adopted = runtime->adopt_all();
    CHECK_TEXT(adopted.ok(), adopted.ok() ? "" : adopted.error().message.c_str());
    CHECK_TRUE(adopted.value().empty());
    STRCMP_EQUAL("", runtime->version_string().c_str());
    const std::string id = start([&] { std::ofstream(dir + "/gate") << "open\n"; });
    // The start waited for every leftover's `runc delete` and bundle.
    for (const auto& left : leftovers) CHECK_FALSE(std::filesystem::exists(runtime->bundle_dir(left)));
    std::vector<std::string> calls;
    std::istringstream lines(read_text(dir + "/calls"));
    for (std::string line; std::getline(lines, line);) calls.push_back(line);
    std::sort(calls.begin(), calls.begin() + std::min<std::size_t>(3, calls.size()));
    const std::vector<std::string> want = {"delete " + leftovers[0], "delete " + leftovers[1],
                                           "delete " + leftovers[2], "create", "start"};
    CHECK_TRUE(calls == want);
    CHECK_TRUE(run_until(&loop, [&] { return !runtime->version_string().empty(); }));
    STRCMP_EQUAL("runc://1.1.5+test", runtime->version_string().c_str());
    CHECK_TRUE(runtime->stop(id).ok());
    wait_exit(id);
}

TEST(RuncShim, AStartHeldBehindALeftoverIsCanceledAtTheStopAndNeverMakesItsContainer) {
    // A leftover whose `runc delete` waits for a gate, and a start held
    // until it is gone; then the agent stops (SIGTERM) before the gate opens.
    std::ofstream(dir + "/gated") << "";
    const std::string leftover(32, 'a');
    std::filesystem::create_directories(runtime->bundle_dir(leftover) + "/rootfs");
    CHECK_TRUE(runtime->adopt_all().ok());
    int calls = 0;
    bool leftover_there = false;  // when the start called back
    Result<std::string> got = std::string();
    runtime->start_async(launch(), [&](Result<std::string> r) {
        ++calls;
        leftover_there = std::filesystem::exists(runtime->bundle_dir(leftover));
        got = std::move(r);
    });
    runtime->cancel_held_starts();
    LONGS_EQUAL_TEXT(0, calls, "called back inside cancel_held_starts()");
    // Canceled at once, not once the delete ends (up to 5 s here; a hung
    // runc's, 30 s), and never started.
    CHECK_TRUE(run_until(&loop, [&] { return calls > 0; }));
    CHECK_TRUE(leftover_there);
    CHECK_FALSE(got.ok());
    STRCMP_EQUAL("canceled", got.error().code_name());
    STRCMP_EQUAL("starting container c: canceled", got.error().message.c_str());
    // The leftover still goes; no container is made after it.
    std::ofstream(dir + "/gate") << "open\n";
    CHECK_TRUE(run_until(&loop, [&] { return !std::filesystem::exists(runtime->bundle_dir(leftover)); }));
    // The bundle goes on the pool; the loop then runs the removal's
    // callback, which would let held starts go: wait for it too (no work
    // request left on the loop), so a start left held would show here.
    CHECK_TRUE(run_until(&loop, [&] { return loop.active_reqs.count == 0; }));
    STRCMP_EQUAL(("delete " + leftover + "\n").c_str(), read_text(dir + "/calls").c_str());
    LONGS_EQUAL(1, calls);
}

TEST(RuncShim, AFailedStartIsUndoneOffTheLoopAndSaidOnceUndone) {
    // runc create hangs and the shim is given up on after 300 ms; the
    // `runc delete` that undoes the start waits for a gate that the loop
    // opens once the delete has begun: a delete on the loop would hold it
    // until the stand-in gives up (5 s) and note "late".
    prepare_leaves("hang");
    make_runtime(std::chrono::milliseconds(300));
    std::ofstream(dir + "/gated") << "";
    int calls = 0;
    bool undone = false;  // when the start called back
    Result<std::string> got = std::string();
    runtime->start_async(launch(), [&](Result<std::string> r) {
        ++calls;
        std::error_code ec;
        undone = std::filesystem::is_empty(dir + "/runtime/bundles", ec) && !ec;
        got = std::move(r);
    });
    CHECK_TRUE(run_until(&loop, [&] {
        if (std::filesystem::exists(dir + "/deleting")) std::ofstream(dir + "/gate") << "open\n";
        return calls > 0;
    }));
    CHECK_FALSE(got.ok());
    STRCMP_EQUAL("shim", got.error().code_name());
    // Said after runc's container and the bundle were gone: a later start
    // of the pod's container never overlaps the delete.
    CHECK_TRUE(undone);
    const std::string id = trim(read_text(dir + "/deleting"));
    CHECK_FALSE(id.empty());
    STRCMP_EQUAL(("create\ndelete " + id + "\n").c_str(), read_text(dir + "/calls").c_str());
    LONGS_EQUAL(1, calls);
}
