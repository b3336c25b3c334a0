// Required node affinity. Rows from
// k8s.io/component-helpers/scheduling/corev1/nodeaffinity/nodeaffinity_test.go
// (TestPodMatchesNodeSelectorAndAffinityTerms, TestNodeSelectorMatch,
// TestNodeSelectorRequirementsAsSelector) and
// k8s.io/component-helpers/scheduling/corev1/helpers_test.go
// (TestMatchNodeSelectorTerms); rows marked "daemonlet:" pin a rule of
// nodeaffinity.go those tables leave implicit.
#include <optional>
#include <string>
#include <vector>

#include "core/node_affinity.h"

// CppUTest last: its leak-detection macros redefine new.
#include <CppUTest/TestHarness.h>

using namespace daemonlet;

namespace {

using Req = NodeSelectorRequirement;
using Term = NodeSelectorTerm;

Affinity required(std::vector<Term> terms) {
    Affinity a;
    a.node_affinity = NodeAffinity{NodeSelector{std::move(terms)}, {}};
    return a;
}

Affinity affinity_without_required() {
    Affinity a;
    a.node_affinity = NodeAffinity{};
    return a;
}

Term labels_term(std::vector<Req> exprs) { return Term{std::move(exprs), {}}; }
Term fields_term(std::vector<Req> fields) { return Term{{}, std::move(fields)}; }

const std::string kNameRegexErr =
    "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
    "alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
    "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";
const std::string kLabelValueRegexErr =
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must "
    "start "
    "and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for "
    "validation "
    "is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";

const Req kName1{"metadata.name", "In", {"node_1"}};
const Req kFooBar{"foo", "In", {"bar"}};

// TestNodeSelectorMatch's selector: a bad matchFields term, a good term, a
// term with a bad key.
const std::vector<Term> kMixedTerms = {
    fields_term({{"metadata.name", "In", {"host_1", "host_2"}}}),
    Term{{{"label_1", "In", {"label_1_val"}}}, {{"metadata.name", "In", {"host_1"}}}},
    labels_term({{"invalid key", "In", {"label_value"}}}),
};
const std::vector<std::string> kMixedErrors = {
    "nodeSelectorTerms[0].matchFields[0].values: Invalid value: []string{\"host_1\", \"host_2\"}: must have "
    "one "
    "element",
    "nodeSelectorTerms[2].matchExpressions[0].key: Invalid value: \"invalid key\": " + kNameRegexErr,
};

struct Row {
    const char* name;
    Labels node_selector;
    std::optional<Affinity> affinity;
    std::string node_name;
    Labels node_labels;
    bool matches;
    std::vector<std::string> parse_errors;
};

const Row kRows[] = {
    // TestPodMatchesNodeSelectorAndAffinityTerms
    {"TestPodMatchesNodeSelectorAndAffinityTerms: no selector", {}, std::nullopt, "", {}, true, {}},
    {"TestPodMatchesNodeSelectorAndAffinityTerms: missing labels", {{"foo", "bar"}}, std::nullopt, "", {}, false, {}},
    {"TestPodMatchesNodeSelectorAndAffinityTerms: same labels", {{"foo", "bar"}}, std::nullopt, "", {{"foo", "bar"}},
     true, {}},
    {"TestPodMatchesNodeSelectorAndAffinityTerms: node labels are superset", {{"foo", "bar"}}, std::nullopt, "",
     {{"foo", "bar"}, {"baz", "blah"}}, true, {}},
    {"TestPodMatchesNodeSelectorAndAffinityTerms: node labels are subset", {{"foo", "bar"}, {"baz", "blah"}},
     std::nullopt, "", {{"foo", "bar"}}, false, {}},
    {"TestPodMatchesNodeSelectorAndAffinityTerms: matchExpressions In matches", {},
     required({labels_term({{"foo", "In", {"bar", "value2"}}})}), "", {{"foo", "bar"}}, true, {}},
    {"TestPodMatchesNodeSelectorAndAffinityTerms: matchExpressions Gt matches", {},
     required({labels_term({{"kernel-version", "Gt", {"0204"}}})}), "", {{"kernel-version", "0206"}}, true, {}},
    {"TestPodMatchesNodeSelectorAndAffinityTerms: matchExpressions NotIn matches", {},
     required({labels_term({{"mem-type", "NotIn", {"DDR", "DDR2"}}})}), "", {{"mem-type", "DDR3"}}, true, {}},
    {"TestPodMatchesNodeSelectorAndAffinityTerms: matchExpressions Exists matches", {},
     required({labels_term({{"GPU", "Exists", {}}})}), "", {{"GPU", "NVIDIA-GRID-K1"}}, true, {}},
    {"TestPodMatchesNodeSelectorAndAffinityTerms: affinity that don't match node's labels", {},
     required({labels_term({{"foo", "In", {"value1", "value2"}}})}), "", {{"foo", "bar"}}, false, {}},
    {"TestPodMatchesNodeSelectorAndAffinityTerms: nil []NodeSelectorTerm", {}, required({}), "", {{"foo", "bar"}},
     false, {}},
    {"TestPodMatchesNodeSelectorAndAffinityTerms: empty MatchExpressions term", {}, required({labels_term({})}), "",
     {{"foo", "bar"}}, false, {}},
    {"TestPodMatchesNodeSelectorAndAffinityTerms: no Affinity", {}, Affinity{}, "", {{"foo", "bar"}}, true, {}},
    {"TestPodMatchesNodeSelectorAndAffinityTerms: Affinity but nil NodeSelector", {}, affinity_without_required(), "",
     {{"foo", "bar"}}, true, {}},
    {"TestPodMatchesNodeSelectorAndAffinityTerms: multiple matchExpressions ANDed match", {},
     required({labels_term({{"GPU", "Exists", {}}, {"GPU", "NotIn", {"AMD", "INTER"}}})}), "",
     {{"GPU", "NVIDIA-GRID-K1"}}, true, {}},
    {"TestPodMatchesNodeSelectorAndAffinityTerms: multiple matchExpressions ANDed don't match", {},
     required({labels_term({{"GPU", "Exists", {}}, {"GPU", "In", {"AMD", "INTER"}}})}), "",
     {{"GPU", "NVIDIA-GRID-K1"}}, false, {}},
    {"TestPodMatchesNodeSelectorAndAffinityTerms: multiple NodeSelectorTerms ORed", {},
     required({labels_term({{"foo", "In", {"bar", "value2"}}}), labels_term({{"diffkey", "In", {"wrong", "value2"}}})}),
     "", {{"foo", "bar"}}, true, {}},
    {"TestPodMatchesNodeSelectorAndAffinityTerms: Affinity and NodeSelector both satisfied", {{"foo", "bar"}},
     required({labels_term({{"foo", "Exists", {}}})}), "", {{"foo", "bar"}}, true, {}},
    {"TestPodMatchesNodeSelectorAndAffinityTerms: Affinity matches but NodeSelector not", {{"foo", "bar"}},
     required({labels_term({{"foo", "Exists", {}}})}), "", {{"foo", "barrrrrr"}}, false, {}},
    {"TestPodMatchesNodeSelectorAndAffinityTerms: invalid value in Affinity term", {},
     required({labels_term({{"foo", "NotIn", {"invalid value: ___@#$%^"}}})}), "", {{"foo", "bar"}}, false,
     {"nodeSelectorTerms[0].matchExpressions[0].values[0][foo]: Invalid value: \"invalid value: ___@#$%^\": " +
      kLabelValueRegexErr}},
    {"TestPodMatchesNodeSelectorAndAffinityTerms: matchFields In matches", {}, required({fields_term({kName1})}),
     "node_1", {}, true, {}},
    {"TestPodMatchesNodeSelectorAndAffinityTerms: matchFields In does not match", {}, required({fields_term({kName1})}),
     "node_2", {}, false, {}},
    {"TestPodMatchesNodeSelectorAndAffinityTerms: two terms, matchFields no, matchExpressions yes", {},
     required({fields_term({kName1}), labels_term({kFooBar})}), "node_2", {{"foo", "bar"}}, true, {}},
    {"TestPodMatchesNodeSelectorAndAffinityTerms: one term, matchFields no, matchExpressions yes", {},
     required({Term{{kFooBar}, {kName1}}}), "node_2", {{"foo", "bar"}}, false, {}},
    {"TestPodMatchesNodeSelectorAndAffinityTerms: one term, both match", {}, required({Term{{kFooBar}, {kName1}}}),
     "node_1", {{"foo", "bar"}}, true, {}},
    {"TestPodMatchesNodeSelectorAndAffinityTerms: two terms, neither matches", {},
     required({fields_term({kName1}), labels_term({{"foo", "In", {"not-match-to-bar"}}})}), "node_2",
     {{"foo", "bar"}}, false, {}},

    // TestNodeSelectorMatch, through a pod's required affinity.
    {"TestNodeSelectorMatch: invalid terms skipped, the valid one does not match", {}, required(kMixedTerms), "host_1",
     {}, false, kMixedErrors},
    {"TestNodeSelectorMatch (lazy): invalid terms skipped, the valid one matches, no error", {}, required(kMixedTerms),
     "host_1", {{"label_1", "label_1_val"}}, true, {}},
    {"TestNodeSelectorMatch: node matches field selector, but not labels", {},
     required({Term{{{"label_1", "In", {"label_1_val"}}}, {{"metadata.name", "In", {"host_1"}}}}}), "host_1", {},
     false, {}},
    {"TestNodeSelectorMatch: second term matches", {},
     required({labels_term({{"label_1", "In", {"label_1_val"}}}), fields_term({{"metadata.name", "In", {"host_1"}}})}),
     "host_1", {}, true, {}},

    // helpers_test.go TestMatchNodeSelectorTerms
    {"TestMatchNodeSelectorTerms: invalid node field requirement", {},
     required({fields_term({{"metadata.name", "In", {"host_1", "host_2"}}})}), "host_1", {}, false,
     {"nodeSelectorTerms[0].matchFields[0].values: Invalid value: []string{\"host_1\", \"host_2\"}: must have one "
      "element"}},
    {"TestMatchNodeSelectorTerms: fieldSelectorTerm with node labels", {},
     required({fields_term({{"metadata.name", "In", {"host_1"}}})}), "not_host_1", {{"metadata.name", "host_1"}},
     false, {}},
    {"TestMatchNodeSelectorTerms: labelSelectorTerm with node fields", {},
     required({labels_term({{"metadata.name", "In", {"host_1"}}})}), "host_1", {}, false, {}},
    {"TestMatchNodeSelectorTerms: both set, one mismatched", {},
     required({Term{{{"label_1", "In", {"label_1_val"}}}, {{"metadata.name", "In", {"host_1"}}}}}), "host_1",
     {{"label_1", "label_1_val-failed"}}, false, {}},
    {"TestMatchNodeSelectorTerms: multi-selector, one mismatched", {},
     required({labels_term({{"label_1", "In", {"label_1_val"}}}), fields_term({{"metadata.name", "In", {"host_1"}}})}),
     "host_1", {{"label_1", "label_1_val-failed"}}, true, {}},

    // nodeaffinity.go rules.
    {"daemonlet: a good term still matches after an unparsable one", {},
     required({labels_term({{"zone", "Gt", {"north"}}}), labels_term({kFooBar})}), "", {{"foo", "bar"}}, true, {}},
    {"daemonlet: Gt with a non-integer value is a parse error", {}, required({labels_term({{"zone", "Gt", {"north"}}})}),
     "", {{"zone", "5"}}, false,
     {"nodeSelectorTerms[0].matchExpressions[0].values[0]: Invalid value: \"north\": for 'Gt', 'Lt' operators, the "
      "value must be an integer"}},
    {"daemonlet: Lt with two values is a parse error", {}, required({labels_term({{"cores", "Lt", {"4", "8"}}})}), "",
     {{"cores", "2"}}, false,
     {"nodeSelectorTerms[0].matchExpressions[0].values: Invalid value: []string{\"4\", \"8\"}: for 'Gt', 'Lt' "
      "operators, exactly one value is required"}},
    {"daemonlet: Gt against a non-integer label simply does not match", {},
     required({labels_term({{"cores", "Gt", {"2"}}})}), "", {{"cores", "four"}}, false, {}},
    {"daemonlet: Lt compares as integers", {}, required({labels_term({{"cores", "Lt", {"10"}}})}), "", {{"cores", "9"}},
     true, {}},
    {"daemonlet: an unknown operator is a parse error", {}, required({labels_term({{"foo", "Matches", {"bar"}}})}), "",
     {{"foo", "bar"}}, false,
     {"nodeSelectorTerms[0].matchExpressions[0].operator: Unsupported value: \"Matches\": supported values: \"In\", "
      "\"NotIn\", \"Exists\", \"DoesNotExist\", \"Gt\", \"Lt\""}},
    {"daemonlet: matchFields only takes In and NotIn", {}, required({fields_term({{"metadata.name", "Exists", {}}})}),
     "node_1", {}, false,
     {"nodeSelectorTerms[0].matchFields[0].operator: Unsupported value: \"Exists\": supported values: \"In\", "
      "\"NotIn\""}},
    {"daemonlet: matchFields NotIn metadata.name", {}, required({fields_term({{"metadata.name", "NotIn", {"node_2"}}})}),
     "node_1", {}, true, {}},
    {"daemonlet: matchFields NotIn excludes this node", {},
     required({fields_term({{"metadata.name", "NotIn", {"node_1"}}})}), "node_1", {}, false, {}},
    {"daemonlet: matchFields on another key compares with the empty string", {},
     required({fields_term({{"metadata.foo", "In", {"bar"}}})}), "node_1", {{"metadata.foo", "bar"}}, false, {}},
    {"daemonlet: matchFields In \"\" on another key matches", {}, required({fields_term({{"metadata.foo", "In", {""}}})}),
     "node_1", {}, true, {}},
    {"daemonlet: matchFields NotIn on another key matches", {},
     required({fields_term({{"metadata.foo", "NotIn", {"bar"}}})}), "node_1", {}, true, {}},
    {"daemonlet: a nameless node passes any matchFields", {}, required({fields_term({kName1})}), "", {}, true, {}},
    {"daemonlet: an empty term is skipped, the next one decides", {}, required({Term{}, labels_term({kFooBar})}), "",
     {{"foo", "bar"}}, true, {}},
    {"daemonlet: NotIn matches a node without the label", {}, required({labels_term({{"foo", "NotIn", {"bar"}}})}), "",
     {}, true, {}},
    {"daemonlet: DoesNotExist", {}, required({labels_term({{"foo", "DoesNotExist", {}}})}), "", {{"foo", "bar"}},
     false, {}},
    {"daemonlet: a refusing nodeSelector hides affinity parse errors", {{"foo", "bar"}},
     required({labels_term({{"zone", "Gt", {"north"}}})}), "", {}, false, {}},
    {"daemonlet: parse errors are reported once", {},
     required({labels_term({{"zone", "Gt", {"north"}}}), labels_term({{"zone", "Gt", {"north"}}})}), "", {}, false,
     {"nodeSelectorTerms[0].matchExpressions[0].values[0]: Invalid value: \"north\": for 'Gt', 'Lt' operators, the "
      "value must be an integer",
      "nodeSelectorTerms[1].matchExpressions[0].values[0]: Invalid value: \"north\": for 'Gt', 'Lt' operators, the "
      "value must be an integer"}},
    {"daemonlet: preferred terms never constrain", {},
     [] {
         Affinity a;
         a.node_affinity = NodeAffinity{std::nullopt, {PreferredSchedulingTerm{10, labels_term({kFooBar})}}};
         return a;
     }(),
     "", {}, true, {}},
};

std::string joined(const std::vector<std::string>& v) {
    std::string out;
    for (const auto& s : v) out += s + "\n";
    return out;
}

Node make_node(const std::string& name, const Labels& labels) {
    Node n;
    n.metadata.name = name;
    n.metadata.labels = labels;
    return n;
}

struct AsSelectorRow {
    const char* name;
    std::vector<Req> in;
    Labels labels;
    bool matches;
    std::vector<std::string> errors;
};

const AsSelectorRow kAsSelectorRows[] = {
    {"TestNodeSelectorRequirementsAsSelector: nil is Nothing", {}, {}, false, {}},
    {"TestNodeSelectorRequirementsAsSelector: foo in (baz,bar)",
     {{"foo", "In", {"bar", "baz"}}},
     {{"foo", "baz"}},
     true,
     {}},
    {"TestNodeSelectorRequirementsAsSelector: Exists with values",
     {{"foo", "Exists", {"bar", "baz"}}},
     {{"foo", "x"}},
     false,
     {"root[0].values: Invalid value: []string{\"bar\", \"baz\"}: values set must be empty for exists and "
      "does not "
      "exist"}},
    {"TestNodeSelectorRequirementsAsSelector: foo>1", {{"foo", "Gt", {"1"}}}, {{"foo", "2"}}, true, {}},
    {"TestNodeSelectorRequirementsAsSelector: bar<7", {{"bar", "Lt", {"7"}}}, {{"bar", "3"}}, true, {}},
    {"daemonlet: every bad requirement is reported",
     {{"a", "Foo", {}}, {"b", "In", {}}},
     {},
     false,
     {"root[0].operator: Unsupported value: \"Foo\": supported values: \"In\", \"NotIn\", \"Exists\", "
      "\"DoesNotExist\", \"Gt\", \"Lt\"",
      "root[1].values: Invalid value: []string{}: for 'in', 'notin' operators, values set can't be empty"}},
};

struct ReasonRow {
    const char* name;
    Labels node_selector;
    std::optional<Affinity> affinity;
    Labels node_labels;
    std::vector<std::string> reasons;
};

const ReasonRow kReasonRows[] = {
    {"nodeSelector value differs",
     {{"disktype", "ssd"}},
     std::nullopt,
     {{"disktype", "hdd"}},
     {"nodeSelector requires disktype=ssd but the node has disktype=hdd"}},
    {"nodeSelector label missing",
     {{"disktype", "ssd"}, {"zone", "a"}},
     std::nullopt,
     {{"zone", "a"}},
     {"nodeSelector requires disktype=ssd but the node has no label disktype"}},
    {"no terms",
     {},
     required({}),
     {},
     {"required node affinity has no nodeSelectorTerms, so it matches no node"}},
    {"empty term and a term that does not match",
     {},
     required({Term{},
               Term{{{"color", "In", {"blue", "red"}}, {"gpu", "DoesNotExist", {}}, {"cores", "Gt", {"4"}}},
                    {{"metadata.name", "In", {"board-1"}}}}}),
     {{"color", "green"}},
     {"nodeSelectorTerms[0] is empty, and an empty term matches no node",
      "nodeSelectorTerms[1] {color in (blue,red), !gpu, cores>4, metadata.name=board-1} does not match the "
      "node"}},
    {"unparsable term",
     {},
     required({labels_term({{"zone", "Gt", {"north"}}})}),
     {},
     {"ignored a required node affinity term that does not parse: "
      "nodeSelectorTerms[0].matchExpressions[0].values[0]: Invalid value: \"north\": for 'Gt', 'Lt' "
      "operators, the "
      "value must be an integer"}},
};

}  // namespace

TEST_GROUP(NodeAffinity){};

TEST(NodeAffinity, MatchesUpstreamTable) {
    for (const auto& row : kRows) {
        PodSpec spec;
        spec.node_selector = row.node_selector;
        spec.affinity = row.affinity;
        const auto m = match_required_node_affinity(spec, make_node(row.node_name, row.node_labels));
        CHECK_EQUAL_TEXT(row.matches, m.matches, row.name);
        STRCMP_EQUAL_TEXT(joined(row.parse_errors).c_str(), joined(m.parse_errors).c_str(), row.name);
        CHECK_EQUAL_TEXT(row.matches, m.reasons.empty(), row.name);
        CHECK_TEXT(!(m.node_selector_mismatch && m.required_affinity_mismatch), row.name);
        CHECK_EQUAL_TEXT(!row.matches, m.node_selector_mismatch || m.required_affinity_mismatch, row.name);
    }
}

TEST(NodeAffinity, NodeSelectorMatchesLikeTheRequiredAffinity) {
    // match_node_selector is LazyErrorNodeSelector.Match on its own.
    for (const auto& row : kRows) {
        if (!row.node_selector.empty() || !row.affinity || !row.affinity->node_affinity ||
            !row.affinity->node_affinity->required)
            continue;
        const auto m = match_node_selector(*row.affinity->node_affinity->required,
                                           make_node(row.node_name, row.node_labels));
        CHECK_EQUAL_TEXT(row.matches, m.matches, row.name);
        STRCMP_EQUAL_TEXT(joined(row.parse_errors).c_str(), joined(m.errors).c_str(), row.name);
    }
}

TEST(NodeAffinity, RequirementsAsSelectorMatchUpstreamTable) {
    for (const auto& row : kAsSelectorRows) {
        const auto parsed = node_selector_requirements_as_selector(row.in, FieldPath("root"));
        STRCMP_EQUAL_TEXT(joined(row.errors).c_str(), joined(parsed.errors).c_str(), row.name);
        CHECK_EQUAL_TEXT(row.matches, parsed.selector.matches(row.labels), row.name);
    }
}

TEST(NodeAffinity, ReasonsNameWhatFailed) {
    for (const auto& row : kReasonRows) {
        PodSpec spec;
        spec.node_selector = row.node_selector;
        spec.affinity = row.affinity;
        const auto m = match_required_node_affinity(spec, make_node("board-2", row.node_labels));
        CHECK_FALSE_TEXT(m.matches, row.name);
        STRCMP_EQUAL_TEXT(joined(row.reasons).c_str(), joined(m.reasons).c_str(), row.name);
    }
}
