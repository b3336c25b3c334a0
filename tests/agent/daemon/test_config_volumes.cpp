// ConfigVolumes (agent/daemon/config_volumes.h) over a real directory, with
// the ConfigMaps and Secrets injected: what a pod's config volumes hold at
// its start, a missing Secret's error, a ConfigMap edit rewritten in place,
// and the pod's removal.
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>

#include "agent/daemon/config_volumes.h"
#include "platform/atomic_writer.h"

#include "tests/file_text.h"

#include <CppUTest/TestHarness.h>

using namespace daemonlet;
using daemonlet::agent::ConfigVolumes;
using daemonlet::testing::mode_of;
using daemonlet::testing::slurp;
namespace fs = std::filesystem;

namespace {

std::shared_ptr<const PodSpec> spec() {
    auto s = std::make_shared<PodSpec>();
    Volume cm;
    cm.name = "config";
    cm.source = Volume::Source::ConfigMap;
    cm.config_map_name = "agent-config";
    Volume sec;
    sec.name = "creds";
    sec.source = Volume::Source::Secret;
    sec.secret_name = "agent-creds";
    sec.default_mode = 0400;
    Volume down;
    down.name = "podinfo";
    down.source = Volume::Source::DownwardAPI;
    down.downward_api_items = {{"labels", ObjectFieldSelector{"v1", "metadata.labels"}, std::nullopt, {}}};
    Volume host;
    host.name = "host";
    host.source = Volume::Source::HostPath;
    host.host_path = "/var/log";
    s->volumes = {cm, sec, down, host};
    return s;
}

ConfigMap config_map(const char* value) {
    ConfigMap cm;
    cm.metadata.namespace_ = "edge";
    cm.metadata.name = "agent-config";
    cm.data = {{"agent.conf", value}};
    return cm;
}

}  // namespace

TEST_GROUP(ConfigVolumes) {
    std::string root;
    void setup() override {
        char templ[] = "/tmp/daemonlet-cfgvol-XXXXXX";
        root = ::mkdtemp(templ);
    }
    void teardown() override {
        // A secret volume is a tmpfs when the tests run as root.
        std::error_code ec;
        for (const auto& pod : fs::directory_iterator(root + "/pod-volumes", ec))
            for (const auto& v : fs::directory_iterator(pod.path(), ec))
                (void)platform::remove_volume_dir(v.path().string());
        fs::remove_all(root, ec);
    }
    PodFacts facts(const ConfigObjects& objects) {
        PodFacts f;
        f.name = "agent-x1";
        f.namespace_ = "edge";
        f.uid = "uid-1";
        f.labels = {{"app", "agent"}};
        f.objects = &objects;
        return f;
    }
};

TEST(ConfigVolumes, AMissingSecretIsTheKubeletsErrorAndItsArrivalWritesTheVolumes) {
    ConfigObjects objects;
    objects.config_maps[{"edge", "agent-config"}] =
        std::make_shared<const ConfigMap>(config_map("level=info\n"));
    ConfigVolumes volumes(root + "/pod-volumes");
    auto first = volumes.prepare(facts(objects), spec());
    CHECK_FALSE(first.ok());
    STRCMP_EQUAL("secret \"agent-creds\" not found", first.error().message.c_str());

    Secret s;
    s.metadata.namespace_ = "edge";
    s.metadata.name = "agent-creds";
    s.data = {{"token", "t0k3n"}};
    objects.secrets[{"edge", "agent-creds"}] = std::make_shared<const Secret>(s);
    auto again = volumes.prepare(facts(objects), spec());
    CHECK_TEXT(again.ok(), again.ok() ? "" : again.error().message.c_str());
    const auto& paths = again.value();
    LONGS_EQUAL(3, paths.size());  // hostPath is the runtime's
    std::string config = paths.at("config"), creds = paths.at("creds"), info = paths.at("podinfo");
    STRCMP_EQUAL(volumes.dir_of("uid-1", "config").c_str(), config.c_str());
    STRCMP_EQUAL("level=info\n", slurp(config + "/agent.conf").c_str());
    LONGS_EQUAL(0644, mode_of(config + "/agent.conf"));
    STRCMP_EQUAL("t0k3n", slurp(creds + "/token").c_str());
    LONGS_EQUAL(0400, mode_of(creds + "/token"));
    // Root: a tmpfs of its own; otherwise a 0700 directory.
    if (::geteuid() == 0) {
        struct statfs sf {};
        CHECK_EQUAL(0, ::statfs(creds.c_str(), &sf));
        CHECK_EQUAL(0x01021994, static_cast<long>(sf.f_type));  // TMPFS_MAGIC
    } else {
        LONGS_EQUAL(0700, mode_of(creds));
    }
    STRCMP_EQUAL("app=\"agent\"", slurp(info + "/labels").c_str());
}

TEST(ConfigVolumes, AConfigMapEditIsRewrittenInPlaceAndTheRemovalKeepsTheLastContent) {
    ConfigObjects objects;
    objects.config_maps[{"edge", "agent-config"}] = std::make_shared<const ConfigMap>(config_map("v1"));
    objects.secrets[{"edge", "agent-creds"}] = std::make_shared<const Secret>(Secret{});
    ConfigVolumes volumes(root + "/pod-volumes");
    auto paths = volumes.prepare(facts(objects), spec());
    CHECK(paths.ok());
    std::string file = paths.value().at("config") + "/agent.conf";
    STRCMP_EQUAL("v1", slurp(file).c_str());
    std::string data_dir = fs::read_symlink(paths.value().at("config") + "/..data").string();

    // Nothing changed: nothing written.
    CHECK(volumes.rewrite(objects).empty());
    STRCMP_EQUAL(data_dir.c_str(), fs::read_symlink(paths.value().at("config") + "/..data").c_str());

    objects.config_maps[{"edge", "agent-config"}] = std::make_shared<const ConfigMap>(config_map("v2"));
    CHECK(volumes.rewrite(objects).empty());
    STRCMP_EQUAL("v2", slurp(file).c_str());

    // The ConfigMap deleted: the volume keeps its last content (the kubelet
    // fails the remount and leaves the files), and the problem is said.
    objects.config_maps.clear();
    auto problems = volumes.rewrite(objects);
    LONGS_EQUAL(1, problems.size());
    STRCMP_EQUAL("pod edge/agent-x1: configmap \"agent-config\" not found", problems[0].c_str());
    STRCMP_EQUAL("v2", slurp(file).c_str());
}

TEST(ConfigVolumes, ForgetRemovesThePodsVolumes) {
    ConfigObjects objects;
    objects.config_maps[{"edge", "agent-config"}] = std::make_shared<const ConfigMap>(config_map("v1"));
    objects.secrets[{"edge", "agent-creds"}] = std::make_shared<const Secret>(Secret{});
    ConfigVolumes volumes(root + "/pod-volumes");
    CHECK(volumes.prepare(facts(objects), spec()).ok());
    CHECK(fs::exists(root + "/pod-volumes/uid-1/config"));
    CHECK(volumes.knows("uid-1"));
    CHECK(volumes.forget("uid-1").ok());
    CHECK_FALSE(volumes.knows("uid-1"));
    CHECK_FALSE(fs::exists(root + "/pod-volumes/uid-1"));
    // Forgotten: a later change writes nothing for it.
    objects.config_maps[{"edge", "agent-config"}] = std::make_shared<const ConfigMap>(config_map("v2"));
    CHECK(volumes.rewrite(objects).empty());
    CHECK_FALSE(fs::exists(root + "/pod-volumes/uid-1"));
}

TEST(ConfigVolumes, SweepRemovesThePodsThatAreGone) {
    ConfigObjects objects;
    objects.config_maps[{"edge", "agent-config"}] = std::make_shared<const ConfigMap>(config_map("v1"));
    objects.secrets[{"edge", "agent-creds"}] = std::make_shared<const Secret>(Secret{});
    ConfigVolumes volumes(root + "/pod-volumes");
    CHECK(volumes.prepare(facts(objects), spec()).ok());
    PodFacts other = facts(objects);
    other.uid = "uid-2";
    CHECK(volumes.prepare(other, spec()).ok());
    // A new agent: it knows neither, and uid-2 alone still runs.
    ConfigVolumes next(root + "/pod-volumes");
    next.sweep({"uid-2"});
    CHECK_FALSE(fs::exists(root + "/pod-volumes/uid-1"));
    CHECK(fs::exists(root + "/pod-volumes/uid-2/config/agent.conf"));
    CHECK(next.forget("uid-2").ok());
    CHECK_FALSE(fs::exists(root + "/pod-volumes/uid-2"));
}
