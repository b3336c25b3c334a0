// The apimachinery half of validation: object metadata, labels, annotations,
// label selectors (k8s.io/apimachinery/pkg/api/validation/objectmeta.go and
// pkg/apis/meta/v1/validation/validation.go), the path rules of
// pkg/apis/core/validation, and the rendering of bad values as
// field.Error.ErrorBody prints them.
#include <algorithm>
#include <cctype>
#include <string>

#include "core/names.h"
#include "core/validation_internal.h"

namespace daemonlet::validation {

// ---- rendering ---------------------------------------------------------

std::string go_string_map(const Labels& m) {
    if (m.empty()) return "map[string]string(nil)";
    std::string out = "map[string]string{";
    bool first = true;
    for (const auto& [k, v] : m) {
        if (!first) out += ", ";
        first = false;
        out += render_string(k) + ":" + render_string(v);
    }
    return out + "}";
}

std::string render_int_or_string(const IntOrString& v) {
    return v.type == IntOrString::Type::String ? render_string(v.str_val) : render_int(v.int_val);
}

namespace {

enum class QuantityFormat { DecimalSI, BinarySI, DecimalExponent };

// The format a quantity keeps (resource.Quantity.Format), read off the suffix
// it was written with.
QuantityFormat format_of(std::string_view text) {
    std::size_t i = 0;
    if (i < text.size() && (text[i] == '+' || text[i] == '-')) ++i;
    while (i < text.size() && (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.')) ++i;
    std::string_view suffix = text.substr(i);
    if (suffix.size() == 2 && suffix[1] == 'i') return QuantityFormat::BinarySI;
    if (suffix.size() > 1 && (suffix[0] == 'e' || suffix[0] == 'E')) return QuantityFormat::DecimalExponent;
    return QuantityFormat::DecimalSI;
}

}  // namespace

// resource.Quantity.CanonicalizeBytes over our milli-unit value: binary
// quantities print in the largest power of 1024 that divides them (small or
// fractional ones fall back to decimal), decimal ones with the largest
// exponent that is a multiple of 3 and keeps the mantissa whole.
std::string canonical_quantity(const Quantity& q) {
    std::int64_t milli = q.milli;
    if (milli == 0) return "0";
    QuantityFormat f = format_of(q.text);
    if (f == QuantityFormat::BinarySI && (milli % 1000 != 0 || (milli > -1024000 && milli < 1024000)))
        f = QuantityFormat::DecimalSI;
    if (f == QuantityFormat::BinarySI) {
        static const char* const kBinary[] = {"", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"};
        std::int64_t v = milli / 1000;
        std::size_t exp = 0;
        while (v % 1024 == 0 && exp < 6) {
            v /= 1024;
            ++exp;
        }
        return std::to_string(v) + kBinary[exp];
    }
    std::int64_t mantissa = milli;
    int exp = -3;
    while (mantissa % 10 == 0) {
        mantissa /= 10;
        ++exp;
    }
    // Back down to a multiple of 3; this only restores removed factors of 10.
    int r = ((exp % 3) + 3) % 3;
    for (int k = 0; k < r; ++k) {
        mantissa *= 10;
        --exp;
    }
    std::string number = std::to_string(mantissa);
    if (f == QuantityFormat::DecimalExponent) return exp == 0 ? number : number + "e" + std::to_string(exp);
    switch (exp) {
    case -3: return number + "m";
    case 0: return number;
    case 3: return number + "k";
    case 6: return number + "M";
    case 9: return number + "G";
    case 12: return number + "T";
    case 15: return number + "P";
    default: return number + "E";
    }
}

std::string regex_error(std::string_view msg, std::string_view fmt,
                        const std::vector<std::string>& examples) {
    std::string out(msg);
    if (examples.empty()) return out + " (regex used for validation is '" + std::string(fmt) + "')";
    out += " (e.g. ";
    for (std::size_t i = 0; i < examples.size(); ++i) {
        if (i > 0) out += " or ";
        out += "'" + examples[i] + "', ";
    }
    return out + "regex used for validation is '" + std::string(fmt) + "')";
}

std::string inclusive_range_error(std::int64_t lo, std::int64_t hi) {
    return "must be between " + std::to_string(lo) + " and " + std::to_string(hi) + ", inclusive";
}

// ---- raw document access -------------------------------------------------

const Json* member(const Json& obj, const char* key) {
    if (!obj.is_object()) return nullptr;
    auto it = obj.find(key);
    if (it == obj.end() || it->is_null()) return nullptr;
    return &*it;
}

std::string string_member(const Json& obj, const char* key) {
    const Json* v = member(obj, key);
    return v && v->is_string() ? v->get<std::string>() : std::string();
}

// ---- apimachinery ----------------------------------------------------------

void invalid_each(FieldErrors& errs, const FieldPath& p, const std::string& value,
                  const std::vector<std::string>& msgs) {
    for (const auto& m : msgs) errs.push_back(invalid(p, value, m));
}

void validate_nonnegative(std::int64_t v, const FieldPath& p, FieldErrors& errs) {
    if (v < 0) errs.push_back(invalid(p, render_int(v), "must be greater than or equal to 0"));
}

namespace {

// apimachinery maskTrailingDash: a generateName may end in '-'.
std::string mask_trailing_dash(const std::string& name) {
    if (name.size() > 1 && name.back() == '-') return name.substr(0, name.size() - 2) + "a";
    return name;
}

}  // namespace

std::vector<std::string> name_is_dns_subdomain(const std::string& name, bool prefix) {
    return names::is_dns1123_subdomain(prefix ? mask_trailing_dash(name) : name);
}

std::vector<std::string> name_is_dns_label(const std::string& name, bool prefix) {
    return names::is_dns1123_label(prefix ? mask_trailing_dash(name) : name);
}

void validate_dns1123_label(const std::string& v, const FieldPath& p, FieldErrors& errs) {
    invalid_each(errs, p, render_string(v), names::is_dns1123_label(v));
}

void validate_label_name(const std::string& k, const FieldPath& p, FieldErrors& errs) {
    invalid_each(errs, p, render_string(k), names::is_qualified_name(k));
}

void validate_labels(const Labels& l, const FieldPath& p, FieldErrors& errs) {
    for (const auto& [k, v] : l) {
        validate_label_name(k, p, errs);
        invalid_each(errs, p, render_string(v), names::is_valid_label_value(v));
    }
}

void validate_annotations(const Labels& a, const FieldPath& p, FieldErrors& errs) {
    constexpr std::size_t kTotalAnnotationSizeLimit = 256 * 1024;
    std::size_t total = 0;
    for (const auto& [k, v] : a) {
        std::string lower = k;
        std::transform(lower.begin(), lower.end(), lower.begin(),
                       [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
        invalid_each(errs, p, render_string(k), names::is_qualified_name(lower));
        total += k.size() + v.size();
    }
    // field.TooLong prints no value.
    if (total > kTotalAnnotationSizeLimit) errs.push_back(too_long(p, "", kTotalAnnotationSizeLimit));
}

void validate_label_selector(const LabelSelector& s, const FieldPath& p, FieldErrors& errs) {
    validate_labels(s.match_labels, p.child("matchLabels"), errs);
    for (std::size_t i = 0; i < s.match_expressions.size(); ++i) {
        const auto& r = s.match_expressions[i];
        FieldPath rp = p.child("matchExpressions").index(i);
        if (r.op == "In" || r.op == "NotIn") {
            if (r.values.empty())
                errs.push_back(
                    required(rp.child("values"), "must be specified when `operator` is 'In' or 'NotIn'"));
        } else if (r.op == "Exists" || r.op == "DoesNotExist") {
            if (!r.values.empty())
                errs.push_back(
                    forbidden(rp.child("values"),
                              "may not be specified when `operator` is 'Exists' or 'DoesNotExist'"));
        } else {
            errs.push_back(
                invalid(rp.child("operator"), render_string(r.op), "not a valid selector operator"));
        }
        validate_label_name(r.key, rp.child("key"), errs);
        for (std::size_t vi = 0; vi < r.values.size(); ++vi)
            invalid_each(errs, rp.child("values").index(vi), render_string(r.values[vi]),
                         names::is_valid_label_value(r.values[vi]));
    }
}

void validate_object_meta(const ObjectMeta& m, bool namespaced, const FieldPath& p, FieldErrors& errs) {
    if (!m.generate_name.empty())
        invalid_each(errs, p.child("generateName"), render_string(m.generate_name),
                     name_is_dns_subdomain(m.generate_name, true));
    if (m.name.empty())
        errs.push_back(required(p.child("name"), "name or generateName is required"));
    else
        invalid_each(errs, p.child("name"), render_string(m.name), name_is_dns_subdomain(m.name, false));
    if (namespaced) {
        if (m.namespace_.empty())
            errs.push_back(required(p.child("namespace")));
        else
            invalid_each(errs, p.child("namespace"), render_string(m.namespace_),
                         name_is_dns_label(m.namespace_, false));
    } else if (!m.namespace_.empty()) {
        errs.push_back(forbidden(p.child("namespace"), "not allowed on this type"));
    }
    validate_nonnegative(m.generation, p.child("generation"), errs);
    validate_labels(m.labels, p.child("labels"), errs);
    validate_annotations(m.annotations, p.child("annotations"), errs);
}

std::vector<std::string> is_config_map_key(std::string_view v) {
    std::vector<std::string> errs;
    if (v.size() > 253) errs.emplace_back("must be no more than 253 characters");
    bool ok = !v.empty() && std::all_of(v.begin(), v.end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '.' || c == '_';
    });
    if (!ok)
        errs.push_back(
            regex_error("a valid config key must consist of alphanumeric characters, '-', '_' or '.'",
                        "[-._a-zA-Z0-9]+", {"key.name", "KEY_NAME", "key-name"}));
    if (v == ".")
        errs.emplace_back("must not be '.'");
    else if (v == "..")
        errs.emplace_back("must not be '..'");
    else if (v.substr(0, 2) == "..")
        errs.emplace_back("must not start with '..'");
    return errs;
}

// ---- paths -------------------------------------------------------------------

// validatePathNoBacksteps: no ".." element; one error is enough.
void validate_path_no_backsteps(const std::string& target, const FieldPath& p, FieldErrors& errs) {
    std::size_t start = 0;
    for (;;) {
        std::size_t slash = target.find('/', start);
        std::string_view part =
            std::string_view(target).substr(start, slash == std::string::npos ? slash : slash - start);
        if (part == "..") {
            errs.push_back(invalid(p, render_string(target), "must not contain '..'"));
            return;
        }
        if (slash == std::string::npos) return;
        start = slash + 1;
    }
}

// validateLocalDescendingPath: relative, and no "..".
void validate_local_descending_path(const std::string& target, const FieldPath& p, FieldErrors& errs) {
    if (!target.empty() && target.front() == '/')
        errs.push_back(invalid(p, render_string(target), "must be a relative path"));
    validate_path_no_backsteps(target, p, errs);
}

// ValidateLocalNonReservedPath: also not starting with "..".
void validate_local_non_reserved_path(const std::string& target, const FieldPath& p, FieldErrors& errs) {
    validate_local_descending_path(target, p, errs);
    if (target.rfind("..", 0) == 0 && target.rfind("../", 0) != 0)
        errs.push_back(invalid(p, render_string(target), "must not start with '..'"));
}

}  // namespace daemonlet::validation
