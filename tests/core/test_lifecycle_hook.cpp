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

// kuberuntime labels.go: what killContainer needs without the pod's spec is
// kept with the container when it starts (newContainerAnnotations) and read
// back when the pod is gone (restoreSpecsFromContainerLabels).
TEST(LifecycleHook, StopRecordKeepsThePreStopHookAndTheGraceAsContainerLabels) {
    const Json spec = Json::parse(R"({
        "terminationGracePeriodSeconds": 7,
        "initContainers": [{"name": "proxy", "image": "p", "restartPolicy": "Always",
                            "lifecycle": {"preStop": {"sleep": {"seconds": 2}}}}],
        "containers": [
            {"name": "plain", "image": "a"},
            {"name": "app", "image": "b", "command": ["run"], "workingDir": "/srv",
             "env": [{"name": "MODE", "value": "drain"}],
             "ports": [{"name": "admin", "containerPort": 9000}],
             "lifecycle": {"postStart": {"exec": {"command": ["hello"]}},
                           "preStop": {"httpGet": {"path": "/quit", "port": "admin"}}}}]})");
    STRCMP_EQUAL("", stop_record(spec, "plain", true).c_str());  // a plain stop needs no record
    STRCMP_EQUAL("", stop_record(spec, "missing", true).c_str());
    const std::string app = stop_record(spec, "app", true);
    auto restored = restore_stop(app, "app");
    CHECK_FALSE(restore_stop(app, "other"));  // another container's record
    CHECK_TEXT(restored, app.c_str());
    LONGS_EQUAL(7, restored->grace_seconds);
    const Container& c = restored->container;
    STRCMP_EQUAL("app", c.name.c_str());
    STRCMP_EQUAL("/srv", c.working_dir.c_str());
    LONGS_EQUAL(1, c.env.size());
    STRCMP_EQUAL("drain", c.env[0].value.c_str());
    LONGS_EQUAL(1, c.ports.size());  // the hook's named port resolves
    LONGS_EQUAL(9000, c.ports[0].container_port);
    CHECK(c.lifecycle && c.lifecycle->pre_stop && c.lifecycle->pre_stop->http_get);
    STRCMP_EQUAL("/quit", c.lifecycle->pre_stop->http_get->path.c_str());
    CHECK_FALSE(c.lifecycle->post_start);  // it ran when the container started
    CHECK(c.command.empty());              // what the hook does not read is not kept
    // A sidecar's hook too; without terminationGracePeriodSeconds, its default.
    Json no_grace = spec;
    no_grace.erase("terminationGracePeriodSeconds");
    auto proxy = restore_stop(stop_record(no_grace, "proxy", true), "proxy");
    CHECK(proxy && proxy->container.lifecycle->pre_stop->sleep_seconds);
    LONGS_EQUAL(2, *proxy->container.lifecycle->pre_stop->sleep_seconds);
    LONGS_EQUAL(30, proxy->grace_seconds);
    // No record (a container started by an older agent), or not one.
    CHECK_FALSE(restore_stop("", "app"));
    CHECK_FALSE(restore_stop("{", "app"));
    CHECK_FALSE(restore_stop(R"({"spec": {"containers": [{"name": "app"}]}})", "app"));
    // Under runc and CRI the hook runs in the container, which has its env
    // and workingDir: only what the hook needs from outside is kept.
    auto in_container = restore_stop(stop_record(spec, "app", false), "app");
    CHECK(in_container && in_container->container.lifecycle->pre_stop->http_get);
    CHECK(in_container->container.env.empty());
    CHECK(in_container->container.working_dir.empty());
    LONGS_EQUAL(1, in_container->container.ports.size());
}
