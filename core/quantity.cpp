// resource.ParseQuantity, reduced to what the agent needs: the value in
// milli-units, rounded up (upstream's MilliValue rounds up), saturated.
#include "core/quantity.h"

#include <cstdint>
#include <limits>

namespace daemonlet {
namespace {

// 64-bit arithmetic (armhf has no 128-bit integers): the mantissa keeps its
// first 19 significant digits, which is more precision than a milli-unit
// int64 can show.
using u64 = std::uint64_t;
constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();
constexpr u64 kSat = static_cast<u64>(kMax);

Error format_error() {
    return Error{
        ErrorCode::Invalid,
        "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"};
}

// Saturating multiply by a power of ten / of 1024.
u64 mul_sat(u64 v, u64 m) {
    if (v == 0) return 0;
    if (v > kSat / m) return kSat + 1;
    return v * m;
}

}  // namespace

std::int64_t Quantity::value() const {
    // Round up, away from zero for positive values, as Quantity.Value does.
    if (milli >= 0) return milli / 1000 + (milli % 1000 != 0 ? 1 : 0);
    return milli / 1000;
}

Result<Quantity> parse_quantity(std::string_view s) {
    const std::string_view original = s;
    if (s.empty()) return format_error();
    bool negative = false;
    if (s[0] == '+' || s[0] == '-') {
        negative = s[0] == '-';
        s.remove_prefix(1);
    }
    // <number> ::= <digits> | <digits>.<digits> | <digits>. | .<digits>
    u64 mant = 0;
    int frac = 0;
    int extra = 0;  // integer digits dropped past the mantissa's precision
    bool any_digit = false;
    bool seen_dot = false;
    bool dropped_nonzero = false;  // digits beyond what 128 bits hold
    std::size_t i = 0;
    for (; i < s.size(); ++i) {
        char c = s[i];
        if (c == '.') {
            if (seen_dot) return format_error();
            seen_dot = true;
            continue;
        }
        if (c < '0' || c > '9') break;
        any_digit = true;
        if (mant > (std::numeric_limits<u64>::max() - 9) / 10) {
            if (c != '0') dropped_nonzero = true;
            if (!seen_dot) ++extra;
            continue;
        }
        mant = mant * 10 + static_cast<u64>(c - '0');
        if (seen_dot) ++frac;
    }
    if (!any_digit) return format_error();
    std::string_view suffix = s.substr(i);
    int exp10 = 0;
    int exp1024 = 0;
    if (suffix.empty()) {
    } else if (suffix == "n") {
        exp10 = -9;
    } else if (suffix == "u") {
        exp10 = -6;
    } else if (suffix == "m") {
        exp10 = -3;
    } else if (suffix == "k") {
        exp10 = 3;
    } else if (suffix == "M") {
        exp10 = 6;
    } else if (suffix == "G") {
        exp10 = 9;
    } else if (suffix == "T") {
        exp10 = 12;
    } else if (suffix == "P") {
        exp10 = 15;
    } else if (suffix == "E") {
        exp10 = 18;
    } else if (suffix.size() == 2 && suffix[1] == 'i') {
        const std::string_view bins = "KMGTPE";
        auto pos = bins.find(suffix[0]);
        if (pos == std::string_view::npos)
            return Error{ErrorCode::Invalid, "unable to parse quantity's suffix"};
        exp1024 = static_cast<int>(pos) + 1;
    } else if (suffix[0] == 'e' || suffix[0] == 'E') {
        std::string_view e = suffix.substr(1);
        bool eneg = false;
        if (!e.empty() && (e[0] == '+' || e[0] == '-')) {
            eneg = e[0] == '-';
            e.remove_prefix(1);
        }
        if (e.empty() || e.size() > 4) return Error{ErrorCode::Invalid, "unable to parse quantity's suffix"};
        int v = 0;
        for (char c : e) {
            if (c < '0' || c > '9') return Error{ErrorCode::Invalid, "unable to parse quantity's suffix"};
            v = v * 10 + (c - '0');
        }
        exp10 = eneg ? -v : v;
    } else {
        // Characters from the allowed class but not a known suffix ("Ki2",
        // "mm") are a suffix error; anything else is a format error.
        for (char c : suffix)
            if (std::string_view("eEinumkKMGTP+-0123456789").find(c) == std::string_view::npos)
                return format_error();
        return Error{ErrorCode::Invalid, "unable to parse quantity's suffix"};
    }

    // milli = mant * 10^(exp10 + 3 - frac) * 1024^exp1024, rounded up.
    int shift = exp10 + 3 - frac + extra;
    u64 v = mant;
    for (int k = 0; k < exp1024; ++k) v = mul_sat(v, 1024);
    bool remainder = dropped_nonzero;
    if (shift >= 0) {
        for (int k = 0; k < shift && v <= kSat; ++k) v = mul_sat(v, 10);
    } else {
        for (int k = 0; k < -shift && v != 0; ++k) {
            if (v % 10 != 0) remainder = true;
            v /= 10;
        }
        if (v == 0 && mant != 0) remainder = true;
    }
    if (remainder && !negative && v <= kSat) v += 1;  // round up toward +inf
    if (v > kSat) v = kSat;
    Quantity q;
    q.text = std::string(original);
    q.milli = negative ? -static_cast<std::int64_t>(v) : static_cast<std::int64_t>(v);
    return q;
}

}  // namespace daemonlet
