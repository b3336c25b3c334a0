// A blocking client of one registry (OCI distribution spec, Docker
// registry HTTP API v2) over libcurl's easy interface, for daemonlet-image
// only: the agent never links it (it runs `daemonlet-image pull` as a child,
// as it runs imports). Answers 401 as distribution's client does: the
// WWW-Authenticate challenge (core/registry_auth.h) says Basic (the
// credentials are sent) or Bearer (a token is fetched from the realm, with
// the credentials when there are some, and the request is made again).
//
// TLS: the system's CAs plus, Docker's convention, <certsDir>/<host:port>/
// ca.crt (and client.cert / client.key when there); plain HTTP only for a
// registry listed as insecure. Redirects (blob storage) are followed, to
// http(s) only; credentials are never sent to another host.
//
// Error codes, for the agent's messages: "unauthorized" (401/403 after the
// credentials), "not_found" (404), "unreachable" (no connection, a timeout,
// 502/503/504), "certificate" (TLS verification), "invalid" (what the
// registry sent is wrong), "pull_failed" (anything else). Messages name the
// registry and the URL's path, never a credential.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/result.h"

namespace daemonlet::platform {

struct RegistryOptions {
    std::string auth_file;                         // Docker config.json-style; empty: anonymous
    std::string certs_dir;                         // <dir>/<host:port>/ca.crt; empty: system CAs only
    std::vector<std::string> insecure_registries;  // host[:port] spoken to over plain HTTP
};

struct RegistryResponse {
    long status = 0;
    std::string content_type;
    std::string docker_content_digest;
};

class RegistryClient {
  public:
    // For the registry of reference domain `domain` ("docker.io",
    // "127.0.0.1:5000"). Reads the credentials now (the auth file's
    // permissions checked as the kubeconfig's are).
    static Result<RegistryClient> open(const std::string& domain, const std::string& repository,
                                       const RegistryOptions& options);

    // GET <base>/v2/<repository>/<path> into `body` (at most max_bytes).
    Result<RegistryResponse> get_to_string(const std::string& path, const std::string& accept,
                                           std::string& body, std::size_t max_bytes);
    // GET into the file `file` (created), at most max_bytes; `sha256` is the
    // content's digest as it streamed by.
    Result<RegistryResponse> get_to_file(const std::string& path, const std::string& file,
                                         std::int64_t max_bytes, std::string& sha256);

    const std::string& host() const { return host_; }  // the API host, for messages
    // Warnings to pass on (an auth file readable by others).
    const std::vector<std::string>& warnings() const { return warnings_; }

  private:
    RegistryClient() = default;
    struct Sink;
    Result<RegistryResponse> get(const std::string& path, const std::string& accept, Sink& sink);
    Result<RegistryResponse> attempt(const std::string& url, const std::string& accept, Sink& sink,
                                     bool with_auth, std::string* challenge);
    Status authenticate(const std::string& challenge_header);

    std::string domain_, host_, base_, repository_;
    std::string ca_file_, cert_file_, key_file_;
    std::optional<std::pair<std::string, std::string>> credentials_;
    std::string bearer_;
    bool basic_ = false;
    std::vector<std::string> warnings_;
};

}  // namespace daemonlet::platform
