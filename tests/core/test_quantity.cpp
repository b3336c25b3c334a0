// resource.Quantity parsing; rows after apimachinery's quantity_test.go
// (TestQuantityParse, TestQuantityParseZero, TestQuantityParseNonNumericPanic).

#include <cstdint>
#include <string>

#include "core/quantity.h"

#include <CppUTest/TestHarness.h>

using namespace daemonlet;

namespace {
struct Row {
    const char* input;
    bool ok;
    std::int64_t milli;
};
constexpr std::int64_t kMax = INT64_MAX;
const Row kRows[] = {
    {"0", true, 0},
    {"1", true, 1000},
    {"+1", true, 1000},
    {"-1", true, -1000},
    {"1m", true, 1},
    {"250m", true, 250},
    {"1.5", true, 1500},
    {".5", true, 500},
    {"5.", true, 5000},
    {"0.1", true, 100},
    {"1n", true, 1},  // rounded up to the next milli-unit, as MilliValue does
    {"1u", true, 1},
    {"1000000n", true, 1},
    {"1k", true, 1000000},
    {"1M", true, 1000000000},
    {"1Ki", true, 1024000},
    {"64Mi", true, 67108864000},
    {"1.5Gi", true, 1610612736000},
    {"1e3", true, 1000000},
    {"1E3", true, 1000000},
    {"1e-3", true, 1},
    {"12E+2", true, 1200000},
    {"8Ei", true, kMax},  // saturates instead of overflowing
    {"99999999999999999999999999999", true, kMax},
    {"0.0000000000000000000000001", true, 1},
    {"", false, 0},
    {"abc", false, 0},
    {"1.2.3", false, 0},
    {"1 m", false, 0},
    {"1Mb", false, 0},
    {"1i", false, 0},
    {"1Zi", false, 0},
    {"1e", false, 0},
    {".", false, 0},
    {"--1", false, 0},
};
}  // namespace

TEST_GROUP(Quantity){};

TEST(Quantity, ParsesAsUpstreamTable) {
    for (const auto& row : kRows) {
        auto q = parse_quantity(row.input);
        CHECK_EQUAL_TEXT(row.ok, q.ok(), row.input);
        if (row.ok && q.ok()) CHECK_EQUAL_TEXT(row.milli, q.value().milli, row.input);
    }
}

TEST(Quantity, ValueRoundsUp) {
    CHECK_EQUAL(1, parse_quantity("100m").value().value());
    CHECK_EQUAL(2, parse_quantity("1500m").value().value());
    CHECK_EQUAL(67108864, parse_quantity("64Mi").value().value());
}

TEST(Quantity, FormatErrorIsUpstreams) {
    auto q = parse_quantity("abc");
    STRCMP_EQUAL(
        "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'",
        q.error().message.c_str());
}
