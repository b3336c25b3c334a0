// Comparing and diffing API objects as JSON values, for the patches the
// agent sends (the Node's status, its Pods' status): what the server has
// against what the agent wants.
#pragma once

#include <string>

#include "core/json.h"

namespace daemonlet {

// Equal as JSON values: objects whatever the order of their keys (Json
// keeps the order; the API server sends its own, the Go fields' order).
bool json_same(const Json& a, const Json& b);

// The keys of `want` whose values `have` lacks or differs in; maps are
// compared key by key (what others set in them stays), anything else whole.
Json json_merge_diff(const Json& have, const Json& want);

// A string field of an object from the server; "" when `o` is not an object
// or the field is absent or not a string (Json::value would throw).
std::string json_text(const Json& o, const char* key);

// A field of an object from the server; null when absent or `o` is not an
// object.
const Json& json_member(const Json& o, const char* key);

}  // namespace daemonlet
