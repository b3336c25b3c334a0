// The generic document type every manifest is read into. ordered_json keeps
// the user's key order, so an object stored and written out again reads as
// the user wrote it; canonical (sorted) output is produced where stability
// matters (the template hash).
#pragma once

#include <nlohmann/json.hpp>

namespace daemonlet {
using Json = nlohmann::ordered_json;
}  // namespace daemonlet
