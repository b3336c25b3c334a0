// Reading manifest files: what `kubectl apply -f` accepts.
//
// A file is a YAML stream (multi-document, anchors and aliases, merge keys,
// block scalars, comments) or a stream of JSON values. Plain YAML scalars are
// resolved as sigs.k8s.io/yaml (goyaml.v2, YAML 1.1) resolves them, because
// that is what kubectl sends: `yes` is a boolean, `010` is 8, `1.0` a float.
// Documents that are empty or null are skipped, as kubectl skips them.
//
// Every error names the file, the 1-based document number, the field path
// where one applies, and the reason. Bad input never throws or aborts.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "core/json.h"
#include "core/model.h"
#include "core/result.h"

namespace daemonlet {

struct ManifestLimits {
    // kube-apiserver's request body limit: no object can be larger.
    std::size_t max_bytes = 3 * 1024 * 1024;
    // Real objects nest about 15 deep; anything past this is an attack or a bug.
    std::size_t max_depth = 64;
    // JSON values one document may expand to, aliases included (billion
    // laughs). A parsed value costs the agent about 170 bytes besides its
    // text: 185 000 short strings (a 3 MiB file) took 34 MB and had the
    // agent OOM-killed in a 32 MiB cgroup (bench/memory.sh); 50 000 cost
    // about 9 MB. A DaemonSet holds a few hundred.
    std::size_t max_nodes = 50000;
    std::size_t max_documents = 10000;
    // Objects load_manifest keeps from one file (List items counted): each
    // costs its typed model besides its document, about 4 KiB for a small
    // DaemonSet; 10 000 of them in a 3 MiB file took 99 MB to load.
    std::size_t max_objects = 1000;
};

struct ManifestError {
    std::string file;
    std::size_t document = 0;  // 1-based; 0 when the error concerns the whole file
    std::string field;         // field path, may be empty
    std::string message;
    std::string to_string() const;
};

struct Document {
    std::size_t number = 0;  // 1-based position in the stream, empty documents counted
    Json value;
};

// Splits a file into its documents. Fails on the first syntax error: like
// kubectl, a stream that does not parse is rejected from that point on, but
// the documents before the error are returned in `docs` by parse_documents_partial.
Result<std::vector<Document>> parse_documents(std::string_view data, const std::string& file,
                                              const ManifestLimits& limits = {});

struct ParsedDocuments {
    std::vector<Document> docs;
    std::vector<ManifestError> errors;  // at most one: parsing stops at a syntax error
};
ParsedDocuments parse_documents_partial(std::string_view data, const std::string& file,
                                        const ManifestLimits& limits = {});

// One object from a file, converted to its current API version and defaulted.
struct ManifestObject {
    std::size_t document = 0;  // 1-based
    std::string where;         // "document 2" or "document 2, items[3]"
    std::variant<DaemonSet, Node, ConfigMap, Secret, Pod, OtherObject> object;
};

// "DaemonSet kube-system/x", "Namespace kube-flannel": the object's kind
// and name, as validate prints it.
std::string describe_object(const ManifestObject& o);

struct LoadedManifest {
    std::vector<ManifestObject> objects;  // the objects that decoded and validated
    std::vector<ManifestError> errors;    // every problem found, in file order
    std::vector<std::string> warnings;    // e.g. legacy API versions converted
};

// Parses, converts (apps/v1beta2 and extensions/v1beta1 DaemonSets become
// apps/v1, with a warning), defaults, decodes and validates every object in
// a file. `kind: List` is expanded into its items. Objects with errors are
// left out of `objects`; the others are unaffected.
//
// Every kind is taken, as `kubectl apply -f` takes a published install file:
// apps/v1 DaemonSet and v1 Node as before; v1 ConfigMap and Secret
// (ValidateConfigMap, ValidateSecret; a Secret's values never appear in an
// error); v1 Pod (a static pod: the pod template's decoding and validation);
// any other kind as an OtherObject, checked only for what every object
// needs (validate_other_object).
LoadedManifest load_manifest(std::string_view data, const std::string& file,
                             const ManifestLimits& limits = {});

}  // namespace daemonlet

namespace daemonlet {
// "libyaml 0.2.5, nlohmann_json 3.11.2": the parsers core is built with.
std::string parser_versions();
}  // namespace daemonlet
