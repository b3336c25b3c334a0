#include "core/field_error.h"

#include <algorithm>
#include <memory>

namespace daemonlet {

namespace {
// The most of a bad value an error quotes: upstream quotes a value whole,
// but no message needs more than this (issue 15 §5).
constexpr std::size_t kMaxRenderedValue = 1024;

// Keeps the first `cap` bytes of what the serializer writes and counts the
// rest: a value is never rendered whole to be cut afterwards (a 3 MiB
// manifest's array took a 5.4 MiB string for a 1 KiB quote).
class CappedOutput : public nlohmann::detail::output_adapter_protocol<char> {
  public:
    CappedOutput(std::string& out, std::size_t cap) : out_(out), cap_(cap) {}
    void write_character(char c) override {
        if (out_.size() < cap_) out_.push_back(c);
        ++total_;
    }
    void write_characters(const char* s, std::size_t n) override {
        if (out_.size() < cap_) out_.append(s, std::min(n, cap_ - out_.size()));
        total_ += n;
    }
    std::size_t total() const { return total_; }

  private:
    std::string& out_;
    std::size_t cap_;
    std::size_t total_ = 0;
};
}  // namespace

FieldPath FieldPath::child(std::string_view name) const {
    if (s_.empty()) return FieldPath(std::string(name));
    std::string out = s_;
    out += '.';
    out += name;
    return FieldPath(std::move(out));
}

FieldPath FieldPath::index(std::size_t i) const { return FieldPath(s_ + "[" + std::to_string(i) + "]"); }

FieldPath FieldPath::key(std::string_view k) const {
    std::string out = s_;
    out += '[';
    out += k;
    out += ']';
    return FieldPath(std::move(out));
}

std::string render_value(const Json& v) {
    // error_handler::replace: a bad byte in a value must never throw while
    // we are only trying to report it.
    std::string s;
    // One byte past the quote, to find a character boundary at the cut.
    auto sink = std::make_shared<CappedOutput>(s, kMaxRenderedValue + 1);
    nlohmann::detail::serializer<Json> serializer(sink, ' ', Json::error_handler_t::replace);
    serializer.dump(v, false, false, 0);
    const std::size_t total = sink->total();
    if (total <= kMaxRenderedValue) return s;
    // An error is logged, kept as a file's last error and stored: a 3 MiB
    // manifest's array quoted whole was megabytes, copied at each step, and
    // had the agent OOM-killed in 32 MiB (bench/memory.sh). Cut on a UTF-8
    // character boundary, saying how much there was.
    std::size_t cut = kMaxRenderedValue;
    while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xC0) == 0x80) --cut;
    std::string out = s.substr(0, cut);
    out += "... (" + std::to_string(total) + " bytes)";
    return out;
}

std::string render_string(std::string_view s) { return render_value(Json(std::string(s))); }

std::string render_string_list(const std::vector<std::string>& values) {
    std::string out = "[]string{";
    for (std::size_t i = 0; i < values.size(); ++i) {
        if (i) out += ", ";
        out += render_string(values[i]);
    }
    return out + "}";
}

std::string render_int(std::int64_t n) { return std::to_string(n); }

std::string FieldError::to_string() const { return field + ": " + body(); }

std::string FieldError::body() const {
    std::string out;
    switch (type) {
    case FieldErrorType::Invalid:
    case FieldErrorType::TypeInvalid: out += "Invalid value"; break;
    case FieldErrorType::Required: out += "Required value"; break;
    case FieldErrorType::NotSupported: out += "Unsupported value"; break;
    case FieldErrorType::Forbidden: out += "Forbidden"; break;
    case FieldErrorType::Duplicate: out += "Duplicate value"; break;
    case FieldErrorType::TooLong: out += "Too long"; break;
    case FieldErrorType::TooMany: out += "Too many"; break;
    case FieldErrorType::NotFound: out += "Not found"; break;
    }
    if (!value.empty()) {
        out += ": ";
        out += value;
    }
    if (!detail.empty()) {
        out += ": ";
        out += detail;
    }
    return out;
}

FieldError invalid(const FieldPath& p, std::string value, std::string detail) {
    return {FieldErrorType::Invalid, p.str(), std::move(value), std::move(detail)};
}

FieldError required(const FieldPath& p, std::string detail) {
    return {FieldErrorType::Required, p.str(), {}, std::move(detail)};
}

FieldError forbidden(const FieldPath& p, std::string detail) {
    return {FieldErrorType::Forbidden, p.str(), {}, std::move(detail)};
}

FieldError duplicate(const FieldPath& p, std::string value) {
    return {FieldErrorType::Duplicate, p.str(), std::move(value), {}};
}

FieldError too_long(const FieldPath& p, std::string value, std::size_t max) {
    return {FieldErrorType::TooLong, p.str(), std::move(value),
            "must have at most " + std::to_string(max) + " bytes"};
}

FieldError type_invalid(const FieldPath& p, std::string value, std::string detail) {
    return {FieldErrorType::TypeInvalid, p.str(), std::move(value), std::move(detail)};
}

FieldError not_found(const FieldPath& p, std::string value) {
    return {FieldErrorType::NotFound, p.str(), std::move(value), {}};
}

FieldError not_supported(const FieldPath& p, std::string value, const std::vector<std::string>& valid) {
    std::string detail;
    if (!valid.empty()) {
        detail = "supported values: ";
        for (std::size_t i = 0; i < valid.size(); ++i) {
            if (i) detail += ", ";
            detail += render_string(valid[i]);
        }
    }
    return {FieldErrorType::NotSupported, p.str(), std::move(value), std::move(detail)};
}

}  // namespace daemonlet
