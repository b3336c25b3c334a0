// Result<T>: a value or an Error, returned by every fallible function.
// Modelled on Abseil's StatusOr and crun's libcrun_error_t: the error carries
// a message a person can act on (file, field, value, reason).
#pragma once

#include <cassert>
#include <string>
#include <utility>
#include <variant>

#include "core/error_code.h"

namespace daemonlet {

struct Error {
    ErrorCode code;       // machine-readable class (core/error_code.h)
    std::string message;  // full sentence(s) with context

    // The code's string, as printed and as read back (to_string(code)).
    const char* code_name() const { return to_string(code); }
};

template <class T>
class [[nodiscard]] Result {
  public:
    Result(T value) : v_(std::move(value)) {}      // NOLINT(google-explicit-constructor)
    Result(Error error) : v_(std::move(error)) {}  // NOLINT(google-explicit-constructor)

    bool ok() const { return v_.index() == 0; }
    explicit operator bool() const { return ok(); }

    T& value() & {
        assert(ok());
        return std::get<0>(v_);
    }
    const T& value() const& {
        assert(ok());
        return std::get<0>(v_);
    }
    T&& value() && {
        assert(ok());
        return std::get<0>(std::move(v_));
    }
    const Error& error() const {
        assert(!ok());
        return std::get<1>(v_);
    }

  private:
    std::variant<T, Error> v_;
};

// Result<void> equivalent.
struct Ok {};
using Status = Result<Ok>;

}  // namespace daemonlet
