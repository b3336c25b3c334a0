// Variable references, rows from third_party/forked/golang/expansion/expand_test.go.
#include <map>
#include <string>

#include "core/expand.h"

#include <CppUTest/TestHarness.h>

TEST_GROUP(Expand){};

TEST(Expand, MatchesUpstreamTable) {
    const std::map<std::string, std::string> vars = {{"VAR_A", "A"}, {"VAR_B", "B"}, {"VAR_EMPTY", ""}};
    auto lookup = [&](const std::string& n) -> std::optional<std::string> {
        auto it = vars.find(n);
        if (it == vars.end()) return std::nullopt;
        return it->second;
    };
    struct Row {
        const char* name;
        const char* in;
        const char* out;
    };
    const Row rows[] = {
        {"whole string", "$(VAR_A)", "A"},
        {"repeat", "$(VAR_A)-$(VAR_A)", "A-A"},
        {"beginning", "$(VAR_A)-1", "A-1"},
        {"middle", "___$(VAR_B)___", "___B___"},
        {"end", "___$(VAR_B)", "___B"},
        {"empty value", "foo$(VAR_EMPTY)bar", "foobar"},
        {"undefined stays", "$(VAR_UNKNOWN)", "$(VAR_UNKNOWN)"},
        {"escaped", "$$(VAR_A)", "$(VAR_A)"},
        {"double escape", "$$$$(VAR_A)", "$$(VAR_A)"},
        {"unterminated", "$(VAR_A", "$(VAR_A"},
        {"empty reference", "$()", "$()"},
        {"lone dollar", "$VAR_A", "$VAR_A"},
        {"trailing dollar", "foo$", "foo$"},
        {"no references", "plain", "plain"},
    };
    for (const auto& r : rows) STRCMP_EQUAL_TEXT(r.out, daemonlet::expand_vars(r.in, lookup).c_str(), r.name);
}
