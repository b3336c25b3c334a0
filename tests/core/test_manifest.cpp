// Reading manifests: what `kubectl apply -f` accepts, and every kind of bad
// input the agent must survive with a clear error.

#include <string>
#include <vector>

#include "core/field_error.h"
#include "core/manifest.h"
#include "core/yaml_reader.h"

#include <CppUTest/TestHarness.h>

using namespace daemonlet;

namespace {

const char* const kDs = R"(apiVersion: apps/v1
kind: DaemonSet
metadata: {name: ds-a}
spec:
  selector: {matchLabels: {app: a}}
  template:
    metadata: {labels: {app: a}}
    spec:
      containers: [{name: c, image: busybox:1.36}]
)";

std::string errors_of(const LoadedManifest& m) {
    std::string out;
    for (const auto& e : m.errors) out += e.to_string() + "\n";
    return out;
}

const DaemonSet& only_ds(const LoadedManifest& m) {
    CHECK_EQUAL_TEXT(1, m.objects.size(), errors_of(m).c_str());
    return std::get<DaemonSet>(m.objects.front().object);
}

// The first error's text, or "" when there is none.
std::string first_error(const LoadedManifest& m) {
    return m.errors.empty() ? "" : m.errors.front().to_string();
}

bool contains(const std::string& haystack, const std::string& needle) {
    return haystack.find(needle) != std::string::npos;
}

}  // namespace

TEST_GROUP(YamlScalars){};

// goyaml.v2 resolve.go, which sigs.k8s.io/yaml (kubectl) uses: YAML 1.1.
TEST(YamlScalars, ResolveAsGoyamlV2) {
    struct Row {
        const char* in;
        Json out;
    };
    const Row rows[] = {
        {"", Json(nullptr)},
        {"~", Json(nullptr)},
        {"null", Json(nullptr)},
        {"yes", Json(true)},
        {"On", Json(true)},
        {"y", Json(true)},
        {"NO", Json(false)},
        {"off", Json(false)},
        {"10", Json(10)},
        {"-10", Json(-10)},
        {"+7", Json(7)},
        {"010", Json(8)},
        {"0x1F", Json(31)},
        {"0o17", Json(15)},
        {"0b101", Json(5)},
        {"1_000", Json(1000)},
        {"1.5", Json(1.5)},
        {".5", Json(0.5)},
        {"1e3", Json(1000.0)},
        {"08", Json(8.0)},
        {"1.2.3", Json("1.2.3")},
        {"v1", Json("v1")},
        {"+", Json("+")},
        {"0.1.2", Json("0.1.2")},
        {"2001-12-14", Json("2001-12-14")},
        {"18446744073709551615", Json(18446744073709551615ULL)},
    };
    for (const auto& r : rows) {
        auto v = detail::resolve_plain_scalar(r.in);
        CHECK_TEXT(v.has_value(), r.in);
        CHECK_TEXT(*v == r.out, (std::string(r.in) + " -> " + v->dump()).c_str());
        CHECK_EQUAL_TEXT(r.out.type_name(), std::string(v->type_name()), r.in);
    }
    CHECK_FALSE(detail::resolve_plain_scalar(".inf").has_value());
    CHECK_FALSE(detail::resolve_plain_scalar(".NaN").has_value());
}

TEST_GROUP(ManifestReader){};

TEST(ManifestReader, MultiDocumentStreamSkipsEmptyDocumentsButCountsThem) {
    std::string s = std::string("# leading comment\n---\n") + kDs + "---\n# nothing here\n---\n" + kDs;
    auto docs = parse_documents(s, "f.yaml");
    CHECK_TRUE(docs.ok());
    CHECK_EQUAL(2, docs.value().size());
    CHECK_EQUAL(1, docs.value()[0].number);
    CHECK_EQUAL(3, docs.value()[1].number);
}

TEST(ManifestReader, AnchorsAliasesAndMergeKeys) {
    auto docs = parse_documents(R"(
base: &base {a: 1, b: 2}
copy: *base
merged:
  <<: *base
  b: 3
multi:
  <<: [{p: 1}, {p: 2, q: 2}]
yaml11: {y: 1, n: 2}
list: &l [1, 2]
again: *l
)",
                                "f.yaml");
    CHECK_TRUE(docs.ok());
    const Json& v = docs.value()[0].value;
    CHECK(v["copy"] == v["base"]);
    CHECK(v["merged"]["a"] == 1);
    CHECK(v["merged"]["b"] == 3);  // explicit keys win over merged ones
    CHECK(v["multi"]["p"] == 1);   // earlier merge sources win
    CHECK(v["multi"]["q"] == 2);
    // YAML 1.1 keys, as goyaml.v2 and so kubectl read them: `y`, `n` and `on`
    // are booleans, and sigs.k8s.io/yaml writes boolean keys as strings.
    CHECK(v["yaml11"].contains("true"));
    CHECK(v["yaml11"].contains("false"));
    CHECK_FALSE(v["yaml11"].contains("y"));
    CHECK(v["again"] == Json::array({1, 2}));
}

TEST(ManifestReader, BlockScalarsAndQuotedStrings) {
    auto docs = parse_documents(
        "lit: |\n  line1\n  line2\nfold: >\n  a\n  b\nq: \"yes\"\ns: '010'\nt: !!str 10\n", "f.yaml");
    CHECK_TRUE(docs.ok());
    const Json& v = docs.value()[0].value;
    CHECK(v["lit"] == "line1\nline2\n");
    CHECK(v["fold"] == "a b\n");
    CHECK(v["q"] == "yes");
    CHECK(v["s"] == "010");
    CHECK(v["t"] == "10");
}

TEST(ManifestReader, JsonAndJsonStreams) {
    auto one =
        parse_documents(R"({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n"}})", "n.json");
    CHECK_TRUE(one.ok());
    CHECK_EQUAL(1, one.value().size());
    auto two = parse_documents("{\"a\": 1}\n{\"b\": \"}\"}\n", "s.json");
    CHECK_TRUE(two.ok());
    CHECK_EQUAL(2, two.value().size());
    CHECK(two.value()[1].value["b"] == "}");
}

TEST(ManifestReader, KubectlDryRunOutputIsAccepted) {
    // kubectl create deployment web --image=nginx:1.27 --dry-run=client -o yaml,
    // kind changed to DaemonSet.
    const char* dry = R"(apiVersion: apps/v1
kind: DaemonSet
metadata:
  creationTimestamp: null
  labels:
    app: web
  name: web
spec:
  selector:
    matchLabels:
      app: web
  strategy: {}
  template:
    metadata:
      creationTimestamp: null
      labels:
        app: web
    spec:
      containers:
      - image: nginx:1.27
        name: nginx
        resources: {}
status: {}
)";
    auto m = load_manifest(dry, "web.yaml");
    const DaemonSet& ds = only_ds(m);
    STRCMP_EQUAL("web", ds.metadata.name.c_str());
    STRCMP_EQUAL("default", ds.metadata.namespace_.c_str());
    // `strategy` is a Deployment field: unknown here, kept, not an error.
    CHECK(ds.object["spec"]["strategy"] == Json::object());
}

TEST(ManifestReader, ListItemsAreExpanded) {
    auto m = load_manifest(R"({"apiVersion": "v1", "kind": "List", "items": [
      {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}},
      {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n2"}}]})",
                           "list.json");
    CHECK_EQUAL_TEXT(2, m.objects.size(), errors_of(m).c_str());
    STRCMP_EQUAL("document 1, items[1]", m.objects[1].where.c_str());
}

TEST(ManifestReader, UnknownFieldsAreKeptForWritingBack) {
    std::string s = std::string(kDs) + "  someFutureField: {x: [1, 2]}\n";
    auto m = load_manifest(s, "f.yaml");
    const DaemonSet& ds = only_ds(m);
    CHECK(ds.object["spec"]["someFutureField"]["x"] == Json::array({1, 2}));
    // ...and the user's key order survives.
    CHECK(ds.object.begin().key() == "apiVersion");
}

TEST(ManifestReader, LegacyVersionsAreConvertedWithAWarning) {
    auto m = load_manifest(R"(apiVersion: extensions/v1beta1
kind: DaemonSet
metadata: {name: old}
spec:
  template:
    metadata: {labels: {app: old}}
    spec:
      containers: [{name: c, image: busybox:1.36}]
)",
                           "old.yaml");
    const DaemonSet& ds = only_ds(m);
    CHECK_EQUAL(1, m.warnings.size());
    CHECK_TRUE(contains(m.warnings[0], "extensions/v1beta1"));
    CHECK(ds.object["apiVersion"] == "apps/v1");
    STRCMP_EQUAL("OnDelete", ds.spec.update_strategy.type.c_str());
    STRCMP_EQUAL("old", ds.spec.selector->match_labels.at("app").c_str());

    auto m2 = load_manifest(std::string(kDs).replace(0, 19, "apiVersion: apps/v1beta2"), "b2.yaml");
    const DaemonSet& ds2 = only_ds(m2);
    CHECK_EQUAL(1, m2.warnings.size());
    STRCMP_EQUAL("RollingUpdate", ds2.spec.update_strategy.type.c_str());
}

TEST(ManifestReader, OneBadDocumentLeavesTheOthers) {
    std::string s =
        std::string(kDs) + "---\napiVersion: apps/v1\nkind: DaemonSet\nmetadata: {name: b}\n---\n" + kDs;
    auto m = load_manifest(s, "mix.yaml");
    CHECK_EQUAL(2, m.objects.size());
    CHECK_FALSE(m.errors.empty());
    CHECK_EQUAL(2, m.errors.front().document);
}

TEST_GROUP(ManifestErrors){};

// Each row: input, then a fragment the first error must contain. Every
// error names the file and the document; fields where there is one.
TEST(ManifestErrors, BadInputGetsAnErrorNamingFileDocumentFieldAndReason) {
    struct Row {
        const char* name;
        std::string input;
        const char* expected;
    };
    const Row rows[] = {
        {"malformed YAML", "a: [1, 2\n", "bad.yaml: document 1: line "},
        {"malformed YAML in the second document", std::string(kDs) + "---\nkey: : :\n  - x\n",
         "bad.yaml: document 2: line "},
        {"tab indentation", "a:\n\t- b\n", "bad.yaml: document 1: line 2"},
        {"malformed JSON", "{\"apiVersion\": \"v1\",}", "bad.yaml: document 1: parse error"},
        {"string where a number belongs", std::string(kDs) + "  minReadySeconds: soon\n",
         "bad.yaml: document 1: spec.minReadySeconds: Invalid value: \"soon\": expected an integer (int32), "
         "got a string"},
        {"number where a label value belongs",
         "apiVersion: v1\nkind: Node\nmetadata:\n  name: node1\n  labels: {version: 1}\n",
         "bad.yaml: document 1: metadata.labels[version]: Invalid value: 1: expected a string, got an "
         "integer"},
        {"YAML 1.1 boolean where a label value belongs",
         "apiVersion: v1\nkind: Node\nmetadata:\n  name: node1\n  labels: {enabled: yes}\n",
         "metadata.labels[enabled]: Invalid value: true: expected a string, got a boolean"},
        {"int32 out of range", std::string(kDs) + "  minReadySeconds: 99999999999\n",
         "spec.minReadySeconds: Invalid value: 99999999999: out of range for an integer (int32)"},
        {"an unknown kind is checked for a valid name", "apiVersion: v1\nkind: Widget\nmetadata: {name: X}\n",
         "bad.yaml: document 1: metadata.name: Invalid value: \"X\": a lowercase RFC 1123 subdomain"},
        {"missing kind", "apiVersion: v1\nmetadata: {name: x}\n",
         "bad.yaml: document 1: kind: Object 'Kind' is missing"},
        {"not an object", "- just\n- a list\n", "bad.yaml: document 1: expected an object, got array"},
        {"duplicate key", "apiVersion: v1\nkind: Node\nkind: Node\n",
         "bad.yaml: document 1: kind: mapping key \"kind\" already defined"},
        {"unknown alias", "a: *nope\n", "unknown anchor"},
        {"infinity", "a: .inf\n", "cannot be represented in JSON"},
        {"bad quantity", std::string(kDs) + "      volumes: [{name: v, emptyDir: {sizeLimit: lots}}]\n",
         "spec.template.spec.volumes[0].emptyDir.sizeLimit: Invalid value: \"lots\": quantities must match"},
        {"grpc probe port by name (GRPCAction.Port is an int32, not an IntOrString)",
         std::string(kDs) +
             "      initContainers: [{name: i, image: x, readinessProbe: {grpc: {port: health}}}]\n",
         "spec.template.spec.initContainers[0].readinessProbe.grpc.port: Invalid value: \"health\": expected "
         "an "
         "integer (int32), got a string"},
        {"invalid UTF-8", "a: b\nc: \xff\xfe\n", "bad.yaml: line 2: invalid UTF-8"},
        {"absurd YAML nesting", std::string(5000, '[') + std::string(5000, ']'),
         "nesting deeper than 64 levels"},
        {"absurd JSON nesting", std::string(5000, '{'), "bad.yaml: document 1:"},
        {"absurd JSON array nesting", "{\"a\":" + std::string(5000, '[') + std::string(5000, ']') + "}",
         "nesting deeper than 64 levels"},
    };
    for (const auto& row : rows) {
        auto m = load_manifest(row.input, "bad.yaml");
        std::string err = first_error(m);
        CHECK_TEXT(contains(err, row.expected), (std::string(row.name) + ": got \"" + err + "\"").c_str());
    }
}

TEST(ManifestErrors, OversizedFileIsRefusedBeforeParsing) {
    ManifestLimits limits;
    limits.max_bytes = 1024;
    auto m = load_manifest(std::string(2048, '#'), "big.yaml", limits);
    STRCMP_EQUAL("big.yaml: file is 2048 bytes, over the limit of 1024 bytes", first_error(m).c_str());
}

TEST(ManifestErrors, AliasExpansionIsBounded) {
    // "Billion laughs": each level doubles the previous ten times.
    std::string s = "a: &a [x, x, x, x, x, x, x, x, x, x]\n";
    const char* prev = "a";
    const char* names[] = {"b", "c", "d", "e", "f", "g", "h", "i"};
    for (const char* n : names) {
        s += std::string(n) + ": &" + n + " [";
        for (int k = 0; k < 10; ++k) s += std::string(k ? ", " : "") + "*" + prev;
        s += "]\n";
        prev = n;
    }
    // A small limit keeps the test fast under CppUTest's leak detector; the
    // default (50000 values) goes through the same check.
    ManifestLimits limits;
    limits.max_nodes = 20000;
    auto m = load_manifest(s, "lol.yaml", limits);
    STRCMP_EQUAL("lol.yaml: document 1: e: document expands to more than 20000 values (alias expansion?)",
                 first_error(m).c_str());
}

// The default bound is what fits a 32 MiB board (issue 15 §5,
// bench/memory.sh): a parsed value costs the agent about 170 bytes, and a
// 3 MiB file of 200 000 short strings had it OOM-killed.
TEST(ManifestErrors, ADocumentOfMoreThanFiftyThousandValuesIsRefusedByDefault) {
    std::string s = "a: [0";
    for (int k = 1; k < 50000; ++k) s += ",0";
    s += "]\n";  // 50 000 numbers, the sequence and the mapping: 50 002 values
    std::string err = first_error(load_manifest(s, "big.yaml"));
    CHECK_TEXT(err.rfind("big.yaml: document 1: ", 0) == 0 &&
                   err.find("document expands to more than 50000 values") != std::string::npos,
               err.c_str());
    s = "a: [0";
    for (int k = 1; k < 49000; ++k) s += ",0";
    s += "]\n";  // 49 002 values: parsed (and refused for lacking a kind)
    CHECK(first_error(load_manifest(s, "big.yaml")).find("more than 50000 values") == std::string::npos);
}

// Each object a file keeps costs the agent its typed model besides its
// document: 10 000 DaemonSets in a 3 MiB file took 99 MB to load (issue 15
// §5). The 1001st object is refused and the rest of the file not read.
TEST(ManifestErrors, AFileOfMoreThanAThousandObjectsIsRefused) {
    std::string s;
    for (int k = 0; k < 1000; ++k)
        s += "---\napiVersion: v1\nkind: Namespace\nmetadata: {name: n" + std::to_string(k) + "}\n";
    LoadedManifest ok = load_manifest(s, "many.yaml");
    CHECK_EQUAL_TEXT(1000, ok.objects.size(), errors_of(ok).c_str());
    CHECK(ok.errors.empty());
    const std::string past =
        s + "---\napiVersion: v1\nkind: Namespace\nmetadata: {name: last}\n---\nkind: [broken\n";
    LoadedManifest m = load_manifest(past, "many.yaml");
    CHECK_EQUAL(1000, m.objects.size());
    STRCMP_EQUAL("many.yaml: document 1001: more than 1000 objects in one file; split it\n",
                 errors_of(m).c_str());
    // A List's items count one by one.
    std::string list = "apiVersion: v1\nkind: List\nitems:\n";
    for (int k = 0; k < 1001; ++k)
        list += "- {apiVersion: v1, kind: Namespace, metadata: {name: n" + std::to_string(k) + "}}\n";
    STRCMP_EQUAL("list.yaml: document 1: items[1000]: more than 1000 objects in one file; split it",
                 first_error(load_manifest(list, "list.yaml")).c_str());
}

// A bad value is quoted in its error up to 1 KiB (issue 15 §5: a 3 MiB
// array quoted whole, copied into the log, the file's last error and the
// store, had the agent OOM-killed in 32 MiB).
TEST(ManifestErrors, ABadValueIsQuotedUpToOneKibibyte) {
    std::string s =
        "apiVersion: apps/v1\nkind: DaemonSet\nmetadata:\n  name: big\n  namespace: it\n  annotations:\n    "
        "big: [";
    for (int k = 0; k < 2000; ++k)
        s += std::string(k ? ", " : "") + "\"\u00e9t\u00e9-" + std::to_string(k) + "\"";
    s += "]\n";
    std::string err = first_error(load_manifest(s, "big.yaml"));
    CHECK_TEXT(
        err.rfind("big.yaml: document 1: metadata.annotations[big]: Invalid value: [\"\u00e9t\u00e9-0\",",
                  0) == 0,
        err.c_str());
    CHECK_TEXT(err.find("... (") != std::string::npos && err.size() < 1200, err.c_str());
    // Cut on a character boundary: what is quoted is valid UTF-8.
    CHECK(!Json(err).dump(-1, ' ', false, Json::error_handler_t::strict).empty());
}

// The cut itself, where it falls inside a character: the quote and 1022
// letters are 1023 bytes, so byte 1024 is the second of a 2-byte "\u00e9"
// (or the third of a 4-byte emoji, after 1021 letters): cut before it.
TEST(ManifestErrors, AQuotedValueIsCutOnACharacterBoundary) {
    const std::string two = render_value(Json(std::string(1022, 'a') + "\u00e9\u00e9\u00e9"));
    STRCMP_EQUAL(("\"" + std::string(1022, 'a') + "... (1030 bytes)").c_str(), two.c_str());
    const std::string four = render_value(Json(std::string(1021, 'a') + "\U0001F600\U0001F600"));
    STRCMP_EQUAL(("\"" + std::string(1021, 'a') + "... (1031 bytes)").c_str(), four.c_str());
}

TEST(ManifestErrors, ErrorsFromTheApiValidationCarryTheirPath) {
    std::string s = std::string(kDs);
    s.replace(s.find("busybox:1.36"), 12, "\"\"");
    auto m = load_manifest(s, "v.yaml");
    STRCMP_EQUAL("v.yaml: document 1: spec.template.spec.containers[0].image: Required value",
                 first_error(m).c_str());
}
