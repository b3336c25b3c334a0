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
// The same, keeping `obj` as `object` without a copy (a manifest's loader
// owns its document: a copy held the document twice).
FieldErrors decode_daemonset(Json&& obj, DaemonSet& out);
FieldErrors decode_node(const Json& obj, Node& out);
// v1 ConfigMap: binaryData base64-decoded.
FieldErrors decode_config_map(const Json& obj, ConfigMap& out);
FieldErrors decode_config_map(Json&& obj, ConfigMap& out);
// v1 Secret: data base64-decoded, stringData merged over it; `object` kept
// with every value redacted. No error carries a value.
FieldErrors decode_secret(const Json& obj, Secret& out);
// v1 Pod: metadata and spec, as a pod template's.
FieldErrors decode_pod(const Json& obj, Pod& out);
// Any other kind: apiVersion, kind, metadata.name and metadata.namespace.
FieldErrors decode_other_object(const Json& obj, OtherObject& out);

}  // namespace daemonlet
