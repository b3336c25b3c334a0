// The template hash that names a DaemonSet's revisions, as upstream's
// controller-revision-hash label does (pkg/controller/history ComputeHash).
//
// Upstream hashes a Go-specific dump of the template struct with FNV-32a; that
// cannot be reproduced outside Go, so we hash a canonical serialisation
// instead: the defaulted template as JSON with object keys sorted at every
// level and no whitespace, hashed with FNV-1a 64 (fewer collisions than 32
// bits over a long revision history), and encoded with upstream's
// SafeEncodeString alphabet (no vowels, so no accidental words). It depends
// only on the template's content: not on key order in the file, pointer
// values, map iteration order, process or architecture.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "core/json.h"

namespace daemonlet {

// Keys sorted at every level, compact, numbers as nlohmann prints them.
std::string canonical_json(const Json& v);

std::uint64_t fnv1a64(std::string_view data);
// `v` as 16 lower-case hex digits.
std::string hex64(std::uint64_t v);

// The hash of `spec.template` of a defaulted DaemonSet object, with the
// collision count mixed in as upstream does when it is set.
std::string template_hash(const Json& pod_template,
                          std::optional<std::int32_t> collision_count = std::nullopt);

}  // namespace daemonlet
