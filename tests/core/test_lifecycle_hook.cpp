// Lifecycle hooks: the grace left after preStop (kuberuntime_container.go
// killContainer, minimumGracePeriodInSeconds) and the failure messages of
// pkg/kubelet/lifecycle/handlers.go Run.
#include <string>

#include "core/lifecycle_hook.h"

// CppUTest last: its leak-detection macros redefine new.
#include <CppUTest/TestHarness.h>

using namespace daemonlet;

namespace {

struct GraceRow {
    const char* name;
    std::int64_t grace;
    std::int64_t pre_stop_ms;
    std::int64_t expected;
};

const GraceRow kGraceRows[] = {
    {"killContainer: a quick preStop leaves the whole grace period", 30, 400, 30},
    {"killContainer: the preStop's whole seconds are taken from it", 30, 10'900, 20},
    {"killContainer: a preStop that used it all leaves minimumGracePeriodInSeconds", 30, 30'000, 2},
    {"killContainer: one that ran over leaves minimumGracePeriodInSeconds", 5, 60'000, 2},
    {"killContainer: a grace period below the minimum is raised to it", 1, 0, 2},
};

}  // namespace

TEST_GROUP(LifecycleHook){};

TEST(LifecycleHook, GraceAfterPreStopAsKillContainer) {
    for (const auto& row : kGraceRows)
        LONGS_EQUAL_TEXT(row.expected, grace_after_pre_stop(row.grace, row.pre_stop_ms), row.name);
}

TEST(LifecycleHook, PodRefAsFormatPod) {
    STRCMP_EQUAL("agent-x7k2p_kube-system(1234)", pod_ref("agent-x7k2p", "kube-system", "1234").c_str());
}

TEST(LifecycleHook, MessagesAsHandlersRun) {
    Handler exec;
    exec.exec = ExecAction{{"sh", "-c", "exit 3"}};
    STRCMP_EQUAL(
        "Exec lifecycle hook ([sh -c exit 3]) for Container \"app\" in Pod \"p_ns(u)\" failed - "
        "error: command 'sh -c exit 3' exited with 3: , message: \"oops\\n\"",
        hook_failure_message(exec, "app", "p_ns(u)", "command 'sh -c exit 3' exited with 3: ", "oops\n")
            .c_str());
    Handler http;
    http.http_get = HTTPGetAction{};
    http.http_get->path = "/quit";
    STRCMP_EQUAL(
        "HTTP lifecycle hook (/quit) for Container \"app\" in Pod \"p_ns(u)\" failed - error: "
        "connection refused",
        hook_failure_message(http, "app", "p_ns(u)", "connection refused", "").c_str());
    Handler sleep;
    sleep.sleep_seconds = 5;
    STRCMP_EQUAL(
        "Sleep lifecycle hook (5) for Container \"app\" in Pod \"p_ns(u)\" failed - error: "
        "container terminated before sleep hook finished",
        hook_failure_message(sleep, "app", "p_ns(u)", "container terminated before sleep hook finished", "")
            .c_str());
}
