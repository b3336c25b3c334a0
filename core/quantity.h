// resource.Quantity (k8s.io/apimachinery/pkg/api/resource), parsed.
//
//   <quantity>     ::= <signedNumber><suffix>
//   <signedNumber> ::= <number> | +<number> | -<number>
//   <number>       ::= <digits> | <digits>.<digits> | <digits>. | .<digits>
//   <suffix>       ::= Ki | Mi | Gi | Ti | Pi | Ei | m | "" | k | M | G | T | P | E
//                    | e<signedNumber> | E<signedNumber>
//
// The value is kept in milli-units (cpu "250m" -> 250, memory "64Mi" ->
// 67108864000), rounded up to the next milli-unit as upstream rounds when it
// cannot represent a value, and saturated at the int64 range: no realistic
// quantity comes near it, and an absurd one must not overflow.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <string_view>

#include "core/result.h"

namespace daemonlet {

struct Quantity {
    std::string text;        // as written by the user
    std::int64_t milli = 0;  // value * 1000, saturated

    // Whole units, rounded up (memory bytes, cpu cores rounded up).
    std::int64_t value() const;
    bool operator==(const Quantity& o) const { return milli == o.milli; }
};

// Parses a quantity string; the error message is upstream's
// "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'".
Result<Quantity> parse_quantity(std::string_view s);

// a + b, held at the largest int64 rather than overflowing (sums of
// milli-quantities: requests, emptyDir sizeLimits).
inline std::int64_t saturating_add(std::int64_t a, std::int64_t b) {
    if (b > 0 && a > std::numeric_limits<std::int64_t>::max() - b)
        return std::numeric_limits<std::int64_t>::max();
    return a + b;
}

}  // namespace daemonlet
