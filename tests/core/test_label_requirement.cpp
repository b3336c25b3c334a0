// labels.Requirement, SelectorFromSet and LabelSelectorAsSelector. Rows from
// k8s.io/apimachinery/pkg/labels/selector_test.go (TestRequirementConstructor,
// TestSelectorMatches, TestRequirementSelectorMatching, TestSetMatches) and
// pkg/apis/meta/v1/helpers_test.go (TestLabelSelectorAsSelector); rows marked
// "daemonlet:" pin an upstream rule those tables leave implicit.
#include <optional>
#include <string>
#include <vector>

#include "core/label_requirement.h"

// CppUTest last: its leak-detection macros redefine new.
#include <CppUTest/TestHarness.h>

using namespace daemonlet;

namespace {

using Op = SelectorOp;

const std::string k254(254, 'a');
const std::string kLabelValueRegexErr =
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must "
    "start "
    "and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for "
    "validation "
    "is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";
const std::string kNameRegexErr =
    "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
    "alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
    "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";

struct ConstructorRow {
    const char* name;
    std::string key;
    Op op;
    std::vector<std::string> values;
    std::string path;   // the requirement's path, "" for none
    std::string error;  // "" when valid
};

const ConstructorRow kConstructorRows[] = {
    {"TestRequirementConstructor x1: In without values",
     "x1",
     Op::In,
     {},
     "",
     "values: Invalid value: []string{}: for 'in', 'notin' operators, values set can't be empty"},
    {"TestRequirementConstructor x2: NotIn with an empty set",
     "x2",
     Op::NotIn,
     {},
     "",
     "values: Invalid value: []string{}: for 'in', 'notin' operators, values set can't be empty"},
    {"TestRequirementConstructor x3: In foo", "x3", Op::In, {"foo"}, "", ""},
    {"TestRequirementConstructor x4: NotIn foo", "x4", Op::NotIn, {"foo"}, "", ""},
    {"TestRequirementConstructor x5: Equals with two values",
     "x5",
     Op::Equals,
     {"bar", "foo"},
     "",
     "values: Invalid value: []string{\"bar\", \"foo\"}: exact-match compatibility requires one single "
     "value"},
    {"TestRequirementConstructor x6: Exists", "x6", Op::Exists, {}, "", ""},
    {"TestRequirementConstructor x7: DoesNotExist", "x7", Op::DoesNotExist, {}, "", ""},
    {"TestRequirementConstructor x8: Exists with a value",
     "x8",
     Op::Exists,
     {"foo"},
     "",
     "values: Invalid value: []string{\"foo\"}: values set must be empty for exists and does not exist"},
    {"TestRequirementConstructor x9: In bar", "x9", Op::In, {"bar"}, "", ""},
    {"TestRequirementConstructor x11: Gt 1", "x11", Op::GreaterThan, {"1"}, "", ""},
    {"TestRequirementConstructor x12: Lt 6", "x12", Op::LessThan, {"6"}, "", ""},
    {"TestRequirementConstructor x13: Gt without a value",
     "x13",
     Op::GreaterThan,
     {},
     "",
     "values: Invalid value: []string{}: for 'Gt', 'Lt' operators, exactly one value is required"},
    {"TestRequirementConstructor x14: Gt bar",
     "x14",
     Op::GreaterThan,
     {"bar"},
     "",
     "values[0]: Invalid value: \"bar\": for 'Gt', 'Lt' operators, the value must be an integer"},
    {"TestRequirementConstructor x15: Lt bar",
     "x15",
     Op::LessThan,
     {"bar"},
     "",
     "values[0]: Invalid value: \"bar\": for 'Gt', 'Lt' operators, the value must be an integer"},
    {"TestRequirementConstructor: 254-char key",
     k254,
     Op::Exists,
     {},
     "",
     "key: Invalid value: \"" + k254 + "\": name part must be no more than 63 characters"},
    {"TestRequirementConstructor x16: 254-char value",
     "x16",
     Op::Equals,
     {k254},
     "",
     "values[0][x16]: Invalid value: \"" + k254 + "\": must be no more than 63 characters"},
    {"TestRequirementConstructor x17: value with a space",
     "x17",
     Op::Equals,
     {"a b"},
     "",
     "values[0][x17]: Invalid value: \"a b\": " + kLabelValueRegexErr},
    // The older table's rows.
    {"TestRequirementConstructor (old): key 1foo", "1foo", Op::In, {"bar"}, "", ""},
    {"TestRequirementConstructor (old): key 1234", "1234", Op::In, {"bar"}, "", ""},
    {"TestRequirementConstructor (old): Gt bar on foo",
     "foo",
     Op::GreaterThan,
     {"bar"},
     "",
     "values[0]: Invalid value: \"bar\": for 'Gt', 'Lt' operators, the value must be an integer"},
    // nodeaffinity_test.go TestNodeSelectorRequirementsAsSelector passes a path.
    {"TestNodeSelectorRequirementsAsSelector: Exists with values under root[0]",
     "foo",
     Op::Exists,
     {"bar", "baz"},
     "root[0]",
     "root[0].values: Invalid value: []string{\"bar\", \"baz\"}: values set must be empty for exists and "
     "does not "
     "exist"},
    {"nodeaffinity_test.go TestNodeSelectorMatch: invalid key",
     "invalid key",
     Op::In,
     {"label_value"},
     "nodeSelectorTerms[2].matchExpressions[0]",
     "nodeSelectorTerms[2].matchExpressions[0].key: Invalid value: \"invalid key\": " + kNameRegexErr},
    // strconv.ParseInt(v, 10, 64) is the integer grammar for Gt and Lt.
    {"daemonlet: ParseInt accepts leading zeros", "x", Op::LessThan, {"0204"}, "", ""},
    {"daemonlet: ParseInt accepts the int64 maximum", "x", Op::GreaterThan, {"9223372036854775807"}, "", ""},
    // Every value must also be a label value, which cannot start with a sign:
    // Gt and Lt can only compare against non-negative numbers.
    {"daemonlet: a signed Gt value parses but is no label value",
     "x",
     Op::GreaterThan,
     {"+5"},
     "",
     "values[0][x]: Invalid value: \"+5\": " + kLabelValueRegexErr},
    {"daemonlet: a negative Lt value is no label value",
     "x",
     Op::LessThan,
     {"-1"},
     "",
     "values[0][x]: Invalid value: \"-1\": " + kLabelValueRegexErr},
    {"daemonlet: ParseInt rejects past the int64 maximum",
     "x",
     Op::GreaterThan,
     {"9223372036854775808"},
     "",
     "values[0]: Invalid value: \"9223372036854775808\": for 'Gt', 'Lt' operators, the value must be an "
     "integer"},
    {"daemonlet: ParseInt rejects a decimal point",
     "x",
     Op::GreaterThan,
     {"1.5"},
     "",
     "values[0]: Invalid value: \"1.5\": for 'Gt', 'Lt' operators, the value must be an integer"},
    {"daemonlet: ParseInt with base 10 rejects underscores",
     "x",
     Op::GreaterThan,
     {"1_000"},
     "",
     "values[0]: Invalid value: \"1_000\": for 'Gt', 'Lt' operators, the value must be an integer"},
    {"daemonlet: ParseInt rejects a bare sign",
     "x",
     Op::LessThan,
     {"-"},
     "",
     "[values[0]: Invalid value: \"-\": for 'Gt', 'Lt' operators, the value must be an integer, "
     "values[0][x]: "
     "Invalid value: \"-\": " +
         kLabelValueRegexErr + "]"},
    {"daemonlet: several problems aggregate in brackets",
     "x",
     Op::GreaterThan,
     {"1", "y"},
     "",
     "[values: Invalid value: []string{\"1\", \"y\"}: for 'Gt', 'Lt' operators, exactly one value is "
     "required, "
     "values[1]: Invalid value: \"y\": for 'Gt', 'Lt' operators, the value must be an integer]"},
    {"daemonlet: an empty value is a valid label value", "x", Op::In, {""}, "", ""},
};

struct ReqSpec {
    std::string key;
    Op op;
    std::vector<std::string> values;
};

struct MatchRow {
    const char* name;
    std::vector<ReqSpec> selector;  // ANDed; empty is Everything
    Labels labels;
    bool matches;
};

const MatchRow kMatchRows[] = {
    {"TestSelectorMatches: empty selector", {}, {{"x", "y"}}, true},
    {"TestSelectorMatches: x=y", {{"x", Op::Equals, {"y"}}}, {{"x", "y"}}, true},
    {"TestSelectorMatches: x=y,z=w",
     {{"x", Op::Equals, {"y"}}, {"z", Op::Equals, {"w"}}},
     {{"x", "y"}, {"z", "w"}},
     true},
    {"TestSelectorMatches: x!=y,z!=w",
     {{"x", Op::NotEquals, {"y"}}, {"z", Op::NotEquals, {"w"}}},
     {{"x", "z"}, {"z", "a"}},
     true},
    {"TestSelectorMatches: notin=in", {{"notin", Op::Equals, {"in"}}}, {{"notin", "in"}}, true},
    {"TestSelectorMatches: x exists", {{"x", Op::Exists, {}}}, {{"x", "z"}}, true},
    {"TestSelectorMatches: !x", {{"x", Op::DoesNotExist, {}}}, {{"y", "z"}}, true},
    {"TestSelectorMatches: x>1 with 2", {{"x", Op::GreaterThan, {"1"}}}, {{"x", "2"}}, true},
    {"TestSelectorMatches: x<1 with 0", {{"x", Op::LessThan, {"1"}}}, {{"x", "0"}}, true},
    {"TestSelectorMatches: x=z on no labels", {{"x", Op::Equals, {"z"}}}, {}, false},
    {"TestSelectorMatches: x=y with x=z", {{"x", Op::Equals, {"y"}}}, {{"x", "z"}}, false},
    {"TestSelectorMatches: x=y,z=w with x=w",
     {{"x", Op::Equals, {"y"}}, {"z", Op::Equals, {"w"}}},
     {{"x", "w"}, {"z", "w"}},
     false},
    {"TestSelectorMatches: x!=y,z!=w with z=w",
     {{"x", Op::NotEquals, {"y"}}, {"z", Op::NotEquals, {"w"}}},
     {{"x", "z"}, {"z", "w"}},
     false},
    {"TestSelectorMatches: x exists without x", {{"x", Op::Exists, {}}}, {{"y", "z"}}, false},
    {"TestSelectorMatches: !x with x", {{"x", Op::DoesNotExist, {}}}, {{"x", "z"}}, false},
    {"TestSelectorMatches: x>1 with 0", {{"x", Op::GreaterThan, {"1"}}}, {{"x", "0"}}, false},
    {"TestSelectorMatches: x<1 with 2", {{"x", Op::LessThan, {"1"}}}, {{"x", "2"}}, false},
    {"TestSelectorMatches: foo=bar in labelset",
     {{"foo", Op::Equals, {"bar"}}},
     {{"foo", "bar"}, {"baz", "blah"}},
     true},
    {"TestSelectorMatches: foo=bar,baz=blah in labelset",
     {{"foo", Op::Equals, {"bar"}}, {"baz", Op::Equals, {"blah"}}},
     {{"foo", "bar"}, {"baz", "blah"}},
     true},
    {"TestSelectorMatches: foo=blah not in labelset",
     {{"foo", Op::Equals, {"blah"}}},
     {{"foo", "bar"}, {"baz", "blah"}},
     false},
    {"TestSelectorMatches: foo=bar,foobar=bar,baz=blah",
     {{"foo", Op::Equals, {"bar"}}, {"foobar", Op::Equals, {"bar"}}, {"baz", Op::Equals, {"blah"}}},
     {{"foo", "bar"}, {"baz", "blah"}},
     false},
    {"TestRequirementSelectorMatching: x in (foo), y notin (alpha)",
     {{"x", Op::In, {"foo"}}, {"y", Op::NotIn, {"alpha"}}},
     {{"x", "foo"}, {"y", "baz"}},
     true},
    {"TestRequirementSelectorMatching: x in (foo), y in (alpha)",
     {{"x", Op::In, {"foo"}}, {"y", Op::In, {"alpha"}}},
     {{"x", "foo"}, {"y", "baz"}},
     false},
    {"TestRequirementSelectorMatching: x notin (), y exists",
     {{"x", Op::NotIn, {""}}, {"y", Op::Exists, {}}},
     {{"y", ""}},
     true},
    {"TestRequirementSelectorMatching: !x, y exists",
     {{"x", Op::DoesNotExist, {}}, {"y", Op::Exists, {}}},
     {{"y", ""}},
     true},
    {"TestRequirementSelectorMatching: x notin (), !y",
     {{"x", Op::NotIn, {""}}, {"y", Op::DoesNotExist, {}}},
     {{"y", ""}},
     false},
    {"TestRequirementSelectorMatching: x in () without x", {{"x", Op::In, {""}}}, {{"y", "baz"}}, false},
    {"TestRequirementSelectorMatching: z>1 with 2", {{"z", Op::GreaterThan, {"1"}}}, {{"z", "2"}}, true},
    {"TestRequirementSelectorMatching: z>1 with v2", {{"z", Op::GreaterThan, {"1"}}}, {{"z", "v2"}}, false},
    // Requirement.Matches details.
    {"daemonlet: x==y (DoubleEquals)", {{"x", Op::DoubleEquals, {"y"}}}, {{"x", "y"}}, true},
    {"daemonlet: NotIn matches a missing key", {{"x", Op::NotIn, {"a", "b"}}}, {}, true},
    {"daemonlet: In with several values", {{"x", Op::In, {"a", "b"}}}, {{"x", "b"}}, true},
    {"daemonlet: Gt without the label", {{"x", Op::GreaterThan, {"1"}}}, {}, false},
    {"daemonlet: Gt is strict", {{"x", Op::GreaterThan, {"1"}}}, {{"x", "1"}}, false},
    {"daemonlet: Gt compares numbers, not strings", {{"x", Op::GreaterThan, {"9"}}}, {{"x", "10"}}, true},
    {"daemonlet: Gt with leading zeros (kernel-version 0206 > 0204)",
     {{"kernel-version", Op::GreaterThan, {"0204"}}},
     {{"kernel-version", "0206"}},
     true},
    {"daemonlet: Lt with negatives", {{"x", Op::LessThan, {"-1"}}}, {{"x", "-5"}}, true},
    {"daemonlet: Gt with a signed label value", {{"x", Op::GreaterThan, {"1"}}}, {{"x", "+2"}}, true},
    {"daemonlet: Gt with an overflowing label value",
     {{"x", Op::GreaterThan, {"1"}}},
     {{"x", "99999999999999999999"}},
     false},
    {"daemonlet: Lt with a decimal label value", {{"x", Op::LessThan, {"10"}}}, {{"x", "1.5"}}, false},
};

struct SetRow {
    const char* name;
    Labels set;
    Labels labels;
    bool matches;
};

const SetRow kSetRows[] = {
    {"TestSetMatches: empty set", {}, {{"foo", "bar"}, {"baz", "blah"}}, true},
    {"TestSetMatches: foo=bar", {{"foo", "bar"}}, {{"foo", "bar"}, {"baz", "blah"}}, true},
    {"TestSetMatches: baz=blah", {{"baz", "blah"}}, {{"foo", "bar"}, {"baz", "blah"}}, true},
    {"TestSetMatches: foo=bar,baz=blah",
     {{"foo", "bar"}, {"baz", "blah"}},
     {{"foo", "bar"}, {"baz", "blah"}},
     true},
    {"TestSelectorMatches (via set): foo=blah", {{"foo", "blah"}}, {{"foo", "bar"}, {"baz", "blah"}}, false},
    {"TestSelectorMatches (via set): missing key", {{"foobar", "bar"}}, {{"foo", "bar"}}, false},
    {"TestNilMapIsValid: empty set against no labels", {}, {}, true},
    // SelectorFromValidatedSet does not validate: pairs compare as written.
    {"daemonlet: unvalidated pair compares as written", {{"a b", "=c"}}, {{"a b", "=c"}}, true},
    {"daemonlet: unvalidated pair against normal labels", {{"a b", "=c"}}, {{"a", "c"}}, false},
};

struct SelectorRow {
    const char* name;
    std::optional<LabelSelector> selector;
    Labels labels;
    bool matches;
    std::string error;  // "" when valid
};

const LabelSelectorRequirement kBazIn{"baz", "In", {"qux", "norf"}};

const SelectorRow kSelectorRows[] = {
    {"TestLabelSelectorAsSelector: nil is Nothing", std::nullopt, {{"foo", "bar"}}, false, ""},
    {"TestLabelSelectorAsSelector: nil is Nothing, even for no labels", std::nullopt, {}, false, ""},
    {"TestLabelSelectorAsSelector: empty is Everything", LabelSelector{}, {{"foo", "bar"}}, true, ""},
    {"TestLabelSelectorAsSelector: empty is Everything, even for no labels", LabelSelector{}, {}, true, ""},
    {"TestLabelSelectorAsSelector: foo=bar", LabelSelector{{{"foo", "bar"}}, {}}, {{"foo", "bar"}}, true, ""},
    {"TestLabelSelectorAsSelector: foo=bar, other value",
     LabelSelector{{{"foo", "bar"}}, {}},
     {{"foo", "baz"}},
     false,
     ""},
    {"TestLabelSelectorAsSelector: baz in (norf,qux)",
     LabelSelector{{}, {kBazIn}},
     {{"baz", "norf"}},
     true,
     ""},
    {"TestLabelSelectorAsSelector: baz in (norf,qux),foo=bar",
     LabelSelector{{{"foo", "bar"}}, {kBazIn}},
     {{"baz", "qux"}, {"foo", "bar"}},
     true,
     ""},
    {"TestLabelSelectorAsSelector: baz in (norf,qux),foo=bar, foo missing",
     LabelSelector{{{"foo", "bar"}}, {kBazIn}},
     {{"baz", "qux"}},
     false,
     ""},
    {"TestLabelSelectorAsSelector: Exists with values",
     LabelSelector{{}, {{"baz", "Exists", {"qux", "norf"}}}},
     {},
     false,
     "values: Invalid value: []string{\"qux\", \"norf\"}: values set must be empty for exists and does not "
     "exist"},
    {"daemonlet: Gt is not a label selector operator",
     LabelSelector{{}, {{"x", "Gt", {"1"}}}},
     {},
     false,
     "\"Gt\" is not a valid label selector operator"},
    {"daemonlet: operators are case sensitive",
     LabelSelector{{}, {{"x", "in", {"1"}}}},
     {},
     false,
     "\"in\" is not a valid label selector operator"},
    {"daemonlet: DoesNotExist", LabelSelector{{}, {{"x", "DoesNotExist", {}}}}, {{"y", "1"}}, true, ""},
    {"daemonlet: matchLabels with a bad value",
     LabelSelector{{{"app", "a b"}}, {}},
     {},
     false,
     "values[0][app]: Invalid value: \"a b\": " + kLabelValueRegexErr},
};

// Requirements built directly, not through make_requirement: these rows pin
// Matches, including on values validation would refuse.
LabelSelectorExpr build(const std::vector<ReqSpec>& specs) {
    LabelSelectorExpr sel;
    for (const auto& s : specs) sel.requirements.push_back(LabelRequirement{s.key, s.op, s.values});
    return sel;
}

}  // namespace

TEST_GROUP(LabelRequirement){};

TEST(LabelRequirement, ConstructorMatchesUpstreamTable) {
    for (const auto& row : kConstructorRows) {
        auto r = make_requirement(row.key, row.op, row.values, FieldPath(row.path));
        const std::string got = r.ok() ? std::string() : r.error().message;
        STRCMP_EQUAL_TEXT(row.error.c_str(), got.c_str(), row.name);
        if (r.ok()) {
            STRCMP_EQUAL_TEXT(row.key.c_str(), r.value().key.c_str(), row.name);
            CHECK_TEXT(row.values == r.value().values, row.name);
        } else {
            STRCMP_EQUAL_TEXT("invalid", r.error().code_name(), row.name);
        }
    }
}

TEST(LabelRequirement, MatchesUpstreamTable) {
    for (const auto& row : kMatchRows)
        CHECK_EQUAL_TEXT(row.matches, build(row.selector).matches(row.labels), row.name);
}

TEST(LabelRequirement, SelectorFromSetMatchesUpstreamTable) {
    for (const auto& row : kSetRows)
        CHECK_EQUAL_TEXT(row.matches, selector_from_set(row.set).matches(row.labels), row.name);
}

TEST(LabelRequirement, LabelSelectorAsSelectorMatchesUpstreamTable) {
    for (const auto& row : kSelectorRows) {
        auto sel = label_selector_as_selector(row.selector);
        const std::string got = sel.ok() ? std::string() : sel.error().message;
        STRCMP_EQUAL_TEXT(row.error.c_str(), got.c_str(), row.name);
        if (sel.ok()) CHECK_EQUAL_TEXT(row.matches, sel.value().matches(row.labels), row.name);
    }
}

TEST(LabelRequirement, LabelSelectorRequirementsAreSortedByKey) {
    // selector.Add sorts by key: "baz in (norf,qux),foo=bar".
    auto sel = label_selector_as_selector(LabelSelector{{{"foo", "bar"}}, {kBazIn}});
    CHECK(sel.ok());
    LONGS_EQUAL(2, sel.value().requirements.size());
    STRCMP_EQUAL("baz", sel.value().requirements[0].key.c_str());
    STRCMP_EQUAL("foo", sel.value().requirements[1].key.c_str());
}
