// Name and label syntax, rows from k8s.io/apimachinery/pkg/util/validation/validation_test.go.

#include <string>
#include <vector>

#include "core/names.h"

#include <CppUTest/TestHarness.h>

using namespace daemonlet::names;

namespace {
struct Row {
    const char* name;
    Problems (*check)(std::string_view);
    std::string value;
    bool valid;
};

const Row kRows[] = {
    // TestIsDNS1123Label
    {"TestIsDNS1123Label: a", is_dns1123_label, "a", true},
    {"TestIsDNS1123Label: 1-a-2", is_dns1123_label, "1-a-2", true},
    {"TestIsDNS1123Label: 63 chars", is_dns1123_label, std::string(63, 'a'), true},
    {"TestIsDNS1123Label: empty", is_dns1123_label, "", false},
    {"TestIsDNS1123Label: upper case", is_dns1123_label, "A", false},
    {"TestIsDNS1123Label: leading dash", is_dns1123_label, "-a", false},
    {"TestIsDNS1123Label: trailing dash", is_dns1123_label, "a-", false},
    {"TestIsDNS1123Label: dot", is_dns1123_label, "a.b", false},
    {"TestIsDNS1123Label: 64 chars", is_dns1123_label, std::string(64, 'a'), false},
    // TestIsDNS1123Subdomain
    {"TestIsDNS1123Subdomain: a.b.c", is_dns1123_subdomain, "a.b.c", true},
    {"TestIsDNS1123Subdomain: 11.22.33", is_dns1123_subdomain, "11.22.33", true},
    {"TestIsDNS1123Subdomain: 253 chars", is_dns1123_subdomain, std::string(253, 'a'), true},
    {"TestIsDNS1123Subdomain: empty label", is_dns1123_subdomain, "a..b", false},
    {"TestIsDNS1123Subdomain: trailing dot", is_dns1123_subdomain, "a.", false},
    {"TestIsDNS1123Subdomain: underscore", is_dns1123_subdomain, "a_b", false},
    {"TestIsDNS1123Subdomain: 254 chars", is_dns1123_subdomain, std::string(254, 'a'), false},
    // TestIsQualifiedName
    {"TestIsQualifiedName: simple", is_qualified_name, "simple", true},
    {"TestIsQualifiedName: now-with-dashes", is_qualified_name, "now-with-dashes", true},
    {"TestIsQualifiedName: prefix", is_qualified_name, "example.com/Name_with.dots", true},
    {"TestIsQualifiedName: 63 char name", is_qualified_name, "a/" + std::string(63, 'b'), true},
    {"TestIsQualifiedName: empty", is_qualified_name, "", false},
    {"TestIsQualifiedName: empty prefix", is_qualified_name, "/simple", false},
    {"TestIsQualifiedName: empty name", is_qualified_name, "example.com/", false},
    {"TestIsQualifiedName: two slashes", is_qualified_name, "a/b/c", false},
    {"TestIsQualifiedName: space", is_qualified_name, "has space", false},
    {"TestIsQualifiedName: upper-case prefix", is_qualified_name, "Example.com/name", false},
    {"TestIsQualifiedName: 64 char name", is_qualified_name, std::string(64, 'a'), false},
    // TestIsValidLabelValue
    {"TestIsValidLabelValue: empty", is_valid_label_value, "", true},
    {"TestIsValidLabelValue: a-b_c.d", is_valid_label_value, "a-b_c.d", true},
    {"TestIsValidLabelValue: 1.2.3", is_valid_label_value, "1.2.3", true},
    {"TestIsValidLabelValue: leading dash", is_valid_label_value, "-a", false},
    {"TestIsValidLabelValue: slash", is_valid_label_value, "a/b", false},
    {"TestIsValidLabelValue: 64 chars", is_valid_label_value, std::string(64, 'a'), false},
    // TestIsEnvVarName
    {"TestIsEnvVarName: A_B", is_env_var_name, "A_B", true},
    {"TestIsEnvVarName: _leading", is_env_var_name, "_leading", true},
    {"TestIsEnvVarName: ...dots ok", is_env_var_name, "my.env-name", true},
    {"TestIsEnvVarName: leading digit", is_env_var_name, "1ABC", false},
    {"TestIsEnvVarName: dot", is_env_var_name, ".", false},
    {"TestIsEnvVarName: ..x", is_env_var_name, "..x", false},
    {"TestIsEnvVarName: equals", is_env_var_name, "A=B", false},
    // TestIsValidPortName
    {"TestIsValidPortName: http", is_valid_port_name, "http", true},
    {"TestIsValidPortName: a-1", is_valid_port_name, "a-1", true},
    {"TestIsValidPortName: digits only", is_valid_port_name, "123", false},
    {"TestIsValidPortName: double hyphen", is_valid_port_name, "a--b", false},
    {"TestIsValidPortName: 16 chars", is_valid_port_name, "abcdefghijklmnop", false},
    {"TestIsValidPortName: upper", is_valid_port_name, "HTTP", false},
};
}  // namespace

TEST_GROUP(Names){};

TEST(Names, MatchUpstreamValidationTables) {
    for (const auto& row : kRows) {
        Problems p = row.check(row.value);
        CHECK_EQUAL_TEXT(row.valid, p.empty(), row.name);
    }
}

TEST(Names, MessagesAreUpstreams) {
    Problems p = is_dns1123_label("A");
    CHECK_EQUAL(1, p.size());
    STRCMP_EQUAL(
        "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must "
        "start "
        "and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is "
        "'[a-z0-9]([-a-z0-9]*[a-z0-9])?')",
        p[0].c_str());
    p = is_qualified_name("");
    CHECK_EQUAL(2, p.size());
    STRCMP_EQUAL("name part must be non-empty", p[0].c_str());
}

TEST(Names, Utf8) {
    CHECK_TRUE(is_valid_utf8("plain"));
    CHECK_TRUE(is_valid_utf8("gr\xc3\xbc\xc3\x9f"));
    CHECK_FALSE(is_valid_utf8("\xff"));
    CHECK_FALSE(is_valid_utf8("\xc0\xaf"));      // overlong '/'
    CHECK_FALSE(is_valid_utf8("\xed\xa0\x80"));  // surrogate
    CHECK_FALSE(is_valid_utf8("\xe2\x82"));      // truncated
}
