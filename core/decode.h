// Decoding documents into the typed model, strictly: a value of the wrong
// JSON type is an error naming its field path (a string where a number
// belongs, a number where a label value belongs), as the API server's
// decoder rejects it. Fields the model does not know are not errors: they
// stay in `object`.
#pragma once

#include "core/field_error.h"
#include "core/json.h"
#include "core/model.h"

namespace daemonlet {

FieldErrors decode_daemonset(const Json& obj, DaemonSet& out);
FieldErrors decode_node(const Json& obj, Node& out);

}  // namespace daemonlet
