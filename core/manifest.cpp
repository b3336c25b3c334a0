#include "core/manifest.h"

#include "core/decode.h"
#include "core/defaults.h"
#include "core/json_parse.h"
#include "core/names.h"
#include "core/validation.h"
#include "core/yaml_reader.h"

namespace daemonlet {

std::string ManifestError::to_string() const {
    std::string out = file;
    if (document) out += ": document " + std::to_string(document);
    if (!field.empty()) out += ": " + field;
    out += ": " + message;
    return out;
}

namespace detail {
namespace {

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

// The end of the JSON value starting at `pos`: the matching bracket for an
// object or array (strings and escapes respected), else the next space.
std::size_t value_end(std::string_view d, std::size_t pos) {
    if (d[pos] != '{' && d[pos] != '[') {
        while (pos < d.size() && !is_space(d[pos]) && d[pos] != '{' && d[pos] != '[') ++pos;
        return pos;
    }
    std::size_t depth = 0;
    bool in_string = false;
    for (; pos < d.size(); ++pos) {
        char c = d[pos];
        if (in_string) {
            if (c == '\\')
                ++pos;
            else if (c == '"')
                in_string = false;
        } else if (c == '"') {
            in_string = true;
        } else if (c == '{' || c == '[') {
            ++depth;
        } else if (c == '}' || c == ']') {
            if (--depth == 0) return pos + 1;
        }
    }
    return d.size();  // unterminated: the parser reports it
}

std::size_t line_of(std::string_view d, std::size_t pos) {
    std::size_t line = 1;
    for (std::size_t i = 0; i < pos && i < d.size(); ++i)
        if (d[i] == '\n') ++line;
    return line;
}

}  // namespace

ParsedDocuments parse_json_stream(std::string_view data, const std::string& file,
                                  const ManifestLimits& limits, const DocumentSink& sink) {
    ParsedDocuments out;
    std::size_t pos = 0;
    std::size_t number = 0;
    for (;;) {
        while (pos < data.size() && is_space(data[pos])) ++pos;
        if (pos >= data.size()) return out;
        if (++number > limits.max_documents) {
            out.errors.push_back(
                {file, number, "",
                 "more than " + std::to_string(limits.max_documents) + " documents in one file"});
            return out;
        }
        std::size_t end = value_end(data, pos);
        std::string_view slice = data.substr(pos, end - pos);
        JsonLimits bounds;
        bounds.max_depth = limits.max_depth;
        bounds.max_values = limits.max_nodes;
        JsonParsed parsed = parse_json_text(slice, bounds);
        if (parsed.failure == JsonFailure::Syntax) {
            std::string msg = std::move(parsed.message);
            // "[json.exception.parse_error.101] parse error at line 1, column 2: ..." -> from "parse error".
            auto at = msg.find("] ");
            if (at != std::string::npos) msg = msg.substr(at + 2);
            // "...; last read: '<text>'" quotes the document, which may be a
            // Secret's value: the line and column are enough.
            if (auto last = msg.find("; last read: "); last != std::string::npos) msg.erase(last);
            std::size_t first_line = line_of(data, pos);
            if (first_line > 1) msg += " (the document starts at line " + std::to_string(first_line) + ")";
            out.errors.push_back({file, number, "", std::move(msg)});
            return out;
        }
        if (parsed.failure == JsonFailure::TooDeep) {
            out.errors.push_back(
                {file, number, "", "nesting deeper than " + std::to_string(limits.max_depth) + " levels"});
            return out;
        }
        if (parsed.failure == JsonFailure::TooManyValues) {
            out.errors.push_back(
                {file, number, "", "document has more than " + std::to_string(limits.max_nodes) + " values"});
            return out;
        }
        Json value = std::move(parsed.value);
        pos = end;
        if (value.is_null()) continue;
        if (!sink) {
            out.docs.push_back({number, std::move(value)});
        } else if (!sink({number, std::move(value)})) {
            return out;
        }
    }
}

namespace {

ParsedDocuments parse_stream(std::string_view data, const std::string& file, const ManifestLimits& limits,
                             const DocumentSink& sink) {
    if (data.size() > limits.max_bytes) {
        ParsedDocuments out;
        out.errors.push_back({file, 0, "",
                              "file is " + std::to_string(data.size()) + " bytes, over the limit of " +
                                  std::to_string(limits.max_bytes) + " bytes"});
        return out;
    }
    if (!names::is_valid_utf8(data)) {
        ParsedDocuments out;
        // Find the line for the message: people fix files by line.
        std::size_t line = 1;
        std::size_t good = 0;
        for (std::size_t i = 0; i <= data.size(); ++i) {
            if (i == data.size() || data[i] == '\n') {
                if (!names::is_valid_utf8(data.substr(good, i - good))) break;
                ++line;
                good = i + 1;
            }
        }
        out.errors.push_back({file, 0, "", "line " + std::to_string(line) + ": invalid UTF-8"});
        return out;
    }
    std::string_view body = data;
    if (body.substr(0, 3) == "\xEF\xBB\xBF") body.remove_prefix(3);  // BOM
    std::size_t first = 0;
    while (first < body.size() &&
           (body[first] == ' ' || body[first] == '\t' || body[first] == '\n' || body[first] == '\r'))
        ++first;
    // kubectl's YAMLOrJSONDecoder: a stream whose first byte is '{' is JSON.
    if (first < body.size() && body[first] == '{') return parse_json_stream(body, file, limits, sink);
    return parse_yaml_stream(body, file, limits, sink);
}

}  // namespace
}  // namespace detail

ParsedDocuments parse_documents_partial(std::string_view data, const std::string& file,
                                        const ManifestLimits& limits) {
    return detail::parse_stream(data, file, limits, {});
}

Result<std::vector<Document>> parse_documents(std::string_view data, const std::string& file,
                                              const ManifestLimits& limits) {
    ParsedDocuments p = parse_documents_partial(data, file, limits);
    if (!p.errors.empty()) return Error{ErrorCode::Parse, p.errors.front().to_string()};
    return std::move(p.docs);
}

namespace {

std::string named(const char* kind, const ObjectMeta& m) {
    return std::string(kind) + " " + m.namespace_ + "/" + m.name;
}

struct Describe {
    std::string operator()(const DaemonSet& x) const { return named("DaemonSet", x.metadata); }
    std::string operator()(const Node& x) const { return "Node " + x.metadata.name; }
    std::string operator()(const ConfigMap& x) const { return named("ConfigMap", x.metadata); }
    std::string operator()(const Secret& x) const { return named("Secret", x.metadata); }
    std::string operator()(const Pod& x) const { return named("Pod", x.metadata); }
    std::string operator()(const OtherObject& x) const {
        return x.kind + " " + (x.namespace_.empty() ? "" : x.namespace_ + "/") + x.name;
    }
};

}  // namespace

std::string describe_object(const ManifestObject& o) { return std::visit(Describe{}, o.object); }

namespace {

struct Loader {
    const std::string& file;
    LoadedManifest& out;
    std::size_t max_objects = 0;
    std::size_t objects = 0;
    bool full = false;  // past max_objects: the rest of the file is not read

    void error(std::size_t doc, const std::string& prefix, const std::string& field, std::string message) {
        out.errors.push_back({file, doc, prefix + field, std::move(message)});
    }

    void field_errors(std::size_t doc, const std::string& prefix, const FieldErrors& errs) {
        for (const auto& e : errs) out.errors.push_back({file, doc, prefix + e.field, e.body()});
    }

    static std::string string_field(const Json& obj, const char* key) {
        auto it = obj.find(key);
        return it != obj.end() && it->is_string() ? it->get<std::string>() : std::string();
    }

    void object(std::size_t doc, const std::string& where, const std::string& prefix, Json obj) {
        if (!obj.is_object()) {
            error(doc, prefix, "", "expected an object, got " + std::string(obj.type_name()));
            return;
        }
        std::string kind = string_field(obj, "kind");
        std::string api = string_field(obj, "apiVersion");
        // kubectl's own messages for these two.
        if (kind.empty()) {
            error(doc, prefix, "kind", "Object 'Kind' is missing");
            return;
        }
        if (api.empty()) {
            error(doc, prefix, "apiVersion", "Object 'apiVersion' is missing");
            return;
        }
        if (kind == "List" && api == "v1") {
            list(doc, obj);
            return;
        }
        // Each object kept costs the agent its typed model besides its
        // document (about 4 KiB for a small DaemonSet, 10 000 of them
        // 99 MB): a file may hold at most max_objects.
        if (++objects > max_objects) {
            std::string item = prefix;  // "items[3]." -> "items[3]"
            if (!item.empty()) item.pop_back();
            error(doc, item, "",
                  "more than " + std::to_string(max_objects) + " objects in one file; split it");
            full = true;
            return;
        }
        if (kind == "DaemonSet" &&
            (api == "apps/v1" || api == "apps/v1beta2" || api == "extensions/v1beta1")) {
            if (api != "apps/v1") {
                out.warnings.push_back(file + ": " + where + ": " + api +
                                       " DaemonSet is deprecated and no longer served since Kubernetes 1.16: "
                                       "converted to apps/v1");
                default_legacy_daemonset(obj, api);
                obj["apiVersion"] = "apps/v1";
            }
            default_daemonset(obj);
            // The document moves into the DaemonSet's `object`: not copied.
            return typed<DaemonSet>(
                doc, where, prefix, std::move(obj),
                [](Json&& j, DaemonSet& d) { return decode_daemonset(std::move(j), d); }, validate_daemonset);
        }
        if (api == "v1" && kind == "Node")
            return typed<Node>(doc, where, prefix, std::move(obj), decode_node, validate_node);
        if (api == "v1" && kind == "ConfigMap") {
            default_namespace(obj);
            return typed<ConfigMap>(
                doc, where, prefix, std::move(obj),
                [](Json&& j, ConfigMap& c) { return decode_config_map(std::move(j), c); },
                validate_config_map);
        }
        if (api == "v1" && kind == "Secret") {
            default_secret(obj);
            return typed<Secret>(doc, where, prefix, std::move(obj), decode_secret, validate_secret);
        }
        if (api == "v1" && kind == "Pod") {
            default_pod(obj);
            static const Json kNull;
            const Json& raw = obj.contains("spec") ? obj["spec"] : kNull;
            // decode_pod copies the document (it takes it by const
            // reference), so `raw` stays valid for the validation.
            return typed<Pod>(doc, where, prefix, std::move(obj), decode_pod,
                              [&](const Pod& pod) { return validate_pod(pod, raw); });
        }
        // Any other kind: not used on a board, but still an object the API
        // server would have to accept.
        OtherObject other;
        FieldErrors errs = decode_other_object(obj, other);
        if (errs.empty()) errs = validate_other_object(other);
        if (errs.empty() && is_cluster_scoped_kind(other.kind)) other.namespace_.clear();
        keep(doc, where, prefix, errs, std::move(other));
    }

    // Decoded, then validated when it decoded: kept when both passed.
    template <class T, class Decode, class Validate>
    void typed(std::size_t doc, const std::string& where, const std::string& prefix, Json&& obj,
               Decode decode, Validate validate) {
        T object;
        FieldErrors errs = decode(std::move(obj), object);
        if (errs.empty()) errs = validate(object);
        keep(doc, where, prefix, errs, std::move(object));
    }

    template <class T>
    void keep(std::size_t doc, const std::string& where, const std::string& prefix, const FieldErrors& errs,
              T&& object) {
        if (!errs.empty()) {
            field_errors(doc, prefix, errs);
            return;
        }
        out.objects.push_back({doc, where, std::forward<T>(object)});
    }

    void list(std::size_t doc, Json& obj) {
        auto it = obj.find("items");
        if (it == obj.end() || it->is_null()) return;  // an empty List is fine
        if (!it->is_array()) {
            error(doc, "", "items", "expected an array, got " + std::string(it->type_name()));
            return;
        }
        for (std::size_t i = 0; i < it->size() && !full; ++i) {
            std::string item = "items[" + std::to_string(i) + "]";
            object(doc, "document " + std::to_string(doc) + ", " + item, item + ".", std::move((*it)[i]));
        }
    }
};

}  // namespace

LoadedManifest load_manifest(std::string_view data, const std::string& file, const ManifestLimits& limits) {
    LoadedManifest out;
    Loader loader{file, out, limits.max_objects};
    // Each document is loaded as soon as it is parsed and its tree freed
    // then: the file's documents are never all held at once.
    ParsedDocuments parsed = detail::parse_stream(data, file, limits, [&](Document&& d) {
        loader.object(d.number, "document " + std::to_string(d.number), "", std::move(d.value));
        return !loader.full;
    });
    // A syntax error comes after the documents that parsed before it.
    for (auto& e : parsed.errors) out.errors.push_back(std::move(e));
    return out;
}

}  // namespace daemonlet
