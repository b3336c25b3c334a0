// Field errors in the style of k8s.io/apimachinery/pkg/util/validation/field:
//   spec.template.spec.containers[0].image: Required value
//   spec.updateStrategy.rollingUpdate.maxSurge: Invalid value: "200%": must not be greater than 100%
// A FieldPath is built with child() / index() / key() exactly as field.Path is,
// so that paths print as upstream prints them.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/json.h"

namespace daemonlet {

class FieldPath {
  public:
    FieldPath() = default;
    explicit FieldPath(std::string root) : s_(std::move(root)) {}

    FieldPath child(std::string_view name) const;
    FieldPath index(std::size_t i) const;
    FieldPath key(std::string_view k) const;
    const std::string& str() const { return s_; }

  private:
    std::string s_;
};

enum class FieldErrorType {
    Invalid,       // "Invalid value"
    Required,      // "Required value"
    NotSupported,  // "Unsupported value"
    Forbidden,     // "Forbidden"
    Duplicate,     // "Duplicate value"
    TooLong,       // "Too long"
    TooMany,       // "Too many"
    TypeInvalid,   // "Invalid value" (wrong JSON type)
    NotFound,      // "Not found" (a reference to something that does not exist)
};

struct FieldError {
    FieldErrorType type;
    std::string field;
    std::string value;   // rendered value, as upstream prints it ("\"abc\"", "-1", ...); may be empty
    std::string detail;  // reason

    // The upstream rendering: "<field>: <type text>[: <value>][: <detail>]".
    std::string to_string() const;
    // The same without the leading "<field>: ".
    std::string body() const;
};

using FieldErrors = std::vector<FieldError>;

// Renders a JSON value the way upstream renders the bad value in a message:
// strings quoted, numbers and booleans bare, objects and arrays as compact JSON.
std::string render_value(const Json& v);
std::string render_string(std::string_view s);
// The bad value of a []string, as Go's %#v prints it in field errors.
std::string render_string_list(const std::vector<std::string>& values);
std::string render_int(std::int64_t n);

FieldError invalid(const FieldPath& p, std::string value, std::string detail);
FieldError required(const FieldPath& p, std::string detail = {});
FieldError forbidden(const FieldPath& p, std::string detail);
FieldError duplicate(const FieldPath& p, std::string value);
FieldError too_long(const FieldPath& p, std::string value, std::size_t max);
FieldError type_invalid(const FieldPath& p, std::string value, std::string detail);
// field.NotFound: "Not found: <value>" (a volumeMount naming no volume).
FieldError not_found(const FieldPath& p, std::string value);
// "Unsupported value: \"X\": supported values: \"A\", \"B\"".
FieldError not_supported(const FieldPath& p, std::string value, const std::vector<std::string>& valid);

}  // namespace daemonlet
