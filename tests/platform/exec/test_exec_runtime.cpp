// The exec runtime with the real daemonlet-shim: containers are real
// processes, their logs real files, their exits real signals.
#include <signal.h>
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "platform/proc_stat.h"
#include "tests/platform/runtime_fixture.h"

#include <CppUTest/TestHarness.h>

using namespace daemonlet;
using namespace daemonlet::testing;

namespace {

// The whole log as "<stream> <tag> <text>" lines, for STRCMP_CONTAINS; with
// `stream`, only that stream's records (stdout and stderr are two pipes: the
// order between them is the scheduler's, within each it is the program's).
std::string log_summary(const std::string& path, const std::string& stream = {}) {
    std::string out;
    for (const auto& r : read_cri_log(path))
        if (stream.empty() || r.stream == stream) out += r.stream + " " + r.tag + " " + r.text + "\n";
    return out;
}

}  // namespace

TEST_GROUP(ExecRuntime) {
    RuntimeFixture f;
    void setup() override { f.setup(); }
    void teardown() override { f.teardown(); }
};

TEST(ExecRuntime, OutputReachesTheLogInCriFormat) {
    std::string id =
        f.start(launch({"/bin/sh", "-c", "echo out one; echo err one >&2; echo out two; printf tail"}));
    auto info = f.wait_exit(id);
    STRCMP_EQUAL((f.dir + "/logs/ns_pod_uid-1/c/0.log").c_str(), info.log_path.c_str());
    STRCMP_EQUAL("stdout F out one\nstdout F out two\nstdout F tail\n",
                 log_summary(info.log_path, "stdout").c_str());
    STRCMP_EQUAL("stderr F err one\n", log_summary(info.log_path, "stderr").c_str());
    // Output without a final newline ("tail") is a full record at the end of the stream.
}

TEST(ExecRuntime, ExitStatusIsKept) {
    struct Row {
        const char* name;
        const char* script;
        int exit_code;
        const char* reason;
    };
    static const Row rows[] = {
        {"exit 0 is Completed", "exit 0", 0, "Completed"},
        {"exit 3 is Error", "exit 3", 3, "Error"},
        {"killed by SIGKILL is 128+9", "kill -KILL $$", 137, "SIGKILL"},
        {"killed by SIGUSR1 is 128+10", "kill -USR1 $$", 138, "SIGUSR1"},
    };
    std::vector<std::string> ids;
    for (const auto& row : rows) ids.push_back(f.start(launch({"/bin/sh", "-c", row.script})));
    for (std::size_t i = 0; i < ids.size(); ++i) {
        auto info = f.wait_exit(ids[i]);
        LONGS_EQUAL_TEXT(rows[i].exit_code, *info.exit_code, rows[i].name);
        STRCMP_EQUAL_TEXT(rows[i].reason, info.reason.c_str(), rows[i].name);
        CHECK_TEXT(info.finished_at_ms >= info.started_at_ms && info.started_at_ms > 0, rows[i].name);
    }
    LONGS_EQUAL(ids.size(), f.exited.size());  // once each
}

TEST(ExecRuntime, ArgvEnvAndWorkingDirAreApplied) {
    std::string work = f.dir + "/work dir";
    std::filesystem::create_directory(work);
    ::setenv("DAEMONLET_TEST_AGENT_ONLY", "leak", 1);
    auto l = launch(
        {"/bin/sh", "-c",
         R"sh(printf '[%s]' "$0" "$1" "$GREETING" "$(pwd)" "${DAEMONLET_TEST_AGENT_ONLY-unset}" "$PATH")sh",
         "arg zero", "arg 'one'"});
    l.env = {{"GREETING", "hello \"world\" ünïcode"}};
    l.working_dir = work;
    auto info = f.wait_exit(f.start(l));
    ::unsetenv("DAEMONLET_TEST_AGENT_ONLY");
    LONGS_EQUAL(0, *info.exit_code);
    std::string expected = "[arg zero][arg 'one'][hello \"world\" ünïcode][" + work +
                           "][unset][/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin]";
    STRCMP_EQUAL(("stdout F " + expected + "\n").c_str(), log_summary(info.log_path).c_str());
}

TEST(ExecRuntime, StopSendsSigtermToTheContainersProcessGroup) {
    std::string id = f.start(
        launch({"/bin/sh", "-c", "trap 'echo got TERM; exit 7' TERM; sleep 1000 & echo sleeper $!; wait"}));
    std::string log = f.dir + "/logs/ns_pod_uid-1/c/0.log";
    CHECK(f.run_until([&] { return read_text(log).find("sleeper ") != std::string::npos; }));
    pid_t sleeper = std::stoi(read_text(log).substr(read_text(log).find("sleeper ") + 8));
    proc::ProcStat st;
    LONGS_EQUAL(0, proc::read_stat(sleeper, &st));

    CHECK(f.runtime->stop(id).ok());
    auto info = f.wait_exit(id);
    LONGS_EQUAL(7, *info.exit_code);  // the trap ran: SIGTERM, not SIGKILL
    STRCMP_EQUAL("Error", info.reason.c_str());
    STRCMP_CONTAINS("stdout F got TERM\n", log_summary(info.log_path).c_str());
    // The background child in the container's group got it too.
    CHECK(f.run_until([&] { return !proc::is_same_process(sleeper, st.start_time); }));
    // Stopping an exited container is not an error, and reports nothing more.
    CHECK(f.runtime->stop(id).ok());
    LONGS_EQUAL(1, f.exited.size());
}

TEST(ExecRuntime, ProcessIgnoringSigtermIsKilledAfterTheGracePeriod) {
    auto l = launch({"/bin/sh", "-c", "trap '' TERM; echo ready; while :; do sleep 1; done"});
    l.grace_seconds = 1;
    std::string id = f.start(l);
    std::string log = f.dir + "/logs/ns_pod_uid-1/c/0.log";
    CHECK(f.run_until([&] { return read_text(log).find("ready") != std::string::npos; }));
    auto stopped = std::chrono::steady_clock::now();
    CHECK(f.runtime->stop(id).ok());
    auto info = f.wait_exit(id);
    auto took = std::chrono::steady_clock::now() - stopped;
    LONGS_EQUAL(137, *info.exit_code);
    STRCMP_EQUAL("SIGKILL", info.reason.c_str());
    CHECK(took >= std::chrono::milliseconds(900));
    CHECK(took < kDeadline);
}

// What a preStop hook left of the grace period (kubelet's killContainer):
// the shim's SIGKILL comes after set_stop_grace's seconds, not the launch's.
TEST(ExecRuntime, StopGraceSetBeforeTheStopReplacesTheLaunchs) {
    auto l = launch({"/bin/sh", "-c", "trap '' TERM; echo ready; while :; do sleep 1; done"});
    l.grace_seconds = 300;
    std::string id = f.start(l);
    std::string log = f.dir + "/logs/ns_pod_uid-1/c/0.log";
    CHECK(f.run_until([&] { return read_text(log).find("ready") != std::string::npos; }));
    f.runtime->set_stop_grace(id, 1);
    auto stopped = std::chrono::steady_clock::now();
    CHECK(f.runtime->stop(id).ok());
    auto info = f.wait_exit(id);
    auto took = std::chrono::steady_clock::now() - stopped;
    LONGS_EQUAL(137, *info.exit_code);
    STRCMP_EQUAL("SIGKILL", info.reason.c_str());
    CHECK(took >= std::chrono::milliseconds(900));
    CHECK(took < kDeadline);  // far below the launch's 300 s
}

TEST(ExecRuntime, StartFailuresAreExitsWithAClearReason) {
    std::string not_executable = f.dir + "/not-executable";
    write_text(not_executable, "#!/bin/sh\n");
    ::chmod(not_executable.c_str(), 0644);
    struct Row {
        const char* name;
        std::string program;
        std::string working_dir;
        int exit_code;
        std::string reason;
    };
    const Row rows[] = {
        {"command not in PATH", "daemonlet-no-such-command", "", 127,
         "StartError: exec: \"daemonlet-no-such-command\": executable file not found in $PATH"},
        {"path that does not exist", "/no/such/program", "", 127,
         "StartError: exec: \"/no/such/program\": stat /no/such/program: no such file or directory"},
        {"file without execute permission", not_executable, "", 126,
         "StartError: exec: \"" + not_executable + "\": permission denied"},
        {"missing working directory", "/bin/true", "/no/such/dir", 128,
         "StartError: chdir to cwd (\"/no/such/dir\") failed: no such file or directory"},
    };
    for (const auto& row : rows) {
        auto l = launch({row.program});
        l.working_dir = row.working_dir;
        auto info = f.wait_exit(f.start(l));
        LONGS_EQUAL_TEXT(row.exit_code, *info.exit_code, row.name);
        STRCMP_EQUAL_TEXT(row.reason.c_str(), info.reason.c_str(), row.name);
    }
}

TEST(ExecRuntime, InvalidLaunchFailsWithoutCallingBack) {
    struct Row {
        const char* name;
        platform::ContainerLaunch launch;
    };
    auto with = [](auto change) {
        auto l = launch({"/bin/true"});
        change(l);
        return l;
    };
    const Row rows[] = {
        {"no command", with([](auto& l) { l.argv.clear(); })},
        {"empty command", with([](auto& l) { l.argv = {""}; })},
        {"pod name that is a path", with([](auto& l) { l.pod_name = "../etc"; })},
        {"container name with a slash", with([](auto& l) { l.container_name = "a/b"; })},
        {"env name with '='", with([](auto& l) {
             l.env = {{"A=B", "c"}};
         })},
        {"relative working dir", with([](auto& l) { l.working_dir = "tmp"; })},
        {"argument with NUL", with([](auto& l) { l.argv.push_back(std::string("a\0b", 3)); })},
        {"given id that is a path", with([](auto& l) { l.id = "../../0123456789abcdef0123456789ab"; })},
        {"given id that is not an id", with([](auto& l) { l.id = "my-container"; })},
    };
    for (const auto& row : rows) {
        auto id = f.runtime->start(row.launch);
        CHECK_TEXT(!id.ok(), row.name);
        STRCMP_EQUAL_TEXT("invalid", id.error().code_name(), row.name);
    }
    // Nothing was started, so nothing can report: no state was left behind.
    auto all = f.runtime->adopt_all();
    CHECK(all.ok());
    LONGS_EQUAL(0, all.value().size());
    LONGS_EQUAL(0, f.exited.size());
}

TEST(ExecRuntime, InspectRemoveAndTheirRefusals) {
    std::string id = f.start(launch({"/bin/sh", "-c", "echo hi; exec sleep 1000"}));
    auto running = f.runtime->inspect(id);
    CHECK(running.ok());
    CHECK(running.value().running);
    CHECK(running.value().pid > 0);
    CHECK(!running.value().exit_code.has_value());
    STRCMP_EQUAL("uid-1", running.value().pod_uid.c_str());
    STRCMP_EQUAL("c", running.value().container_name.c_str());
    STRCMP_EQUAL("running", f.runtime->remove(id).error().code_name());
    // The shell runs its echo before it is stopped: start() returns once the
    // process exists, not once it has done anything.
    const std::string log_path = running.value().log_path;
    CHECK(f.run_until([&] { return log_summary(log_path).find("stdout F hi\n") != std::string::npos; }));

    CHECK(f.runtime->stop(id).ok());
    auto info = f.wait_exit(id);
    LONGS_EQUAL(143, *info.exit_code);
    STRCMP_EQUAL("SIGTERM", info.reason.c_str());

    CHECK(f.runtime->remove(id).ok());
    STRCMP_EQUAL("not_found", f.runtime->inspect(id).error().code_name());
    CHECK(f.runtime->remove(id).ok());  // again: nothing to do
    STRCMP_EQUAL("invalid", f.runtime->remove("../../etc").error().code_name());
    STRCMP_EQUAL("not_found", f.runtime->stop("nope").error().code_name());
    // The log stays for `daemonlet logs`.
    STRCMP_CONTAINS("stdout F hi\n", log_summary(info.log_path).c_str());
}

TEST(ExecRuntime, AGivenIdNamesTheContainer) {
    // The runc runtime names runc's container, its bundle and the shim's
    // state with one id, chosen before the shim starts.
    auto l = launch({"/bin/sh", "-c", "exit 0"});
    l.id = "0123456789abcdef0123456789abcdef";
    STRCMP_EQUAL(l.id.c_str(), f.start(l).c_str());
    auto info = f.wait_exit(l.id);
    LONGS_EQUAL(0, *info.exit_code);
    // The same id twice is refused while the first is kept.
    auto again = f.runtime->start(l);
    CHECK(!again.ok());
    CHECK(f.runtime->inspect(l.id).ok());
}

TEST(ExecRuntime, NoDescriptorIsLeftOpenOnceContainersHaveExited) {
    auto count_fds = [] {
        std::size_t n = 0;
        for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator("/proc/self/fd")) ++n;
        return n;
    };
    std::size_t before = count_fds();
    std::string ok = f.start(launch({"/bin/sh", "-c", "echo hi"}));
    std::string failed = f.start(launch({"daemonlet-no-such-command"}));
    std::string stopped = f.start(launch({"/bin/sleep", "1000"}));
    CHECK(f.runtime->stop(stopped).ok());
    for (const auto& id : {ok, failed, stopped}) f.wait_exit(id);
    LONGS_EQUAL(before, count_fds());
}

TEST(ExecRuntime, MakeExecRuntimeChecksTheShimAndMakesTheStateDirectory) {
    auto missing = platform::make_exec_runtime(&f.loop, f.dir + "/state", f.dir + "/no-such-shim");
    CHECK(!missing.ok());
    STRCMP_CONTAINS("no-such-shim", missing.error().message.c_str());

    auto rt = platform::make_exec_runtime(&f.loop, f.dir + "/state", DAEMONLET_SHIM_PATH);
    CHECK_TEXT(rt.ok(), rt.ok() ? "" : rt.error().message.c_str());
    CHECK(std::filesystem::is_directory(f.dir + "/state"));
    STRCMP_EQUAL("exec", rt.value()->name());
    auto all = rt.value()->adopt_all();
    CHECK(all.ok());
    LONGS_EQUAL(0, all.value().size());
    rt.value()->close();
}

TEST(ExecRuntime, StartAsyncReportsOnTheLoopNeverFromInsideTheCall) {
    bool returned = false, called_inside = false;
    std::optional<Result<std::string>> got;
    f.runtime->start_async(launch({"/bin/sh", "-c", "exit 0"}), [&](Result<std::string> id) {
        called_inside = !returned;
        got = std::move(id);
    });
    returned = true;
    CHECK(f.run_until([&] { return got.has_value(); }));
    CHECK_FALSE(called_inside);
    CHECK_TRUE_TEXT(got->ok(), got->ok() ? "" : got->error().message.c_str());
    f.wait_exit(got->value());
    // An invalid launch reports its error on the loop too.
    std::optional<Result<std::string>> bad;
    returned = false;
    f.runtime->start_async(launch({}), [&](Result<std::string> id) {
        called_inside = !returned;
        bad = std::move(id);
    });
    returned = true;
    CHECK(f.run_until([&] { return bad.has_value(); }));
    CHECK_FALSE(called_inside);
    STRCMP_EQUAL("invalid", bad->error().code_name());
}

TEST(ExecRuntime, AShimThatNeverReportsHoldsItsStartNotTheLoop) {
    // A "shim" that keeps the readiness pipe open and never writes to it:
    // start() would block the loop for the whole start timeout.
    std::string hung = f.dir + "/hung-shim";
    write_text(hung, "#!/bin/sh\nexec sleep 60\n");
    ::chmod(hung.c_str(), 0755);
    platform::ExecRuntime rt(&f.loop, f.dir, hung);
    rt.set_start_timeout(std::chrono::milliseconds(1500));
    std::optional<Result<std::string>> got;
    LoopTicks ticks(&f.loop);
    auto before = std::chrono::steady_clock::now();
    rt.start_async(launch({"/bin/true"}), [&](Result<std::string> id) { got = std::move(id); });
    auto call_ms =
        std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - before)
            .count();
    CHECK_TEXT(call_ms < 500, ("start_async took " + std::to_string(call_ms) + " ms").c_str());
    CHECK(f.run_until([&] { return got.has_value(); }));
    // The loop went on meanwhile, and the start failed at its timeout.
    CHECK_TEXT(ticks.max_gap_ms() < 500,
               ("the loop stalled " + std::to_string(ticks.max_gap_ms()) + " ms").c_str());
    CHECK(ticks.ticks() > 20);
    CHECK_FALSE(got->ok());
    STRCMP_CONTAINS("did not report within 1500 ms", got->error().message.c_str());
    // Nothing is left of it.
    auto all = rt.adopt_all();
    CHECK(all.ok());
    LONGS_EQUAL(0, all.value().size());
    rt.close();
}

TEST(ExecRuntime, CloseWhileAStartWaitsNeverCallsBack) {
    std::string hung = f.dir + "/hung-shim";
    write_text(hung, "#!/bin/sh\necho $$ > " + f.dir + "/hung.pid\nexec sleep 60\n");
    ::chmod(hung.c_str(), 0755);
    auto rt = std::make_unique<platform::ExecRuntime>(&f.loop, f.dir, hung);
    bool called = false;
    rt->start_async(launch({"/bin/true"}), [&](Result<std::string>) { called = true; });
    CHECK(f.run_until([&] { return !read_text(f.dir + "/hung.pid").empty(); }));
    rt->close();
    uv_run(&f.loop, UV_RUN_NOWAIT);
    rt.reset();
    CHECK_FALSE(called);
    // Its "shim" runs on, as a real one would: it goes here.
    ::kill(static_cast<pid_t>(std::stol(read_text(f.dir + "/hung.pid"))), SIGKILL);
    std::filesystem::remove_all(f.dir + "/containers");
}
