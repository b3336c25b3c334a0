// run_command: a short command run to completion, as RuncRuntime runs
// `daemonlet-image prepare` and Runc runs runc. Real processes (/bin/sh).
#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <string>

#include "platform/fd.h"
#include "platform/run_command.h"

#include <CppUTest/TestHarness.h>

using namespace daemonlet::platform;

TEST_GROUP(RunCommand){};

TEST(RunCommand, CapturesStdoutStderrAndTheExitStatusApart) {
    auto r = run_command({"/bin/sh", "-c", "echo out; echo err >&2; exit 3"}, 10000);
    CHECK_TRUE(r.ok());
    LONGS_EQUAL(3, r.value().exit_code);
    STRCMP_EQUAL("out\n", r.value().out.c_str());
    STRCMP_EQUAL("err\n", r.value().err.c_str());
}

TEST(RunCommand, StdinIsDevNull) {
    auto r = run_command({"/bin/sh", "-c", "cat; echo done"}, 10000);
    CHECK_TRUE(r.ok());
    LONGS_EQUAL(0, r.value().exit_code);
    STRCMP_EQUAL("done\n", r.value().out.c_str());
}

TEST(RunCommand, AKillingSignalIs128PlusItsNumber) {
    auto r = run_command({"/bin/sh", "-c", "kill -9 $$"}, 10000);
    CHECK_TRUE(r.ok());
    LONGS_EQUAL(128 + 9, r.value().exit_code);
}

TEST(RunCommand, AMissingProgramIsNotFoundNamingIt) {
    auto r = run_command({"/nonexistent/daemonlet-image", "prepare"}, 10000);
    CHECK_FALSE(r.ok());
    STRCMP_EQUAL("not_found", r.error().code_name());
    CHECK_TRUE(r.error().message.find("/nonexistent/daemonlet-image") != std::string::npos);
}

TEST(RunCommand, OnePastItsDeadlineIsKilledAndReportedAsATimeout) {
    const auto start = std::chrono::steady_clock::now();
    auto r = run_command({"/bin/sh", "-c", "exec sleep 30"}, 200);
    const auto took = std::chrono::steady_clock::now() - start;
    CHECK_FALSE(r.ok());
    STRCMP_EQUAL("timeout", r.error().code_name());
    CHECK_TRUE(r.error().message.find("sleep 30") != std::string::npos);
    CHECK_TRUE(took < std::chrono::seconds(10));
}

TEST(RunCommand, OutputCanGoToTheCallersFiles) {
    char path[] = "/tmp/daemonlet-run.XXXXXX";
    Fd out(::mkstemp(path));
    auto r = run_command({"/bin/sh", "-c", "echo to-file; echo err >&2"}, 10000, out.get(), -1);
    CHECK_TRUE(r.ok());
    STRCMP_EQUAL("", r.value().out.c_str());
    STRCMP_EQUAL("err\n", r.value().err.c_str());
    char buf[32] = {};
    LONGS_EQUAL(8, ::pread(out.get(), buf, sizeof buf - 1, 0));
    STRCMP_EQUAL("to-file\n", buf);
    ::unlink(path);
}
