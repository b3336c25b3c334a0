// intstr.GetScaledValueFromIntOrPercent and the DaemonSet surge /
// unavailability counts, Kubernetes 1.25 to 1.30. See int_or_percent.h.
#include "core/int_or_percent.h"

#include <cmath>
#include <limits>
#include <string>
#include <string_view>

#include "core/field_error.h"

namespace daemonlet {
namespace {

// strconv.Atoi on a 64-bit platform: optional sign, decimal digits only.
// A digit run that overflows is a range error even if junk follows, as Go's
// ParseUint stops at the overflow.
Result<std::int64_t> atoi(std::string_view s) {
    const std::string quoted = render_string(s);
    auto syntax = [&] {
        return Error{ErrorCode::Invalid, "strconv.Atoi: parsing " + quoted + ": invalid syntax"};
    };
    auto range = [&] {
        return Error{ErrorCode::Invalid, "strconv.Atoi: parsing " + quoted + ": value out of range"};
    };
    std::string_view digits = s;
    bool neg = false;
    if (!digits.empty() && (digits.front() == '+' || digits.front() == '-')) {
        neg = digits.front() == '-';
        digits.remove_prefix(1);
    }
    if (digits.empty()) return syntax();
    constexpr std::uint64_t kMaxU64 = std::numeric_limits<std::uint64_t>::max();
    std::uint64_t n = 0;
    for (char c : digits) {
        if (c < '0' || c > '9') return syntax();
        const auto d = static_cast<std::uint64_t>(c - '0');
        if (n > (kMaxU64 - d) / 10) return range();
        n = n * 10 + d;
    }
    constexpr std::uint64_t kCutoff = std::uint64_t{1} << 63;
    if (!neg && n >= kCutoff) return range();
    if (neg && n > kCutoff) return range();
    if (neg) return n == kCutoff ? std::numeric_limits<std::int64_t>::min() : -static_cast<std::int64_t>(n);
    return static_cast<std::int64_t>(n);
}

// int(math.Ceil/Floor(float64(value) * float64(total) / 100)), computed in
// double exactly as upstream does, then held inside int64 (Go's conversion of
// an out-of-range float is unspecified; ours must not be undefined).
std::int64_t scale_percent(std::int64_t percent, std::int64_t total, bool round_up) {
    const double scaled = static_cast<double>(percent) * static_cast<double>(total) / 100;
    const double rounded = round_up ? std::ceil(scaled) : std::floor(scaled);
    constexpr double kLimit = 9223372036854775808.0;  // 2^63
    if (rounded >= kLimit) return std::numeric_limits<std::int64_t>::max();
    if (rounded < -kLimit) return std::numeric_limits<std::int64_t>::min();
    return static_cast<std::int64_t>(rounded);
}

bool is_rolling_update(const DaemonSet& ds) {
    return ds.spec.update_strategy.type == "RollingUpdate" &&
           ds.spec.update_strategy.rolling_update.has_value();
}

}  // namespace

Result<std::int64_t> scaled_value_from_int_or_percent(const std::optional<IntOrString>& value,
                                                      std::int64_t total, bool round_up) {
    if (!value) return Error{ErrorCode::Invalid, "nil value for IntOrString"};
    if (value->type == IntOrString::Type::Int) return value->int_val;
    // getIntOrPercentValueSafely: a string must be a percentage.
    std::string_view s = value->str_val;
    if (s.empty() || s.back() != '%') {
        return Error{ErrorCode::Invalid,
                     "invalid value for IntOrString: invalid type: string is not a percentage"};
    }
    s.remove_suffix(1);
    auto v = atoi(s);
    if (!v) {
        return Error{ErrorCode::Invalid, "invalid value for IntOrString: invalid value " +
                                             render_string(value->str_val) + ": " + v.error().message};
    }
    return scale_percent(v.value(), total, round_up);
}

Result<std::int64_t> surge_count(const DaemonSet& ds, std::int64_t number_to_schedule) {
    // The DaemonSetUpdateSurge gate is GA and locked on from 1.25.
    if (!is_rolling_update(ds)) return std::int64_t{0};
    const auto& surge = ds.spec.update_strategy.rolling_update->max_surge;
    if (!surge) return std::int64_t{0};
    return scaled_value_from_int_or_percent(surge, number_to_schedule, true);
}

Result<std::int64_t> unavailable_count(const DaemonSet& ds, std::int64_t number_to_schedule) {
    if (!is_rolling_update(ds)) return std::int64_t{0};
    return scaled_value_from_int_or_percent(ds.spec.update_strategy.rolling_update->max_unavailable,
                                            number_to_schedule, true);
}

Result<RollingUpdateBudget> rolling_update_budget(const DaemonSet& ds,
                                                  std::int64_t desired_number_scheduled) {
    auto unavailable = unavailable_count(ds, desired_number_scheduled);
    if (!unavailable)
        return Error{ErrorCode::Invalid, "invalid value for MaxUnavailable: " + unavailable.error().message};
    auto surge = surge_count(ds, desired_number_scheduled);
    if (!surge) return Error{ErrorCode::Invalid, "invalid value for MaxSurge: " + surge.error().message};
    RollingUpdateBudget out{surge.value(), unavailable.value()};
    // An impossible configuration (the apiserver returned 0 for both) obeys
    // the default of one unavailable pod, so the update can progress.
    if (desired_number_scheduled > 0 && out.max_unavailable == 0 && out.max_surge == 0)
        out.max_unavailable = 1;
    return out;
}

}  // namespace daemonlet
