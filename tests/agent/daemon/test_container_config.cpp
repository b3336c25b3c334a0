// The ContainerConfig component (agent/daemon/container_config.h), the
// kubelet's generateContainerConfig: the launch description of a container
// or why it waits, over a fake Host (the pod's spec, its DaemonSet, the
// node, the objects) and real ConfigVolumes in a temporary directory.
#include <unistd.h>

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "agent/daemon/container_config.h"
#include "platform/atomic_writer.h"
#include "tests/agent/daemon/fake_clock.h"
#include "tests/store/store_fixture.h"

#include <CppUTest/TestHarness.h>

using namespace daemonlet;
using namespace daemonlet::agent;
namespace fs = std::filesystem;

namespace {

// The agent's side: one DaemonSet whose template is the pod's spec, the
// Events recorded, the image ready unless told.
class FakeHost final : public ContainerConfig::Host {
  public:
    explicit FakeHost(const std::string& volume_root) : volumes(volume_root) {
        ds->metadata.namespace_ = "edge";
        ds->metadata.name = "agent";
        ds->object = Json::object();
        node.metadata.name = "board-1";
    }
    PodSpec& spec() { return ds->spec.template_.spec; }
    Container& app() { return spec().containers.at(0); }

    ContainerConfig::PodSource source_of(const PodRecord& /*rec*/) const override {
        if (!spec_known) return {};
        return {std::shared_ptr<const PodSpec>(ds, &ds->spec.template_.spec), &ds->spec.template_.metadata};
    }
    const DaemonSet* daemonset_of(const PodRecord& /*rec*/) const override { return ds.get(); }
    ContainerConfig::NodeFacts node_facts() const override { return {&node, {"10.0.0.2"}, 4, 1 << 30}; }
    const ConfigObjects& config_objects() const override { return objects; }
    std::optional<std::string> api_server() const override { return std::nullopt; }
    ApiAccess* api_access() const override { return api; }
    ConfigVolumes& config_volumes() override { return volumes; }
    bool image_ready(const ImageWaiter& /*w*/, const PodRecord& /*pod*/, const Container& /*spec*/,
                     ContainerStatus& cs) override {
        if (!image_present) cs.reason = "ErrImagePull";
        return image_present;
    }
    void record_config_event(const std::string& ns, const std::string& daemonset, const char* type,
                             const char* reason, const std::string& message) override {
        events.push_back(ns + "/" + daemonset + " " + type + " " + reason + ": " + message);
    }
    void record_pod_warning(const LivePod& /*pod*/, std::optional<std::size_t> index, const char* reason,
                            const std::string& message) override {
        pod_events.push_back((index ? "container " + std::to_string(*index) : std::string("Pod")) + " " +
                             reason + ": " + message);
    }

    std::shared_ptr<DaemonSet> ds = std::make_shared<DaemonSet>();
    bool spec_known = true;
    bool image_present = true;
    ApiAccess* api = nullptr;  // tokens and the cluster's objects; none unless a row makes one
    Node node;
    ConfigObjects objects;
    ConfigVolumes volumes;
    std::vector<std::string> events;
    std::vector<std::string> pod_events;
};

void add_config_map(ConfigObjects& objects, const std::string& name,
                    std::map<std::string, std::string> data) {
    ConfigMap cm;
    cm.metadata.namespace_ = "edge";
    cm.metadata.name = name;
    cm.data = std::move(data);
    objects.config_maps[{"edge", name}] = std::make_shared<const ConfigMap>(cm);
}

EnvVar config_map_key(const std::string& name, const std::string& map, const std::string& key) {
    EnvVar e;
    e.name = name;
    e.value_from.emplace();
    e.value_from->config_map_key = KeySelector{map, key, std::nullopt};
    return e;
}

EnvFromSource config_map_env_from(const std::string& map) {
    EnvFromSource e;
    e.config_map_ref = EnvFromRef{map, std::nullopt};
    return e;
}

}  // namespace

TEST_GROUP(ContainerConfig) {
    std::string root;
    std::unique_ptr<FakeHost> host;
    AgentConfig config;
    std::unique_ptr<ContainerConfig> cc;
    LivePod pod;

    void setup() override {
        char templ[] = "/tmp/daemonlet-ccfg-XXXXXX";
        root = ::mkdtemp(templ);
        host = std::make_unique<FakeHost>(root + "/pod-volumes");
        config.runtime_type = "runc";
        cc = std::make_unique<ContainerConfig>(*host, config);
        Container app;
        app.name = "app";
        app.image = "busybox";
        app.command = {"/bin/agent"};
        host->spec().containers = {app};
        pod.rec.uid = "uid-1";
        pod.rec.name = "agent-x1";
        pod.rec.namespace_ = "edge";
        pod.rec.daemonset = "agent";
        PodTable::add_containers(pod, host->spec());
    }
    void teardown() override {
        std::error_code ec;
        for (const auto& p : fs::directory_iterator(root + "/pod-volumes", ec))
            for (const auto& v : fs::directory_iterator(p.path(), ec))
                (void)platform::remove_volume_dir(v.path().string());
        fs::remove_all(root, ec);
    }
    ContainerStatus& status() { return pod.status(0); }
};

// The pod's spec at its revision is not known now (its DaemonSet rolled
// on): the container waits for the pod's replacement.
TEST(ContainerConfig, APodWhoseSpecIsNotKnownWaitsForItsReplacement) {
    host->spec_known = false;
    CHECK_FALSE(cc->launch(pod, 0).has_value());
    CHECK(status().state == ContainerState::Waiting);
    STRCMP_EQUAL("ContainerCreating", status().reason.c_str());
    STRCMP_EQUAL("waiting for the pod's replacement", status().message.c_str());
    LONGS_EQUAL(0, host->events.size());
}

// kuberuntime startContainer: generateContainerConfig fails on a missing
// configMapKeyRef (makeEnvironmentVariables' error); the container waits
// with CreateContainerConfigError and the kubelet's message, its Event
// recorded once per message, and it starts once the object exists.
TEST(ContainerConfig, AMissingConfigMapKeyRefWaitsWithTheKubeletsMessageAndOneEvent) {
    host->app().env = {config_map_key("LEVEL", "x", "level")};
    CHECK_FALSE(cc->launch(pod, 0).has_value());
    STRCMP_EQUAL("CreateContainerConfigError", status().reason.c_str());
    STRCMP_EQUAL("configmap \"x\" not found", status().message.c_str());
    LONGS_EQUAL(1, host->events.size());
    STRCMP_EQUAL("edge/agent Warning Failed: Error: configmap \"x\" not found (pod agent-x1)",
                 host->events[0].c_str());
    // kuberuntime startContainer's recordContainerEvent: on the Pod too.
    LONGS_EQUAL(1, host->pod_events.size());
    STRCMP_EQUAL("container 0 Failed: Error: configmap \"x\" not found", host->pod_events[0].c_str());

    CHECK_FALSE(cc->launch(pod, 0).has_value());  // the next try: the same message, no second Event
    LONGS_EQUAL(1, host->events.size());

    add_config_map(host->objects, "x", {{"other", "1"}});  // a new message: said again
    CHECK_FALSE(cc->launch(pod, 0).has_value());
    STRCMP_EQUAL("couldn't find key level in ConfigMap edge/x", status().message.c_str());
    LONGS_EQUAL(2, host->events.size());

    LONGS_EQUAL(2, host->pod_events.size());

    add_config_map(host->objects, "x", {{"level", "debug"}, {"1bad", "y"}});
    host->app().env_from = {config_map_env_from("x")};
    auto launch = cc->launch(pod, 0);
    // makeEnvironmentVariables: a key that is not a variable name skipped,
    // its Warning on the Pod itself (kubelet_pods.go).
    LONGS_EQUAL(3, host->pod_events.size());
    STRCMP_EQUAL(
        "Pod InvalidEnvironmentVariableNames: Keys [1bad] from the EnvFrom configMap edge/x were skipped "
        "since "
        "they are considered invalid environment variable names.",
        host->pod_events[2].c_str());
    CHECK(launch.has_value());
    LONGS_EQUAL(2, launch->env.size());  // envFrom's level, then LEVEL
    STRCMP_EQUAL("LEVEL", launch->env[1].first.c_str());
    STRCMP_EQUAL("debug", launch->env[1].second.c_str());
}

// ExpandContainerCommandAndArgs (pkg/kubelet/container/helpers.go): $(VAR)
// in command and args from the resolved env, $$ an escaped $, an undefined
// $(VAR) kept as written; the pod's own spec is not changed.
TEST(ContainerConfig, CommandAndArgsAreExpandedFromTheResolvedEnv) {
    add_config_map(host->objects, "cfg", {{"level", "debug"}});
    EnvVar port;
    port.name = "PORT";
    port.value = "8080";
    host->app().env = {port, config_map_key("LEVEL", "cfg", "level")};
    host->app().command = {"/bin/agent", "--port=$(PORT)"};
    host->app().args = {"--level=$(LEVEL)", "$$(PORT)", "$(UNSET)"};
    auto launch = cc->launch(pod, 0);
    CHECK(launch.has_value());
    const Container& c = *launch->container;
    LONGS_EQUAL(2, c.command.size());
    STRCMP_EQUAL("--port=8080", c.command[1].c_str());
    LONGS_EQUAL(3, c.args.size());
    STRCMP_EQUAL("--level=debug", c.args[0].c_str());
    STRCMP_EQUAL("$(PORT)", c.args[1].c_str());
    STRCMP_EQUAL("$(UNSET)", c.args[2].c_str());
    STRCMP_EQUAL("--level=$(LEVEL)", host->app().args[0].c_str());
}

// makeMounts: a configMap volume's mounter is ReadOnly, so its mount is
// read-only whatever the mount asks; a hostPath mount keeps what it asks.
TEST(ContainerConfig, AConfigMapVolumesMountIsReadOnly) {
    add_config_map(host->objects, "cfg", {{"agent.conf", "level=info\n"}});
    Volume cm;
    cm.name = "config";
    cm.source = Volume::Source::ConfigMap;
    cm.config_map_name = "cfg";
    Volume logs;
    logs.name = "logs";
    logs.source = Volume::Source::HostPath;
    logs.host_path = "/var/log";
    host->spec().volumes = {cm, logs};
    host->app().volume_mounts = {{"config", "/etc/agent", "", false, ""},
                                 {"logs", "/var/log", "", false, ""}};
    auto launch = cc->launch(pod, 0);
    CHECK(launch.has_value());
    LONGS_EQUAL(1, launch->volume_host_paths.count("config"));
    const auto& mounts = launch->container->volume_mounts;
    LONGS_EQUAL(2, mounts.size());
    CHECK_TRUE(mounts[0].read_only);
    CHECK_FALSE(mounts[1].read_only);
    CHECK_FALSE(host->app().volume_mounts[0].read_only);
}

// The exec runtime runs the command on the host and has no image
// entrypoint: a container without one waits with CreateContainerConfigError.
TEST(ContainerConfig, TheExecRuntimeWithoutACommandWaits) {
    config.runtime_type = "exec";
    host->app().command.clear();
    CHECK_FALSE(cc->launch(pod, 0).has_value());
    STRCMP_EQUAL("CreateContainerConfigError", status().reason.c_str());
    STRCMP_CONTAINS("has no image entrypoint: set command", status().message.c_str());

    config.runtime_type = "runc";  // an image runtime has the image's entrypoint
    CHECK(cc->launch(pod, 0).has_value());
}

// terminationGracePeriodSeconds defaults to 30 (the API's default); the
// image's readiness is asked last, and its answer stops the launch.
TEST(ContainerConfig, GraceDefaultsToThirtySecondsAndTheImageIsAskedLast) {
    auto launch = cc->launch(pod, 0);
    CHECK(launch.has_value());
    LONGS_EQUAL(30, launch->grace_seconds);
    host->spec().termination_grace_period_seconds = 5;
    LONGS_EQUAL(5, cc->launch(pod, 0)->grace_seconds);

    host->image_present = false;
    CHECK_FALSE(cc->launch(pod, 0).has_value());
    STRCMP_EQUAL("ErrImagePull", status().reason.c_str());
    host->app().env = {config_map_key("LEVEL", "x", "level")};  // the config is checked before the image
    CHECK_FALSE(cc->launch(pod, 0).has_value());
    STRCMP_EQUAL("CreateContainerConfigError", status().reason.c_str());
}

// The service-account token of a pod that starts without one: with no API
// server configured it never comes (kube-api-access is not mounted), and
// offline at a first boot it comes when the API server answers; either is
// said once per pod (ApiAccess::first_without_cluster, which the notice
// takes: false once it was said), and the container starts.
TEST(ContainerConfig, APodWithoutItsTokenStartsAndIsToldOncePerPod) {
    testing::TempDir dir;
    uv_loop_t loop{};
    uv_loop_init(&loop);
    testing::FakeClock clock;
    auto store = MUST(store::Store::open(dir.file("daemonlet.db"), clock.wall_ms(), nullptr));
    auto api = std::make_unique<ApiAccess>(&loop, *store, clock, nullptr);
    api->set_link(nullptr, "offline");
    host->api = api.get();

    // No API server: the DaemonSet automounts (the default), no token.
    CHECK(cc->launch(pod, 0).has_value());
    CHECK_FALSE(api->first_without_cluster(pod.rec.uid));  // said by the launch

    // Following a cluster, offline, the pod's kube-api-access volume asks a
    // token the store does not have: said for a new pod, once.
    config.api_server.enabled = true;
    Volume v;
    v.name = "kube-api-access-x1";
    v.source = Volume::Source::Projected;
    VolumeProjection token;
    token.service_account_token = ServiceAccountTokenProjection{"", 3607, "token"};
    v.projections = {token};
    host->spec().volumes = {v};
    pod.rec.uid = "uid-2";
    CHECK(cc->launch(pod, 0).has_value());
    CHECK_FALSE(api->first_without_cluster("uid-2"));
    CHECK(api->first_without_cluster("uid-3"));  // another pod is told on its own

    host->api = nullptr;
    api->close();
    uv_run(&loop, UV_RUN_DEFAULT);
    api.reset();
    CHECK_EQUAL(0, uv_loop_close(&loop));
}
