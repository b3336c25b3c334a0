// Small string helpers shared by every layer. Pure.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace daemonlet {

// `s` without leading and trailing ASCII whitespace (space, \t, \n, \r, \f,
// \v): a command's output, a header's value, a token file's content.
std::string trim(std::string_view s);

// `s` with ASCII letters lowered (Go's strings.ToLower on keys that
// validation then checks as ASCII).
std::string to_lower(std::string_view s);

// Go's strconv.Quote (%q) of the bytes of `s`: \" and \\ escaped, control
// bytes as \n, \t, ... or \xNN; other bytes (UTF-8 text) kept.
std::string go_quote(const std::string& s);

// `p` relative to directory `base` (a path in a file read from `base`, as
// kubeconfig's paths are relative to its file): absolute or empty as it is.
std::string resolve_path(const std::string& base, const std::string& p);

// Go's strings.Join.
std::string join(const std::vector<std::string>& parts, std::string_view sep);
// Whether `v` holds `s` (Go's slices.Contains).
bool contains(const std::vector<std::string>& v, const std::string& s);
// [a-z0-9] and [A-Za-z0-9], in ASCII whatever the locale (names and image
// references).
inline bool is_lower_alnum(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }
inline bool is_alnum(char c) { return is_lower_alnum(c) || (c >= 'A' && c <= 'Z'); }

// The lines of `text` without their '\n', as std::getline reads them: a
// last line without one counts, an empty text has none. Views into `text`.
// (The agent uses no iostreams: their locale code is 350 KiB of a statically
// linked libstdc++.)
std::vector<std::string_view> lines_of(std::string_view text);

// The fields of `line` separated by ASCII whitespace, as `in >> word` reads
// them.
std::vector<std::string> fields_of(std::string_view line);

}  // namespace daemonlet
