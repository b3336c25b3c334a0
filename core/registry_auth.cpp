#include "core/registry_auth.h"

#include <cctype>

#include "core/json.h"
#include "core/oci_image.h"
#include "core/reflector.h"

namespace daemonlet {

namespace {

bool is_docker_hub(std::string_view host) {
    return host == "docker.io" || host == "index.docker.io" || host == "registry-1.docker.io";
}

char lower(char c) { return static_cast<char>(std::tolower(static_cast<unsigned char>(c))); }

std::string lowered(std::string_view s) {
    std::string out(s);
    for (char& c : out) c = lower(c);
    return out;
}

// RFC 7230 tchar.
bool is_token_char(char c) {
    return std::isalnum(static_cast<unsigned char>(c)) ||
           std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
}

struct Cursor {
    std::string_view s;
    std::size_t i = 0;
    void skip_space() {
        while (i < s.size() && (s[i] == ' ' || s[i] == '\t')) ++i;
    }
    bool at(char c) {
        skip_space();
        return i < s.size() && s[i] == c;
    }
    std::string token() {
        skip_space();
        std::size_t start = i;
        while (i < s.size() && is_token_char(s[i])) ++i;
        return std::string(s.substr(start, i - start));
    }
    // A quoted string (the opening quote at i), backslash escapes undone.
    std::optional<std::string> quoted() {
        std::string out;
        for (++i; i < s.size(); ++i) {
            if (s[i] == '"') {
                ++i;
                return out;
            }
            if (s[i] == '\\' && i + 1 < s.size()) ++i;
            out += s[i];
        }
        return std::nullopt;
    }
};

// An auths key as a host[:port]: scheme and path dropped, lower case
// (keyring.go parseSchemelessURL).
std::string key_host(std::string_view key) {
    if (auto scheme = key.find("://"); scheme != std::string_view::npos) key.remove_prefix(scheme + 3);
    if (auto slash = key.find('/'); slash != std::string_view::npos) key = key.substr(0, slash);
    return lowered(key);
}

// keyring.go URLsMatch on hosts: equal ports, then label by label with
// "*" matching one label.
bool hosts_match(const std::string& pattern, const std::string& host) {
    if (is_docker_hub(pattern) && is_docker_hub(host)) return true;
    auto split = [](const std::string& h) {
        std::string name = h, port;
        if (auto colon = h.rfind(':');
            colon != std::string::npos && h.find(']', colon) == std::string::npos) {
            name = h.substr(0, colon);
            port = h.substr(colon + 1);
        }
        return std::pair{name, port};
    };
    auto [pname, pport] = split(pattern);
    auto [hname, hport] = split(host);
    if (pport != hport) return false;
    std::size_t a = 0, b = 0;
    while (true) {
        std::size_t ae = pname.find('.', a), be = hname.find('.', b);
        std::string pl = pname.substr(a, ae == std::string::npos ? std::string::npos : ae - a);
        std::string hl = hname.substr(b, be == std::string::npos ? std::string::npos : be - b);
        if (pl != "*" && pl != hl) return false;
        if ((ae == std::string::npos) != (be == std::string::npos)) return false;
        if (ae == std::string::npos) return true;
        a = ae + 1;
        b = be + 1;
    }
}

}  // namespace

std::string registry_api_host(const std::string& domain) {
    return is_docker_hub(domain) ? "registry-1.docker.io" : domain;
}

std::string manifest_accept_header() {
    std::string out;
    for (std::string_view t : {media_type::kOciIndex, media_type::kOciManifest,
                               media_type::kDockerManifestList, media_type::kDockerManifest})
        out += (out.empty() ? "" : ", ") + std::string(t);
    return out;
}

std::vector<AuthChallenge> parse_www_authenticate(std::string_view header) {
    std::vector<AuthChallenge> out;
    Cursor c{header};
    while (true) {
        while (c.at(',')) ++c.i;
        std::string scheme = c.token();
        if (scheme.empty()) return out;
        AuthChallenge ch{lowered(scheme), {}};
        // Parameters until the next scheme (a token not followed by '=').
        while (true) {
            c.skip_space();
            std::size_t mark = c.i;
            std::string name = c.token();
            if (name.empty() || !c.at('=')) {
                c.i = mark;
                break;
            }
            ++c.i;
            std::optional<std::string> value;
            if (c.at('"'))
                value = c.quoted();
            else
                value = c.token();
            if (!value) {  // an unterminated quote ends the header
                out.push_back(std::move(ch));
                return out;
            }
            ch.params[lowered(name)] = *value;
            if (!c.at(',')) break;
            ++c.i;
        }
        out.push_back(std::move(ch));
        c.skip_space();
        // Anything but the start of another challenge ends the header.
        if (c.i < c.s.size() && !is_token_char(c.s[c.i])) return out;
    }
}

Result<std::string> bearer_token_url(const AuthChallenge& challenge, const std::string& scope) {
    auto realm = challenge.params.find("realm");
    if (realm == challenge.params.end() || realm->second.empty())
        return Error{ErrorCode::Invalid, "the registry's Bearer challenge has no realm"};
    const std::string& r = realm->second;
    if (r.rfind("https://", 0) != 0 && r.rfind("http://", 0) != 0)
        return Error{ErrorCode::Invalid, "the registry's Bearer realm \"" + r + "\" is not an http(s) URL"};
    std::string url = r + (r.find('?') == std::string::npos ? "?" : "&");
    bool first = true;
    if (auto service = challenge.params.find("service"); service != challenge.params.end()) {
        url += "service=" + query_escape(service->second);
        first = false;
    }
    if (!scope.empty()) url += std::string(first ? "" : "&") + "scope=" + query_escape(scope);
    return url;
}

Result<std::string> parse_token_response(std::string_view json) {
    Json j = Json::parse(json, nullptr, false);
    if (!j.is_object()) return Error{ErrorCode::Invalid, "the token server's answer is not a JSON object"};
    for (const char* key : {"token", "access_token"})
        if (j.contains(key) && j[key].is_string() && !j[key].get<std::string>().empty())
            return j[key].get<std::string>();
    return Error{ErrorCode::Invalid,
                 "the token server's answer has no token (neither token nor access_token)"};
}

std::string pull_scope(const std::string& repository_path) {
    return "repository:" + repository_path + ":pull";
}

Result<std::optional<RegistryAuthEntry>> find_registry_auth(std::string_view config_json,
                                                            const std::string& host,
                                                            const std::string& what) {
    Json j = Json::parse(config_json, nullptr, false);
    if (!j.is_object()) return Error{ErrorCode::Invalid, what + ": not a JSON object"};
    if (!j.contains("auths")) return std::optional<RegistryAuthEntry>{};
    if (!j["auths"].is_object())
        return Error{ErrorCode::Invalid, what + ": auths: expected an object of registries"};
    const std::string want = lowered(host);
    // An exact key wins over a wildcard one.
    std::optional<RegistryAuthEntry> found;
    bool exact = false;
    for (auto it = j["auths"].begin(); it != j["auths"].end(); ++it) {
        const std::string h = key_host(it.key());
        if (!hosts_match(h, want)) continue;
        const std::string field = what + ": auths[" + it.key() + "]";
        const Json& v = it.value();
        if (!v.is_object()) return Error{ErrorCode::Invalid, field + ": expected an object"};
        RegistryAuthEntry e{it.key(), "", "", ""};
        for (auto [name, target] : {std::pair{"auth", &e.auth}, std::pair{"username", &e.username},
                                    std::pair{"password", &e.password}}) {
            if (!v.contains(name)) continue;
            if (!v[name].is_string())
                return Error{ErrorCode::Invalid, field + "." + name + ": expected a string"};
            *target = v[name].get<std::string>();
        }
        if (e.auth.empty() && e.username.empty())
            return Error{ErrorCode::Invalid, field + ": neither auth nor username is set"};
        const bool is_exact = h.find('*') == std::string::npos;
        if (!found || (is_exact && !exact)) {
            found = std::move(e);
            exact = is_exact;
        }
    }
    return found;
}

Result<std::pair<std::string, std::string>> split_basic_auth(std::string_view decoded) {
    auto colon = decoded.find(':');
    if (colon == std::string_view::npos)
        return Error{ErrorCode::Invalid, "auth: the decoded value is not \"username:password\""};
    return std::pair{std::string(decoded.substr(0, colon)), std::string(decoded.substr(colon + 1))};
}

}  // namespace daemonlet
