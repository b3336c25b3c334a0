#include "core/decode_reader.h"

#include <limits>

namespace daemonlet::detail {
namespace {

const char* json_type(const Json& v) {
    if (v.is_string()) return "a string";
    if (v.is_boolean()) return "a boolean";
    if (v.is_number_integer()) return "an integer";
    if (v.is_number()) return "a number";
    if (v.is_array()) return "an array";
    if (v.is_object()) return "an object";
    return "null";
}

// An integer within [lo, hi], from a JSON integer (not a float, not a string:
// Go's decoder accepts neither into an int field).
template <class T>
bool read_integer(Reader& r, const Json& v, const FieldPath& p, T& out, const char* expected) {
    if (!v.is_number_integer()) {
        r.type_error(p, v, expected);
        return false;
    }
    if (v.is_number_unsigned()) {
        auto u = v.get<std::uint64_t>();
        if (u > static_cast<std::uint64_t>(std::numeric_limits<T>::max())) {
            r.errors().push_back(invalid(p, render_value(v), std::string("out of range for ") + expected));
            return false;
        }
        out = static_cast<T>(u);
        return true;
    }
    auto s = v.get<std::int64_t>();
    if (s < static_cast<std::int64_t>(std::numeric_limits<T>::min()) ||
        s > static_cast<std::int64_t>(std::numeric_limits<T>::max())) {
        r.errors().push_back(invalid(p, render_value(v), std::string("out of range for ") + expected));
        return false;
    }
    out = static_cast<T>(s);
    return true;
}

}  // namespace

const Json* Reader::member(const Json& obj, const char* key) {
    if (!obj.is_object()) return nullptr;
    auto it = obj.find(key);
    if (it == obj.end() || it->is_null()) return nullptr;
    return &*it;
}

void Reader::type_error(const FieldPath& p, const Json& v, const char* expected) {
    errs_.push_back(
        type_invalid(p, render_value(v), std::string("expected ") + expected + ", got " + json_type(v)));
}

bool Reader::object(const Json& v, const FieldPath& p) {
    if (v.is_object()) return true;
    type_error(p, v, "an object");
    return false;
}

void Reader::str(const Json& obj, const FieldPath& p, const char* key, std::string& out) {
    const Json* v = member(obj, key);
    if (!v) return;
    if (!v->is_string()) return type_error(p.child(key), *v, "a string");
    out = v->get<std::string>();
}

void Reader::boolean(const Json& obj, const FieldPath& p, const char* key, bool& out) {
    const Json* v = member(obj, key);
    if (!v) return;
    if (!v->is_boolean()) return type_error(p.child(key), *v, "a boolean");
    out = v->get<bool>();
}

void Reader::boolean(const Json& obj, const FieldPath& p, const char* key, std::optional<bool>& out) {
    bool b = false;
    const Json* v = member(obj, key);
    if (!v) return;
    if (!v->is_boolean()) return type_error(p.child(key), *v, "a boolean");
    b = v->get<bool>();
    out = b;
}

void Reader::i32(const Json& obj, const FieldPath& p, const char* key, std::int32_t& out) {
    const Json* v = member(obj, key);
    if (v) read_integer(*this, *v, p.child(key), out, "an integer (int32)");
}

void Reader::i32(const Json& obj, const FieldPath& p, const char* key, std::optional<std::int32_t>& out) {
    const Json* v = member(obj, key);
    std::int32_t x = 0;
    if (v && read_integer(*this, *v, p.child(key), x, "an integer (int32)")) out = x;
}

void Reader::i64(const Json& obj, const FieldPath& p, const char* key, std::int64_t& out) {
    const Json* v = member(obj, key);
    if (v) read_integer(*this, *v, p.child(key), out, "an integer (int64)");
}

void Reader::i64(const Json& obj, const FieldPath& p, const char* key, std::optional<std::int64_t>& out) {
    const Json* v = member(obj, key);
    std::int64_t x = 0;
    if (v && read_integer(*this, *v, p.child(key), x, "an integer (int64)")) out = x;
}

void Reader::strings(const Json& obj, const FieldPath& p, const char* key, std::vector<std::string>& out) {
    const Json* v = member(obj, key);
    if (!v) return;
    FieldPath lp = p.child(key);
    if (!v->is_array()) return type_error(lp, *v, "an array of strings");
    out.clear();
    for (std::size_t i = 0; i < v->size(); ++i) {
        const Json& s = (*v)[i];
        if (!s.is_string()) {
            type_error(lp.index(i), s, "a string");
            continue;
        }
        out.push_back(s.get<std::string>());
    }
}

void Reader::string_map(const Json& obj, const FieldPath& p, const char* key, Labels& out) {
    const Json* v = member(obj, key);
    if (!v) return;
    FieldPath mp = p.child(key);
    if (!v->is_object()) return type_error(mp, *v, "a map of strings");
    out.clear();
    for (auto it = v->begin(); it != v->end(); ++it) {
        // A label value written as `1` or `true` is a number or a boolean in
        // JSON: the API server rejects it, and so do we.
        if (!it.value().is_string()) {
            type_error(mp.key(it.key()), it.value(), "a string");
            continue;
        }
        out[it.key()] = it.value().get<std::string>();
    }
}

void Reader::int_or_string(const Json& obj, const FieldPath& p, const char* key,
                           std::optional<IntOrString>& out) {
    const Json* v = member(obj, key);
    if (!v) return;
    IntOrString x;
    int_or_string(obj, p, key, x);
    if (v->is_string() || v->is_number_integer()) out = x;
}

void Reader::int_or_string(const Json& obj, const FieldPath& p, const char* key, IntOrString& out) {
    const Json* v = member(obj, key);
    if (!v) return;
    if (v->is_string()) {
        out = IntOrString::from_string(v->get<std::string>());
        return;
    }
    std::int32_t i = 0;  // intstr.IntOrString holds an int32
    if (v->is_number_integer()) {
        if (read_integer(*this, *v, p.child(key), i, "an integer (int32)")) out = IntOrString::from_int(i);
        return;
    }
    type_error(p.child(key), *v, "an integer or a string");
}

void Reader::quantity(const Json& obj, const FieldPath& p, const char* key, std::optional<Quantity>& out) {
    const Json* v = member(obj, key);
    if (v) quantity_value(*v, p.child(key), out);
}

void Reader::quantity_value(const Json& vv, const FieldPath& qp, std::optional<Quantity>& out) {
    const Json* v = &vv;
    std::string text;
    // resource.Quantity unmarshals from a JSON string or number alike.
    if (v->is_string())
        text = v->get<std::string>();
    else if (v->is_number())
        text = v->dump();
    else
        return type_error(qp, *v, "a quantity (string or number)");
    auto q = parse_quantity(text);
    if (!q.ok()) {
        errs_.push_back(invalid(qp, render_value(*v), q.error().message));
        return;
    }
    out = std::move(q).value();
}

void Reader::quantity_map(const Json& obj, const FieldPath& p, const char* key,
                          std::map<std::string, Quantity>& out) {
    const Json* v = member(obj, key);
    if (!v) return;
    FieldPath mp = p.child(key);
    if (!v->is_object()) return type_error(mp, *v, "a map of quantities");
    for (auto it = v->begin(); it != v->end(); ++it) {
        std::optional<Quantity> q;
        if (!it.value().is_null()) quantity_value(it.value(), mp.key(it.key()), q);
        if (q) out[it.key()] = std::move(*q);
    }
}

}  // namespace daemonlet::detail
