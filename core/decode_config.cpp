// The kinds a published install file holds besides its DaemonSets: v1
// ConfigMap, Secret and Pod, and any other object's identity. Decoded as the
// API server's decoder reads them: a ConfigMap's binaryData and a Secret's
// data are base64 ([]byte fields), a Secret's stringData is merged over its
// data (the v1 -> internal conversion, Convert_v1_Secret_To_core_Secret).
//
// Secret values never reach an error: a wrong type or bad base64 in a
// Secret names the key and the reason, not the value.
#include "core/base64.h"
#include "core/decode.h"
#include "core/decode_internal.h"

namespace daemonlet {

using detail::Reader;

namespace {

std::string json_type(const Json& v) {
    switch (v.type()) {
    case Json::value_t::string: return "a string";
    case Json::value_t::boolean: return "a boolean";
    case Json::value_t::number_integer:
    case Json::value_t::number_unsigned: return "an integer";
    case Json::value_t::number_float: return "a number";
    case Json::value_t::object: return "an object";
    case Json::value_t::array: return "an array";
    default: return "null";
    }
}

enum class Values { Shown, Secret };

// A map of strings as Go decodes map[string]string or map[string][]byte
// (`base64`): a null value is the empty string. A wrong type is reported
// with the value unless the values are secret.
void bytes_map(FieldErrors& errs, const Json& obj, const FieldPath& root, const char* key, bool base64,
               Values values, std::map<std::string, std::string>& out) {
    const Json* v = Reader::member(obj, key);
    if (!v) return;
    FieldPath mp = root.child(key);
    if (!v->is_object()) {
        errs.push_back(type_invalid(mp, values == Values::Shown ? render_value(*v) : "",
                                    "expected a map of strings, got " + json_type(*v)));
        return;
    }
    for (auto it = v->begin(); it != v->end(); ++it) {
        FieldPath kp = mp.key(it.key());
        if (it.value().is_null()) {
            out[it.key()] = "";  // Go's decoder reads null as the zero value
            continue;
        }
        if (!it.value().is_string()) {
            errs.push_back(type_invalid(kp, values == Values::Shown ? render_value(it.value()) : "",
                                        "expected a string, got " + json_type(it.value())));
            continue;
        }
        const std::string& text = it.value().get_ref<const std::string&>();
        if (!base64) {
            out[it.key()] = text;
            continue;
        }
        Base64Result b = base64_std_decode(text);
        if (b.corrupt_at)
            errs.push_back(type_invalid(kp, "", b.error()));
        else
            out[it.key()] = std::move(b.bytes);
    }
}

// The object as kept: every value under data and stringData replaced, and
// kubectl's last-applied annotation (a copy of the whole object) dropped.
Json redacted_secret(const Json& obj) {
    Json out = obj;
    for (const char* key : {"data", "stringData"}) {
        auto it = out.find(key);
        if (it == out.end() || !it->is_object()) continue;
        for (auto& [k, v] : it->items()) v = kSecretRedacted;
    }
    if (auto m = out.find("metadata"); m != out.end() && m->is_object())
        if (auto a = m->find("annotations"); a != m->end() && a->is_object())
            a->erase("kubectl.kubernetes.io/last-applied-configuration");
    return out;
}

}  // namespace

namespace {
FieldErrors config_map_fields(const Json& obj, ConfigMap& out) {
    FieldErrors errs;
    Reader r(errs);
    FieldPath root;
    if (!detail::decode_root(r, obj, out.metadata)) return errs;
    bytes_map(errs, obj, root, "data", false, Values::Shown, out.data);
    bytes_map(errs, obj, root, "binaryData", true, Values::Shown, out.binary_data);
    r.boolean(obj, root, "immutable", out.immutable);
    return errs;
}
}  // namespace

FieldErrors decode_config_map(const Json& obj, ConfigMap& out) {
    FieldErrors errs = config_map_fields(obj, out);
    out.object = obj;
    return errs;
}

FieldErrors decode_config_map(Json&& obj, ConfigMap& out) {
    FieldErrors errs = config_map_fields(obj, out);
    out.object = std::move(obj);
    return errs;
}

FieldErrors decode_secret(const Json& obj, Secret& out) {
    FieldErrors errs;
    Reader r(errs);
    FieldPath root;
    if (!detail::decode_root(r, obj, out.metadata)) return errs;
    // The last-applied annotation holds the values too: not in `metadata`.
    out.metadata.annotations.erase("kubectl.kubernetes.io/last-applied-configuration");
    bytes_map(errs, obj, root, "data", true, Values::Secret, out.data);
    std::map<std::string, std::string> string_data;
    bytes_map(errs, obj, root, "stringData", false, Values::Secret, string_data);
    for (auto& [k, v] : string_data) out.data[k] = std::move(v);
    r.str(obj, root, "type", out.type);
    r.boolean(obj, root, "immutable", out.immutable);
    out.object = redacted_secret(obj);
    return errs;
}

FieldErrors decode_pod(const Json& obj, Pod& out) {
    FieldErrors errs;
    Reader r(errs);
    if (!r.object(obj, FieldPath("<root>"))) return errs;
    // A Pod is metadata and spec, as a pod template is.
    PodTemplateSpec t;
    detail::decode_pod_template(r, obj, FieldPath(), t);
    out.metadata = std::move(t.metadata);
    out.spec = std::move(t.spec);
    out.object = obj;
    return errs;
}

FieldErrors decode_other_object(const Json& obj, OtherObject& out) {
    FieldErrors errs;
    Reader r(errs);
    FieldPath root;
    if (!r.object(obj, FieldPath("<root>"))) return errs;
    r.str(obj, root, "apiVersion", out.api_version);
    r.str(obj, root, "kind", out.kind);
    if (const Json* m = Reader::member(obj, "metadata")) {
        FieldPath mp = root.child("metadata");
        if (r.object(*m, mp)) {
            r.str(*m, mp, "name", out.name);
            r.str(*m, mp, "namespace", out.namespace_);
        }
    }
    return errs;
}

}  // namespace daemonlet
