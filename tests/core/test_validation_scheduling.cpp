// Tolerations, affinity and Node validation, rows from
// pkg/apis/core/validation/validation_test.go: TestValidatePod's toleration and
// affinity cases (as gardener's copy of them names them), TestValidatePodSpec's
// success cases, and TestValidateNode's taint cases.
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
using NodeRow = Row<Node>;

void check(const DsRow* rows, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) {
        DaemonSet ds = valid_daemonset();
        rows[i].mutate(ds);
        STRCMP_EQUAL_TEXT(error_lines(rows[i].expected).c_str(), error_lines(validate_daemonset(ds)).c_str(),
                          rows[i].name);
    }
}

void check(const NodeRow* rows, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) {
        Node node = valid_node();
        rows[i].mutate(node);
        STRCMP_EQUAL_TEXT(error_lines(rows[i].expected).c_str(), error_lines(validate_node(node)).c_str(),
                          rows[i].name);
    }
}

// ---- tolerations ------------------------------------------------------------

#define TOLERATE(...) [](DaemonSet& ds) { pod_spec(ds).tolerations = {__VA_ARGS__}; }

const std::string kT0 = "spec.template.spec.tolerations[0].";

const DsRow kTolerationRows[] = {
    {"TestValidatePodSpec: populate forgiveness tolerations with exists operator",
     TOLERATE({"foo", "Exists", "", "NoExecute", 60}),
     {}},
    {"TestValidatePodSpec: populate forgiveness tolerations with equal operator",
     TOLERATE({"foo", "Equal", "bar", "NoExecute", 60}),
     {}},
    {"TestValidatePodSpec: populate tolerations equal operator",
     TOLERATE({"foo", "Equal", "bar", "NoSchedule", {}}),
     {}},
    {"TestValidatePodSpec: empty key with Exists operator is OK for toleration",
     TOLERATE({"", "Exists", "", "NoSchedule", {}}),
     {}},
    {"TestValidatePodSpec: empty operator is OK for toleration, defaults to Equal",
     TOLERATE({"foo", "", "bar", "NoSchedule", {}}),
     {}},
    {"TestValidatePodSpec: empty effect is OK for toleration", TOLERATE({"foo", "Equal", "bar", "", {}}), {}},
    {"TestValidatePodSpec: negative tolerationSeconds is OK for toleration",
     TOLERATE({"node.kubernetes.io/not-ready", "Exists", "", "NoExecute", -2}),
     {}},
    {"ValidateTolerations: tolerate everything", TOLERATE({"", "Exists", "", "", {}}), {}},

    {"TestValidatePod: invalid toleration key",
     TOLERATE({"nospecialchars^=@", "Equal", "bar", "NoSchedule", {}}),
     {kT0 + "key: Invalid value: \"nospecialchars^=@\": " + kQualifiedNameMsg}},
    {"TestValidatePod: invalid toleration operator",
     TOLERATE({"foo", "In", "bar", "NoSchedule", {}}),
     {kT0 + "operator: Unsupported value: \"In\": supported values: \"Equal\", \"Exists\""}},
    {"TestValidatePod: value must be empty when `operator` is 'Exists'",
     TOLERATE({"foo", "Exists", "bar", "NoSchedule", {}}),
     {kT0 + "operator: Invalid value: core.Toleration{Key:\"foo\", Operator:\"Exists\", Value:\"bar\", "
            "Effect:\"NoSchedule\", TolerationSeconds:(*int64)(nil)}: value must be empty when `operator` is "
            "'Exists'"}},
    {"TestValidatePod: operator must be 'Exists' when `key` is empty",
     TOLERATE({"", "Equal", "bar", "NoSchedule", {}}),
     {kT0 +
      "operator: Invalid value: \"Equal\": operator must be Exists when `key` is empty, which means \"match "
      "all values and all keys\""}},
    {"ValidateTolerations: an empty key with the default operator",
     TOLERATE({"", "", "", "NoSchedule", {}}),
     {kT0 +
      "operator: Invalid value: \"\": operator must be Exists when `key` is empty, which means \"match all "
      "values and all keys\""}},
    {"TestValidatePod: effect must be 'NoExecute' when `TolerationSeconds` is set",
     TOLERATE({"node.kubernetes.io/not-ready", "Exists", "", "NoSchedule", 20}),
     {kT0 +
      "effect: Invalid value: \"NoSchedule\": effect must be 'NoExecute' when `tolerationSeconds` is set"}},
    {"ValidateTolerations: tolerationSeconds with an empty effect",
     TOLERATE({"foo", "Exists", "", "", 30}),
     {kT0 + "effect: Invalid value: \"\": effect must be 'NoExecute' when `tolerationSeconds` is set"}},
    {"validateTaintEffect: NoScheduleNoAdmit is not implemented",
     TOLERATE({"foo", "Exists", "", "NoScheduleNoAdmit", {}}),
     {kT0 + "effect: Unsupported value: \"NoScheduleNoAdmit\": supported values: \"NoSchedule\", "
            "\"PreferNoSchedule\", \"NoExecute\""}},
    {"ValidateTolerations: Equal value must be a label value",
     TOLERATE({"foo", "Equal", "bad value", "NoSchedule", {}}),
     {kT0 + "operator: Invalid value: \"bad value\": " + kLabelValueMsg}},
};

#undef TOLERATE

// ---- affinity ---------------------------------------------------------------

void required_terms(DaemonSet& ds, std::vector<NodeSelectorTerm> terms) {
    pod_spec(ds).affinity = Affinity{NodeAffinity{NodeSelector{std::move(terms)}, {}}, {}, {}};
}
void preferred_terms(DaemonSet& ds, std::vector<PreferredSchedulingTerm> terms) {
    pod_spec(ds).affinity = Affinity{NodeAffinity{std::nullopt, std::move(terms)}, {}, {}};
}
void pod_anti_affinity(DaemonSet& ds, Json a) {
    pod_spec(ds).affinity = Affinity{std::nullopt, {}, std::move(a)};
}

#define EXPRS(...) [](DaemonSet& ds) { required_terms(ds, {NodeSelectorTerm{{__VA_ARGS__}, {}}}); }
#define FIELDS(...) [](DaemonSet& ds) { required_terms(ds, {NodeSelectorTerm{{}, {__VA_ARGS__}}}); }

const std::string kReq =
    "spec.template.spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution."
    "nodeSelectorTerms";
const std::string kExpr0 = kReq + "[0].matchExpressions[0].";
const std::string kField0 = kReq + "[0].matchFields[0].";
const std::string kPref =
    "spec.template.spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution";
const std::string kAnti = "spec.template.spec.affinity.podAntiAffinity.";

const DsRow kAffinityRows[] = {
    {"TestValidatePod: serialized node affinity requirements",
     [](DaemonSet& ds) {
         required_terms(ds, {NodeSelectorTerm{{{"key2", "In", {"value1", "value2"}}},
                                              {{"metadata.name", "In", {"host1"}}}}});
     },
     {}},
    {"TestValidatePod: serialized node affinity requirements II (an empty term)", EXPRS(), {}},
    {"ValidateNodeSelectorRequirement: Gt with a value that is not an integer is accepted (it never matches)",
     EXPRS({"kubernetes.io/arch-generation", "Gt", {"abc"}}),
     {}},
    {"ValidateNodeSelectorRequirement: In with a value that is not a label value is accepted",
     EXPRS({"kubernetes.io/hostname", "In", {"not a label value!"}}),
     {}},
    {"ValidateNodeSelectorRequirement: Lt with one value, Exists and DoesNotExist without",
     EXPRS({"cores", "Lt", {"64"}}, {"gpu", "Exists", {}}, {"edge", "DoesNotExist", {}}),
     {}},
    {"ValidatePreferredSchedulingTerms: weights 1 and 100",
     [](DaemonSet& ds) {
         preferred_terms(ds, {{1, NodeSelectorTerm{{{"zone", "In", {"a"}}}, {}}},
                              {100, NodeSelectorTerm{{{"zone", "In", {"b"}}}, {}}}});
     },
     {}},
    {"validatePodAntiAffinity: one pod per node by hostname",
     [](DaemonSet& ds) {
         pod_anti_affinity(ds, {{"requiredDuringSchedulingIgnoredDuringExecution",
                                 Json::array({{{"labelSelector", {{"matchLabels", {{"a", "b"}}}}},
                                               {"namespaces", Json::array({"default"})},
                                               {"topologyKey", "kubernetes.io/hostname"}}})}});
     },
     {}},

    {"TestValidatePod: invalid node selector requirement in node affinity, operator can't be null",
     EXPRS({"key1", "", {}}),
     {kExpr0 + "operator: Invalid value: \"\": not a valid selector operator"}},
    {"TestValidatePod: invalid node selector requirement in node affinity, key is invalid",
     EXPRS({"invalid key ___@#", "Exists", {}}),
     {kExpr0 + "key: Invalid value: \"invalid key ___@#\": " + kQualifiedNameMsg}},
    {"TestValidatePod: invalid node field selector requirement in node affinity, more values for field "
     "selector",
     FIELDS({"metadata.name", "In", {"host1", "host2"}}),
     {kField0 +
      "values: Required value: must be only one value when `operator` is 'In' or 'NotIn' for node field "
      "selector"}},
    {"TestValidatePod: invalid node field selector requirement in node affinity, invalid operator",
     FIELDS({"metadata.name", "Exists", {}}),
     {kField0 + "operator: Invalid value: \"Exists\": not a valid selector operator"}},
    {"TestValidatePod: invalid node field selector requirement in node affinity, invalid key",
     FIELDS({"metadata.namespace", "In", {"ns1"}}),
     {kField0 + "key: Invalid value: \"metadata.namespace\": not a valid field selector key"}},
    {"ValidateNodeFieldSelectorRequirement: the value is a node name",
     FIELDS({"metadata.name", "NotIn", {"Host_1"}}),
     {kField0 + "values[0]: Invalid value: \"Host_1\": " + kDnsSubdomainMsg}},
    {"TestValidatePod: invalid requiredDuringSchedulingIgnoredDuringExecution node selector, "
     "nodeSelectorTerms must "
     "have at least one term",
     [](DaemonSet& ds) { required_terms(ds, {}); },
     {kReq + ": Required value: must have at least one node selector term"}},
    {"ValidateNodeSelectorRequirement: In needs values",
     EXPRS({"key1", "In", {}}),
     {kExpr0 + "values: Required value: must be specified when `operator` is 'In' or 'NotIn'"}},
    {"ValidateNodeSelectorRequirement: DoesNotExist takes no values",
     EXPRS({"key1", "DoesNotExist", {"v"}}),
     {kExpr0 + "values: Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'"}},
    {"ValidateNodeSelectorRequirement: Gt takes exactly one value",
     EXPRS({"cores", "Gt", {"1", "2"}}),
     {kExpr0 + "values: Required value: must be specified single value when `operator` is 'Lt' or 'Gt'"}},
    {"TestValidatePod: invalid preferredSchedulingTerm in node affinity, weight should be in range 1-100",
     [](DaemonSet& ds) {
         preferred_terms(ds, {{199, NodeSelectorTerm{{{"foo", "In", {"bar"}}}, {}}}});
     },
     {kPref + "[0].weight: Invalid value: 199: must be in the range 1-100"}},
    {"ValidatePreferredSchedulingTerms: weight 0 and an invalid preference",
     [](DaemonSet& ds) {
         preferred_terms(ds, {{0, NodeSelectorTerm{{{"foo", "Has", {}}}, {}}}});
     },
     {kPref + "[0].weight: Invalid value: 0: must be in the range 1-100",
      kPref + "[0].preference.matchExpressions[0].operator: Invalid value: \"Has\": not a valid selector "
              "operator"}},
    {"TestValidatePod: invalid hard pod-antiaffinity, empty topologyKey is not allowed",
     [](DaemonSet& ds) {
         pod_anti_affinity(
             ds,
             {{"requiredDuringSchedulingIgnoredDuringExecution",
               Json::array({{{"labelSelector", {{"matchLabels", {{"a", "b"}}}}}, {"topologyKey", ""}}})}});
     },
     {kAnti +
          "requiredDuringSchedulingIgnoredDuringExecution[0].topologyKey: Required value: can not be empty",
      kAnti + "requiredDuringSchedulingIgnoredDuringExecution[0].topologyKey: Invalid value: \"\": name part "
              "must be "
              "non-empty",
      kAnti + "requiredDuringSchedulingIgnoredDuringExecution[0].topologyKey: Invalid value: \"\": " +
          kQualifiedNameMsg}},
    {"TestValidatePod: invalid weight in preferredDuringSchedulingIgnoredDuringExecution in pod "
     "anti-affinity",
     [](DaemonSet& ds) {
         pod_anti_affinity(
             ds, {{"preferredDuringSchedulingIgnoredDuringExecution",
                   Json::array({{{"weight", -1},
                                 {"podAffinityTerm", {{"topologyKey", "kubernetes.io/hostname"}}}}})}});
     },
     {kAnti + "preferredDuringSchedulingIgnoredDuringExecution[0].weight: Invalid value: -1: must be in the "
              "range 1-100"}},
    {"TestValidatePod: invalid namespace in pod anti-affinity, namespace should be valid",
     [](DaemonSet& ds) {
         pod_anti_affinity(ds, {{"requiredDuringSchedulingIgnoredDuringExecution",
                                 Json::array({{{"namespaces", Json::array({"INVALID"})},
                                               {"topologyKey", "kubernetes.io/hostname"}}})}});
     },
     {kAnti + "requiredDuringSchedulingIgnoredDuringExecution[0].namespace: Invalid value: \"INVALID\": " +
      kDnsLabelMsg}},
    {"TestValidatePod: invalid labelSelector in pod anti-affinity, values should be empty if the operator is "
     "Exists",
     [](DaemonSet& ds) {
         pod_anti_affinity(
             ds, {{"requiredDuringSchedulingIgnoredDuringExecution",
                   Json::array({{{"labelSelector",
                                  {{"matchExpressions", Json::array({{{"key", "key2"},
                                                                      {"operator", "Exists"},
                                                                      {"values", Json::array({"v"})}}})}}},
                                 {"topologyKey", "kubernetes.io/hostname"}}})}});
     },
     {kAnti + "requiredDuringSchedulingIgnoredDuringExecution[0].labelSelector.matchExpressions[0].values: "
              "Forbidden: "
              "may not be specified when `operator` is 'Exists' or 'DoesNotExist'"}},
};

#undef EXPRS
#undef FIELDS

// ---- nodes ------------------------------------------------------------------

#define TAINTS(...) [](Node& n) { n.taints = {__VA_ARGS__}; }

const NodeRow kNodeRows[] = {
    {"TestValidateNode success: a plain node", [](Node&) {}, {}},
    {"TestValidateNode success: a dotted name",
     [](Node& n) { n.metadata.name = "node-1.edge.example.com"; },
     {}},
    {"TestValidateNode success: taints of every effect, one key with two effects, an empty value",
     TAINTS({"dedicated", "foo", "NoSchedule", ""}, {"dedicated", "foo", "NoExecute", ""},
            {"node.kubernetes.io/unreachable", "", "PreferNoSchedule", "2024-01-01T00:00:00Z"}),
     {}},

    {"TestValidateNode: zero-length Name",
     [](Node& n) { n.metadata.name = ""; },
     {"metadata.name: Required value: name or generateName is required"}},
    {"ValidateNodeName is NameIsDNSSubdomain",
     [](Node& n) { n.metadata.name = "Node_1"; },
     {"metadata.name: Invalid value: \"Node_1\": " + kDnsSubdomainMsg}},
    {"ValidateObjectMeta: a namespace on a cluster-scoped object",
     [](Node& n) { n.metadata.namespace_ = "default"; },
     {"metadata.namespace: Forbidden: not allowed on this type"}},
    {"TestValidateNode: invalid-labels",
     [](Node& n) {
         n.metadata.labels = {{"NoUppercaseOrSpecialCharsLike=Equals", "bar"}};
     },
     {"metadata.labels: Invalid value: \"NoUppercaseOrSpecialCharsLike=Equals\": " + kQualifiedNameMsg}},
    {"TestValidateNode: missing-taint-key (reported under metadata.taints, as upstream does)",
     TAINTS({"", "bar", "NoSchedule", ""}),
     {"metadata.taints[0].key: Invalid value: \"\": name part must be non-empty",
      "metadata.taints[0].key: Invalid value: \"\": " + kQualifiedNameMsg}},
    {"TestValidateNode: bad-taint-key",
     TAINTS({"NoUppercaseOrSpecialCharsLike=Equals", "bar", "NoSchedule", ""}),
     {"metadata.taints[0].key: Invalid value: \"NoUppercaseOrSpecialCharsLike=Equals\": " +
      kQualifiedNameMsg}},
    {"TestValidateNode: bad-taint-value",
     TAINTS({"dedicated", "some\\bad\\value", "NoSchedule", ""}),
     {"metadata.taints[0].value: Invalid value: \"some\\\\bad\\\\value\": " + kLabelValueMsg}},
    {"TestValidateNode: missing-taint-effect",
     TAINTS({"dedicated", "foo", "", ""}),
     {"metadata.taints[0].effect: Required value"}},
    {"TestValidateNode: invalid-taint-effect",
     TAINTS({"dedicated", "foo", "NoScheduleNoAdmit", ""}),
     {"metadata.taints[0].effect: Unsupported value: \"NoScheduleNoAdmit\": supported values: "
      "\"NoSchedule\", "
      "\"PreferNoSchedule\", \"NoExecute\""}},
    {"TestValidateNode: duplicated-taints-with-same-key-effect",
     TAINTS({"dedicated", "foo", "NoSchedule", ""}, {"dedicated", "bar", "NoSchedule", ""}),
     {"metadata.taints[1]: Duplicate value: core.Taint{Key:\"dedicated\", Value:\"bar\", "
      "Effect:\"NoSchedule\", "
      "TimeAdded:(*v1.Time)(nil)}: taints must be unique by key and effect pair"}},
};

#undef TAINTS

}  // namespace

TEST_GROUP(TolerationValidation){};

TEST(TolerationValidation, KeysOperatorsValuesAndEffects) {
    check(kTolerationRows, sizeof(kTolerationRows) / sizeof(kTolerationRows[0]));
}

TEST_GROUP(AffinityValidation){};

TEST(AffinityValidation, ShapeOnlyAsTheApiServerChecksIt) {
    check(kAffinityRows, sizeof(kAffinityRows) / sizeof(kAffinityRows[0]));
}

TEST_GROUP(NodeValidation){};

TEST(NodeValidation, NameAndTaints) { check(kNodeRows, sizeof(kNodeRows) / sizeof(kNodeRows[0])); }
