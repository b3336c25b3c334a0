// Internal to core: the YAML and JSON stream readers behind parse_documents.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "core/json.h"
#include "core/manifest.h"

namespace daemonlet::detail {

// Takes each document as soon as it is parsed; returns false to stop the
// stream there. Without one, the documents are gathered in `docs`.
using DocumentSink = std::function<bool(Document&&)>;

// YAML stream through libyaml's event parser. Iterative (no recursion), so
// nesting is bounded by limits.max_depth rather than by the C++ stack.
ParsedDocuments parse_yaml_stream(std::string_view data, const std::string& file,
                                  const ManifestLimits& limits, const DocumentSink& sink = {});

// A stream of JSON values, as kubectl's YAMLOrJSONDecoder reads a file that
// starts with '{'.
ParsedDocuments parse_json_stream(std::string_view data, const std::string& file,
                                  const ManifestLimits& limits, const DocumentSink& sink = {});

// goyaml.v2's resolution of a plain (unquoted, untagged) scalar. Returns
// nullopt for values JSON cannot represent (.inf, .nan).
std::optional<Json> resolve_plain_scalar(std::string_view s);

}  // namespace daemonlet::detail
