// DaemonSet validation on create, rows from pkg/apis/apps/validation/validation_test.go
// (TestValidateDaemonSet, TestValidateDaemonSetUpdate, TestDaemonSetUpdateMaxSurge,
// TestValidateDeployment's rolling-update rows), pkg/apis/core/validation/validation_test.go
// (TestValidateObjectMeta*, TestValidateAnnotations, TestValidateLabels) and
// apimachinery meta/v1 validation_test.go (TestLabelSelectorMatchExpression).
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

const std::string kMismatch = "`selector` does not match template `labels`";

void check(const DsRow* rows, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) {
        DaemonSet ds = valid_daemonset();
        rows[i].mutate(ds);
        STRCMP_EQUAL_TEXT(error_lines(rows[i].expected).c_str(), error_lines(validate_daemonset(ds)).c_str(),
                          rows[i].name);
    }
}

void on_delete(DaemonSet& ds) { ds.spec.update_strategy = {"OnDelete", std::nullopt}; }

const DsRow kDaemonSetRows[] = {
    // What must be accepted.
    {"defaulted DaemonSet: RollingUpdate maxUnavailable 1, maxSurge 0", [](DaemonSet&) {}, {}},
    {"TestValidateDaemonSet success: abc, OnDelete", on_delete, {}},
    {"TestValidateDaemonSet success: abc-123, OnDelete",
     [](DaemonSet& ds) {
         on_delete(ds);
         ds.metadata.name = "abc-123";
     },
     {}},
    {"TestValidateDaemonSet success: hostnet (hostNetwork, containerPort 12345, no hostPort)",
     [](DaemonSet& ds) {
         on_delete(ds);
         pod_spec(ds).host_network = true;
         first_container(ds).ports = {{"", 12345, 0, "TCP", ""}};
     },
     {}},
    {"validatePodHostNetworkDeps: hostNetwork with hostPort equal to containerPort",
     [](DaemonSet& ds) {
         pod_spec(ds).host_network = true;
         first_container(ds).ports = {{"metrics", 9100, 9100, "TCP", ""}};
     },
     {}},
    {"TestValidateDaemonSetUpdate success: change update strategy (RollingUpdate, maxUnavailable 1)",
     [](DaemonSet& ds) {
         ds.spec.update_strategy.rolling_update = RollingUpdateDaemonSet{IntOrString::from_int(1), {}};
     },
     {}},
    {"ValidateDaemonSetUpdateStrategy: OnDelete ignores a rollingUpdate block, even an invalid one",
     [](DaemonSet& ds) {
         ds.spec.update_strategy = {
             "OnDelete", RollingUpdateDaemonSet{IntOrString::from_int(0), IntOrString::from_int(0)}};
     },
     {}},
    {"TestValidateDaemonSetUpdate success: Read-write volume verification (a GCE PD volume)",
     [](DaemonSet& ds) {
         Volume v;
         v.name = "gcepd";
         v.source = Volume::Source::Other;
         v.raw = Json{{"name", "gcepd"}, {"gcePersistentDisk", {{"pdName", "my-PD"}, {"fsType", "ext4"}}}};
         pod_spec(ds).volumes.push_back(v);
     },
     {}},
    {"ValidateDaemonSetSpec: a selector that is a subset of the template labels",
     [](DaemonSet& ds) { ds.spec.template_.metadata.labels["tier"] = "node"; },
     {}},
    {"ValidateDaemonSetSpec: a matchExpressions selector that matches the template",
     [](DaemonSet& ds) {
         ds.spec.selector = LabelSelector{{}, {{"a", "In", {"b", "c"}}}};
     },
     {}},
    {"ValidateDaemonSetSpec: revisionHistoryLimit 0 (zero is a valid RevisionHistoryLimit)",
     [](DaemonSet& ds) { ds.spec.revision_history_limit = 0; },
     {}},
    {"ValidateDaemonSetName is NameIsDNSSubdomain: dots are fine",
     [](DaemonSet& ds) { ds.metadata.name = "kube-proxy.v1"; },
     {}},

    // TestValidateDaemonSet error cases.
    {"TestValidateDaemonSet: zero-length ID",
     [](DaemonSet& ds) { ds.metadata.name = ""; },
     {"metadata.name: Required value: name or generateName is required"}},
    {"TestValidateDaemonSet: missing-namespace",
     [](DaemonSet& ds) { ds.metadata.namespace_ = ""; },
     {"metadata.namespace: Required value"}},
    {"TestValidateDaemonSet: nil selector (selects nothing, so never matches the template)",
     [](DaemonSet& ds) { ds.spec.selector.reset(); },
     {"spec.template.metadata.labels: Invalid value: map[string]string{\"a\":\"b\"}: " + kMismatch}},
    {"TestValidateDaemonSet: empty selector",
     [](DaemonSet& ds) { ds.spec.selector = LabelSelector{}; },
     {"spec.selector: Invalid value: &LabelSelector{MatchLabels:map[string]string{},MatchExpressions:[]"
      "LabelSelectorRequirement{},}: empty selector is invalid for daemonset"}},
    {"TestValidateDaemonSet: selector_doesnt_match",
     [](DaemonSet& ds) {
         ds.spec.selector = LabelSelector{{{"foo", "bar"}}, {}};
     },
     {"spec.template.metadata.labels: Invalid value: map[string]string{\"a\":\"b\"}: " + kMismatch}},
    {"TestValidateDaemonSet: invalid template (no template at all)",
     [](DaemonSet& ds) { ds.spec.template_ = PodTemplateSpec{}; },
     {"spec.template.metadata.labels: Invalid value: map[string]string(nil): " + kMismatch,
      "spec.template.spec.terminationGracePeriodSeconds: Required value",
      "spec.template.spec.containers: Required value", "spec.template.spec.restartPolicy: Required value",
      "spec.template.spec.dnsPolicy: Required value",
      "spec.template.spec.restartPolicy: Unsupported value: \"\": supported values: \"Always\""}},
    {"TestValidateDaemonSet: invalid_label",
     [](DaemonSet& ds) {
         ds.metadata.labels = {{"NoUppercaseOrSpecialCharsLike=Equals", "bar"}};
     },
     {"metadata.labels: Invalid value: \"NoUppercaseOrSpecialCharsLike=Equals\": " + kQualifiedNameMsg}},
    {"TestValidateDaemonSet: invalid_label 2 (and no selector, invalid template labels)",
     [](DaemonSet& ds) {
         ds.metadata.labels = {{"NoUppercaseOrSpecialCharsLike=Equals", "bar"}};
         ds.spec.selector.reset();
         ds.spec.template_.metadata.labels = {{"NoUppercaseOrSpecialCharsLike=Equals", "b"}};
     },
     {"metadata.labels: Invalid value: \"NoUppercaseOrSpecialCharsLike=Equals\": " + kQualifiedNameMsg,
      "spec.template.labels: Invalid value: \"NoUppercaseOrSpecialCharsLike=Equals\": " + kQualifiedNameMsg,
      "spec.template.metadata.labels: Invalid value: "
      "map[string]string{\"NoUppercaseOrSpecialCharsLike=Equals\":\"b\"}: " +
          kMismatch}},
    {"TestValidateDaemonSet: invalid_annotation",
     [](DaemonSet& ds) {
         ds.metadata.annotations = {{"NoUppercaseOrSpecialCharsLike=Equals", "bar"}};
     },
     {"metadata.annotations: Invalid value: \"NoUppercaseOrSpecialCharsLike=Equals\": " + kQualifiedNameMsg}},
    {"TestValidateDaemonSet: invalid restart policy 1 (OnFailure)",
     [](DaemonSet& ds) { pod_spec(ds).restart_policy = "OnFailure"; },
     {"spec.template.spec.restartPolicy: Unsupported value: \"OnFailure\": supported values: \"Always\""}},
    {"TestValidateDaemonSet: invalid restart policy 2 (Never)",
     [](DaemonSet& ds) { pod_spec(ds).restart_policy = "Never"; },
     {"spec.template.spec.restartPolicy: Unsupported value: \"Never\": supported values: \"Always\""}},
    {"validateRestartPolicy and ValidateDaemonSetSpec both reject an unknown policy",
     [](DaemonSet& ds) { pod_spec(ds).restart_policy = "Sometimes"; },
     {"spec.template.spec.restartPolicy: Unsupported value: \"Sometimes\": supported values: \"Always\", "
      "\"OnFailure\", \"Never\"",
      "spec.template.spec.restartPolicy: Unsupported value: \"Sometimes\": supported values: \"Always\""}},
    {"TestValidateDaemonSet: template may not contain ephemeral containers",
     [](DaemonSet& ds) {
         ds.object = Json{
             {"spec",
              {{"template", {{"spec", {{"ephemeralContainers", Json::array({{{"name", "debug"}}})}}}}}}}};
     },
     {"spec.template.spec.ephemeralContainers: Forbidden: ephemeral containers not allowed in pod template"}},

    // TestValidateDaemonSetUpdate error cases that apply to a create.
    {"TestValidateDaemonSetUpdate: invalid selector (the selector does not parse, so no mismatch error)",
     [](DaemonSet& ds) {
         ds.spec.selector = LabelSelector{{{"NoUppercaseOrSpecialCharsLike=Equals", "b"}}, {}};
     },
     {"spec.selector.matchLabels: Invalid value: \"NoUppercaseOrSpecialCharsLike=Equals\": " +
      kQualifiedNameMsg}},
    {"TestValidateDaemonSetUpdate: invalid pod (no containers)",
     [](DaemonSet& ds) { pod_spec(ds).containers.clear(); },
     {"spec.template.spec.containers: Required value"}},
    {"TestValidateDaemonSetUpdate: invalid update strategy (Random)",
     [](DaemonSet& ds) {
         ds.spec.update_strategy = {"Random", std::nullopt};
     },
     {"spec.updateStrategy: Unsupported value: apps.DaemonSetUpdateStrategy{Type:\"Random\", "
      "RollingUpdate:(*apps.RollingUpdateDaemonSet)(nil)}: supported values: \"RollingUpdate\", "
      "\"OnDelete\""}},
    {"TestValidateDaemonSetUpdate: negative templateGeneration",
     [](DaemonSet& ds) { ds.spec.template_generation = -1; },
     {"spec.templateGeneration: Invalid value: -1: must be greater than or equal to 0"}},

    // ValidateDaemonSetSpec, field by field.
    {"ValidateDaemonSetSpec: negative minReadySeconds",
     [](DaemonSet& ds) { ds.spec.min_ready_seconds = -1; },
     {"spec.minReadySeconds: Invalid value: -1: must be greater than or equal to 0"}},
    {"ValidateDaemonSetSpec: negative revisionHistoryLimit",
     [](DaemonSet& ds) { ds.spec.revision_history_limit = -1; },
     {"spec.revisionHistoryLimit: Invalid value: -1: must be greater than or equal to 0"}},
    {"ValidateDaemonSetSpec: activeDeadlineSeconds is forbidden",
     [](DaemonSet& ds) { pod_spec(ds).active_deadline_seconds = 30; },
     {"spec.template.spec.activeDeadlineSeconds: Forbidden: activeDeadlineSeconds in DaemonSet is not "
      "Supported"}},
    {"ValidatePodSpec and ValidateDaemonSetSpec: activeDeadlineSeconds 0 is out of range and forbidden",
     [](DaemonSet& ds) { pod_spec(ds).active_deadline_seconds = 0; },
     {"spec.template.spec.activeDeadlineSeconds: Invalid value: 0: must be between 1 and 2147483647, "
      "inclusive",
      "spec.template.spec.activeDeadlineSeconds: Forbidden: activeDeadlineSeconds in DaemonSet is not "
      "Supported"}},
    {"ValidateDaemonSetUpdateStrategy: RollingUpdate without rollingUpdate",
     [](DaemonSet& ds) { ds.spec.update_strategy.rolling_update.reset(); },
     {"spec.updateStrategy.rollingUpdate: Required value"}},
    {"ValidateDaemonSetSpec: a matchExpressions selector that excludes the template",
     [](DaemonSet& ds) {
         ds.spec.selector = LabelSelector{{}, {{"a", "NotIn", {"b"}}}};
     },
     {"spec.template.metadata.labels: Invalid value: map[string]string{\"a\":\"b\"}: " + kMismatch}},
};

using RuRow = Row<DaemonSet>;

// The rollingUpdate of the defaulted DaemonSet replaced by {maxUnavailable, maxSurge}.
#define RU(mu, ms) \
    [](DaemonSet& ds) { ds.spec.update_strategy.rolling_update = RollingUpdateDaemonSet{mu, ms}; }
#define INT_(n) IntOrString::from_int(n)
#define PCT_(s) IntOrString::from_string(s)
#define UNSET std::nullopt

const std::string kRu = "spec.updateStrategy.rollingUpdate.";
const std::string kBothZero = kRu + "maxUnavailable: Required value: cannot be 0 when maxSurge is 0";

const RuRow kRollingUpdateRows[] = {
    {"TestDaemonSetUpdateMaxSurge: invalid: unset", RU(UNSET, UNSET), {kBothZero}},
    {"TestDaemonSetUpdateMaxSurge: invalid: zero percent", RU(PCT_("0%"), UNSET), {kBothZero}},
    {"TestDaemonSetUpdateMaxSurge: invalid: zero", RU(INT_(0), UNSET), {kBothZero}},
    {"TestDaemonSetUpdateMaxSurge: valid: one", RU(INT_(1), UNSET), {}},
    {"TestDaemonSetUpdateMaxSurge: valid: one percent", RU(PCT_("1%"), UNSET), {}},
    {"TestDaemonSetUpdateMaxSurge: valid: 100%", RU(PCT_("100%"), UNSET), {}},
    {"TestDaemonSetUpdateMaxSurge: invalid: greater than 100%",
     RU(PCT_("101%"), UNSET),
     {kRu + "maxUnavailable: Invalid value: \"101%\": must not be greater than 100%"}},
    {"TestDaemonSetUpdateMaxSurge: valid: surge and unavailable set (expects an error upstream too)",
     RU(PCT_("1%"), PCT_("1%")),
     {kRu + "maxSurge: Invalid value: \"1%\": may not be set when maxUnavailable is non-zero"}},
    {"TestDaemonSetUpdateMaxSurge: invalid: surge enabled, surge zero percent",
     RU(UNSET, PCT_("0%")),
     {kBothZero}},
    {"TestDaemonSetUpdateMaxSurge: invalid: surge enabled, surge zero", RU(UNSET, INT_(0)), {kBothZero}},
    {"TestDaemonSetUpdateMaxSurge: valid: surge enabled, surge one", RU(UNSET, INT_(1)), {}},
    {"TestDaemonSetUpdateMaxSurge: valid: surge enabled, surge one percent", RU(UNSET, PCT_("1%")), {}},
    {"TestDaemonSetUpdateMaxSurge: valid: surge enabled, surge 100%", RU(UNSET, PCT_("100%")), {}},
    {"TestDaemonSetUpdateMaxSurge: invalid: surge enabled, surge greater than 100%",
     RU(UNSET, PCT_("101%")),
     {kRu + "maxSurge: Invalid value: \"101%\": must not be greater than 100%"}},
    {"TestDaemonSetUpdateMaxSurge: invalid: surge enabled, surge and unavailable zero percent",
     RU(PCT_("0%"), PCT_("0%")),
     {kBothZero}},
    {"TestDaemonSetUpdateMaxSurge: invalid: surge enabled, surge and unavailable zero",
     RU(INT_(0), INT_(0)),
     {kBothZero}},
    {"TestDaemonSetUpdateMaxSurge: invalid: surge enabled, surge and unavailable mixed zero",
     RU(INT_(0), PCT_("0%")),
     {kBothZero}},
    {"ValidateRollingUpdateDaemonSet: both non-zero ints",
     RU(INT_(1), INT_(1)),
     {kRu + "maxSurge: Invalid value: 1: may not be set when maxUnavailable is non-zero"}},
    {"ValidateRollingUpdateDaemonSet: surge only, zero unavailable (the surge rollout)",
     RU(INT_(0), INT_(1)),
     {}},
    {"TestValidateDeployment: a valid percent string must be (maxSurge 20Percent counts as zero)",
     RU(INT_(1), PCT_("20Percent")),
     {kRu + "maxSurge: Invalid value: \"20Percent\": " + kPercentMsg}},
    {"ValidatePositiveIntOrPercent: negative maxUnavailable",
     RU(INT_(-1), INT_(0)),
     {kRu + "maxUnavailable: Invalid value: -1: must be greater than or equal to 0"}},
    {"getIntOrPercentValue: a number without % is invalid yet counts as that number",
     RU(PCT_("5"), INT_(1)),
     {kRu + "maxUnavailable: Invalid value: \"5\": " + kPercentMsg,
      kRu + "maxSurge: Invalid value: 1: may not be set when maxUnavailable is non-zero"}},
    {"IsNotMoreThan100Percent: 200% maxUnavailable",
     RU(PCT_("200%"), INT_(0)),
     {kRu + "maxUnavailable: Invalid value: \"200%\": must not be greater than 100%"}},
};

#undef RU
#undef INT_
#undef PCT_
#undef UNSET

const DsRow kObjectMetaRows[] = {
    {"NameIsDNSSubdomain: upper case name",
     [](DaemonSet& ds) { ds.metadata.name = "Abc"; },
     {"metadata.name: Invalid value: \"Abc\": " + kDnsSubdomainMsg}},
    {"NameIsDNSSubdomain: 253 characters is the limit",
     [](DaemonSet& ds) { ds.metadata.name = std::string(253, 'a'); },
     {}},
    {"NameIsDNSSubdomain: 254 characters",
     [](DaemonSet& ds) { ds.metadata.name = std::string(254, 'a'); },
     {"metadata.name: Invalid value: \"" + std::string(254, 'a') +
      "\": must be no more than 253 characters"}},
    {"TestValidateObjectMetaNamespaces: namespace of 64 characters",
     [](DaemonSet& ds) { ds.metadata.namespace_ = std::string(64, 'a'); },
     {"metadata.namespace: Invalid value: \"" + std::string(64, 'a') +
      "\": must be no more than 63 characters"}},
    {"ValidateNamespaceName is NameIsDNSLabel: upper case",
     [](DaemonSet& ds) { ds.metadata.namespace_ = "Default"; },
     {"metadata.namespace: Invalid value: \"Default\": " + kDnsLabelMsg}},
    {"ValidateNamespaceName is NameIsDNSLabel: no dots",
     [](DaemonSet& ds) { ds.metadata.namespace_ = "kube.system"; },
     {"metadata.namespace: Invalid value: \"kube.system\": must not contain dots"}},
    {"ValidateObjectMeta: generateName may end in a dash (maskTrailingDash)",
     [](DaemonSet& ds) { ds.metadata.generate_name = "abc-"; },
     {}},
    {"ValidateObjectMeta: invalid generateName",
     [](DaemonSet& ds) { ds.metadata.generate_name = "Abc-"; },
     {"metadata.generateName: Invalid value: \"Abc-\": " + kDnsSubdomainMsg}},
    {"ValidateObjectMeta: negative generation",
     [](DaemonSet& ds) { ds.metadata.generation = -1; },
     {"metadata.generation: Invalid value: -1: must be greater than or equal to 0"}},
    {"TestValidateLabels: prefixed key and empty value",
     [](DaemonSet& ds) {
         ds.metadata.labels = {{"example.com/name", ""}, {"app.kubernetes.io/name", "agent"}};
     },
     {}},
    {"TestValidateLabels: value of 64 characters",
     [](DaemonSet& ds) {
         ds.metadata.labels = {{"toolongvalue", std::string(64, 'a')}};
     },
     {"metadata.labels: Invalid value: \"" + std::string(64, 'a') +
      "\": must be no more than 63 characters"}},
    {"TestValidateLabels: commas are not allowed in a value",
     [](DaemonSet& ds) {
         ds.metadata.labels = {{"nocommasallowed", "bad,value"}};
     },
     {"metadata.labels: Invalid value: \"bad,value\": " + kLabelValueMsg}},
    {"TestValidateLabels: empty prefix",
     [](DaemonSet& ds) {
         ds.metadata.labels = {{"/name", "v"}};
     },
     {"metadata.labels: Invalid value: \"/name\": prefix part must be non-empty"}},
    {"TestValidateAnnotations: keys are checked lower-cased",
     [](DaemonSet& ds) {
         ds.metadata.annotations = {{"Example.COM/Key_1", "any value, even \"quoted\""}};
     },
     {}},
    {"TestValidateAnnotations: total size exactly 256 KiB",
     [](DaemonSet& ds) {
         ds.metadata.annotations = {{"a", std::string(256 * 1024 - 1, 'x')}};
     },
     {}},
    {"TestValidateAnnotations: total size over 256 KiB",
     [](DaemonSet& ds) {
         ds.metadata.annotations = {{"a", std::string(256 * 1024, 'x')}};
     },
     {"metadata.annotations: Too long: must have at most 262144 bytes"}},
};

// The selector and the template labels changed together, so only the
// selector's own validity is under test.
#define SELECT(expr)                                            \
    [](DaemonSet& ds) {                                         \
        ds.spec.template_.metadata.labels["key"] = "value";     \
        ds.spec.selector = LabelSelector{{{"a", "b"}}, {expr}}; \
    }

const std::string kExpr = "spec.selector.matchExpressions[0].";

const DsRow kLabelSelectorRows[] = {
    {"TestLabelSelectorMatchExpression: Valid LabelSelector",
     SELECT((LabelSelectorRequirement{"key", "In", {"value"}})),
     {}},
    {"TestLabelSelectorMatchExpression: MatchExpression's key name isn't valid",
     SELECT((LabelSelectorRequirement{"-key", "In", {"value"}})),
     {kExpr + "key: Invalid value: \"-key\": " + kQualifiedNameMsg}},
    {"TestLabelSelectorMatchExpression: MatchExpression's operator isn't valid",
     SELECT((LabelSelectorRequirement{"key", "Equals", {"value"}})),
     {kExpr + "operator: Invalid value: \"Equals\": not a valid selector operator"}},
    {"TestLabelSelectorMatchExpression: MatchExpression's value name isn't valid",
     SELECT((LabelSelectorRequirement{"key", "In", {"-value"}})),
     {kExpr + "values[0]: Invalid value: \"-value\": " + kLabelValueMsg}},
    {"ValidateLabelSelectorRequirement: In needs values",
     SELECT((LabelSelectorRequirement{"key", "In", {}})),
     {kExpr + "values: Required value: must be specified when `operator` is 'In' or 'NotIn'"}},
    {"ValidateLabelSelectorRequirement: NotIn needs values",
     SELECT((LabelSelectorRequirement{"key", "NotIn", {}})),
     {kExpr + "values: Required value: must be specified when `operator` is 'In' or 'NotIn'"}},
    {"ValidateLabelSelectorRequirement: Exists takes no values",
     SELECT((LabelSelectorRequirement{"key", "Exists", {"value"}})),
     {kExpr + "values: Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'"}},
    {"ValidateLabelSelectorRequirement: DoesNotExist of another key",
     SELECT((LabelSelectorRequirement{"other", "DoesNotExist", {}})),
     {}},
    {"ValidateLabelSelectorRequirement: Exists", SELECT((LabelSelectorRequirement{"key", "Exists", {}})), {}},
};

#undef SELECT

}  // namespace

TEST_GROUP(DaemonSetValidation){};

TEST(DaemonSetValidation, MatchesUpstreamDaemonSetRows) {
    check(kDaemonSetRows, sizeof(kDaemonSetRows) / sizeof(kDaemonSetRows[0]));
}

TEST_GROUP(RollingUpdateDaemonSetValidation){};

TEST(RollingUpdateDaemonSetValidation, ExactlyOneOfMaxSurgeAndMaxUnavailableIsNonZero) {
    check(kRollingUpdateRows, sizeof(kRollingUpdateRows) / sizeof(kRollingUpdateRows[0]));
}

TEST_GROUP(ObjectMetaValidation){};

TEST(ObjectMetaValidation, NameNamespaceLabelsAnnotations) {
    check(kObjectMetaRows, sizeof(kObjectMetaRows) / sizeof(kObjectMetaRows[0]));
}

TEST_GROUP(LabelSelectorValidation){};

TEST(LabelSelectorValidation, MatchExpressionsFollowMetaV1Rules) {
    check(kLabelSelectorRows, sizeof(kLabelSelectorRows) / sizeof(kLabelSelectorRows[0]));
}
