// The linear-time JSON parser: the same values nlohmann's parser builds
// (key order, a repeated key, what is not JSON), and its bounds.

#include <iterator>
#include <string>

#include "core/json_parse.h"

#include <CppUTest/TestHarness.h>

using namespace daemonlet;

TEST_GROUP(JsonParse){};

// Each row's value must be what Json::parse builds from the same text
// (nlohmann's json_sax_dom_parser, which ordered_json's parse uses).
TEST(JsonParse, BuildsWhatNlohmannsParserBuilds) {
    struct Row {
        const char* name;
        const char* input;
        const char* expected;  // dump() of the value; "" for text that is not JSON
    };
    static const Row rows[] = {
        {"scalars", R"([null, true, false, -1, 18446744073709551615, 1.5, "s"])",
         R"([null,true,false,-1,18446744073709551615,1.5,"s"])"},
        {"key order is the text's (ordered_json)", R"({"b": 1, "a": {"d": [], "c": {}}})",
         R"({"b":1,"a":{"d":[],"c":{}}})"},
        {"a repeated key keeps its first place and its last value (ordered_map::operator[]; Go's "
         "encoding/json: the last one wins)",
         R"({"a": 1, "b": 2, "a": {"x": 3}})", R"({"a":{"x":3},"b":2})"},
        {"surrounding whitespace", " \n\t{}\r\n ", "{}"},
        {"escapes", R"("\u00e9\n\"")", R"("é\n\"")"},
        {"trailing text is not JSON (strict)", "{} {}", ""},
        {"a trailing comma", R"({"a": 1,})", ""},
        {"empty text", "", ""},
        {"an unterminated object", R"({"a": [1, 2)", ""},
    };
    for (const auto& row : rows) {
        const Json ours = parse_json(row.input);
        const Json theirs = Json::parse(row.input, nullptr, false);
        if (row.expected[0] == '\0') {
            CHECK_TEXT(ours.is_discarded(), row.name);
            CHECK_TEXT(theirs.is_discarded(), row.name);
            CHECK_TEXT(parse_json_text(row.input).failure == JsonFailure::Syntax, row.name);
            continue;
        }
        CHECK_TEXT(!ours.is_discarded(), row.name);
        STRCMP_EQUAL_TEXT(row.expected, ours.dump().c_str(), row.name);
        STRCMP_EQUAL_TEXT(theirs.dump().c_str(), ours.dump().c_str(), row.name);
    }
}

TEST(JsonParse, ASyntaxErrorCarriesNlohmannsMessage) {
    const JsonParsed p = parse_json_text("{\"a\": }");
    CHECK(p.failure == JsonFailure::Syntax);
    CHECK_TEXT(p.message.find("parse error at line 1, column 7") != std::string::npos, p.message.c_str());
}

// Past ObjectKeys::kIndexFrom members a key is found through the index: a
// repeated key there still keeps its first place.
TEST(JsonParse, ARepeatedKeyInALargeObjectIsFoundThroughTheIndex) {
    std::string text = "{";
    for (int i = 0; i < 100; ++i) text += "\"k" + std::to_string(i) + "\": " + std::to_string(i) + ", ";
    text += "\"k7\": \"again\", \"k99\": \"last\"}";
    const Json j = parse_json(text);
    CHECK_EQUAL(100, j.size());
    STRCMP_EQUAL("again", j["k7"].get<std::string>().c_str());
    STRCMP_EQUAL("k7", std::next(j.begin(), 7).key().c_str());
    STRCMP_EQUAL("last", std::prev(j.end()).value().get<std::string>().c_str());
    CHECK(j == Json::parse(text));
}

TEST(JsonParse, DepthAndValuesAreBounded) {
    JsonLimits limits;
    limits.max_depth = 3;
    CHECK(parse_json_text("[[[1]]]", limits).failure == JsonFailure::None);
    JsonParsed deep = parse_json_text("[[[[1]]]]", limits);
    CHECK(deep.failure == JsonFailure::TooDeep);
    CHECK(deep.value.is_discarded());
    limits = {};
    limits.max_values = 4;  // the array and its three numbers
    CHECK(parse_json_text("[1, 2, 3]", limits).failure == JsonFailure::None);
    CHECK(parse_json_text("[1, 2, 3, 4]", limits).failure == JsonFailure::TooManyValues);
    CHECK(parse_json_text(R"({"a": 1, "b": 2, "c": 3})", limits).failure == JsonFailure::None);
    CHECK(parse_json_text(R"({"a": 1, "b": {"x": 2}, "c": 3})", limits).failure ==
          JsonFailure::TooManyValues);
}
