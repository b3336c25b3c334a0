// make_environment_variables and the downward API values, each row naming
// the upstream test or function it pins (pkg/kubelet/kubelet_pods_test.go
// TestMakeEnvironmentVariables, pkg/fieldpath/fieldpath_test.go,
// pkg/api/v1/resource/helpers_test.go).
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "core/pod_env.h"
#include "core/quantity.h"

#include <CppUTest/TestHarness.h>

using namespace daemonlet;

namespace {

Quantity q(const char* s) { return parse_quantity(s).value(); }

ConfigObjects objects() {
    ConfigObjects o;
    ConfigMap cm;
    cm.metadata.namespace_ = "test1";
    cm.metadata.name = "test-configmap";
    cm.data = {{"REPLACE_ME", "FROM_CONFIG_MAP"},
               {"DUPE_TEST", "CONFIG_MAP"},
               {"1234", "abc"},
               {"1z", "abc"},
               {"key", "value"}};
    cm.binary_data = {{"binary", "bytes"}};
    o.config_maps[{"test1", "test-configmap"}] = std::make_shared<const ConfigMap>(cm);
    Secret s;
    s.metadata.namespace_ = "test1";
    s.metadata.name = "test-secret";
    s.data = {{"REPLACE_ME", "FROM_SECRET"}, {"DUPE_TEST", "SECRET"}, {"a!b", "x"}, {"key", "s3cr3t"}};
    o.secrets[{"test1", "test-secret"}] = std::make_shared<const Secret>(s);
    return o;
}

PodFacts facts(const ConfigObjects* o, const PodSpec* spec) {
    PodFacts p;
    p.name = "dapi-test-pod-name";
    p.namespace_ = "test1";
    p.uid = "7e0b1c5e-0000-4000-8000-000000000001";
    p.labels = {{"app", "agent"}, {"tier", "edge"}};
    p.annotations = {{"note", "say \"hi\"\n"}};
    p.service_account_name = "special";
    p.node_name = "node-name";
    p.host_ips = {"5.6.7.8", "fd00::6"};
    p.pod_ips = {"fd00::1", "1.2.3.4"};
    p.allocatable_cpu = q("4");
    p.allocatable_memory = q("4Gi");
    p.objects = o;
    p.spec = spec;
    return p;
}

EnvVar value(const char* n, const char* v) { return EnvVar{n, v, std::nullopt}; }
EnvVar field(const char* n, const char* path) {
    EnvVarSource s;
    s.field_ref = ObjectFieldSelector{"v1", path};
    return EnvVar{n, "", s};
}
EnvVar resource(const char* n, const char* res, std::optional<Quantity> divisor = std::nullopt,
                const char* container = "") {
    EnvVarSource s;
    s.resource_field_ref = ResourceFieldSelector{container, res, divisor};
    return EnvVar{n, "", s};
}
EnvVar cm_key(const char* n, const char* name, const char* key, std::optional<bool> optional = std::nullopt) {
    EnvVarSource s;
    s.config_map_key = KeySelector{name, key, optional};
    return EnvVar{n, "", s};
}
EnvVar secret_key(const char* n, const char* name, const char* key,
                  std::optional<bool> optional = std::nullopt) {
    EnvVarSource s;
    s.secret_key = KeySelector{name, key, optional};
    return EnvVar{n, "", s};
}
EnvFromSource from_cm(const char* name, const char* prefix = "",
                      std::optional<bool> optional = std::nullopt) {
    return EnvFromSource{prefix, EnvFromRef{name, optional}, std::nullopt};
}
EnvFromSource from_secret(const char* name, const char* prefix = "",
                          std::optional<bool> optional = std::nullopt) {
    return EnvFromSource{prefix, std::nullopt, EnvFromRef{name, optional}};
}

using Vars = std::vector<std::pair<std::string, std::string>>;

struct Row {
    const char* name;
    std::function<void(Container&)> setup;
    Vars want = {};          // when error is empty
    std::string error = {};  // the kubelet's message
    std::vector<std::string> warnings = {};
};

const Row kRows[] = {
    {"TestMakeEnvironmentVariables: api server = Y, kubelet = Y: values and $(VAR) expansion",
     [](Container& c) {
         c.env = {value("FOO", "BAR"), value("TEST_SERVICE_HOST", "1.2.3.3"),
                  value("EXPANDED", "$(FOO)-$(NOPE)"), value("ESCAPED", "$$(FOO)")};
     },
     {{"FOO", "BAR"}, {"TEST_SERVICE_HOST", "1.2.3.3"}, {"EXPANDED", "BAR-$(NOPE)"}, {"ESCAPED", "$(FOO)"}}},
    {"TestMakeEnvironmentVariables: downward api pod: every fieldRef the API accepts",
     [](Container& c) {
         c.env = {field("POD_NAME", "metadata.name"),
                  field("POD_NAMESPACE", "metadata.namespace"),
                  field("POD_UID", "metadata.uid"),
                  field("POD_NODE_NAME", "spec.nodeName"),
                  field("POD_SERVICE_ACCOUNT_NAME", "spec.serviceAccountName"),
                  field("POD_IP", "status.podIP"),
                  field("POD_IPS", "status.podIPs"),
                  field("HOST_IP", "status.hostIP"),
                  field("HOST_IPS", "status.hostIPs"),
                  field("APP", "metadata.labels['app']"),
                  field("NOTE", "metadata.annotations['note']"),
                  field("ABSENT", "metadata.labels['absent']")};
     },
     {{"POD_NAME", "dapi-test-pod-name"},
      {"POD_NAMESPACE", "test1"},
      {"POD_UID", "7e0b1c5e-0000-4000-8000-000000000001"},
      {"POD_NODE_NAME", "node-name"},
      {"POD_SERVICE_ACCOUNT_NAME", "special"},
      // sortPodIPs: the node's first family (IPv4) first.
      {"POD_IP", "1.2.3.4"},
      {"POD_IPS", "1.2.3.4,fd00::1"},
      {"HOST_IP", "5.6.7.8"},
      {"HOST_IPS", "5.6.7.8,fd00::6"},
      {"APP", "agent"},
      {"NOTE", "say \"hi\"\n"},
      {"ABSENT", ""}}},
    {"TestMakeEnvironmentVariables: configmapkeyref_missing_optional",
     [](Container& c) { c.env = {cm_key("POD_NAME", "missing-config-map", "key", true)}; },
     {}},
    {"TestMakeEnvironmentVariables: configmapkeyref_missing_key_optional",
     [](Container& c) { c.env = {cm_key("POD_NAME", "test-configmap", "missing-key", true)}; },
     {}},
    {"TestMakeEnvironmentVariables: configmapkeyref: the key's value",
     [](Container& c) { c.env = {cm_key("K", "test-configmap", "key")}; },
     {{"K", "value"}}},
    {"TestMakeEnvironmentVariables: configMapKeyRef reads data only, binaryData is not a value",
     [](Container& c) { c.env = {cm_key("K", "test-configmap", "binary")}; },
     {},
     "couldn't find key binary in ConfigMap test1/test-configmap"},
    {"TestMakeEnvironmentVariables: configmapkeyref_missing: the manager's NotFound",
     [](Container& c) { c.env = {cm_key("K", "missing-config-map", "key")}; },
     {},
     "configmap \"missing-config-map\" not found"},
    {"TestMakeEnvironmentVariables: secretkeyref_missing_optional",
     [](Container& c) { c.env = {secret_key("POD_NAME", "missing-secret", "key", true)}; },
     {}},
    {"TestMakeEnvironmentVariables: secretkeyref_missing_key_optional",
     [](Container& c) { c.env = {secret_key("POD_NAME", "test-secret", "missing-key", true)}; },
     {}},
    {"TestMakeEnvironmentVariables: secretkeyref: the key's bytes",
     [](Container& c) { c.env = {secret_key("S", "test-secret", "key")}; },
     {{"S", "s3cr3t"}}},
    {"TestMakeEnvironmentVariables: secretkeyref_missing_key",
     [](Container& c) { c.env = {secret_key("S", "test-secret", "nope")}; },
     {},
     "couldn't find key nope in Secret test1/test-secret"},
    {"TestMakeEnvironmentVariables: secret missing, not optional",
     [](Container& c) { c.env = {secret_key("S", "missing-secret", "key")}; },
     {},
     "secret \"missing-secret\" not found"},
    {"TestMakeEnvironmentVariables: configmap: envFrom with prefix, then env replaces and expands",
     [](Container& c) {
         c.env_from = {from_cm("test-configmap", "p_")};
         c.env = {value("p_key", "over"), value("EXPANSION_TEST", "$(p_REPLACE_ME)"),
                  value("DUPE_TEST", "ENV_VAR")};
     },
     {{"p_1234", "abc"},
      {"p_1z", "abc"},
      {"p_DUPE_TEST", "CONFIG_MAP"},
      {"p_REPLACE_ME", "FROM_CONFIG_MAP"},
      {"p_key", "over"},
      {"EXPANSION_TEST", "FROM_CONFIG_MAP"},
      {"DUPE_TEST", "ENV_VAR"}}},
    {"TestMakeEnvironmentVariables: configmap allow prefix to start with a digital: invalid keys skipped",
     [](Container& c) { c.env_from = {from_cm("test-configmap")}; },
     {{"DUPE_TEST", "CONFIG_MAP"}, {"REPLACE_ME", "FROM_CONFIG_MAP"}, {"key", "value"}},
     "",
     {"Keys [1234, 1z] from the EnvFrom configMap test1/test-configmap were skipped since they are "
      "considered "
      "invalid environment variable names."}},
    {"TestMakeEnvironmentVariables: configmap_missing_optional",
     [](Container& c) { c.env_from = {from_cm("missing-config-map", "", true)}; },
     {}},
    {"TestMakeEnvironmentVariables: configmap_missing",
     [](Container& c) { c.env_from = {from_cm("missing-config-map")}; },
     {},
     "configmap \"missing-config-map\" not found"},
    {"TestMakeEnvironmentVariables: secret: envFrom, later secret overrides the configmap",
     [](Container& c) {
         c.env_from = {from_cm("test-configmap", "a_"), from_secret("test-secret", "a_")};
     },
     {{"a_1234", "abc"},
      {"a_1z", "abc"},
      {"a_DUPE_TEST", "SECRET"},
      {"a_REPLACE_ME", "FROM_SECRET"},
      {"a_key", "s3cr3t"}},
     "",
     {"Keys [a_a!b] from the EnvFrom secret test1/test-secret were skipped since they are considered invalid "
      "environment variable names."}},
    {"TestMakeEnvironmentVariables: secret_missing_optional",
     [](Container& c) { c.env_from = {from_secret("missing-secret", "", true)}; },
     {}},
    {"TestMakeEnvironmentVariables: secret_missing",
     [](Container& c) { c.env_from = {from_secret("missing-secret")}; },
     {},
     "secret \"missing-secret\" not found"},
    {"containerResourceRuntimeValue: limits and requests, divisor, rounded up",
     [](Container& c) {
         c.resources.limits = {{"cpu", q("1500m")}, {"memory", q("100Mi")}};
         c.resources.requests = {{"cpu", q("250m")}, {"memory", q("1Mi")}};
         c.env = {
             resource("CPU_LIMIT", "limits.cpu"),     resource("CPU_LIMIT_MILLI", "limits.cpu", q("1m")),
             resource("MEM_LIMIT", "limits.memory"),  resource("MEM_LIMIT_MI", "limits.memory", q("1Mi")),
             resource("CPU_REQUEST", "requests.cpu"), resource("MEM_REQUEST_K", "requests.memory", q("1k"))};
     },
     {{"CPU_LIMIT", "2"},
      {"CPU_LIMIT_MILLI", "1500"},
      {"MEM_LIMIT", "104857600"},
      {"MEM_LIMIT_MI", "100"},
      {"CPU_REQUEST", "1"},
      {"MEM_REQUEST_K", "1049"}}},
    {"defaultPodLimitsForDownwardAPI / MergeContainerResourceLimits: no limit is the node's allocatable",
     [](Container& c) {
         c.env = {resource("CPU_LIMIT", "limits.cpu"), resource("MEM_LIMIT_MI", "limits.memory", q("1Mi")),
                  resource("CPU_REQUEST", "requests.cpu")};
     },
     {{"CPU_LIMIT", "4"}, {"MEM_LIMIT_MI", "4096"}, {"CPU_REQUEST", "0"}}},
    {"ExtractResourceValueByContainerName: another container's limit",
     [](Container& c) { c.env = {resource("SIDE_CPU", "limits.cpu", q("1m"), "side")}; },
     {{"SIDE_CPU", "500"}}},
    {"findContainerInPod: an unknown container",
     [](Container& c) { c.env = {resource("X", "limits.cpu", std::nullopt, "nope")}; },
     {},
     "container nope not found"},
};

}  // namespace

TEST_GROUP(PodEnv){};

TEST(PodEnv, MakeEnvironmentVariablesAsTheKubelet) {
    ConfigObjects o = objects();
    PodSpec spec;
    Container side;
    side.name = "side";
    side.resources.limits = {{"cpu", q("500m")}};
    spec.containers = {Container{}, side};
    spec.containers[0].name = "main";
    for (const auto& r : kRows) {
        Container c;
        c.name = "main";
        r.setup(c);
        PodFacts p = facts(&o, &spec);
        auto got = make_environment_variables(p, c);
        if (!r.error.empty()) {
            CHECK_TEXT(!got.ok(), r.name);
            STRCMP_EQUAL_TEXT(r.error.c_str(), got.error().message.c_str(), r.name);
            continue;
        }
        CHECK_TEXT(got.ok(), (std::string(r.name) + ": " + (got.ok() ? "" : got.error().message)).c_str());
        const Vars& vars = got.value().vars;
        LONGS_EQUAL_TEXT(r.want.size(), vars.size(), r.name);
        for (std::size_t i = 0; i < vars.size(); ++i) {
            STRCMP_EQUAL_TEXT(r.want[i].first.c_str(), vars[i].first.c_str(), r.name);
            STRCMP_EQUAL_TEXT(r.want[i].second.c_str(), vars[i].second.c_str(), r.name);
        }
        LONGS_EQUAL_TEXT(r.warnings.size(), got.value().warnings.size(), r.name);
        for (std::size_t i = 0; i < r.warnings.size(); ++i)
            STRCMP_EQUAL_TEXT(r.warnings[i].c_str(), got.value().warnings[i].c_str(), r.name);
    }
}

TEST(PodEnv, NoHostIpIsTheKubeletsError) {
    PodFacts p = facts(nullptr, nullptr);
    p.host_ips.clear();
    auto got = pod_field_value(p, {"v1", "status.hostIP"});
    CHECK(!got.ok());
    STRCMP_EQUAL("host IP unknown; known addresses: []", got.error().message.c_str());
}

TEST(PodEnv, ExtractFieldPathAsStringMatchesFieldpathTest) {
    // pkg/fieldpath/fieldpath_test.go TestExtractFieldPathAsString and
    // TestFormatMap: whole maps as sorted k="v" lines, %q quoting.
    PodFacts p = facts(nullptr, nullptr);
    STRCMP_EQUAL("app=\"agent\"\ntier=\"edge\"", extract_field_path(p, "metadata.labels").value().c_str());
    STRCMP_EQUAL("note=\"say \\\"hi\\\"\\n\"", extract_field_path(p, "metadata.annotations").value().c_str());
    STRCMP_EQUAL("", format_map({}).c_str());
    STRCMP_EQUAL("fieldPath \"metadata.name['x']\" does not support subscript",
                 extract_field_path(p, "metadata.name['x']").error().message.c_str());
    STRCMP_EQUAL("unsupported fieldPath: status.phase",
                 extract_field_path(p, "status.phase").error().message.c_str());
}
