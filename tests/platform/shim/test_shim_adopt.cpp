// A shim outlives the agent that started it; a fresh runtime over the same
// state directory adopts what still runs, and reports as exited what does not
// run any more, even when another process has taken the shim's pid.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "platform/exec/shim_state.h"
#include "platform/proc_stat.h"
#include "platform/shim/shim_protocol.h"
#include "tests/platform/runtime_fixture.h"

#include <CppUTest/TestHarness.h>

using namespace daemonlet;
using namespace daemonlet::testing;

namespace {

// Reads one line from `fd`, waiting at most kDeadline.
std::string read_line(int fd) {
    std::string line;
    auto deadline = std::chrono::steady_clock::now() + kDeadline;
    while (line.empty() || line.back() != '\n') {
        auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline -
                                                                          std::chrono::steady_clock::now());
        struct pollfd p = {fd, POLLIN, 0};
        if (left.count() <= 0 || ::poll(&p, 1, static_cast<int>(left.count())) <= 0) break;
        char c;
        if (::read(fd, &c, 1) != 1) break;
        line += c;
    }
    return line;
}

// Writes a container's files as if a shim had run it, with the given
// identities for the shim and the container.
std::string fake_container(const std::string& dir, pid_t pid, std::uint64_t start_time) {
    std::string id = platform::exec::new_container_id();
    std::string cdir = platform::exec::container_dir(dir, id);
    std::filesystem::create_directories(cdir);
    auto l = launch({"/bin/true"});
    write_text(cdir + "/" + shim::kConfigFile,
               platform::exec::config_json(l, platform::exec::log_path(dir, l)));
    std::string n = std::to_string(pid), t = std::to_string(start_time);
    write_text(cdir + "/" + shim::kStateFile, "{\"shimPid\":" + n + ",\"shimStartTime\":" + t + ",\"pid\":" +
                                                  n + ",\"pidStartTime\":" + t + ",\"startedAt\":1}\n");
    return id;
}

}  // namespace

TEST_GROUP(ShimAdoption) {
    RuntimeFixture f;
    void setup() override { f.setup(); }
    void teardown() override { f.teardown(); }
};

TEST(ShimAdoption, ShimSurvivesTheDeathOfTheAgentThatStartedIt) {
    std::string pidfile = f.dir + "/container.pid";
    int sync[2];
    CHECK_EQUAL(0, ::pipe2(sync, O_CLOEXEC));
    pid_t agent = ::fork();
    CHECK(agent >= 0);
    if (agent == 0) {
        // The agent: its own loop and runtime over the state directory. It
        // reports the id, then waits to be killed.
        ::close(sync[0]);
        uv_loop_t loop;
        uv_loop_init(&loop);
        platform::ExecRuntime rt(&loop, f.dir, DAEMONLET_SHIM_PATH);
        auto l = launch({"/bin/sh", "-c", "echo $$ > '" + pidfile + "'; exec sleep 1000"});
        l.labels = {{"controller-revision-hash", "5d4b9c7f6"}, {"daemonlet.io/daemonset", "probe"}};
        auto id = rt.start(l);
        std::string reply = (id.ok() ? id.value() : "error: " + id.error().message) + "\n";
        if (::write(sync[1], reply.data(), reply.size()) < 0) ::_exit(1);
        for (;;) ::pause();
    }
    ::close(sync[1]);
    std::string id = read_line(sync[0]);
    ::close(sync[0]);
    if (!id.empty()) id.pop_back();
    CHECK_TEXT(platform::exec::is_container_id(id), id.c_str());

    // kill -9 the agent: its shim and container must not notice.
    CHECK_EQUAL(0, ::kill(agent, SIGKILL));
    int status = 0;
    CHECK_EQUAL(agent, ::waitpid(agent, &status, 0));
    CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
    CHECK(f.run_until([&] { return read_text(pidfile).find('\n') != std::string::npos; }));
    int container_pid = std::stoi(read_text(pidfile));
    auto shim_pid = static_cast<pid_t>(f.state_field(id, shim::kShimPid));
    CHECK(
        proc::is_same_process(shim_pid, static_cast<std::uint64_t>(f.state_field(id, shim::kShimStartTime))));

    // A new agent adopts it: running, same process.
    auto all = f.runtime->adopt_all();
    CHECK(all.ok());
    LONGS_EQUAL(1, all.value().size());
    const auto& info = all.value()[0];
    STRCMP_EQUAL(id.c_str(), info.id.c_str());
    CHECK(info.running);
    LONGS_EQUAL(container_pid, info.pid);
    // What the agent needs to rebuild a lost pod record comes back with it.
    STRCMP_EQUAL(launch({}).pod_name.c_str(), info.pod_name.c_str());
    STRCMP_EQUAL(launch({}).pod_namespace.c_str(), info.pod_namespace.c_str());
    LONGS_EQUAL(2, info.labels.size());
    STRCMP_EQUAL("5d4b9c7f6", info.labels.at("controller-revision-hash").c_str());
    STRCMP_EQUAL("probe", info.labels.at("daemonlet.io/daemonset").c_str());

    // Its exit reaches the new agent's handler, once.
    CHECK(f.runtime->stop(id).ok());
    auto exited = f.wait_exit(id);
    LONGS_EQUAL(143, *exited.exit_code);
    STRCMP_EQUAL("SIGTERM", exited.reason.c_str());
    LONGS_EQUAL(1, f.exited.size());
    // The shim has exited too (a zombie until whoever adopted it, pid 1 here, reaps it).
    proc::ProcStat st;
    CHECK(proc::read_stat(shim_pid, &st) != 0 || st.state == 'Z');
}

TEST(ShimAdoption, StaleStateWhoseShimPidWasReusedIsReportedAsExited) {
    // A stranger has the recorded pid, but not the recorded start time.
    Child stranger(&f.loop, {"/bin/sleep", "1000"});
    proc::ProcStat st;
    LONGS_EQUAL(0, proc::read_stat(stranger.pid(), &st));
    LONGS_EQUAL(::getpid(), st.ppid);  // field 4, as bench_runc finds runc under a shim
    std::string id = fake_container(f.dir, stranger.pid(), st.start_time + 1);

    auto all = f.runtime->adopt_all();
    CHECK(all.ok());
    LONGS_EQUAL(1, all.value().size());
    const auto& info = all.value()[0];
    CHECK(!info.running);
    LONGS_EQUAL(137, *info.exit_code);
    STRCMP_CONTAINS("ContainerStatusUnknown", info.reason.c_str());
    // Not adopted, so never reported; and the stranger was left alone.
    CHECK(f.runtime->stop(id).ok());
    LONGS_EQUAL(0, f.exited.size());
    CHECK(proc::is_same_process(stranger.pid(), st.start_time));
    CHECK(!stranger.exited());
    // The verdict is recorded: a later look agrees.
    auto again = f.runtime->inspect(id);
    LONGS_EQUAL(137, *again.value().exit_code);
    STRCMP_EQUAL(info.reason.c_str(), again.value().reason.c_str());
}

TEST(ShimAdoption, StaleStateWhoseShimIsGoneIsReportedAsExited) {
    pid_t gone;
    {
        Child dead(&f.loop, {"/bin/true"});
        gone = dead.pid();
        CHECK(f.run_until([&] { return dead.exited(); }));
    }
    std::string id = fake_container(f.dir, gone, 12345);
    auto all = f.runtime->adopt_all();
    CHECK(all.ok());
    LONGS_EQUAL(1, all.value().size());
    CHECK(!all.value()[0].running);
    LONGS_EQUAL(137, *all.value()[0].exit_code);
    STRCMP_CONTAINS("is gone", all.value()[0].reason.c_str());
    CHECK(f.runtime->remove(id).ok());
}

TEST(ShimAdoption, ExitedContainersAreReportedNotWatched) {
    std::string done = f.start(launch({"/bin/sh", "-c", "exit 4"}));
    f.wait_exit(done);
    std::string running = f.start(launch({"/bin/sleep", "1000"}));

    // The agent restarts: a new runtime, the old one gone.
    f.runtime = f.make_runtime();
    f.exited.clear();
    auto all = f.runtime->adopt_all();
    CHECK(all.ok());
    LONGS_EQUAL(2, all.value().size());
    for (const auto& info : all.value()) {
        if (info.id == done) {
            CHECK(!info.running);
            LONGS_EQUAL(4, *info.exit_code);
            STRCMP_EQUAL("Error", info.reason.c_str());
        } else {
            STRCMP_EQUAL(running.c_str(), info.id.c_str());
            CHECK(info.running);
        }
    }
    // Adopting twice watches once: one exit, one report.
    CHECK(f.runtime->adopt_all().ok());
    CHECK(f.runtime->stop(running).ok());
    f.wait_exit(running);
    LONGS_EQUAL(1, f.exited.size());
}
