// Name and label syntax, as k8s.io/apimachinery/pkg/util/validation.
// Each function returns the list of problems (empty when valid), with
// upstream's message texts, so callers can wrap them in field errors.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace daemonlet::names {

using Problems = std::vector<std::string>;

// DNS-1123 label: at most 63 chars, [a-z0-9]([-a-z0-9]*[a-z0-9])?
Problems is_dns1123_label(std::string_view v);
// DNS-1123 subdomain: at most 253 chars, dot-separated labels.
Problems is_dns1123_subdomain(std::string_view v);
// Qualified name: optional DNS-1123 subdomain prefix and '/', then a name of
// at most 63 chars, ([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]. Label and
// annotation keys, toleration keys.
Problems is_qualified_name(std::string_view v);
// Label value: empty, or at most 63 chars of the qualified-name alphabet.
Problems is_valid_label_value(std::string_view v);
// Environment variable name: [-._a-zA-Z][-._a-zA-Z0-9]*
Problems is_env_var_name(std::string_view v);
// IANA service name for named ports: at most 15 chars, lower-case letters,
// digits and non-consecutive hyphens, at least one letter.
Problems is_valid_port_name(std::string_view v);
// True when v is valid UTF-8.
bool is_valid_utf8(std::string_view v);

}  // namespace daemonlet::names
