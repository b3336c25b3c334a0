// The kinds a published install file holds besides its DaemonSets (issue 13
// §1): ConfigMaps and Secrets (data for pods), static Pods, and any other
// kind, each with the API server's errors and no more. Rows name the
// upstream rule they pin (pkg/apis/core/validation, apimachinery).
#include <algorithm>
#include <string>
#include <vector>

#include "core/base64.h"
#include "core/manifest.h"

#include <CppUTest/TestHarness.h>

using namespace daemonlet;

namespace {

std::string errors_of(const LoadedManifest& m) {
    std::string out;
    for (const auto& e : m.errors) out += e.to_string() + "\n";
    return out;
}

bool contains(const std::string& haystack, const std::string& needle) {
    return haystack.find(needle) != std::string::npos;
}

struct Row {
    const char* name;  // the upstream rule
    std::string input;
    // The errors (a part of their text: lines joined as errors_of joins
    // them); "" when the object is valid.
    const char* expected;
};

// Each row: the document loads with exactly the expected errors (or none),
// as many as the API server reports: one per line of `expected`.
void check_rows(const Row* rows, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) {
        const Row& row = rows[i];
        auto m = load_manifest(row.input, "f.yaml");
        std::string errs = errors_of(m);
        if (std::string(row.expected).empty()) {
            CHECK_TEXT(errs.empty(), (std::string(row.name) + ": unexpected errors:\n" + errs).c_str());
            CHECK_EQUAL_TEXT(1, m.objects.size(), row.name);
        } else {
            CHECK_TEXT(
                contains(errs, row.expected),
                (std::string(row.name) + ": expected \"" + row.expected + "\", got:\n" + errs).c_str());
            CHECK_EQUAL_TEXT(0, m.objects.size(), row.name);
            const std::string expected = row.expected;
            const auto lines =
                static_cast<std::size_t>(std::count(expected.begin(), expected.end(), '\n')) + 1;
            CHECK_EQUAL_TEXT(
                lines, m.errors.size(),
                (std::string(row.name) + ": more errors than the API server's:\n" + errs).c_str());
        }
    }
}

std::string config_map(const std::string& rest, const std::string& name = "cfg") {
    return "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: \"" + name + "\"}\n" + rest;
}
std::string secret(const std::string& rest, const std::string& type = "") {
    return "apiVersion: v1\nkind: Secret\nmetadata: {name: s, namespace: kube-system}\n" +
           (type.empty() ? "" : "type: " + type + "\n") + rest;
}

const char* const kSecretValue = "IT-SECRET-VALUE-0123";
// base64("IT-SECRET-VALUE-0123")
const char* const kSecretValue64 = "SVQtU0VDUkVULVZBTFVFLTAxMjM=";

}  // namespace

TEST_GROUP(Base64){};

// Go's encoding/base64 StdEncoding.Decode, as encoding/json decodes []byte.
TEST(Base64, DecodesAndFailsAtTheByteGoReports) {
    struct B {
        const char* in;
        const char* bytes;  // nullptr: corrupt
        std::size_t at;
    };
    const B rows[] = {
        {"", "", 0},
        {"YQ==", "a", 0},
        {"YWI=", "ab", 0},
        {"YWJj", "abc", 0},
        {"YW\nJj\r\n", "abc", 0},  // '\r' and '\n' are ignored
        {"YQ", nullptr, 0},        // a short quantum without padding: CorruptInputError(si - j)
        {"YWJjZA", nullptr, 4},
        {"YQ=", nullptr, 3},       // "==" needed after two symbols: at len(src)
        {"=", nullptr, 0},         // padding in the first place
        {"a!bc", nullptr, 1},      // not in the alphabet
        {"YQ==YQ==", nullptr, 4},  // data after the padding
        {"<Replace me>", nullptr, 0},
    };
    for (const auto& r : rows) {
        Base64Result got = base64_std_decode(r.in);
        if (r.bytes) {
            CHECK_FALSE_TEXT(got.corrupt_at.has_value(), r.in);
            STRCMP_EQUAL_TEXT(r.bytes, got.bytes.c_str(), r.in);
        } else {
            CHECK_TEXT(got.corrupt_at.has_value(), r.in);
            CHECK_EQUAL_TEXT(r.at, *got.corrupt_at, r.in);
            STRCMP_EQUAL_TEXT(("illegal base64 data at input byte " + std::to_string(r.at)).c_str(),
                              got.error().c_str(), r.in);
        }
    }
}

TEST_GROUP(ManifestKinds){};

TEST(ManifestKinds, ConfigMapRowsAsValidateConfigMap) {
    const std::string long_key(254, 'k');
    const std::string big(1024 * 1024 + 1, 'x');
    const Row rows[] = {
        {"ValidateConfigMap: data and binaryData", config_map("data: {a.conf: x}\nbinaryData: {b: AAE=}\n"),
         ""},
        {"ValidateConfigMap: values are free text (a template placeholder is a value)",
         config_map("data: {dns: __PILLAR__DNS__SERVER__, who: <Replace me>}\n"), ""},
        {"IsConfigMapKey: the alphabet", config_map("data: {\"a b\": x}\n"),
         "f.yaml: document 1: data[a b]: Invalid value: \"a b\": a valid config key must consist of "
         "alphanumeric characters, '-', '_' or '.'"},
        {"IsConfigMapKey: not '..'", config_map("data: {\"..\": x}\n"),
         "data[..]: Invalid value: \"..\": must not be '..'"},
        {"IsConfigMapKey: not starting with '..'", config_map("binaryData: {\"..data\": AA==}\n"),
         "binaryData[..data]: Invalid value: \"..data\": must not start with '..'"},
        {"IsConfigMapKey: at most 253 characters", config_map("data: {" + long_key + ": x}\n"),
         "must be no more than 253 characters"},
        {"ValidateConfigMap: a key in both data and binaryData",
         config_map("data: {k: x}\nbinaryData: {k: AA==}\n"),
         "binaryData[k]: Invalid value: \"k\": duplicate key in both data and binaryData"},
        {"ValidateConfigMap: at most MaxSecretSize", config_map("data: {k: " + big + "}\n"),
         "f.yaml: document 1: Too long: must have at most 1048576 bytes"},
        {"ValidateConfigMap: ValidateConfigMapName (a template placeholder as the name)",
         config_map("data: {}\n", "<Replace me>"),
         "metadata.name: Invalid value: \"<Replace me>\": a lowercase RFC 1123 subdomain"},
        {"ValidateConfigMap: ValidateConfigMapName (__PILLAR__ placeholder)",
         config_map("data: {}\n", "__PILLAR__CLUSTER__DNS__"),
         "metadata.name: Invalid value: \"__PILLAR__CLUSTER__DNS__\""},
        {"decoder: binaryData is []byte, base64", config_map("binaryData: {k: \"abc\"}\n"),
         "binaryData[k]: Invalid value: illegal base64 data at input byte 0"},
        {"decoder: data is map[string]string", config_map("data: {k: 1}\n"),
         "data[k]: Invalid value: 1: expected a string, got an integer"},
        {"decoder: a null value in map[string]string is \"\"",
         config_map("data: {empty: }\nbinaryData: {none: }\n"), ""},
        {"ValidateObjectMeta: a namespace is a DNS label",
         "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c, namespace: A_B}\n",
         "metadata.namespace: Invalid value: \"A_B\": a lowercase RFC 1123 label"},
    };
    check_rows(rows, sizeof rows / sizeof rows[0]);
}

TEST(ManifestKinds, ConfigMapIsDecodedAndDefaulted) {
    auto m =
        load_manifest(config_map("immutable: true\ndata: {a: x}\nbinaryData: {b: AAECAwQ=}\n"), "f.yaml");
    CHECK_EQUAL_TEXT(1, m.objects.size(), errors_of(m).c_str());
    const auto& cm = std::get<ConfigMap>(m.objects.front().object);
    STRCMP_EQUAL("default", cm.metadata.namespace_.c_str());  // kubectl's namespace
    STRCMP_EQUAL("x", cm.data.at("a").c_str());
    CHECK(cm.binary_data.at("b") == std::string("\x00\x01\x02\x03\x04", 5));
    CHECK(cm.immutable);
}

TEST(ManifestKinds, SecretRowsAsValidateSecret) {
    const std::string big(1024 * 1024 + 1, 'x');
    const Row rows[] = {
        {"ValidateSecret: Opaque", secret(std::string("data: {p: ") + kSecretValue64 + "}\n"), ""},
        {"ValidateSecret: kubernetes.io/tls needs tls.crt and tls.key",
         secret("data: {tls.crt: AA==}\n", "kubernetes.io/tls"),
         "f.yaml: document 1: data[tls.key]: Required value"},
        {"ValidateSecret: kubernetes.io/tls complete",
         secret("data: {tls.crt: AA==, tls.key: AA==}\n", "kubernetes.io/tls"), ""},
        {"ValidateSecret: service-account-token needs the service account annotation",
         secret("", "kubernetes.io/service-account-token"),
         "metadata.annotations[kubernetes.io/service-account.name]: Required value"},
        {"ValidateSecret: service-account-token with its annotation",
         "apiVersion: v1\nkind: Secret\nmetadata:\n  name: t\n  annotations: "
         "{kubernetes.io/service-account.name: "
         "agent}\ntype: kubernetes.io/service-account-token\n",
         ""},
        {"ValidateSecret: dockerconfigjson needs .dockerconfigjson",
         secret("data: {}\n", "kubernetes.io/dockerconfigjson"), "data[.dockerconfigjson]: Required value"},
        {"ValidateSecret: dockerconfigjson must be a JSON object (value redacted)",
         secret("stringData: {.dockerconfigjson: \"[1]\"}\n", "kubernetes.io/dockerconfigjson"),
         "data[.dockerconfigjson]: Invalid value: \"<secret contents redacted>\": json: cannot unmarshal "
         "array"},
        {"ValidateSecret: dockercfg needs .dockercfg", secret("data: {}\n", "kubernetes.io/dockercfg"),
         "data[.dockercfg]: Required value"},
        {"ValidateSecret: basic-auth needs username or password",
         secret("data: {}\n", "kubernetes.io/basic-auth"),
         "data[username]: Required value\nf.yaml: document 1: data[password]: Required value"},
        {"ValidateSecret: basic-auth with an empty password",
         secret("stringData: {password: \"\"}\n", "kubernetes.io/basic-auth"), ""},
        {"ValidateSecret: ssh-auth needs a non-empty ssh-privatekey",
         secret("stringData: {ssh-privatekey: \"\"}\n", "kubernetes.io/ssh-auth"),
         "data[ssh-privatekey]: Required value"},
        {"ValidateSecret: IsConfigMapKey on stringData's keys too (merged into data)",
         secret("stringData: {\"a/b\": x}\n"), "data[a/b]: Invalid value: \"a/b\": a valid config key"},
        {"ValidateSecret: at most MaxSecretSize", secret("stringData: {k: " + big + "}\n"),
         "data: Too long: must have at most 1048576 bytes"},
        {"decoder: data is []byte: a template placeholder is not base64",
         secret("data: {password: <Replace me>}\n"),
         "data[password]: Invalid value: illegal base64 data at input byte 0"},
        {"ValidateSecret: stringData is free text (a placeholder is a value)",
         secret("stringData: {password: <Replace me>}\n"), ""},
        {"ValidateSecretName: a DNS subdomain",
         "apiVersion: v1\nkind: Secret\nmetadata: {name: \"__PILLAR__SECRET__\"}\n",
         "metadata.name: Invalid value: \"__PILLAR__SECRET__\": a lowercase RFC 1123 subdomain"},
    };
    check_rows(rows, sizeof rows / sizeof rows[0]);
}

TEST(ManifestKinds, SecretDataIsDecodedStringDataMergedTypeDefaulted) {
    auto m = load_manifest(
        secret(std::string("data: {a: ") + kSecretValue64 + ", b: YQ==}\nstringData: {b: plain}\n"),
        "f.yaml");
    CHECK_EQUAL_TEXT(1, m.objects.size(), errors_of(m).c_str());
    const auto& s = std::get<Secret>(m.objects.front().object);
    STRCMP_EQUAL("Opaque", s.type.c_str());  // SetDefaults_Secret
    STRCMP_EQUAL(kSecretValue, s.data.at("a").c_str());
    STRCMP_EQUAL("plain", s.data.at("b").c_str());  // stringData wins, as the API server merges it
    // The kept object holds no value.
    std::string kept = s.object.dump();
    CHECK_FALSE_TEXT(contains(kept, kSecretValue64), kept.c_str());
    CHECK_FALSE_TEXT(contains(kept, "plain"), kept.c_str());
    CHECK_TEXT(contains(kept, "\"a\""), kept.c_str());  // the keys stay
}

// No Secret value in any error: a wrong type, bad base64, a docker config
// that does not parse, next to other errors in the same Secret.
TEST(ManifestKinds, SecretValuesNeverAppearInErrors) {
    const std::vector<std::string> docs = {
        secret(std::string("data: {\"bad key\": ") + kSecretValue64 + ", x: " + kSecretValue + "}\n"),
        secret(std::string("data: {x: [") + kSecretValue + "]}\n"),
        secret(std::string("stringData: {x: {v: ") + kSecretValue + "}}\n"),
        secret(std::string("stringData: {.dockerconfigjson: \"{") + kSecretValue + "\"}\n",
               "kubernetes.io/dockerconfigjson"),
        secret(std::string("stringData: {.dockercfg: \"") + kSecretValue + "\"}\n",
               "kubernetes.io/dockercfg"),
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: \"Bad Name\"\n  annotations:\n"
        "    kubectl.kubernetes.io/last-applied-configuration: '{\"data\":{\"p\":\"" +
            std::string(kSecretValue64) + "\"}}'\nstringData: {p: " + kSecretValue + "}\n",
    };
    // Parse errors too: a tagged scalar that does not decode, infinity, and
    // JSON that stops parsing inside a value.
    const std::vector<std::string> parse_errors = {
        secret(std::string("stringData: {p: !!int ") + kSecretValue + "}\n"),
        secret("stringData: {p: .inf}\n"),
        std::string("{\"apiVersion\": \"v1\", \"kind\": \"Secret\", \"metadata\": {\"name\": \"s\"}, "
                    "\"stringData\": {\"p\": ") +
            kSecretValue + "}}",
    };
    for (const auto& d : parse_errors) {
        auto m = load_manifest(d, "f.yaml");
        std::string errs = errors_of(m);
        CHECK_TEXT(!errs.empty(), d.c_str());
        CHECK_FALSE_TEXT(contains(errs, kSecretValue), errs.c_str());
        CHECK_FALSE_TEXT(contains(errs, ".inf"), errs.c_str());
    }
    for (const auto& d : docs) {
        auto m = load_manifest(d, "f.yaml");
        std::string errs = errors_of(m);
        CHECK_TEXT(!errs.empty(), d.c_str());
        CHECK_FALSE_TEXT(contains(errs, kSecretValue), errs.c_str());
        CHECK_FALSE_TEXT(contains(errs, kSecretValue64), errs.c_str());
    }
}

TEST(ManifestKinds, PodRowsAsValidatePodCreate) {
    const Row rows[] = {
        {"ValidatePodSpec: a static pod with restartPolicy OnFailure",
         "apiVersion: v1\nkind: Pod\nmetadata: {name: web, namespace: kube-system}\nspec:\n  restartPolicy: "
         "OnFailure\n"
         "  containers: [{name: c, image: nginx}]\n",
         ""},
        {"ValidatePodSpec: containers required",
         "apiVersion: v1\nkind: Pod\nmetadata: {name: web}\nspec: {}\n", "spec.containers: Required value"},
        {"ValidatePodCreate: no ephemeral containers on create",
         "apiVersion: v1\nkind: Pod\nmetadata: {name: w}\nspec:\n  containers: [{name: c, image: x}]\n"
         "  ephemeralContainers: [{name: d, image: x}]\n",
         "spec.ephemeralContainers: Forbidden: cannot be set on create"},
        {"ValidateObjectMeta: NameIsDNSSubdomain",
         "apiVersion: v1\nkind: Pod\nmetadata: {name: Web}\nspec: {containers: [{name: c, image: x}]}\n",
         "metadata.name: Invalid value: \"Web\""},
        {"ValidateObjectMeta: metadata.labels, not the template's `labels`",
         "apiVersion: v1\nkind: Pod\nmetadata: {name: w, labels: {\"a b\": c}}\nspec: {containers: [{name: "
         "c, image: x}]}\n",
         "metadata.labels: Invalid value: \"a b\""},
    };
    check_rows(rows, sizeof rows / sizeof rows[0]);
    auto m = load_manifest(rows[0].input, "f.yaml");
    const auto& pod = std::get<Pod>(m.objects.front().object);
    STRCMP_EQUAL("ClusterFirst", pod.spec.dns_policy.c_str());  // SetDefaults_PodSpec
    STRCMP_EQUAL("OnFailure", pod.spec.restart_policy.c_str());
    STRCMP_EQUAL("kube-system", pod.metadata.namespace_.c_str());
}

TEST(ManifestKinds, OtherKindsAreCheckedForWhatEveryObjectNeeds) {
    const Row rows[] = {
        {"unknown kinds are not errors (a custom resource)",
         "apiVersion: example.org/v1\nkind: Widget\nmetadata: {name: w, namespace: ns}\nspec: {any: "
         "[thing]}\n",
         ""},
        {"ValidateRBACName: path segment names allow ':'",
         "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: "
         "\"system:flannel\"}\n",
         ""},
        {"ValidateRBACName: IsValidPathSegmentName",
         "apiVersion: rbac.authorization.k8s.io/v1\nkind: Role\nmetadata: {name: \"a/b\", namespace: x}\n",
         "metadata.name: Invalid value: \"a/b\": may not contain '/'"},
        {"ValidateNamespaceName: a DNS label",
         "apiVersion: v1\nkind: Namespace\nmetadata: {name: kube.flannel}\n",
         "metadata.name: Invalid value: \"kube.flannel\": must not contain dots"},
        {"ValidateServiceName: a DNS-1035 label", "apiVersion: v1\nkind: Service\nmetadata: {name: 9lives}\n",
         "metadata.name: Invalid value: \"9lives\": a DNS-1035 label must consist of lower case "
         "alphanumeric"},
        {"NameIsDNSSubdomain: a template placeholder as a ServiceAccount name",
         "apiVersion: v1\nkind: ServiceAccount\nmetadata: {name: \"<Replace me>\"}\n",
         "metadata.name: Invalid value: \"<Replace me>\": a lowercase RFC 1123 subdomain"},
        {"ValidateObjectMeta: name required",
         "apiVersion: v1\nkind: ServiceAccount\nmetadata: {namespace: x}\n",
         "metadata.name: Required value: name or generateName is required"},
        {"ValidateObjectMeta: a written namespace is a DNS label",
         "apiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata: {name: p, namespace: a.b}\n",
         "metadata.namespace: Invalid value: \"a.b\": must not contain dots"},
        {"rest.BeforeCreate: a cluster-scoped kind's namespace is dropped, not checked",
         "apiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingWebhookConfiguration\n"
         "metadata: {name: hook, namespace: Not_A_Label}\n",
         ""},
        {"kubectl: apiVersion required", "kind: Namespace\nmetadata: {name: n}\n",
         "apiVersion: Object 'apiVersion' is missing"},
        {"decoder: metadata.name is a string", "apiVersion: v1\nkind: Namespace\nmetadata: {name: [x]}\n",
         "metadata.name: Invalid value: [\"x\"]: expected a string, got an array"},
    };
    check_rows(rows, sizeof rows / sizeof rows[0]);
    auto m = load_manifest(rows[8].input, "f.yaml");
    const auto& o = std::get<OtherObject>(m.objects.front().object);
    STRCMP_EQUAL("", o.namespace_.c_str());
    STRCMP_EQUAL("ValidatingWebhookConfiguration hook", describe_object(m.objects.front()).c_str());
}

// Placeholders in a published DaemonSet: an error exactly where the API
// server checks the field, none where it does not.
TEST(ManifestKinds, TemplatePlaceholdersInADaemonSet) {
    auto ds = [](const std::string& name, const std::string& spec_extra, const std::string& args) {
        return "apiVersion: apps/v1\nkind: DaemonSet\nmetadata: {name: \"" + name +
               "\", namespace: kube-system}\nspec:\n  selector: {matchLabels: {k8s-app: node-local-dns}}\n"
               "  template:\n    metadata: {labels: {k8s-app: node-local-dns}}\n    spec:\n" +
               spec_extra +
               "      containers: [{name: node-cache, image: "
               "registry.k8s.io/dns/k8s-dns-node-cache:1.22.28, " +
               "args: " + args + "}]\n";
    };
    const Row rows[] = {
        {"ValidatePodSpec: args are free text (nodelocaldns' -localip __PILLAR__LOCAL__DNS__)",
         ds("node-local-dns", "", "[-localip, \"__PILLAR__LOCAL__DNS__,__PILLAR__DNS__SERVER__\"]"), ""},
        {"ValidateObjectMeta: NameIsDNSSubdomain (<Replace me> as the name)", ds("<Replace me>", "", "[]"),
         "metadata.name: Invalid value: \"<Replace me>\": a lowercase RFC 1123 subdomain"},
        {"validatePodDNSConfig: IsValidIP (__PILLAR__DNS__SERVER__ as a nameserver)",
         ds("node-local-dns", "      dnsConfig: {nameservers: [__PILLAR__DNS__SERVER__]}\n", "[]"),
         "spec.template.spec.dnsConfig.nameservers[0]: Invalid value: \"__PILLAR__DNS__SERVER__\": must be a "
         "valid "
         "IP address"},
    };
    check_rows(rows, sizeof rows / sizeof rows[0]);
}

// A published install file: every document is taken, each as what it is;
// one bad document leaves the others.
TEST(ManifestKinds, APublishedInstallFileLoadsWhole) {
    const std::string file =
        "apiVersion: v1\nkind: Namespace\nmetadata: {name: net}\n---\n"
        "apiVersion: v1\nkind: ServiceAccount\nmetadata: {name: agent, namespace: net}\n---\n" +
        config_map("data: {net-conf.json: \"{}\"}\n") + "---\n" + secret("stringData: {token: t}\n") +
        "---\n" +
        "apiVersion: apps/v1\nkind: DaemonSet\nmetadata: {name: agent, namespace: net}\nspec:\n"
        "  selector: {matchLabels: {app: a}}\n  template:\n    metadata: {labels: {app: a}}\n"
        "    spec: {containers: [{name: c, image: x}]}\n---\n" +
        secret("data: {password: <Replace me>}\n");
    auto m = load_manifest(file, "f.yaml");
    CHECK_EQUAL(5, m.objects.size());
    CHECK_EQUAL(1, m.errors.size());
    STRCMP_EQUAL("f.yaml: document 6: data[password]: Invalid value: illegal base64 data at input byte 0",
                 m.errors.front().to_string().c_str());
    CHECK(std::holds_alternative<OtherObject>(m.objects[0].object));
    CHECK(std::holds_alternative<OtherObject>(m.objects[1].object));
    CHECK(std::holds_alternative<ConfigMap>(m.objects[2].object));
    CHECK(std::holds_alternative<Secret>(m.objects[3].object));
    CHECK(std::holds_alternative<DaemonSet>(m.objects[4].object));
    STRCMP_EQUAL("ServiceAccount net/agent", describe_object(m.objects[1]).c_str());
    STRCMP_EQUAL("Secret kube-system/s", describe_object(m.objects[3]).c_str());
}
