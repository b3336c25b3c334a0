// The pure half of a registry client (OCI distribution spec, Docker
// registry HTTP API v2): which host serves a reference's domain, the
// manifest media types a pull accepts, the WWW-Authenticate challenges a
// registry answers 401 with, the bearer token request they ask for, and
// the credentials a Docker config.json-style file holds for a registry.
// The HTTP exchange itself is platform/image/registry_client.cpp's.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"

namespace daemonlet {

// The host (host[:port]) that serves `domain`'s API: docker.io is served by
// registry-1.docker.io (distribution/reference's DefaultDomain and the
// Docker client's DefaultRegistryHost), every other domain by itself.
std::string registry_api_host(const std::string& domain);

// The Accept header of a manifest GET: OCI index and manifest, Docker
// manifest list and v2 schema 2 manifest (what containerd's resolver sends).
std::string manifest_accept_header();

// One challenge of a WWW-Authenticate header (RFC 7235): the scheme in
// lower case ("basic", "bearer") and its parameters, names in lower case.
struct AuthChallenge {
    std::string scheme;
    std::map<std::string, std::string> params;
    bool operator==(const AuthChallenge&) const = default;
};

// Parses a WWW-Authenticate header value as distribution's
// registry/client/auth/challenge/authchallenge.go does (parseValueAndParams:
// a token, then name=value pairs whose value is a token or a quoted string
// with backslash escapes, separated by commas), extended to several
// challenges in one header (RFC 7235 section 4.1). A malformed parameter
// ends its challenge, as upstream's parser stops there; an empty or
// schemeless header gives none.
std::vector<AuthChallenge> parse_www_authenticate(std::string_view header);

// The URL of a bearer token request for `challenge` (realm, with service
// and scope as query parameters, as distribution's
// registry/client/auth/session.go fetchToken and Docker's token
// specification ask). Error when the challenge has no http(s) realm.
Result<std::string> bearer_token_url(const AuthChallenge& challenge, const std::string& scope);

// The token of a token server's JSON answer: "token", or "access_token"
// (OAuth 2), as session.go's getToken accepts. Error when neither is there.
Result<std::string> parse_token_response(std::string_view json);

// The pull scope of a repository: "repository:<path>:pull".
std::string pull_scope(const std::string& repository_path);

// What a Docker config.json-style file holds for one registry:
//   {"auths": {"host:port": {"auth": base64("user:pass")}}} or
//   {"auths": {"host:port": {"username": "u", "password": "p"}}}
// `auth` is left encoded (the caller decodes it: base64 needs libcrypto,
// which core does not link); split_basic_auth splits it once decoded.
struct RegistryAuthEntry {
    std::string key;  // the auths key that matched, for messages (never the secret)
    std::string auth;
    std::string username;
    std::string password;
};

// The entry of `config_json` for the registry `host` (host[:port], as
// registry_api_host or the reference's domain gives it). Keys are matched
// as kubelet's credentialprovider keyring reads /var/lib/kubelet/config.json
// (pkg/credentialprovider/keyring.go parseSchemelessURL, URLsMatch): a
// scheme and a path are ignored ("https://host:5000/v1/" is host:5000),
// the host and port must be equal, and a "*." label matches one label. The
// Docker Hub's names (docker.io, index.docker.io, registry-1.docker.io,
// https://index.docker.io/v1/) are one registry. None when no key matches;
// an error naming `what` and the field when the document is malformed.
Result<std::optional<RegistryAuthEntry>> find_registry_auth(std::string_view config_json,
                                                            const std::string& host, const std::string& what);

// "user:pass" -> {user, pass}, split at the first colon (a password may
// hold colons; RFC 7617). Error when there is no colon.
Result<std::pair<std::string, std::string>> split_basic_auth(std::string_view decoded);

}  // namespace daemonlet
