#include "core/image_reference.h"
#include "core/strings.h"

#include <cstddef>

namespace daemonlet {

namespace {

bool is_word(char c) { return is_alnum(c) || c == '_'; }
bool is_hex(char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }
bool is_lower_hex(char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); }

// path-component := [a-z0-9]+ (separator [a-z0-9]+)*
// separator      := [_.] | "__" | "-"+          (regexp.go)
bool is_path_component(std::string_view s) {
    std::size_t i = 0;
    auto alnum_run = [&] {
        std::size_t start = i;
        while (i < s.size() && is_lower_alnum(s[i])) ++i;
        return i > start;
    };
    if (!alnum_run()) return false;
    while (i < s.size()) {
        if (s[i] == '.') {
            ++i;
        } else if (s[i] == '_') {
            ++i;
            if (i < s.size() && s[i] == '_') ++i;
        } else if (s[i] == '-') {
            while (i < s.size() && s[i] == '-') ++i;
        } else {
            return false;
        }
        if (!alnum_run()) return false;
    }
    return true;
}

// path := path-component ("/" path-component)*
bool is_path(std::string_view s) {
    while (true) {
        std::size_t slash = s.find('/');
        if (!is_path_component(s.substr(0, slash))) return false;
        if (slash == std::string_view::npos) return true;
        s.remove_prefix(slash + 1);
    }
}

// domain-component := [a-zA-Z0-9] | [a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9]
bool is_domain_component(std::string_view s) {
    if (s.empty() || !is_alnum(s.front()) || !is_alnum(s.back())) return false;
    for (char c : s)
        if (!is_alnum(c) && c != '-') return false;
    return true;
}

// domain := host (":" port-number)?
// host   := domain-name | "[" IPv6address "]"   (IPv6address: [a-fA-F0-9:]+)
bool is_domain(std::string_view s) {
    std::string_view host = s;
    if (!s.empty() && s.front() == '[') {
        std::size_t close = s.find(']');
        if (close == std::string_view::npos || close == 1) return false;
        for (char c : s.substr(1, close - 1))
            if (!is_hex(c) && c != ':') return false;
        host = {};
        s.remove_prefix(close + 1);
    } else {
        std::size_t colon = s.find(':');
        host = s.substr(0, colon);
        s = colon == std::string_view::npos ? std::string_view{} : s.substr(colon);
        while (true) {
            std::size_t dot = host.find('.');
            if (!is_domain_component(host.substr(0, dot))) return false;
            if (dot == std::string_view::npos) break;
            host.remove_prefix(dot + 1);
        }
    }
    if (s.empty()) return true;
    if (s.front() != ':' || s.size() == 1) return false;
    for (char c : s.substr(1))
        if (c < '0' || c > '9') return false;
    return true;
}

// tag := [\w][\w.-]{0,127}
bool is_tag(std::string_view s) {
    if (s.empty() || s.size() > 128 || !is_word(s.front())) return false;
    for (char c : s)
        if (!is_word(c) && c != '.' && c != '-') return false;
    return true;
}

// digest := algorithm ":" [[:xdigit:]]{32,}
// algorithm := [A-Za-z][A-Za-z0-9]* ([-_+.][A-Za-z][A-Za-z0-9]*)*
bool matches_digest_grammar(std::string_view s) {
    std::size_t colon = s.find(':');
    if (colon == std::string_view::npos) return false;
    std::string_view alg = s.substr(0, colon), hex = s.substr(colon + 1);
    std::size_t i = 0;
    while (true) {
        if (i >= alg.size() || !((alg[i] >= 'a' && alg[i] <= 'z') || (alg[i] >= 'A' && alg[i] <= 'Z')))
            return false;
        while (i < alg.size() && is_alnum(alg[i])) ++i;
        if (i == alg.size()) break;
        char sep = alg[i++];
        if (sep != '-' && sep != '_' && sep != '+' && sep != '.') return false;
    }
    if (hex.size() < 32) return false;
    for (char c : hex)
        if (!is_hex(c)) return false;
    return true;
}

bool is_identifier(std::string_view s) {
    if (s.size() != 64) return false;
    for (char c : s)
        if (!is_lower_hex(c)) return false;
    return true;
}

bool has_upper(std::string_view s) {
    for (char c : s)
        if (c >= 'A' && c <= 'Z') return true;
    return false;
}

Error invalid(std::string_view text, const std::string& reason) {
    return Error{ErrorCode::Invalid, "image reference \"" + std::string(text) + "\": " + reason};
}

}  // namespace

std::string ImageReference::str() const {
    if (!digest.empty()) return name() + "@" + digest;
    return name() + ":" + tag;
}

std::string digest_error(std::string_view digest) {
    std::size_t colon = digest.find(':');
    if (colon == std::string_view::npos || colon == 0 || colon + 1 == digest.size())
        return "invalid digest format";
    std::string_view alg = digest.substr(0, colon), hex = digest.substr(colon + 1);
    std::size_t want = alg == "sha256" ? 64 : alg == "sha384" ? 96 : alg == "sha512" ? 128 : 0;
    if (want == 0)
        return matches_digest_grammar(digest) ? "unsupported digest algorithm" : "invalid digest format";
    if (hex.size() != want) return "invalid digest format";
    for (char c : hex)
        if (!is_lower_hex(c)) return "invalid digest format";
    return {};
}

bool is_sha256_digest(std::string_view digest) {
    return digest.size() == 71 && digest.substr(0, 7) == "sha256:" && is_identifier(digest.substr(7));
}

Result<ImageReference> normalize_image_reference(std::string_view text) {
    if (text.empty()) return invalid(text, "repository name must have at least one component");
    if (is_identifier(text)) return invalid(text, "cannot specify 64-byte hexadecimal strings");

    // Split name [":" tag] ["@" digest]; the digest has a ':' of its own.
    std::string_view rest = text, digest, tag;
    if (std::size_t at = rest.find('@'); at != std::string_view::npos) {
        digest = rest.substr(at + 1);
        rest = rest.substr(0, at);
        if (!matches_digest_grammar(digest)) return invalid(text, "invalid reference format");
    }
    std::size_t last_slash = rest.rfind('/');
    std::size_t colon = rest.rfind(':');
    if (colon != std::string_view::npos && (last_slash == std::string_view::npos || colon > last_slash)) {
        tag = rest.substr(colon + 1);
        rest = rest.substr(0, colon);
        if (!is_tag(tag)) return invalid(text, "invalid reference format");
    }

    // splitDockerDomain.
    ImageReference ref;
    std::size_t slash = rest.find('/');
    if (slash == std::string_view::npos) {
        ref.domain = "docker.io";
        ref.path = "library/" + std::string(rest);
    } else {
        std::string_view first = rest.substr(0, slash), remote = rest.substr(slash + 1);
        if (first == "localhost" || first.find_first_of(".:") != std::string_view::npos || has_upper(first)) {
            ref.domain = first == "index.docker.io" ? "docker.io" : std::string(first);
            ref.path = std::string(remote);
        } else {
            ref.domain = "docker.io";
            ref.path = std::string(rest);
        }
        if (ref.domain == "docker.io" && ref.path.find('/') == std::string::npos)
            ref.path = "library/" + ref.path;
    }
    if (has_upper(ref.path))
        return invalid(text,
                       "invalid reference format: repository name (" + ref.path + ") must be lowercase");
    if (!is_domain(ref.domain) || !is_path(ref.path)) return invalid(text, "invalid reference format");
    if (ref.name().size() > 255) return invalid(text, "repository name must not be more than 255 characters");
    if (!digest.empty()) {
        if (std::string why = digest_error(digest); !why.empty()) return invalid(text, why);
        ref.digest = std::string(digest);
    } else {
        ref.tag = tag.empty() ? "latest" : std::string(tag);
    }
    return ref;
}

}  // namespace daemonlet
