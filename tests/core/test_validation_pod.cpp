// Pod template validation inside a DaemonSet, rows from
// pkg/apis/core/validation/validation_test.go: TestValidateContainers,
// TestValidateInitContainers, TestValidatePorts, TestValidateEnv,
// TestValidateProbe / TestValidateHandler / TestValidateLifecycle,
// TestValidateResourceRequirements, TestValidateVolumes, TestValidateVolumeMounts,
// TestValidatePodSpec, and the rules of the functions they exercise.
#include <string>
#include <vector>

#include "core/validation.h"
#include "tests/core/validation_fixture.h"

// CppUTest last: its leak detector redefines operator new.
#include <CppUTest/TestHarness.h>

using namespace daemonlet;
using namespace daemonlet::testing;

namespace {

using DsRow = Row<DaemonSet>;

void check(const DsRow* rows, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) {
        DaemonSet ds = valid_daemonset();
        rows[i].mutate(ds);
        STRCMP_EQUAL_TEXT(error_lines(rows[i].expected).c_str(), error_lines(validate_daemonset(ds)).c_str(),
                          rows[i].name);
    }
}

const std::string kSpec = "spec.template.spec.";
const std::string kC0 = "spec.template.spec.containers[0].";

Container named(const char* name) {
    Container c = valid_daemonset().spec.template_.spec.containers[0];
    c.name = name;
    return c;
}

// The template's spec as written, for the fields the typed model does not keep.
void set_raw_pod_spec(DaemonSet& ds, Json spec) {
    ds.object = Json{{"spec", {{"template", {{"spec", std::move(spec)}}}}}};
}

Probe exec_probe() {
    Probe p;
    p.handler.exec = ExecAction{{"cat", "/tmp/healthy"}};
    return p;
}

Probe http_probe(IntOrString port) {
    Probe p;
    p.handler.http_get = HTTPGetAction{"/healthz", port, "", "HTTP", {}};
    return p;
}

Volume raw_volume(Volume::Source source, Json raw) {
    Volume v;
    v.name = raw.value("name", "");
    v.source = source;
    v.raw = std::move(raw);
    return v;
}

// ---- containers -------------------------------------------------------------

const DsRow kContainerRows[] = {
    {"TestValidateContainers success: a second container with another name",
     [](DaemonSet& ds) { pod_spec(ds).containers.push_back(named("life-123")); },
     {}},
    {"TestValidateContainers success: imagePullPolicy Always",
     [](DaemonSet& ds) { first_container(ds).image_pull_policy = "Always"; },
     {}},
    {"TestValidateContainers success: imagePullPolicy Never",
     [](DaemonSet& ds) { first_container(ds).image_pull_policy = "Never"; },
     {}},
    {"TestValidateContainers success: terminationMessagePolicy FallbackToLogsOnError",
     [](DaemonSet& ds) { first_container(ds).termination_message_policy = "FallbackToLogsOnError"; },
     {}},
    {"ValidateSecurityContext: privileged is allowed (--allow-privileged=true)",
     [](DaemonSet& ds) {
         first_container(ds).security_context =
             SecurityContext{true, 0, 0, {}, {}, {}, {"NET_ADMIN"}, {}, {}, {}};
     },
     {}},
    {"TestValidateInitContainers success: an init container with its own name",
     [](DaemonSet& ds) { pod_spec(ds).init_containers.push_back(named("init")); },
     {}},
    {"TestValidateInitContainers success: a sidecar (restartPolicy Always) may have probes and hooks",
     [](DaemonSet& ds) {
         Container c = named("sidecar");
         c.liveness_probe = exec_probe();
         c.lifecycle = Lifecycle{std::nullopt, Handler{ExecAction{{"sleep", "1"}}, {}, {}, {}, {}}};
         pod_spec(ds).init_containers.push_back(c);
         set_raw_pod_spec(
             ds, {{"initContainers", Json::array({{{"name", "sidecar"}, {"restartPolicy", "Always"}}})}});
     },
     {}},

    {"TestValidateContainers: zero-length name",
     [](DaemonSet& ds) { first_container(ds).name = ""; },
     {kC0 + "name: Required value"}},
    {"TestValidateContainers: name > 63 characters",
     [](DaemonSet& ds) { first_container(ds).name = std::string(64, 'a'); },
     {kC0 + "name: Invalid value: \"" + std::string(64, 'a') + "\": must be no more than 63 characters"}},
    {"TestValidateContainers: name not a DNS label",
     [](DaemonSet& ds) { first_container(ds).name = "a.b.c"; },
     {kC0 + "name: Invalid value: \"a.b.c\": must not contain dots"}},
    {"TestValidateContainers: name with upper case",
     [](DaemonSet& ds) { first_container(ds).name = "Abc"; },
     {kC0 + "name: Invalid value: \"Abc\": " + kDnsLabelMsg}},
    {"TestValidateContainers: name not unique",
     [](DaemonSet& ds) { pod_spec(ds).containers.push_back(named("abc")); },
     {kSpec + "containers[1].name: Duplicate value: \"abc\""}},
    {"TestValidateContainers: zero-length image",
     [](DaemonSet& ds) { first_container(ds).image = ""; },
     {kC0 + "image: Required value"}},
    {"TestValidateContainers: invalid image pull policy",
     [](DaemonSet& ds) { first_container(ds).image_pull_policy = "Sometimes"; },
     {kC0 + "imagePullPolicy: Unsupported value: \"Sometimes\": supported values: \"Always\", "
            "\"IfNotPresent\", \"Never\""}},
    {"validatePullPolicy: empty (not defaulted) is required",
     [](DaemonSet& ds) { first_container(ds).image_pull_policy = ""; },
     {kC0 + "imagePullPolicy: Required value"}},
    {"TestValidateContainers: invalid termination message policy",
     [](DaemonSet& ds) { first_container(ds).termination_message_policy = "Unknown"; },
     {kC0 + "terminationMessagePolicy: Unsupported value: \"Unknown\": supported values: \"File\", "
            "\"FallbackToLogsOnError\""}},
    {"TestValidateInitContainers: name clashes with a container",
     [](DaemonSet& ds) { pod_spec(ds).init_containers.push_back(named("abc")); },
     {kSpec + "initContainers[0].name: Duplicate value: \"abc\""}},
    {"TestValidateInitContainers: liveness probe on an init container",
     [](DaemonSet& ds) {
         Container c = named("init");
         c.liveness_probe = exec_probe();
         pod_spec(ds).init_containers.push_back(c);
     },
     {kSpec + "initContainers[0].livenessProbe: Forbidden: may not be set for init containers without "
              "restartPolicy=Always"}},
    {"TestValidateInitContainers: lifecycle on an init container",
     [](DaemonSet& ds) {
         Container c = named("init");
         c.lifecycle = Lifecycle{Handler{ExecAction{{"true"}}, {}, {}, {}, {}}, std::nullopt};
         pod_spec(ds).init_containers.push_back(c);
     },
     {kSpec + "initContainers[0].lifecycle: Forbidden: may not be set for init containers without "
              "restartPolicy=Always"}},
    {"validateInitContainerRestartPolicy: only Always",
     [](DaemonSet& ds) {
         pod_spec(ds).init_containers.push_back(named("init"));
         set_raw_pod_spec(
             ds, {{"initContainers", Json::array({{{"name", "init"}, {"restartPolicy", "OnFailure"}}})}});
     },
     {kSpec +
      "initContainers[0].restartPolicy: Unsupported value: \"OnFailure\": supported values: \"Always\""}},
    {"validateContainers: restartPolicy on a regular container",
     [](DaemonSet& ds) {
         set_raw_pod_spec(ds,
                          {{"containers", Json::array({{{"name", "abc"}, {"restartPolicy", "Always"}}})}});
     },
     {kC0 + "restartPolicy: Forbidden: may not be set for non-init containers"}},
    {"ValidateSecurityContext: negative runAsUser",
     [](DaemonSet& ds) {
         first_container(ds).security_context = SecurityContext{{}, -1, {}, {}, {}, {}, {}, {}, {}, {}};
     },
     {kC0 + "securityContext.runAsUser: Invalid value: -1: must be between 0 and 2147483647, inclusive"}},
    {"ValidateSecurityContext: runAsGroup above 2^31-1",
     [](DaemonSet& ds) {
         first_container(ds).security_context =
             SecurityContext{{}, {}, 2147483648LL, {}, {}, {}, {}, {}, {}, {}};
     },
     {kC0 +
      "securityContext.runAsGroup: Invalid value: 2147483648: must be between 0 and 2147483647, inclusive"}},
    {"validatePodSpecSecurityContext: fsGroup and supplementalGroups in range (IsValidGroupID)",
     [](DaemonSet& ds) {
         auto& sc = ds.spec.template_.spec.security_context.emplace();
         sc.fs_group = -1;
         sc.supplemental_groups = {1, 2147483648LL};
     },
     {kSpec + "securityContext.fsGroup: Invalid value: -1: must be between 0 and 2147483647, inclusive",
      kSpec + "securityContext.supplementalGroups[1]: Invalid value: 2147483648: must be between 0 and "
              "2147483647, inclusive"}},
    {"validateSeccompProfileField: Localhost needs localhostProfile",
     [](DaemonSet& ds) {
         ds.spec.template_.spec.security_context.emplace().seccomp_profile = SeccompProfile{"Localhost", ""};
     },
     {kSpec +
      "securityContext.seccompProfile.localhostProfile: Required value: must be set when seccomp type "
      "is Localhost"}},
    {"validateSeccompProfileField: localhostProfile may not leave the root (validateLocalDescendingPath)",
     [](DaemonSet& ds) {
         first_container(ds).security_context.emplace().seccomp_profile =
             SeccompProfile{"Localhost", "../x.json"};
     },
     {kC0 + "securityContext.seccompProfile.localhostProfile: Invalid value: \"../x.json\": must not contain "
            "'..'"}},
    {"validateSeccompProfileField: an unknown type",
     [](DaemonSet& ds) {
         first_container(ds).security_context.emplace().seccomp_profile = SeccompProfile{"Strict", ""};
     },
     {kC0 + "securityContext.seccompProfile.type: Unsupported value: \"Strict\": supported values: "
            "\"Localhost\", \"RuntimeDefault\", \"Unconfined\""}},
    {"ValidateSecurityContext: allowPrivilegeEscalation false with privileged",
     [](DaemonSet& ds) {
         first_container(ds).security_context = SecurityContext{true, {}, {}, {}, {}, false, {}, {}, {}, {}};
     },
     {kC0 +
      "securityContext: Invalid value: {\"privileged\":true,\"allowPrivilegeEscalation\":false}: cannot set "
      "`allowPrivilegeEscalation` to false and `privileged` to true"}},
    {"ValidateSecurityContext: allowPrivilegeEscalation false with CAP_SYS_ADMIN",
     [](DaemonSet& ds) {
         first_container(ds).security_context =
             SecurityContext{{}, {}, {}, {}, {}, false, {"CAP_SYS_ADMIN"}, {}, {}, {}};
     },
     {kC0 + "securityContext: Invalid value: {\"allowPrivilegeEscalation\":false,\"capabilities\":{\"add\":"
            "[\"CAP_SYS_ADMIN\"],\"drop\":[]}}: cannot set `allowPrivilegeEscalation` to false and "
            "`capabilities.Add` "
            "CAP_SYS_ADMIN"}},
};

// ---- ports ------------------------------------------------------------------

#define PORTS(...) [](DaemonSet& ds) { first_container(ds).ports = {__VA_ARGS__}; }

const DsRow kPortRows[] = {
    {"TestValidatePorts success: abc 80/80 TCP, easy 82 TCP, as 83 UDP, do-re-me 84 SCTP, 85 TCP",
     PORTS({"abc", 80, 80, "TCP", ""}, {"easy", 82, 0, "TCP", ""}, {"as", 83, 0, "UDP", ""},
           {"do-re-me", 84, 0, "SCTP", ""}, {"", 85, 0, "TCP", ""}),
     {}},
    {"TestValidatePorts: name > 15 characters",
     PORTS({std::string(16, 'a'), 80, 0, "TCP", ""}),
     {kC0 + "ports[0].name: Invalid value: \"" + std::string(16, 'a') +
      "\": must be no more than 15 characters"}},
    {"TestValidatePorts: name contains invalid characters",
     PORTS({"a.b.c", 80, 0, "TCP", ""}),
     {kC0 +
      "ports[0].name: Invalid value: \"a.b.c\": must contain only alpha-numeric characters (a-z, 0-9), and "
      "hyphens (-)"}},
    {"TestValidatePorts: name is a number",
     PORTS({"80", 80, 0, "TCP", ""}),
     {kC0 + "ports[0].name: Invalid value: \"80\": must contain at least one letter (a-z)"}},
    {"TestValidatePorts: name not unique",
     PORTS({"abc", 80, 0, "TCP", ""}, {"abc", 81, 0, "TCP", ""}),
     {kC0 + "ports[1].name: Duplicate value: \"abc\""}},
    {"TestValidatePorts: zero container port",
     PORTS({"abc", 0, 0, "TCP", ""}),
     {kC0 + "ports[0].containerPort: Required value"}},
    {"TestValidatePorts: invalid container port",
     PORTS({"abc", 65536, 0, "TCP", ""}),
     {kC0 + "ports[0].containerPort: Invalid value: 65536: must be between 1 and 65535, inclusive"}},
    {"TestValidatePorts: invalid host port",
     PORTS({"abc", 80, 65536, "TCP", ""}),
     {kC0 + "ports[0].hostPort: Invalid value: 65536: must be between 1 and 65535, inclusive"}},
    {"TestValidatePorts: invalid protocol case",
     PORTS({"abc", 80, 0, "tcp", ""}),
     {kC0 + "ports[0].protocol: Unsupported value: \"tcp\": supported values: \"SCTP\", \"TCP\", \"UDP\""}},
    {"TestValidatePorts: invalid protocol",
     PORTS({"abc", 80, 0, "asdf", ""}),
     {kC0 + "ports[0].protocol: Unsupported value: \"asdf\": supported values: \"SCTP\", \"TCP\", \"UDP\""}},
    {"TestValidatePorts: protocol required",
     PORTS({"abc", 80, 0, "", ""}),
     {kC0 + "ports[0].protocol: Required value"}},
    {"AccumulateUniqueHostPorts: the same port with another protocol or host IP is fine",
     PORTS({"", 53, 53, "TCP", ""}, {"", 53, 53, "UDP", ""}, {"", 54, 53, "TCP", "10.0.0.1"}),
     {}},
    {"AccumulateUniqueHostPorts: two containers on the same host port",
     [](DaemonSet& ds) {
         first_container(ds).ports = {{"", 8080, 8080, "TCP", ""}};
         Container c = named("other");
         c.ports = {{"", 8081, 8080, "TCP", ""}};
         pod_spec(ds).containers.push_back(c);
     },
     {kSpec + "containers[1].ports[0].hostPort: Duplicate value: \"TCP//8080\""}},
    {"checkHostPortConflicts: init containers run one by one, so they may share host ports with each other",
     [](DaemonSet& ds) {
         Container a = named("init-a"), b = named("init-b");
         a.ports = b.ports = {{"", 9000, 9000, "TCP", ""}};
         pod_spec(ds).init_containers = {a, b};
     },
     {}},
    {"checkHostPortConflicts: a clash inside one init container is reported at index 0",
     [](DaemonSet& ds) {
         Container a = named("init-a"), b = named("init-b");
         b.ports = {{"", 9000, 9000, "TCP", ""}, {"", 9001, 9000, "TCP", ""}};
         pod_spec(ds).init_containers = {a, b};
     },
     {kSpec + "initContainers[0].ports[1].hostPort: Duplicate value: \"TCP//9000\""}},
    {"validatePodHostNetworkDeps: hostPort must match containerPort with hostNetwork",
     [](DaemonSet& ds) {
         pod_spec(ds).host_network = true;
         first_container(ds).ports = {{"", 80, 81, "TCP", ""}};
     },
     {kC0 + "ports[0].hostPort: Invalid value: 81: must match `containerPort` when `hostNetwork` is true"}},
};

#undef PORTS

// ---- env --------------------------------------------------------------------

#define ENV(...) [](DaemonSet& ds) { first_container(ds).env = {__VA_ARGS__}; }

EnvVar field_ref(const char* api_version, const char* path) {
    return EnvVar{"abc", "", EnvVarSource{ObjectFieldSelector{api_version, path}, {}, {}, {}, {}, {}}};
}
EnvVar resource_ref(const char* resource, std::optional<Quantity> divisor) {
    return EnvVar{"abc", "", EnvVarSource{{}, ResourceFieldSelector{"", resource, divisor}, {}, {}, {}, {}}};
}
EnvVar config_map_ref(Json ref) {
    return EnvVar{"abc", "", EnvVarSource{{}, {}, std::move(ref), {}, {}, {}}};
}
EnvVar secret_ref(Json ref) { return EnvVar{"abc", "", EnvVarSource{{}, {}, {}, std::move(ref), {}, {}}}; }

const std::string kEnv0 = kC0 + "env[0].";
const std::string kFieldPaths =
    "supported values: \"metadata.name\", \"metadata.namespace\", \"metadata.uid\", \"spec.nodeName\", "
    "\"spec.serviceAccountName\", \"status.hostIP\", \"status.hostIPs\", \"status.podIP\", \"status.podIPs\"";

const DsRow kEnvRows[] = {
    {"TestValidateEnv success: plain values",
     ENV({"abc", "value", {}}, {"ABC", "value", {}}, {"AbC_123", "value", {}}, {"abc", "", {}},
         {"a.b.c", "value", {}}, {"a-b-c", "value", {}}),
     {}},
    {"TestValidateEnv success: downward API field paths",
     ENV(field_ref("v1", "metadata.annotations['key']"), field_ref("v1", "metadata.labels['key']"),
         field_ref("v1", "metadata.name"), field_ref("v1", "metadata.namespace"),
         field_ref("v1", "metadata.uid"), field_ref("v1", "spec.nodeName"),
         field_ref("v1", "spec.serviceAccountName"), field_ref("v1", "status.hostIP"),
         field_ref("v1", "status.podIP"), field_ref("v1", "status.podIPs")),
     {}},
    {"TestValidateEnv success: resourceFieldRef with divisors",
     ENV(resource_ref("limits.cpu", qty("1m", 1)), resource_ref("requests.memory", qty("1Mi", 1048576000)),
         resource_ref("limits.ephemeral-storage", std::nullopt),
         resource_ref("requests.hugepages-2Mi", std::nullopt)),
     {}},
    {"TestValidateEnv success: configMapKeyRef and secretKeyRef",
     ENV(config_map_ref({{"name", "some-config-map"}, {"key", "some-key"}}),
         secret_ref({{"name", "some-secret"}, {"key", "secret-key"}})),
     {}},
    {"TestValidateEnv: zero-length name", ENV({"", "value", {}}), {kEnv0 + "name: Required value"}},
    {"TestValidateEnv: illegal character",
     ENV({"a!b", "value", {}}),
     {kEnv0 + "name: Invalid value: \"a!b\": " + kEnvVarNameMsg}},
    {"TestValidateEnv: dot only",
     ENV({".", "value", {}}),
     {kEnv0 + "name: Invalid value: \".\": must not be '.'"}},
    {"TestValidateEnv: value and valueFrom",
     [](DaemonSet& ds) {
         EnvVar e = field_ref("v1", "metadata.name");
         e.value = "foo";
         first_container(ds).env = {e};
     },
     {kEnv0 + "valueFrom: Invalid value: \"\": may not be specified when `value` is not empty"}},
    {"TestValidateEnv: valueFrom without a source",
     ENV({"abc", "", EnvVarSource{}}),
     {kEnv0 + "valueFrom: Invalid value: \"\": must specify one of: `fieldRef`, `resourceFieldRef`, "
              "`configMapKeyRef` or `secretKeyRef`"}},
    {"TestValidateEnv: valueFrom.fieldRef and valueFrom.secretKeyRef",
     [](DaemonSet& ds) {
         EnvVar e = field_ref("v1", "metadata.name");
         e.value_from->secret_key_ref = Json{{"name", "a-secret"}, {"key", "key"}};
         first_container(ds).env = {e};
     },
     {kEnv0 + "valueFrom: Invalid value: \"\": may not have more than one field specified at a time"}},
    {"TestValidateEnv: missing FieldPath on ObjectFieldSelector",
     ENV(field_ref("v1", "")),
     {kEnv0 + "valueFrom.fieldRef.fieldPath: Required value"}},
    {"TestValidateEnv: missing APIVersion on ObjectFieldSelector",
     ENV(field_ref("", "metadata.name")),
     {kEnv0 + "valueFrom.fieldRef.apiVersion: Required value"}},
    {"TestValidateEnv: invalid fieldPath",
     ENV(field_ref("v1", "metadata.whoops")),
     {kEnv0 +
      "valueFrom.fieldRef.fieldPath: Invalid value: \"metadata.whoops\": error converting fieldPath: field "
      "label not supported: metadata.whoops"}},
    {"TestValidateEnv: metadata.name with subscript",
     ENV(field_ref("v1", "metadata.name['key']")),
     {kEnv0 +
      "valueFrom.fieldRef.fieldPath: Invalid value: \"metadata.name['key']\": error converting fieldPath: "
      "field label does not support subscript: metadata.name['key']"}},
    {"TestValidateEnv: metadata.labels without subscript",
     ENV(field_ref("v1", "metadata.labels")),
     {kEnv0 + "valueFrom.fieldRef.fieldPath: Unsupported value: \"metadata.labels\": " + kFieldPaths}},
    {"TestValidateEnv: status.phase is not an env var source",
     ENV(field_ref("v1", "status.phase")),
     {kEnv0 + "valueFrom.fieldRef.fieldPath: Unsupported value: \"status.phase\": " + kFieldPaths}},
    {"TestValidateEnv: metadata.annotations with invalid key",
     ENV(field_ref("v1", "metadata.annotations['invalid~key']")),
     {kEnv0 + "valueFrom.fieldRef: Invalid value: \"invalid~key\": " + kQualifiedNameMsg}},
    {"TestValidateEnv: unsupported version",
     ENV(field_ref("v2", "metadata.name")),
     {kEnv0 + "valueFrom.fieldRef.fieldPath: Invalid value: \"metadata.name\": error converting fieldPath: "
              "unsupported pod version: v2"}},
    {"TestValidateEnv: invalid resource",
     ENV(resource_ref("invalid", std::nullopt)),
     {kEnv0 + "valueFrom.resourceFieldRef.resource: Unsupported value: \"invalid\": supported values: "
              "\"limits.cpu\", \"limits.ephemeral-storage\", \"limits.memory\", \"requests.cpu\", "
              "\"requests.ephemeral-storage\", \"requests.memory\""}},
    {"TestValidateEnv: invalid cpu divisor",
     ENV(resource_ref("limits.cpu", qty("2", 2000))),
     {kEnv0 +
      "valueFrom.resourceFieldRef.divisor: Invalid value: \"limits.cpu\": only divisor's values 1m and 1 "
      "are supported with the cpu resource"}},
    {"TestValidateEnv: invalid memory divisor",
     ENV(resource_ref("requests.memory", qty("1m", 1))),
     {kEnv0 +
      "valueFrom.resourceFieldRef.divisor: Invalid value: \"requests.memory\": only divisor's values 1, 1k, "
      "1M, 1G, 1T, 1P, 1E, 1Ki, 1Mi, 1Gi, 1Ti, 1Pi, 1Ei are supported with the memory resource"}},
    {"TestValidateEnv: missing key on configMapKeyRef",
     ENV(config_map_ref({{"name", "some-config-map"}})),
     {kEnv0 + "valueFrom.configMapKeyRef.key: Required value"}},
    {"TestValidateEnv: invalid key on secretKeyRef",
     ENV(secret_ref({{"name", "a-secret"}, {"key", "a/b"}})),
     {kEnv0 +
      "valueFrom.secretKeyRef.key: Invalid value: \"a/b\": a valid config key must consist of alphanumeric "
      "characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for "
      "validation is '[-._a-zA-Z0-9]+')"}},
    {"validateConfigMapKeySelector: the name is a DNS subdomain, so it cannot be empty",
     ENV(config_map_ref({{"key", "some-key"}})),
     {kEnv0 + "valueFrom.configMapKeyRef.name: Invalid value: \"\": " + kDnsSubdomainMsg}},
};

#undef ENV

#define ENV_FROM(...) [](DaemonSet& ds) { first_container(ds).env_from = {__VA_ARGS__}; }

EnvFromSource from_secret(const char* name, const char* prefix = "") {
    return EnvFromSource{prefix, std::nullopt, EnvFromRef{name, std::nullopt}};
}
EnvFromSource from_config_map(const char* name, const char* prefix = "") {
    return EnvFromSource{prefix, EnvFromRef{name, std::nullopt}, std::nullopt};
}
const std::string kEnvFrom = kC0 + "envFrom";

const DsRow kEnvFromRows[] = {
    {"TestValidateEnvFrom success: configMapRef and secretRef with prefixes",
     ENV_FROM(from_config_map("abc"), from_config_map("abc", "pre_"), from_secret("abc", "a.b")),
     {}},
    {"TestValidateEnvFrom: zero-length name",
     ENV_FROM(from_secret("")),
     {kEnvFrom + "[0].secretRef.name: Required value"}},
    {"TestValidateEnvFrom: invalid prefix",
     ENV_FROM(from_secret("abc", "a!b")),
     {kEnvFrom + "[0].prefix: Invalid value: \"a!b\": " + kEnvVarNameMsg}},
    {"TestValidateEnvFrom: no refs",
     ENV_FROM(EnvFromSource{}),
     {kEnvFrom + ": Invalid value: \"\": must specify one of: `configMapRef` or `secretRef`"}},
    {"TestValidateEnvFrom: multiple refs",
     ENV_FROM(EnvFromSource{"", EnvFromRef{"abc", {}}, EnvFromRef{"abc", {}}}),
     {kEnvFrom + ": Invalid value: \"\": may not have more than one field specified at a time"}},
    {"TestValidateEnvFrom: invalid config ref name",
     ENV_FROM(from_config_map("$%^&*#")),
     {kEnvFrom + "[0].configMapRef.name: Invalid value: \"$%^&*#\": " + kDnsSubdomainMsg}},
};

#undef ENV_FROM

// ---- probes and lifecycle ---------------------------------------------------

#define LIVENESS(stmt)                          \
    [](DaemonSet& ds) {                         \
        Probe p = exec_probe();                 \
        stmt;                                   \
        first_container(ds).liveness_probe = p; \
    }

const DsRow kProbeRows[] = {
    {"TestValidateProbe success: exec liveness probe", LIVENESS((void)0), {}},
    {"TestValidateProbe success: httpGet readiness probe, readiness may need 2 successes",
     [](DaemonSet& ds) {
         Probe p = http_probe(IntOrString::from_int(8080));
         p.success_threshold = 2;
         first_container(ds).readiness_probe = p;
     },
     {}},
    {"TestValidateProbe success: tcpSocket on a named port",
     [](DaemonSet& ds) {
         Probe p;
         p.handler.tcp_socket = TCPSocketAction{IntOrString::from_string("http"), ""};
         first_container(ds).startup_probe = p;
     },
     {}},
    {"TestValidateProbe success: grpc startup probe",
     [](DaemonSet& ds) {
         Probe p;
         p.handler.grpc = GRPCAction{9090, {}};
         first_container(ds).startup_probe = p;
     },
     {}},
    {"TestValidateProbe success: liveness probe terminationGracePeriodSeconds",
     LIVENESS(p.termination_grace_period_seconds = 10),
     {}},
    {"TestValidateLifecycle success: preStop sleep within terminationGracePeriodSeconds",
     [](DaemonSet& ds) {
         first_container(ds).lifecycle = Lifecycle{std::nullopt, Handler{{}, {}, {}, 5, {}}};
     },
     {}},

    {"TestValidateProbe: negative initialDelaySeconds",
     LIVENESS(p.initial_delay_seconds = -1),
     {kC0 + "livenessProbe.initialDelaySeconds: Invalid value: -1: must be greater than or equal to 0"}},
    {"TestValidateProbe: negative failureThreshold",
     LIVENESS(p.failure_threshold = -1),
     {kC0 + "livenessProbe.failureThreshold: Invalid value: -1: must be greater than or equal to 0"}},
    {"validateLivenessProbe: successThreshold must be 1",
     LIVENESS(p.success_threshold = 2),
     {kC0 + "livenessProbe.successThreshold: Invalid value: 2: must be 1"}},
    {"validateStartupProbe: successThreshold must be 1",
     [](DaemonSet& ds) {
         Probe p = exec_probe();
         p.success_threshold = 3;
         first_container(ds).startup_probe = p;
     },
     {kC0 + "startupProbe.successThreshold: Invalid value: 3: must be 1"}},
    {"validateReadinessProbe: terminationGracePeriodSeconds must not be set",
     [](DaemonSet& ds) {
         Probe p = exec_probe();
         p.termination_grace_period_seconds = 10;
         first_container(ds).readiness_probe = p;
     },
     {kC0 + "readinessProbe.terminationGracePeriodSeconds: Invalid value: 10: must not be set for "
            "readinessProbes"}},
    {"validateProbe: terminationGracePeriodSeconds must be positive",
     LIVENESS(p.termination_grace_period_seconds = 0),
     {kC0 + "livenessProbe.terminationGracePeriodSeconds: Invalid value: 0: must be greater than 0"}},
    {"TestValidateHandler: no handler",
     LIVENESS(p.handler = Handler{}),
     {kC0 + "livenessProbe: Required value: must specify a handler type"}},
    {"TestValidateHandler: two handlers",
     LIVENESS(p.handler.http_get = (HTTPGetAction{"/", IntOrString::from_int(80), "", "HTTP", {}})),
     {kC0 + "livenessProbe.httpGet: Forbidden: may not specify more than 1 handler type"}},
    {"TestValidateHandler: exec without command",
     LIVENESS(p.handler.exec->command.clear()),
     {kC0 + "livenessProbe.exec.command: Required value"}},
    {"TestValidateHandler: httpGet port 0",
     [](DaemonSet& ds) { first_container(ds).readiness_probe = http_probe(IntOrString::from_int(0)); },
     {kC0 + "readinessProbe.httpGet.port: Invalid value: 0: must be between 1 and 65535, inclusive"}},
    {"TestValidateHandler: httpGet named port in upper case",
     [](DaemonSet& ds) {
         first_container(ds).readiness_probe = http_probe(IntOrString::from_string("HTTP"));
     },
     {kC0 + "readinessProbe.httpGet.port: Invalid value: \"HTTP\": must contain only alpha-numeric "
            "characters (a-z, "
            "0-9), and hyphens (-)",
      kC0 + "readinessProbe.httpGet.port: Invalid value: \"HTTP\": must contain at least one letter (a-z)"}},
    {"TestValidateHandler: httpGet scheme",
     [](DaemonSet& ds) {
         Probe p = http_probe(IntOrString::from_int(80));
         p.handler.http_get->scheme = "FTP";
         first_container(ds).readiness_probe = p;
     },
     {kC0 +
      "readinessProbe.httpGet.scheme: Unsupported value: \"FTP\": supported values: \"HTTP\", \"HTTPS\""}},
    {"TestValidateHandler: httpGet header name",
     [](DaemonSet& ds) {
         Probe p = http_probe(IntOrString::from_int(80));
         p.handler.http_get->http_headers = {{"X-Forwarded-For", "1.2.3.4"}, {"X_Header", "v"}};
         first_container(ds).readiness_probe = p;
     },
     {kC0 +
      "readinessProbe.httpGet.httpHeaders: Invalid value: \"X_Header\": a valid HTTP header must consist of "
      "alphanumeric characters or '-' (e.g. 'X-Header-Name', regex used for validation is '[-A-Za-z0-9]+')"}},
    {"TestValidateHandler: httpGet without path (not defaulted)",
     [](DaemonSet& ds) {
         Probe p = http_probe(IntOrString::from_int(80));
         p.handler.http_get->path = "";
         first_container(ds).readiness_probe = p;
     },
     {kC0 + "readinessProbe.httpGet.path: Required value"}},
    {"validateGRPCAction: port 0",
     [](DaemonSet& ds) {
         Probe p;
         p.handler.grpc = GRPCAction{0, {}};
         first_container(ds).startup_probe = p;
     },
     {kC0 + "startupProbe.grpc.port: Invalid value: 0: must be between 1 and 65535, inclusive"}},
    {"validateGRPCAction: port 65536",
     [](DaemonSet& ds) {
         Probe p;
         p.handler.grpc = GRPCAction{65536, "ready"};
         first_container(ds).readiness_probe = p;
     },
     {kC0 + "readinessProbe.grpc.port: Invalid value: 65536: must be between 1 and 65535, inclusive"}},
    {"validateHandler: exec and grpc are two handlers",
     LIVENESS(p.handler.grpc = (GRPCAction{9090, {}})),
     {kC0 + "livenessProbe.grpc: Forbidden: may not specify more than 1 handler type"}},
    {"handlerFromProbe: a probe has no sleep action",
     LIVENESS(p.handler = (Handler{{}, {}, {}, 5, {}})),
     {kC0 + "livenessProbe: Required value: must specify a handler type"}},
    {"TestValidateLifecycle: preStop without a handler",
     [](DaemonSet& ds) {
         first_container(ds).lifecycle = Lifecycle{std::nullopt, Handler{}};
     },
     {kC0 + "lifecycle.preStop: Required value: must specify a handler type"}},
    {"handlerFromLifecycle: a lifecycle hook has no grpc action",
     [](DaemonSet& ds) {
         first_container(ds).lifecycle =
             Lifecycle{Handler{{}, {}, {}, {}, GRPCAction{9090, {}}}, std::nullopt};
     },
     {kC0 + "lifecycle.postStart: Required value: must specify a handler type"}},
    {"validateSleepAction: zero seconds",
     [](DaemonSet& ds) {
         first_container(ds).lifecycle = Lifecycle{std::nullopt, Handler{{}, {}, {}, 0, {}}};
     },
     {kC0 + "lifecycle.preStop.sleep: Invalid value: 0: must be greater than 0 and less than "
            "terminationGracePeriodSeconds (30)"}},
    {"validateSleepAction: longer than terminationGracePeriodSeconds",
     [](DaemonSet& ds) {
         first_container(ds).lifecycle = Lifecycle{std::nullopt, Handler{{}, {}, {}, 31, {}}};
     },
     {kC0 + "lifecycle.preStop.sleep: Invalid value: 31: must be greater than 0 and less than "
            "terminationGracePeriodSeconds (30)"}},
};

#undef LIVENESS

// ---- resources --------------------------------------------------------------

#define RESOURCES(limits, requests) \
    [](DaemonSet& ds) { first_container(ds).resources = ResourceRequirements{limits, requests}; }
#define MAP(...) (std::map<std::string, Quantity>{__VA_ARGS__})

const std::string kRes = kC0 + "resources.";

const DsRow kResourceRows[] = {
    {"TestValidateResourceRequirements success: cpu and memory, requests below limits",
     RESOURCES(MAP({"cpu", qty("1", 1000)}, {"memory", qty("128Mi", 134217728000)}),
               MAP({"cpu", qty("100m", 100)}, {"memory", qty("64Mi", 67108864000)})),
     {}},
    {"TestValidateResourceRequirements success: requests only",
     RESOURCES(MAP(), MAP({"cpu", qty("250m", 250)})),
     {}},
    {"TestValidateResourceRequirements success: extended resource, request equal to limit",
     RESOURCES(MAP({"example.com/gpu", qty("1", 1000)}), MAP({"example.com/gpu", qty("1", 1000)})),
     {}},
    {"TestValidateResourceRequirements success: hugepages with memory",
     RESOURCES(MAP({"hugepages-2Mi", qty("4Mi", 4194304000)}, {"memory", qty("1Gi", 1073741824000)}), MAP()),
     {}},
    {"TestValidateResourceRequirements success: ephemeral-storage",
     RESOURCES(MAP({"ephemeral-storage", qty("1Gi", 1073741824000)}),
               MAP({"ephemeral-storage", qty("512Mi", 536870912000)})),
     {}},
    {"helper.IsNativeResource: kubernetes.io/ prefixed names are native and not checked further",
     RESOURCES(MAP({"kubernetes.io/foo", qty("1", 1000)}), MAP()),
     {}},

    {"TestValidateResourceRequirements: negative cpu limit",
     RESOURCES(MAP({"cpu", qty("-1", -1000)}), MAP()),
     {kRes + "limits[cpu]: Invalid value: \"-1\": must be greater than or equal to 0"}},
    {"TestValidateResourceRequirements: negative memory request",
     RESOURCES(MAP(), MAP({"memory", qty("-10Mi", -10485760000)})),
     {kRes + "requests[memory]: Invalid value: \"-10Mi\": must be greater than or equal to 0"}},
    {"TestValidateResourceRequirements: cpu request above limit",
     RESOURCES(MAP({"cpu", qty("1", 1000)}), MAP({"cpu", qty("2", 2000)})),
     {kRes + "requests: Invalid value: \"2\": must be less than or equal to cpu limit of 1"}},
    {"TestValidateResourceRequirements: memory request above limit",
     RESOURCES(MAP({"memory", qty("128Mi", 134217728000)}), MAP({"memory", qty("256Mi", 268435456000)})),
     {kRes + "requests: Invalid value: \"256Mi\": must be less than or equal to memory limit of 128Mi"}},
    {"TestValidateContainers: resource name not standard",
     RESOURCES(MAP({"disk", qty("1", 1000)}), MAP()),
     {kRes + "limits[disk]: Invalid value: disk: must be a standard resource type or fully qualified",
      kRes + "limits[disk]: Invalid value: disk: must be a standard resource for containers"}},
    {"validateContainerResourceName: pods is a resource, but not a container one",
     RESOURCES(MAP({"pods", qty("1", 1000)}), MAP()),
     {kRes + "limits[pods]: Invalid value: pods: must be a standard resource for containers"}},
    {"validateContainerResourceName: an unqualified extended name",
     RESOURCES(MAP({"example.com/", qty("1", 1000)}), MAP()),
     {kRes + "limits[example.com/]: Invalid value: example.com/: name part must be non-empty",
      kRes + "limits[example.com/]: Invalid value: example.com/: " + kQualifiedNameMsg,
      kRes + "limits[example.com/]: Invalid value: example.com/: doesn't follow extended resource name "
             "standard"}},
    {"ValidateResourceQuantityValue: extended resources are whole",
     RESOURCES(MAP({"example.com/gpu", qty("500m", 500)}), MAP()),
     {kRes + "limits[example.com/gpu]: Invalid value: \"500m\": must be an integer"}},
    {"TestValidateResourceRequirements: extended resource request without limit",
     RESOURCES(MAP(), MAP({"example.com/gpu", qty("1", 1000)})),
     {kRes + "limits: Required value: Limit must be set for non overcommitable resources"}},
    {"TestValidateResourceRequirements: extended resource request not equal to limit",
     RESOURCES(MAP({"example.com/gpu", qty("2", 2000)}), MAP({"example.com/gpu", qty("1", 1000)})),
     {kRes + "requests: Invalid value: \"1\": must be equal to example.com/gpu limit of 2"}},
    {"validateResourceQuantityHugePageValue: not a multiple of the page size",
     RESOURCES(MAP({"hugepages-2Mi", qty("3Mi", 3145728000)}, {"memory", qty("1Gi", 1073741824000)}), MAP()),
     {kRes + "limits[hugepages-2Mi]: Invalid value: \"3Mi\": 3Mi is not positive integer multiple of "
             "hugepages-2Mi"}},
    {"ValidateResourceRequirements: HugePages require cpu or memory",
     RESOURCES(MAP({"hugepages-2Mi", qty("4Mi", 4194304000)}), MAP()),
     {kC0 + "resources: Forbidden: HugePages require cpu or memory"}},
    {"ValidateResourceRequirements: hugepages requests need limits",
     RESOURCES(MAP({"cpu", qty("1", 1000)}), MAP({"hugepages-2Mi", qty("4Mi", 4194304000)})),
     {kRes + "limits: Required value: Limit must be set for non overcommitable resources"}},
};

#undef RESOURCES
#undef MAP

// ---- volumes and mounts -----------------------------------------------------

const std::string kVol0 = kSpec + "volumes[0].";
const std::string kMounts = kC0 + "volumeMounts";

void add_volume(DaemonSet& ds, Volume v) { pod_spec(ds).volumes.push_back(std::move(v)); }
void mount(DaemonSet& ds, const char* name, const char* path) {
    first_container(ds).volume_mounts.push_back(VolumeMount{name, path, "", false, ""});
}

const DsRow kVolumeRows[] = {
    {"TestValidateVolumes success: hostPath mounted",
     [](DaemonSet& ds) {
         add_volume(ds, host_path_volume("varlog", "/var/log"));
         mount(ds, "varlog", "/var/log");
     },
     {}},
    {"TestValidateVolumes success: hostPath type DirectoryOrCreate",
     [](DaemonSet& ds) {
         Volume v = host_path_volume("data", "/var/lib/agent");
         v.host_path_type = "DirectoryOrCreate";
         add_volume(ds, v);
     },
     {}},
    {"TestValidateVolumes success: emptyDir with a sizeLimit",
     [](DaemonSet& ds) {
         Volume v =
             raw_volume(Volume::Source::EmptyDir, {{"name", "cache"}, {"emptyDir", {{"sizeLimit", "1Gi"}}}});
         v.empty_dir_size_limit = qty("1Gi", 1073741824000);
         add_volume(ds, v);
     },
     {}},
    {"TestValidateVolumes success: configMap with items and a defaultMode",
     [](DaemonSet& ds) {
         Volume v = raw_volume(Volume::Source::ConfigMap,
                               {{"name", "cfg"},
                                {"configMap",
                                 {{"name", "agent-config"},
                                  {"defaultMode", 0644},
                                  {"items", Json::array({{{"key", "k"}, {"path", "conf/agent.yaml"}}})}}}});
         v.config_map_name = "agent-config";
         add_volume(ds, v);
     },
     {}},
    {"TestValidateVolumes success: secret",
     [](DaemonSet& ds) {
         Volume v =
             raw_volume(Volume::Source::Secret, {{"name", "creds"}, {"secret", {{"secretName", "creds"}}}});
         v.secret_name = "creds";
         add_volume(ds, v);
     },
     {}},
    {"TestValidateVolumeMounts success: subPath and HostToContainer propagation",
     [](DaemonSet& ds) {
         add_volume(ds, host_path_volume("root", "/"));
         first_container(ds).volume_mounts = {{"root", "/host", "etc", true, "HostToContainer"}};
     },
     {}},
    {"validateMountPropagation success: Bidirectional in a privileged container",
     [](DaemonSet& ds) {
         add_volume(ds, host_path_volume("kubelet", "/var/lib/kubelet"));
         first_container(ds).volume_mounts = {{"kubelet", "/var/lib/kubelet", "", false, "Bidirectional"}};
         first_container(ds).security_context = SecurityContext{true, {}, {}, {}, {}, {}, {}, {}, {}, {}};
     },
     {}},

    {"TestValidateVolumes: zero-length name",
     [](DaemonSet& ds) { add_volume(ds, host_path_volume("", "/tmp")); },
     {kVol0 + "name: Required value"}},
    {"TestValidateVolumes: name not a DNS label",
     [](DaemonSet& ds) { add_volume(ds, host_path_volume("Vol", "/tmp")); },
     {kVol0 + "name: Invalid value: \"Vol\": " + kDnsLabelMsg}},
    {"TestValidateVolumes: name not unique",
     [](DaemonSet& ds) {
         add_volume(ds, host_path_volume("vol", "/a"));
         add_volume(ds, host_path_volume("vol", "/b"));
     },
     {kSpec + "volumes[1].name: Duplicate value: \"vol\""}},
    {"TestValidateVolumes: no volume source",
     [](DaemonSet& ds) {
         add_volume(ds, raw_volume(Volume::Source::None, {{"name", "vol"}}));
     },
     {kSpec + "volumes[0]: Required value: must specify a volume type"}},
    {"TestValidateVolumes: more than one volume source",
     [](DaemonSet& ds) {
         Volume v =
             raw_volume(Volume::Source::HostPath,
                        {{"name", "vol"}, {"hostPath", {{"path", "/a"}}}, {"emptyDir", Json::object()}});
         v.host_path = "/a";
         add_volume(ds, v);
     },
     {kVol0 + "hostPath: Forbidden: may not specify more than 1 volume type"}},
    {"TestValidateVolumes: hostPath path required",
     [](DaemonSet& ds) { add_volume(ds, host_path_volume("vol", "")); },
     {kVol0 + "hostPath.path: Required value"}},
    {"validatePathNoBacksteps: hostPath with ..",
     [](DaemonSet& ds) { add_volume(ds, host_path_volume("vol", "/var/../etc")); },
     {kVol0 + "hostPath.path: Invalid value: \"/var/../etc\": must not contain '..'"}},
    {"validateHostPathType: unknown type",
     [](DaemonSet& ds) {
         Volume v = host_path_volume("vol", "/dev/kmsg");
         v.host_path_type = "Dir";
         add_volume(ds, v);
     },
     {kVol0 +
      "hostPath.type: Unsupported value: \"Dir\": supported values: \"\", \"BlockDevice\", \"CharDevice\", "
      "\"Directory\", \"DirectoryOrCreate\", \"File\", \"FileOrCreate\", \"Socket\""}},
    {"TestValidateVolumes: emptyDir negative sizeLimit",
     [](DaemonSet& ds) {
         Volume v =
             raw_volume(Volume::Source::EmptyDir, {{"name", "vol"}, {"emptyDir", {{"sizeLimit", "-1"}}}});
         v.empty_dir_size_limit = qty("-1", -1000);
         add_volume(ds, v);
     },
     {kVol0 + "emptyDir.sizeLimit: Forbidden: SizeLimit field must be a valid resource quantity"}},
    {"TestValidateVolumes: secret without secretName",
     [](DaemonSet& ds) {
         add_volume(ds, raw_volume(Volume::Source::Secret, {{"name", "vol"}, {"secret", Json::object()}}));
     },
     {kVol0 + "secret.secretName: Required value"}},
    {"TestValidateVolumes: configMap without name",
     [](DaemonSet& ds) {
         add_volume(ds,
                    raw_volume(Volume::Source::ConfigMap, {{"name", "vol"}, {"configMap", Json::object()}}));
     },
     {kVol0 + "configMap.name: Required value"}},
    {"TestValidateVolumes: configMap defaultMode above 0777",
     [](DaemonSet& ds) {
         Volume v = raw_volume(Volume::Source::ConfigMap,
                               {{"name", "vol"}, {"configMap", {{"name", "c"}, {"defaultMode", 01000}}}});
         v.config_map_name = "c";
         add_volume(ds, v);
     },
     {kVol0 + "configMap.defaultMode: Invalid value: 512: must be a number between 0 and 0777 (octal), both "
              "inclusive"}},
    {"validateKeyToPath: absolute item path",
     [](DaemonSet& ds) {
         Volume v = raw_volume(
             Volume::Source::ConfigMap,
             {{"name", "vol"},
              {"configMap", {{"name", "c"}, {"items", Json::array({{{"key", "k"}, {"path", "/etc/x"}}})}}}});
         v.config_map_name = "c";
         add_volume(ds, v);
     },
     {kVol0 + "configMap.items[0].path: Invalid value: \"/etc/x\": must be a relative path"}},
    {"ValidateLocalNonReservedPath: item path starting with ..",
     [](DaemonSet& ds) {
         Volume v = raw_volume(
             Volume::Source::Secret,
             {{"name", "vol"},
              {"secret",
               {{"secretName", "s"}, {"items", Json::array({{{"key", "k"}, {"path", "..data"}}})}}}});
         v.secret_name = "s";
         add_volume(ds, v);
     },
     {kVol0 + "secret.items[0].path: Invalid value: \"..data\": must not start with '..'"}},

    {"TestValidateVolumeMounts: name not found",
     [](DaemonSet& ds) { mount(ds, "missing", "/x"); },
     {kMounts + "[0].name: Not found: \"missing\""}},
    {"TestValidateVolumeMounts: empty name is required and not found",
     [](DaemonSet& ds) { mount(ds, "", "/x"); },
     {kMounts + "[0].name: Required value", kMounts + "[0].name: Not found: \"\""}},
    {"TestValidateVolumeMounts: empty mountpath",
     [](DaemonSet& ds) {
         add_volume(ds, host_path_volume("vol", "/a"));
         mount(ds, "vol", "");
     },
     {kMounts + "[0].mountPath: Required value"}},
    {"TestValidateVolumeMounts: mountpath not unique",
     [](DaemonSet& ds) {
         add_volume(ds, host_path_volume("vol", "/a"));
         mount(ds, "vol", "/data");
         mount(ds, "vol", "/data");
     },
     {kMounts + "[1].mountPath: Invalid value: \"/data\": must be unique"}},
    {"ValidateVolumes: a mount of an invalid volume is not found either",
     [](DaemonSet& ds) {
         add_volume(ds, host_path_volume("vol", ""));
         mount(ds, "vol", "/data");
     },
     {kVol0 + "hostPath.path: Required value", kMounts + "[0].name: Not found: \"vol\""}},
    {"TestValidateVolumeMounts: absolute subPath (reported under the list path)",
     [](DaemonSet& ds) {
         add_volume(ds, host_path_volume("vol", "/a"));
         first_container(ds).volume_mounts = {{"vol", "/data", "/abs", false, ""}};
     },
     {kMounts + ".subPath: Invalid value: \"/abs\": must be a relative path"}},
    {"TestValidateVolumeMounts: subPath with ..",
     [](DaemonSet& ds) {
         add_volume(ds, host_path_volume("vol", "/a"));
         first_container(ds).volume_mounts = {{"vol", "/data", "a/../b", false, ""}};
     },
     {kMounts + ".subPath: Invalid value: \"a/../b\": must not contain '..'"}},
    {"validateMountPropagation: unknown mode",
     [](DaemonSet& ds) {
         add_volume(ds, host_path_volume("vol", "/a"));
         first_container(ds).volume_mounts = {{"vol", "/data", "", false, "Shared"}};
     },
     {kMounts + ".mountPropagation: Unsupported value: \"Shared\": supported values: \"Bidirectional\", "
                "\"HostToContainer\", \"None\""}},
    {"validateMountPropagation: Bidirectional needs a privileged container",
     [](DaemonSet& ds) {
         add_volume(ds, host_path_volume("vol", "/a"));
         first_container(ds).volume_mounts = {{"vol", "/data", "", false, "Bidirectional"}};
     },
     {kMounts +
      ".mountPropagation: Forbidden: Bidirectional mount propagation is available only to privileged "
      "containers"}},
    {"TestValidateVolumes: downwardAPI success: fields, labels subscript, resource of a named container",
     [](DaemonSet& ds) {
         Volume v =
             raw_volume(Volume::Source::DownwardAPI, {{"name", "vol"}, {"downwardAPI", Json::object()}});
         v.downward_api_items = {
             {"labels", ObjectFieldSelector{"v1", "metadata.labels"}, std::nullopt, 0400},
             {"app", ObjectFieldSelector{"v1", "metadata.labels['app']"}, std::nullopt, std::nullopt},
             {"cpu", std::nullopt, ResourceFieldSelector{"c", "limits.cpu", std::nullopt}, std::nullopt}};
         add_volume(ds, v);
     },
     {}},
    {"validateDownwardAPIVolumeFile: spec.nodeName is not a volume field, errors under the source's path",
     [](DaemonSet& ds) {
         Volume v =
             raw_volume(Volume::Source::DownwardAPI, {{"name", "vol"}, {"downwardAPI", Json::object()}});
         v.downward_api_items = {
             {"n", ObjectFieldSelector{"v1", "spec.nodeName"}, std::nullopt, std::nullopt}};
         add_volume(ds, v);
     },
     {kVol0 + "downwardAPI.fieldRef.fieldPath: Unsupported value: \"spec.nodeName\": supported values: "
              "\"metadata.annotations\", \"metadata.labels\", \"metadata.name\", \"metadata.namespace\", "
              "\"metadata.uid\""}},
    {"validateContainerResourceFieldSelector(volume): containerName required",
     [](DaemonSet& ds) {
         Volume v =
             raw_volume(Volume::Source::DownwardAPI, {{"name", "vol"}, {"downwardAPI", Json::object()}});
         v.downward_api_items = {
             {"cpu", std::nullopt, ResourceFieldSelector{"", "limits.cpu", std::nullopt}, {}}};
         add_volume(ds, v);
     },
     {kVol0 + "downwardAPI.resourceFieldRef.containerName: Required value"}},
    {"validateDownwardAPIVolumeFile: neither fieldRef nor resourceFieldRef, and a path with ..",
     [](DaemonSet& ds) {
         Volume v =
             raw_volume(Volume::Source::DownwardAPI, {{"name", "vol"}, {"downwardAPI", Json::object()}});
         v.downward_api_items = {{"../x", std::nullopt, std::nullopt, std::nullopt}};
         add_volume(ds, v);
     },
     {kVol0 + "downwardAPI.path: Invalid value: \"../x\": must not contain '..'",
      kVol0 + "downwardAPI: Required value: one of fieldRef and resourceFieldRef is required"}},
    {"validateProjectionSources: conflicting duplicate paths, two types in one source, short token",
     [](DaemonSet& ds) {
         Volume v = raw_volume(Volume::Source::Projected, {{"name", "vol"}, {"projected", Json::object()}});
         VolumeProjection cm, both, token;
         cm.config_map = KeyProjection{"c", {{"k", "same", std::nullopt}}, std::nullopt};
         both.secret = KeyProjection{"s", {{"k", "same", std::nullopt}}, std::nullopt};
         both.config_map = KeyProjection{"c2", {}, std::nullopt};
         token.service_account_token = ServiceAccountTokenProjection{"", 60, "token"};
         v.projections = {cm, both, token};
         add_volume(ds, v);
     },
     {kVol0 + "projected: Invalid value: \"s\": conflicting duplicate paths",
      kVol0 + "projected.sources[1]: Forbidden: may not specify more than 1 volume type",
      kVol0 +
          "projected.sources[2].serviceAccountToken.expirationSeconds: Invalid value: 60: may not specify a "
          "duration less than 10 minutes"}},
    {"validateProjectedVolumeSource: defaultMode above 0777 and a secret projection without name",
     [](DaemonSet& ds) {
         Volume v = raw_volume(Volume::Source::Projected, {{"name", "vol"}, {"projected", Json::object()}});
         VolumeProjection s;
         s.secret = KeyProjection{"", {}, std::nullopt};
         v.projections = {s};
         v.default_mode = 01000;
         add_volume(ds, v);
     },
     {kVol0 + "projected.defaultMode: Invalid value: 512: must be a number between 0 and 0777 (octal), both "
              "inclusive",
      kVol0 + "projected.sources[0].secret.name: Required value"}},
};

// ---- pod spec and template metadata -------------------------------------------

const std::string kAnn = "spec.template.annotations";

const DsRow kPodSpecRows[] = {
    {"TestValidatePodSpec success: hostNetwork, hostPID, hostIPC with ClusterFirstWithHostNet",
     [](DaemonSet& ds) {
         PodSpec& s = pod_spec(ds);
         s.host_network = s.host_pid = s.host_ipc = true;
         s.dns_policy = "ClusterFirstWithHostNet";
     },
     {}},
    {"TestValidatePodSpec success: dnsPolicy Default",
     [](DaemonSet& ds) { pod_spec(ds).dns_policy = "Default"; },
     {}},
    {"validatePodDNSConfig success: dnsPolicy None with a nameserver",
     [](DaemonSet& ds) {
         pod_spec(ds).dns_policy = "None";
         set_raw_pod_spec(ds, {{"dnsConfig", {{"nameservers", Json::array({"1.1.1.1"})}}}});
     },
     {}},
    {"TestValidatePodSpec success: nodeSelector, names and priority class",
     [](DaemonSet& ds) {
         PodSpec& s = pod_spec(ds);
         s.node_selector = {{"kubernetes.io/os", "linux"}};
         s.service_account_name = "agent.sa";
         s.priority_class_name = "system-node-critical";
         s.node_name = "node-1.example.com";
     },
     {}},
    {"ValidatePodSpec: a negative terminationGracePeriodSeconds is accepted",
     [](DaemonSet& ds) { pod_spec(ds).termination_grace_period_seconds = -1; },
     {}},
    {"ValidatePodSpecificAnnotations success: seccomp, AppArmor and deletion cost",
     [](DaemonSet& ds) {
         ds.spec.template_.metadata.annotations = {
             {"seccomp.security.alpha.kubernetes.io/pod", "runtime/default"},
             {"container.seccomp.security.alpha.kubernetes.io/abc", "localhost/profiles/agent.json"},
             {"container.apparmor.security.beta.kubernetes.io/abc", "localhost/agent"},
             {"controller.kubernetes.io/pod-deletion-cost", "-100"},
         };
     },
     {}},

    {"TestValidatePodSpec: terminationGracePeriodSeconds unset",
     [](DaemonSet& ds) { pod_spec(ds).termination_grace_period_seconds.reset(); },
     {kSpec + "terminationGracePeriodSeconds: Required value"}},
    {"TestValidatePodSpec: dnsPolicy empty",
     [](DaemonSet& ds) { pod_spec(ds).dns_policy = ""; },
     {kSpec + "dnsPolicy: Required value"}},
    {"TestValidatePodSpec: bad dnsPolicy",
     [](DaemonSet& ds) { pod_spec(ds).dns_policy = "Local"; },
     {kSpec + "dnsPolicy: Unsupported value: \"Local\": supported values: \"ClusterFirstWithHostNet\", "
              "\"ClusterFirst\", \"Default\", \"None\""}},
    {"validatePodDNSConfig: dnsPolicy None without dnsConfig",
     [](DaemonSet& ds) { pod_spec(ds).dns_policy = "None"; },
     {kSpec + "dnsConfig: Required value: must provide `dnsConfig` when `dnsPolicy` is None"}},
    {"validatePodDNSConfig: dnsPolicy None without nameservers",
     [](DaemonSet& ds) {
         pod_spec(ds).dns_policy = "None";
         set_raw_pod_spec(ds, {{"dnsConfig", {{"searches", Json::array({"example.com"})}}}});
     },
     {kSpec +
      "dnsConfig.nameservers: Required value: must provide at least one DNS nameserver when `dnsPolicy` is "
      "None"}},
    {"validatePodDNSConfig: IsValidIP (a published file's __PILLAR__ placeholder)",
     [](DaemonSet& ds) {
         set_raw_pod_spec(
             ds, {{"dnsConfig", {{"nameservers", Json::array({"10.0.0.10", "__PILLAR__DNS__SERVER__"})}}}});
     },
     {kSpec +
      "dnsConfig.nameservers[1]: Invalid value: \"__PILLAR__DNS__SERVER__\": must be a valid IP address, "
      "(e.g. 10.9.8.7 or 2001:db8::ffff)"}},
    {"validatePodDNSConfig success: IPv6 nameserver, any dnsPolicy",
     [](DaemonSet& ds) {
         set_raw_pod_spec(ds, {{"dnsConfig", {{"nameservers", Json::array({"fd00::a"})}}}});
     },
     {}},
    {"TestValidatePodSpec: bad nodeSelector key",
     [](DaemonSet& ds) {
         pod_spec(ds).node_selector = {{"bad key", "v"}};
     },
     {kSpec + "nodeSelector: Invalid value: \"bad key\": " + kQualifiedNameMsg}},
    {"TestValidatePodSpec: bad nodeSelector value",
     [](DaemonSet& ds) {
         pod_spec(ds).node_selector = {{"k", "bad value"}};
     },
     {kSpec + "nodeSelector: Invalid value: \"bad value\": " + kLabelValueMsg}},
    {"TestValidatePodSpec: bad serviceAccountName",
     [](DaemonSet& ds) { pod_spec(ds).service_account_name = "Agent"; },
     {kSpec + "serviceAccountName: Invalid value: \"Agent\": " + kDnsSubdomainMsg}},
    {"TestValidatePodSpec: bad nodeName",
     [](DaemonSet& ds) { pod_spec(ds).node_name = "Node_1"; },
     {kSpec + "nodeName: Invalid value: \"Node_1\": " + kDnsSubdomainMsg}},
    {"TestValidatePodSpec: bad priorityClassName",
     [](DaemonSet& ds) { pod_spec(ds).priority_class_name = "Critical"; },
     {kSpec + "priorityClassName: Invalid value: \"Critical\": " + kDnsSubdomainMsg}},
    {"ValidatePodTemplateSpec: template labels are reported under spec.template.labels",
     [](DaemonSet& ds) { ds.spec.template_.metadata.labels["bad key"] = "v"; },
     {"spec.template.labels: Invalid value: \"bad key\": " + kQualifiedNameMsg}},
    {"ValidatePodSpecificAnnotations: mirror pod annotation needs nodeName",
     [](DaemonSet& ds) {
         ds.spec.template_.metadata.annotations = {{"kubernetes.io/config.mirror", "mirror"}};
     },
     {kAnn + "[kubernetes.io/config.mirror]: Invalid value: \"mirror\": must set spec.nodeName if mirror pod "
             "annotation is set"}},
    {"GetDeletionCostFromPodAnnotations: no plus sign",
     [](DaemonSet& ds) {
         ds.spec.template_.metadata.annotations = {{"controller.kubernetes.io/pod-deletion-cost", "+10"}};
     },
     {kAnn +
      "[controller.kubernetes.io/pod-deletion-cost]: Invalid value: \"+10\": must be a 32bit integer"}},
    {"GetDeletionCostFromPodAnnotations: beyond int32",
     [](DaemonSet& ds) {
         ds.spec.template_.metadata.annotations = {
             {"controller.kubernetes.io/pod-deletion-cost", "2147483648"}};
     },
     {kAnn + "[controller.kubernetes.io/pod-deletion-cost]: Invalid value: \"2147483648\": must be a 32bit "
             "integer"}},
    {"ValidateSeccompPodAnnotations: unknown profile",
     [](DaemonSet& ds) {
         ds.spec.template_.metadata.annotations = {{"seccomp.security.alpha.kubernetes.io/pod", "foo"}};
     },
     {kAnn +
      ".seccomp.security.alpha.kubernetes.io/pod: Invalid value: \"foo\": must be a valid seccomp profile"}},
    {"ValidateSeccompPodAnnotations: localhost profile with ..",
     [](DaemonSet& ds) {
         ds.spec.template_.metadata.annotations = {
             {"seccomp.security.alpha.kubernetes.io/pod", "localhost/../x"}};
     },
     {kAnn + ".seccomp.security.alpha.kubernetes.io/pod: Invalid value: \"../x\": must not contain '..'"}},
    {"ValidateAppArmorPodAnnotations: container not found",
     [](DaemonSet& ds) {
         ds.spec.template_.metadata.annotations = {
             {"container.apparmor.security.beta.kubernetes.io/missing", "runtime/default"}};
     },
     {kAnn +
      "[container.apparmor.security.beta.kubernetes.io/missing]: Invalid value: \"missing\": container not "
      "found"}},
    {"ValidateAppArmorPodAnnotations: invalid profile name",
     [](DaemonSet& ds) {
         ds.spec.template_.metadata.annotations = {
             {"container.apparmor.security.beta.kubernetes.io/abc", "foo"}};
     },
     {kAnn + "[container.apparmor.security.beta.kubernetes.io/abc]: Invalid value: \"foo\": invalid AppArmor "
             "profile name: \"foo\""}},
};

}  // namespace

TEST_GROUP(ContainerValidation){};

TEST(ContainerValidation, NamesImagesPoliciesAndSecurityContext) {
    check(kContainerRows, sizeof(kContainerRows) / sizeof(kContainerRows[0]));
}

TEST_GROUP(PortValidation){};

TEST(PortValidation, PortsNamesProtocolsAndHostPorts) {
    check(kPortRows, sizeof(kPortRows) / sizeof(kPortRows[0]));
}

TEST_GROUP(EnvValidation){};

TEST(EnvValidation, NamesAndDownwardApiSources) { check(kEnvRows, sizeof(kEnvRows) / sizeof(kEnvRows[0])); }
TEST(EnvValidation, EnvFromNamesOneSourceAndPrefix) {
    check(kEnvFromRows, sizeof(kEnvFromRows) / sizeof(kEnvFromRows[0]));
}

TEST_GROUP(ProbeValidation){};

TEST(ProbeValidation, ProbesHandlersAndLifecycleHooks) {
    check(kProbeRows, sizeof(kProbeRows) / sizeof(kProbeRows[0]));
}

TEST_GROUP(ResourceValidation){};

TEST(ResourceValidation, NamesQuantitiesAndRequestsAgainstLimits) {
    check(kResourceRows, sizeof(kResourceRows) / sizeof(kResourceRows[0]));
}

TEST_GROUP(VolumeValidation){};

TEST(VolumeValidation, VolumeSourcesAndMounts) {
    check(kVolumeRows, sizeof(kVolumeRows) / sizeof(kVolumeRows[0]));
}

TEST_GROUP(PodSpecValidation){};

TEST(PodSpecValidation, PolicyFieldsNamesAndTemplateAnnotations) {
    check(kPodSpecRows, sizeof(kPodSpecRows) / sizeof(kPodSpecRows[0]));
}
