// Parsing JSON text into the document type in time linear in its size.
//
// nlohmann's own parser inserts each member of an ordered_json object with
// operator[], which finds the key by a linear search of the members so far:
// an object of n keys took time quadratic in n (an API list page or a JSON
// manifest of one large mapping). This parser builds the same value through
// nlohmann's SAX interface and finds keys through ObjectKeys.
#pragma once

#include <cstddef>
#include <limits>
#include <string>
#include <string_view>
#include <unordered_map>

#include "core/json.h"

namespace daemonlet {

// Finds a member of an ordered_json object by key: a linear search while
// the object is small (most are), a hash index built on demand past
// kIndexFrom members. One per object being built; the object only grows.
class ObjectKeys {
  public:
    static constexpr std::size_t npos = std::numeric_limits<std::size_t>::max();
    static constexpr std::size_t kIndexFrom = 16;
    // The position of `key` among obj's members, or npos.
    std::size_t find(const Json::object_t& obj, std::string_view key);

  private:
    std::unordered_multimap<std::size_t, std::size_t> index_;  // hash of a key -> its position
    std::size_t indexed_ = 0;                                  // members [0, indexed_) are in index_
};

struct JsonLimits {
    // Containers open at once: a container opened inside max_depth others
    // is refused.
    std::size_t max_depth = std::numeric_limits<std::size_t>::max();
    // Values of any kind (objects and arrays counted).
    std::size_t max_values = std::numeric_limits<std::size_t>::max();
};

enum class JsonFailure { None, Syntax, TooDeep, TooManyValues };

struct JsonParsed {
    Json value;  // discarded unless failure is None
    JsonFailure failure = JsonFailure::None;
    // For Syntax: nlohmann's message ("[json.exception.parse_error.101]
    // parse error at line 1, column 2: ...").
    std::string message;
};

// One JSON value (RFC 8259; nothing but whitespace after it). A key given
// twice keeps its first position and its last value, as nlohmann's
// operator[] (and Go's encoding/json) do.
JsonParsed parse_json_text(std::string_view text, const JsonLimits& limits = {});

// Json::parse(text, nullptr, false) in linear time: a discarded value when
// `text` is not one JSON value.
Json parse_json(std::string_view text);

}  // namespace daemonlet
