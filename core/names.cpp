// k8s.io/apimachinery/pkg/util/validation/validation.go, with its messages.
// The grammars are small enough to check by hand, which is also much faster
// than std::regex on the decision hot path (every label of every selector).
#include "core/names.h"
#include "core/strings.h"

#include <cstdint>

namespace daemonlet::names {
namespace {

constexpr std::size_t kDns1123LabelMax = 63;
constexpr std::size_t kDns1123SubdomainMax = 253;
constexpr std::size_t kQualifiedNameMax = 63;
constexpr std::size_t kLabelValueMax = 63;

// upstream RegexError: msg + " (e.g. 'a', or 'b', regex used for validation is 'fmt')".
std::string regex_error(const std::string& msg, const std::string& fmt,
                        std::initializer_list<const char*> examples) {
    std::string out = msg;
    if (examples.size() == 0) return out + " (regex used for validation is '" + fmt + "')";
    out += " (e.g. ";
    bool first = true;
    for (const char* e : examples) {
        if (!first) out += " or ";
        first = false;
        out += "'";
        out += e;
        out += "', ";
    }
    return out + "regex used for validation is '" + fmt + "')";
}

std::string max_len_error(std::size_t n) {
    return "must be no more than " + std::to_string(n) + " characters";
}

const char* const kDns1123LabelFmt = "[a-z0-9]([-a-z0-9]*[a-z0-9])?";
const char* const kDns1123LabelErr =
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start "
    "and "
    "end with an alphanumeric character";
const char* const kDns1123SubdomainFmt = "[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*";
const char* const kDns1123SubdomainErr =
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must "
    "start and end with an alphanumeric character";
const char* const kQualifiedNameFmt = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]";
const char* const kQualifiedNameErr =
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric "
    "character";
const char* const kLabelValueFmt = "(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?";
const char* const kLabelValueErr =
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must "
    "start and end with an alphanumeric character";
const char* const kEnvVarNameFmt = "[-._a-zA-Z][-._a-zA-Z0-9]*";
const char* const kEnvVarNameErr =
    "a valid environment variable name must consist of alphabetic characters, digits, '_', '-', or '.', and "
    "must not start with a digit";

// [a-z0-9]([-a-z0-9]*[a-z0-9])?
bool matches_dns_label(std::string_view v) {
    if (v.empty() || !is_lower_alnum(v.front()) || !is_lower_alnum(v.back())) return false;
    for (char c : v)
        if (!is_lower_alnum(c) && c != '-') return false;
    return true;
}

bool matches_dns_subdomain(std::string_view v) {
    std::size_t start = 0;
    for (;;) {
        std::size_t dot = v.find('.', start);
        if (!matches_dns_label(v.substr(start, dot == std::string_view::npos ? dot : dot - start)))
            return false;
        if (dot == std::string_view::npos) return true;
        start = dot + 1;
    }
}

// ([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]
bool matches_qualified_name(std::string_view v) {
    if (v.empty() || !is_alnum(v.front()) || !is_alnum(v.back())) return false;
    for (char c : v)
        if (!is_alnum(c) && c != '-' && c != '_' && c != '.') return false;
    return true;
}

}  // namespace

Problems is_dns1123_label(std::string_view v) {
    Problems errs;
    if (v.size() > kDns1123LabelMax) errs.push_back(max_len_error(kDns1123LabelMax));
    if (!matches_dns_label(v)) {
        if (matches_dns_subdomain(v))
            errs.emplace_back("must not contain dots");
        else
            errs.push_back(regex_error(kDns1123LabelErr, kDns1123LabelFmt, {"my-name", "123-abc"}));
    }
    return errs;
}

Problems is_dns1123_subdomain(std::string_view v) {
    Problems errs;
    if (v.size() > kDns1123SubdomainMax) errs.push_back(max_len_error(kDns1123SubdomainMax));
    if (!matches_dns_subdomain(v))
        errs.push_back(regex_error(kDns1123SubdomainErr, kDns1123SubdomainFmt, {"example.com"}));
    return errs;
}

Problems is_qualified_name(std::string_view v) {
    Problems errs;
    std::string_view name = v;
    std::size_t slash = v.find('/');
    if (slash != std::string_view::npos) {
        if (v.find('/', slash + 1) != std::string_view::npos) {
            errs.push_back(
                "a qualified name " +
                regex_error(kQualifiedNameErr, kQualifiedNameFmt, {"MyName", "my.name", "123-abc"}) +
                " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')");
            return errs;
        }
        std::string_view prefix = v.substr(0, slash);
        name = v.substr(slash + 1);
        if (prefix.empty()) {
            errs.emplace_back("prefix part must be non-empty");
        } else {
            for (auto& m : is_dns1123_subdomain(prefix)) errs.push_back("prefix part " + m);
        }
    }
    if (name.empty())
        errs.emplace_back("name part must be non-empty");
    else if (name.size() > kQualifiedNameMax)
        errs.push_back("name part " + max_len_error(kQualifiedNameMax));
    if (!matches_qualified_name(name))
        errs.push_back("name part " +
                       regex_error(kQualifiedNameErr, kQualifiedNameFmt, {"MyName", "my.name", "123-abc"}));
    return errs;
}

Problems is_valid_label_value(std::string_view v) {
    Problems errs;
    if (v.size() > kLabelValueMax) errs.push_back(max_len_error(kLabelValueMax));
    if (!v.empty() && !matches_qualified_name(v))
        errs.push_back(regex_error(kLabelValueErr, kLabelValueFmt, {"MyValue", "my_value", "12345"}));
    return errs;
}

Problems is_env_var_name(std::string_view v) {
    Problems errs;
    bool ok = !v.empty() && !(v.front() >= '0' && v.front() <= '9');
    for (char c : v)
        if (!is_alnum(c) && c != '-' && c != '.' && c != '_') ok = false;
    if (!ok)
        errs.push_back(
            regex_error(kEnvVarNameErr, kEnvVarNameFmt, {"my.env-name", "MY_ENV.NAME", "MyEnvName1"}));
    // upstream hasChDirPrefix
    if (v == ".")
        errs.emplace_back("must not be '.'");
    else if (v == "..")
        errs.emplace_back("must not be '..'");
    else if (v.substr(0, 2) == "..")
        errs.emplace_back("must not start with '..'");
    return errs;
}

Problems is_valid_port_name(std::string_view v) {
    Problems errs;
    if (v.size() > 15) errs.push_back(max_len_error(15));
    bool charset = !v.empty();
    bool letter = false;
    for (char c : v) {
        if (!is_lower_alnum(c) && c != '-') charset = false;
        if (c >= 'a' && c <= 'z') letter = true;
    }
    if (!charset) errs.emplace_back("must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)");
    if (!letter) errs.emplace_back("must contain at least one letter (a-z)");
    if (v.find("--") != std::string_view::npos) errs.emplace_back("must not contain consecutive hyphens");
    if (!v.empty() && (v.front() == '-' || v.back() == '-'))
        errs.emplace_back("must not begin or end with a hyphen");
    return errs;
}

bool is_valid_utf8(std::string_view v) {
    std::size_t i = 0;
    const std::size_t n = v.size();
    while (i < n) {
        auto c = static_cast<unsigned char>(v[i]);
        if (c < 0x80) {
            ++i;
            continue;
        }
        std::size_t len = 0;
        std::uint32_t cp = 0;
        if ((c & 0xE0) == 0xC0) {
            len = 2;
            cp = c & 0x1F;
        } else if ((c & 0xF0) == 0xE0) {
            len = 3;
            cp = c & 0x0F;
        } else if ((c & 0xF8) == 0xF0) {
            len = 4;
            cp = c & 0x07;
        } else {
            return false;
        }
        if (i + len > n) return false;
        for (std::size_t k = 1; k < len; ++k) {
            auto cc = static_cast<unsigned char>(v[i + k]);
            if ((cc & 0xC0) != 0x80) return false;
            cp = (cp << 6) | (cc & 0x3F);
        }
        // Overlong forms, surrogates and values past U+10FFFF are invalid.
        if ((len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) ||
            cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
            return false;
        i += len;
    }
    return true;
}

}  // namespace daemonlet::names
