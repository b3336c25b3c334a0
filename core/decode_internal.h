// Internal to core: decoders shared between decode.cpp, decode_pod.cpp and
// decode_config.cpp.
#pragma once

#include "core/decode_reader.h"

namespace daemonlet::detail {

void decode_meta(Reader& r, const Json& v, const FieldPath& p, ObjectMeta& m);
// A whole object: false (an error recorded) unless it is a JSON object;
// else its metadata decoded into `m`.
bool decode_root(Reader& r, const Json& obj, ObjectMeta& m);
void decode_node_selector_term(Reader& r, const Json& v, const FieldPath& p, NodeSelectorTerm& t);
void decode_affinity(Reader& r, const Json& v, const FieldPath& p, Affinity& a);
void decode_toleration(Reader& r, const Json& v, const FieldPath& p, Toleration& t);
void decode_pod_template(Reader& r, const Json& v, const FieldPath& p, PodTemplateSpec& t);

}  // namespace daemonlet::detail
