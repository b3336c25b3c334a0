// volume_payload, each row naming the upstream test it pins
// (pkg/volume/configmap/configmap_test.go TestMakePayload,
// pkg/volume/secret/secret_test.go TestMakePayload,
// pkg/volume/downwardapi/downwardapi_test.go, pkg/volume/projected/projected_test.go
// TestCollectDataWith*).
#include <functional>
#include <string>

#include "core/decode.h"
#include "core/volume_payload.h"

#include <CppUTest/TestHarness.h>

using namespace daemonlet;

namespace {

ConfigObjects objects() {
    ConfigObjects o;
    ConfigMap cm;
    cm.metadata.namespace_ = "ns";
    cm.metadata.name = "cm";
    cm.data = {{"foo", "foo"}, {"bar", "bar"}};
    cm.binary_data = {{"bin", std::string("\x00\x01", 2)}};
    o.config_maps[{"ns", "cm"}] = std::make_shared<const ConfigMap>(cm);
    Secret s;
    s.metadata.namespace_ = "ns";
    s.metadata.name = "sec";
    s.data = {{"foo", "foo"}, {"bar", "bar"}};
    o.secrets[{"ns", "sec"}] = std::make_shared<const Secret>(s);
    return o;
}

PodFacts facts(const ConfigObjects* o) {
    PodFacts p;
    p.name = "pod";
    p.namespace_ = "ns";
    p.uid = "uid-1";
    p.labels = {{"key1", "value1"}, {"key2", "value2"}};
    p.annotations = {{"a", "1"}};
    p.allocatable_cpu = parse_quantity("2").value();
    p.allocatable_memory = parse_quantity("1Gi").value();
    p.objects = o;
    return p;
}

Volume config_map(const char* name, std::vector<KeyToPath> items = {}, std::optional<bool> optional = {},
                  std::optional<std::int32_t> mode = {}) {
    Volume v;
    v.name = "v";
    v.source = Volume::Source::ConfigMap;
    v.config_map_name = name;
    v.items = std::move(items);
    v.optional = optional;
    v.default_mode = mode;
    return v;
}
Volume secret(const char* name, std::vector<KeyToPath> items = {}, std::optional<bool> optional = {},
              std::optional<std::int32_t> mode = {}) {
    Volume v = config_map("", std::move(items), optional, mode);
    v.source = Volume::Source::Secret;
    v.secret_name = name;
    return v;
}
DownwardAPIVolumeFile dfield(const char* path, const char* field, std::optional<std::int32_t> mode = {}) {
    return DownwardAPIVolumeFile{path, ObjectFieldSelector{"v1", field}, std::nullopt, mode};
}
Volume downward(std::vector<DownwardAPIVolumeFile> items, std::optional<std::int32_t> mode = {}) {
    Volume v;
    v.name = "v";
    v.source = Volume::Source::DownwardAPI;
    v.downward_api_items = std::move(items);
    v.default_mode = mode;
    return v;
}
Volume projected(std::vector<VolumeProjection> sources, std::optional<std::int32_t> mode = {}) {
    Volume v;
    v.name = "v";
    v.source = Volume::Source::Projected;
    v.projections = std::move(sources);
    v.default_mode = mode;
    return v;
}
VolumeProjection pcm(const char* name, std::vector<KeyToPath> items = {}, std::optional<bool> optional = {}) {
    VolumeProjection s;
    s.config_map = KeyProjection{name, std::move(items), optional};
    return s;
}
VolumeProjection psecret(const char* name, std::vector<KeyToPath> items = {},
                         std::optional<bool> optional = {}) {
    VolumeProjection s;
    s.secret = KeyProjection{name, std::move(items), optional};
    return s;
}

struct Row {
    const char* name;
    Volume volume;
    VolumePayload want;
    std::string error = {};
};

const Row kRows[] = {
    {"configmap TestMakePayload: no overrides",
     config_map("cm"),
     {{"foo", {"foo", 0644}}, {"bar", {"bar", 0644}}, {"bin", {std::string("\x00\x01", 2), 0644}}}},
    {"configmap TestMakePayload: basic 1",
     config_map("cm", {{"foo", "path/to/foo.txt", {}}}),
     {{"path/to/foo.txt", {"foo", 0644}}}},
    {"configmap TestMakePayload: subdirs 2 (two keys)",
     config_map("cm",
                {{"foo", "path/to/1/2/3/foo.txt", {}}, {"bar", "another/path/to/the/esteemed/bar.bin", {}}}),
     {{"path/to/1/2/3/foo.txt", {"foo", 0644}}, {"another/path/to/the/esteemed/bar.bin", {"bar", 0644}}}},
    {"configmap TestMakePayload: a binaryData key by item",
     config_map("cm", {{"bin", "b", {}}}),
     {{"b", {std::string("\x00\x01", 2), 0644}}}},
    {"configmap TestMakePayload: non existent",
     config_map("cm", {{"zab", "path/to/foo.txt", {}}}),
     {},
     "configmap references non-existent config key: zab"},
    {"configmap TestMakePayload: mapping with Mode",
     config_map("cm", {{"foo", "foo.txt", 0555}, {"bar", "bar.bin", 0600}}),
     {{"foo.txt", {"foo", 0555}}, {"bar.bin", {"bar", 0600}}}},
    {"configmap TestMakePayload: mapping with defaultMode",
     config_map("cm", {{"foo", "foo.txt", {}}, {"bar", "bar.bin", {}}}, {}, 0400),
     {{"foo.txt", {"foo", 0400}}, {"bar.bin", {"bar", 0400}}}},
    {"configmap TestMakePayload: optional non existent key", config_map("cm", {{"zab", "z", {}}}, true), {}},
    {"configmap SetUpAt / TestPluginOptional: a missing optional ConfigMap is an empty volume",
     config_map("gone", {}, true),
     {}},
    {"configmap SetUpAt / TestPluginOptional: optional, items of a missing ConfigMap are skipped",
     config_map("gone", {{"foo", "f", {}}}, true),
     {}},
    {"configmap SetUpAt: a missing ConfigMap is the manager's NotFound",
     config_map("gone"),
     {},
     "configmap \"gone\" not found"},
    {"secret TestMakePayload: no overrides, defaultMode",
     secret("sec", {}, {}, 0600),
     {{"foo", {"foo", 0600}}, {"bar", {"bar", 0600}}}},
    {"secret TestMakePayload: non existent",
     secret("sec", {{"zab", "z", {}}}),
     {},
     "references non-existent secret key: zab"},
    {"secret TestMakePayload: optional non existent key", secret("sec", {{"zab", "z", {}}}, true), {}},
    {"secret TestPluginOptional: missing optional Secret", secret("gone", {}, true), {}},
    {"secret SetUpAt: missing Secret", secret("gone"), {}, "secret \"gone\" not found"},
    {"downwardapi TestLabels / TestAnnotations: FormatMap, defaultMode and item mode",
     downward({dfield("labels", "metadata.labels"), dfield("annotations", "metadata.annotations", 0400),
               dfield("./sub/../name", "metadata.name"), dfield("ns", "metadata.namespace"),
               dfield("uid", "metadata.uid"), dfield("one", "metadata.labels['key2']")},
              0600),
     {{"labels", {"key1=\"value1\"\nkey2=\"value2\"", 0600}},
      {"annotations", {"a=\"1\"", 0400}},
      {"name", {"pod", 0600}},
      {"ns", {"ns", 0600}},
      {"uid", {"uid-1", 0600}},
      {"one", {"value2", 0600}}}},
    {"downwardapi CollectData / ExtractResourceValueByContainerNameAndNodeAllocatable: no limit is "
     "allocatable",
     [] {
         DownwardAPIVolumeFile f{
             "cpu", std::nullopt, ResourceFieldSelector{"", "limits.cpu", std::nullopt}, {}};
         DownwardAPIVolumeFile m{"mem",
                                 std::nullopt,
                                 ResourceFieldSelector{"", "limits.memory", parse_quantity("1Mi").value()},
                                 {}};
         return downward({f, m});
     }(),
     {{"cpu", {"2", 0644}}, {"mem", {"1024", 0644}}}},
    {"projected TestCollectDataWithConfigMap / WithSecret: sources merged, the volume's defaultMode",
     projected({pcm("cm", {{"foo", "cm/foo", {}}}), psecret("sec", {{"bar", "s/bar", 0400}})}, 0440),
     {{"cm/foo", {"foo", 0440}}, {"s/bar", {"bar", 0400}}}},
    {"projected TestCollectDataWithDownwardAPI",
     [] {
         VolumeProjection d;
         d.downward_api = std::vector<DownwardAPIVolumeFile>{dfield("podname", "metadata.name")};
         return projected({d});
     }(),
     {{"podname", {"pod", 0644}}}},
    {"projected collectData: a serviceAccountToken source projects nothing here and does not fail",
     [] {
         VolumeProjection t;
         t.service_account_token = ServiceAccountTokenProjection{"", 3600, "token"};
         return projected({t, pcm("cm", {{"foo", "f", {}}})});
     }(),
     {{"f", {"foo", 0644}}}},
    {"projected collectData: optional missing sources are skipped",
     projected({pcm("gone", {}, true), psecret("gone", {{"x", "x", {}}}, true)}),
     {}},
    {"projected collectData: the failing sources' errors aggregated as [a, b]",
     projected({pcm("gone"), psecret("sec"), psecret("nope")}),
     {},
     "[configmap \"gone\" not found, secret \"nope\" not found]"},
};

}  // namespace

TEST_GROUP(VolumePayload){};

TEST(VolumePayload, MatchesTheKubeletsPlugins) {
    ConfigObjects o = objects();
    PodFacts p = facts(&o);
    for (const auto& r : kRows) {
        auto got = volume_payload(r.volume, p);
        if (!r.error.empty()) {
            CHECK_TEXT(!got.ok(), r.name);
            STRCMP_EQUAL_TEXT(r.error.c_str(), got.error().message.c_str(), r.name);
            continue;
        }
        CHECK_TEXT(got.ok(), (std::string(r.name) + ": " + (got.ok() ? "" : got.error().message)).c_str());
        LONGS_EQUAL_TEXT(r.want.size(), got.value().size(), r.name);
        for (const auto& [path, f] : r.want) {
            auto it = got.value().find(path);
            CHECK_TEXT(it != got.value().end(), (std::string(r.name) + ": no " + path).c_str());
            CHECK_TEXT(it->second.data == f.data, (std::string(r.name) + ": data of " + path).c_str());
            LONGS_EQUAL_TEXT(f.mode, it->second.mode, (std::string(r.name) + ": mode of " + path).c_str());
        }
    }
}

// pkg/volume/volume_linux.go SetVolumeOwnership, its changeFilePermission:
// mode | rwMask 0660, roMask 0440 for a read-only volume; a directory also
// execMask 0110 and setgid.
TEST(VolumePayload, VolumeOwnershipModeIsChangeFilePermissions) {
    struct Row {
        const char* name;
        std::uint32_t mode;
        bool is_dir, read_only;
        std::uint32_t want;
    } rows[] = {
        {"read-only file 0644 (configMap default): roMask adds nothing", 0644, false, true, 0644},
        {"read-only file 0400 (secret defaultMode 0400): 0440", 0400, false, true, 0440},
        {"read-only file 0600 (token with fsGroup, collectData): 0640", 0600, false, true, 0640},
        {"read-only file 0000: 0440", 0000, false, true, 0440},
        {"read-only file 0755 keeps its exec bits: no execMask for files", 0755, false, true, 0755},
        {"read-only directory 0755 (atomic writer's timestamp dir): setgid 02755", 0755, true, true, 02755},
        {"read-only directory 0700 (secret dir without tmpfs): 02750", 0700, true, true, 02750},
        {"read-write file 0644 (emptyDir): rwMask 0664", 0644, false, false, 0664},
        {"read-write file 0700: 0760, no group exec added", 0700, false, false, 0760},
        {"read-write directory 0777 (emptyDir): 02777", 0777, true, false, 02777},
        {"read-write directory 0700: 02770", 0700, true, false, 02770},
    };
    for (const auto& r : rows)
        LONGS_EQUAL_TEXT(r.want, volume_ownership_mode(r.mode, r.is_dir, r.read_only), r.name);
}

TEST(VolumePayload, SecretsGoOnTmpfs) {
    CHECK(holds_secrets(secret("s")));
    CHECK(!holds_secrets(config_map("c")));
    CHECK(holds_secrets(projected({pcm("c"), psecret("s")})));
    CHECK(!holds_secrets(projected({pcm("c")})));
    CHECK(has_payload(downward({})));
    Volume host;
    host.source = Volume::Source::HostPath;
    CHECK(!has_payload(host));
}

TEST(VolumePayload, DecodesEverySourceAndEnvReferenceTyped) {
    // The typed model is what the payload and env resolution read: every
    // field of configMap, secret, downwardAPI, projected, env key refs and
    // envFrom comes out of the document.
    Json ds = Json::parse(R"({"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "d"},
      "spec": {"selector": {"matchLabels": {"a": "b"}}, "template": {"metadata": {"labels": {"a": "b"}},
      "spec": {"containers": [{"name": "c", "image": "i",
        "env": [{"name": "K", "valueFrom": {"configMapKeyRef": {"name": "cm", "key": "k", "optional": true}}},
                {"name": "S", "valueFrom": {"secretKeyRef": {"name": "s", "key": "p"}}}],
        "envFrom": [{"prefix": "P_", "configMapRef": {"name": "cm"}}, {"secretRef": {"name": "s", "optional": false}}]}],
      "volumes": [
        {"name": "a", "configMap": {"name": "cm", "items": [{"key": "k", "path": "p", "mode": 256}],
                                    "defaultMode": 420, "optional": true}},
        {"name": "b", "secret": {"secretName": "s", "defaultMode": 384}},
        {"name": "c", "downwardAPI": {"items": [{"path": "l", "fieldRef": {"fieldPath": "metadata.labels"}},
           {"path": "cpu", "resourceFieldRef": {"containerName": "c", "resource": "limits.cpu", "divisor": "1m"}, "mode": 292}]}},
        {"name": "d", "projected": {"defaultMode": 288, "sources": [
           {"configMap": {"name": "cm", "optional": true}}, {"secret": {"name": "s", "items": [{"key": "x", "path": "y"}]}},
           {"downwardAPI": {"items": [{"path": "n", "fieldRef": {"fieldPath": "metadata.name"}}]}},
           {"serviceAccountToken": {"path": "token", "expirationSeconds": 3600, "audience": "api"}}]}}]}}}})");
    DaemonSet out;
    FieldErrors errs = decode_daemonset(ds, out);
    CHECK(errs.empty());
    const PodSpec& spec = out.spec.template_.spec;
    const Container& c = spec.containers.at(0);
    CHECK(c.env.at(0).value_from->config_map_key->optional == true);
    STRCMP_EQUAL("k", c.env.at(0).value_from->config_map_key->key.c_str());
    STRCMP_EQUAL("s", c.env.at(1).value_from->secret_key->name.c_str());
    LONGS_EQUAL(2, c.env_from.size());
    STRCMP_EQUAL("P_", c.env_from[0].prefix.c_str());
    STRCMP_EQUAL("cm", c.env_from[0].config_map_ref->name.c_str());
    CHECK(c.env_from[1].secret_ref->optional == false);
    const Volume& a = spec.volumes.at(0);
    CHECK(a.source == Volume::Source::ConfigMap);
    LONGS_EQUAL(0644, *a.default_mode);
    LONGS_EQUAL(0400, *a.items.at(0).mode);
    CHECK(a.optional == true);
    LONGS_EQUAL(0600, *spec.volumes.at(1).default_mode);
    const Volume& d = spec.volumes.at(2);
    CHECK(d.source == Volume::Source::DownwardAPI);
    STRCMP_EQUAL("1m", d.downward_api_items.at(1).resource_field_ref->divisor->text.c_str());
    LONGS_EQUAL(0444, *d.downward_api_items.at(1).mode);
    const Volume& p = spec.volumes.at(3);
    CHECK(p.source == Volume::Source::Projected);
    LONGS_EQUAL(4, p.projections.size());
    CHECK(p.projections[0].config_map->optional == true);
    STRCMP_EQUAL("y", p.projections[1].secret->items.at(0).path.c_str());
    STRCMP_EQUAL("n", p.projections[2].downward_api->at(0).path.c_str());
    LONGS_EQUAL(3600, *p.projections[3].service_account_token->expiration_seconds);
    LONGS_EQUAL(0440, *p.default_mode);
}
