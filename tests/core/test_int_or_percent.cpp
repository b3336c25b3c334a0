// Int-or-percent scaling and DaemonSet rolling-update budgets. Rows from
// k8s.io/apimachinery/pkg/util/intstr/intstr_test.go (TestGetIntFromIntOrPercent,
// TestGetValueFromIntOrPercentNil) and pkg/controller/daemon/update_test.go
// (TestGetUnavailableNumbers); rows marked "daemonlet:" pin a rule of
// GetScaledValueFromIntOrPercent / SurgeCount / UnavailableCount those tables
// leave implicit.
#include <cstdint>
#include <optional>
#include <string>

#include "core/int_or_percent.h"

// CppUTest last: its leak-detection macros redefine new.
#include <CppUTest/TestHarness.h>

using namespace daemonlet;

namespace {

IntOrString num(std::int64_t v) { return IntOrString::from_int(v); }
IntOrString str(const char* s) { return IntOrString::from_string(s); }

struct ScaledRow {
    const char* name;
    std::optional<IntOrString> value;
    std::int64_t total;
    bool round_up;
    std::int64_t expected;
    std::string error;  // "" when valid
};

const ScaledRow kScaledRows[] = {
    {"TestGetIntFromIntOrPercent: int 123", num(123), 0, false, 123, ""},
    {"TestGetIntFromIntOrPercent: 90% of 100, up", str("90%"), 100, true, 90, ""},
    {"TestGetIntFromIntOrPercent: 90% of 95, up", str("90%"), 95, true, 86, ""},
    {"TestGetIntFromIntOrPercent: 90% of 95, down", str("90%"), 95, false, 85, ""},
    {"TestGetIntFromIntOrPercent: %", str("%"), 0, false, 0,
     "invalid value for IntOrString: invalid value \"%\": strconv.Atoi: parsing \"\": invalid syntax"},
    {"TestGetIntFromIntOrPercent: 90#", str("90#"), 0, false, 0,
     "invalid value for IntOrString: invalid type: string is not a percentage"},
    {"TestGetIntFromIntOrPercent: #%", str("#%"), 0, false, 0,
     "invalid value for IntOrString: invalid value \"#%\": strconv.Atoi: parsing \"#\": invalid syntax"},
    {"TestGetIntFromIntOrPercent: 90 without %", str("90"), 0, false, 0,
     "invalid value for IntOrString: invalid type: string is not a percentage"},
    {"TestGetValueFromIntOrPercentNil: nil", std::nullopt, 0, false, 0, "nil value for IntOrString"},
    // Rounding: the DaemonSet controller always rounds up.
    {"daemonlet: 10% of 1, up, is 1", str("10%"), 1, true, 1, ""},
    {"daemonlet: 10% of 1, down, is 0", str("10%"), 1, false, 0, ""},
    {"daemonlet: 50% of 3, up, is 2", str("50%"), 3, true, 2, ""},
    {"daemonlet: 100% of 1 is 1", str("100%"), 1, true, 1, ""},
    {"daemonlet: 0% is 0", str("0%"), 1, true, 0, ""},
    {"daemonlet: a percentage of no nodes is 0", str("25%"), 0, true, 0, ""},
    {"daemonlet: an int is not scaled", num(3), 10, true, 3, ""},
    {"daemonlet: an empty string is not a percentage", str(""), 1, true, 0,
     "invalid value for IntOrString: invalid type: string is not a percentage"},
    {"daemonlet: Atoi takes a sign", str("+50%"), 4, true, 2, ""},
    {"daemonlet: Atoi takes no decimal point", str("1.5%"), 4, true, 0,
     "invalid value for IntOrString: invalid value \"1.5%\": strconv.Atoi: parsing \"1.5\": invalid syntax"},
    {"daemonlet: Atoi takes no space", str(" 50%"), 4, true, 0,
     "invalid value for IntOrString: invalid value \" 50%\": strconv.Atoi: parsing \" 50\": invalid syntax"},
    {"daemonlet: Atoi range error", str("99999999999999999999%"), 1, true, 0,
     "invalid value for IntOrString: invalid value \"99999999999999999999%\": strconv.Atoi: parsing "
     "\"99999999999999999999\": value out of range"},
};

DaemonSet ds_with(const char* type, std::optional<RollingUpdateDaemonSet> ru) {
    DaemonSet ds;
    ds.spec.update_strategy.type = type;
    ds.spec.update_strategy.rolling_update = std::move(ru);
    return ds;
}
// update_test.go newUpdateUnavailable / newUpdateSurge.
DaemonSet unavailable(IntOrString v) {
    return ds_with("RollingUpdate", RollingUpdateDaemonSet{v, std::nullopt});
}
DaemonSet surge(IntOrString v) { return ds_with("RollingUpdate", RollingUpdateDaemonSet{num(0), v}); }

struct CountRow {
    const char* name;
    DaemonSet ds;
    std::int64_t nodes;
    std::int64_t surge;        // SurgeCount
    std::int64_t unavailable;  // UnavailableCount
    std::int64_t budget_surge, budget_unavailable;
    std::string error;  // rolling_update_budget's, "" when valid
};

const CountRow kCountRows[] = {
    {"TestGetUnavailableNumbers: No nodes", unavailable(num(0)), 0, 0, 0, 0, 0, ""},
    {"TestGetUnavailableNumbers: Two nodes with ready pods", unavailable(num(1)), 2, 0, 1, 0, 1, ""},
    {"TestGetUnavailableNumbers: Two nodes, one node without pods", unavailable(num(0)), 2, 0, 0, 0, 1, ""},
    {"TestGetUnavailableNumbers: Two nodes, one node without pods, surge", surge(num(0)), 2, 0, 0, 0, 1, ""},
    {"TestGetUnavailableNumbers: MaxUnavailable in percents", unavailable(str("50%")), 2, 0, 1, 0, 1, ""},
    {"TestGetUnavailableNumbers: MaxUnavailable in percents, surge", surge(str("50%")), 2, 1, 0, 1, 0, ""},
    {"TestGetUnavailableNumbers: MaxUnavailable is 100%, surge", surge(str("100%")), 2, 2, 0, 2, 0, ""},
    {"TestGetUnavailableNumbers: MaxUnavailable in percents, pod terminating", unavailable(str("50%")), 3, 0,
     2, 0, 2, ""},
    // SurgeCount / UnavailableCount guards.
    {"daemonlet: OnDelete has no budgets, even with rollingUpdate set",
     ds_with("OnDelete", RollingUpdateDaemonSet{num(2), num(2)}), 1, 0, 0, 0, 1, ""},
    {"daemonlet: RollingUpdate without rollingUpdate", ds_with("RollingUpdate", std::nullopt), 1, 0, 0, 0, 1,
     ""},
    {"daemonlet: an unset maxSurge is 0", unavailable(num(1)), 1, 0, 1, 0, 1, ""},
    {"daemonlet: one node, 10% rounds up to 1 surge", surge(str("10%")), 1, 1, 0, 1, 0, ""},
    {"daemonlet: one node, 10% rounds up to 1 unavailable", unavailable(str("10%")), 1, 0, 1, 0, 1, ""},
    {"daemonlet: one node, 0% and 0% fall back to 1 unavailable",
     ds_with("RollingUpdate", RollingUpdateDaemonSet{str("0%"), str("0%")}), 1, 0, 0, 0, 1, ""},
    {"daemonlet: not wanted here, 0 and 0 stay 0", surge(num(0)), 0, 0, 0, 0, 0, ""},
    {"daemonlet: an unset maxUnavailable is upstream's nil error",
     ds_with("RollingUpdate", RollingUpdateDaemonSet{std::nullopt, std::nullopt}), 1, 0, -1, 0, 0,
     "invalid value for MaxUnavailable: nil value for IntOrString"},
    {"daemonlet: a maxSurge without % is an error", surge(str("20")), 1, -1, 0, 0, 0,
     "invalid value for MaxSurge: invalid value for IntOrString: invalid type: string is not a percentage"},
};

}  // namespace

TEST_GROUP(IntOrPercent){};

TEST(IntOrPercent, ScaledValueMatchesUpstreamTable) {
    for (const auto& row : kScaledRows) {
        auto r = scaled_value_from_int_or_percent(row.value, row.total, row.round_up);
        const std::string got = r.ok() ? std::string() : r.error().message;
        STRCMP_EQUAL_TEXT(row.error.c_str(), got.c_str(), row.name);
        if (r.ok()) LONGLONGS_EQUAL_TEXT(row.expected, r.value(), row.name);
    }
}

TEST(IntOrPercent, SurgeAndUnavailableCountsMatchUpstreamTable) {
    for (const auto& row : kCountRows) {
        // -1 in the table: that count is an error.
        auto s = surge_count(row.ds, row.nodes);
        CHECK_EQUAL_TEXT(row.surge >= 0, s.ok(), row.name);
        if (s.ok()) LONGLONGS_EQUAL_TEXT(row.surge, s.value(), row.name);
        auto u = unavailable_count(row.ds, row.nodes);
        CHECK_EQUAL_TEXT(row.unavailable >= 0, u.ok(), row.name);
        if (u.ok()) LONGLONGS_EQUAL_TEXT(row.unavailable, u.value(), row.name);

        auto b = rolling_update_budget(row.ds, row.nodes);
        const std::string got = b.ok() ? std::string() : b.error().message;
        STRCMP_EQUAL_TEXT(row.error.c_str(), got.c_str(), row.name);
        if (b.ok()) {
            LONGLONGS_EQUAL_TEXT(row.budget_surge, b.value().max_surge, row.name);
            LONGLONGS_EQUAL_TEXT(row.budget_unavailable, b.value().max_unavailable, row.name);
        }
    }
}
