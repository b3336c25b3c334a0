// Internal to core: typed reads out of a Json object, each one recording a
// field error (with its path) when the value has the wrong type, and leaving
// the target untouched. A null value reads as absent, as in Go's decoder.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/field_error.h"
#include "core/json.h"
#include "core/model.h"

namespace daemonlet::detail {

class Reader {
  public:
    explicit Reader(FieldErrors& errs) : errs_(errs) {}

    // The member `key` of `obj`, or nullptr when absent or null.
    static const Json* member(const Json& obj, const char* key);

    // Checks that v is an object; records an error otherwise.
    bool object(const Json& v, const FieldPath& p);

    void str(const Json& obj, const FieldPath& p, const char* key, std::string& out);
    void boolean(const Json& obj, const FieldPath& p, const char* key, bool& out);
    void boolean(const Json& obj, const FieldPath& p, const char* key, std::optional<bool>& out);
    void i32(const Json& obj, const FieldPath& p, const char* key, std::int32_t& out);
    void i32(const Json& obj, const FieldPath& p, const char* key, std::optional<std::int32_t>& out);
    void i64(const Json& obj, const FieldPath& p, const char* key, std::int64_t& out);
    void i64(const Json& obj, const FieldPath& p, const char* key, std::optional<std::int64_t>& out);
    void strings(const Json& obj, const FieldPath& p, const char* key, std::vector<std::string>& out);
    void string_map(const Json& obj, const FieldPath& p, const char* key, Labels& out);
    void int_or_string(const Json& obj, const FieldPath& p, const char* key, std::optional<IntOrString>& out);
    void int_or_string(const Json& obj, const FieldPath& p, const char* key, IntOrString& out);
    void quantity(const Json& obj, const FieldPath& p, const char* key, std::optional<Quantity>& out);
    void quantity_value(const Json& v, const FieldPath& qp, std::optional<Quantity>& out);
    void quantity_map(const Json& obj, const FieldPath& p, const char* key,
                      std::map<std::string, Quantity>& out);

    // A list member: each element decoded by fn(const Json&, const FieldPath&, T&).
    template <class T, class F>
    void list(const Json& obj, const FieldPath& p, const char* key, std::vector<T>& out, F fn) {
        const Json* v = member(obj, key);
        if (!v) return;
        FieldPath lp = p.child(key);
        if (!v->is_array()) {
            type_error(lp, *v, "an array");
            return;
        }
        out.clear();
        out.reserve(v->size());
        for (std::size_t i = 0; i < v->size(); ++i) {
            T item{};
            fn((*v)[i], lp.index(i), item);
            out.push_back(std::move(item));
        }
    }

    // An object member decoded by fn(const Json&, const FieldPath&, T&).
    template <class T, class F>
    void nested(const Json& obj, const FieldPath& p, const char* key, std::optional<T>& out, F fn) {
        const Json* v = member(obj, key);
        if (!v) return;
        FieldPath np = p.child(key);
        if (!object(*v, np)) return;
        T item{};
        fn(*v, np, item);
        out = std::move(item);
    }

    void type_error(const FieldPath& p, const Json& v, const char* expected);
    FieldErrors& errors() { return errs_; }

  private:
    FieldErrors& errs_;
};

}  // namespace daemonlet::detail
