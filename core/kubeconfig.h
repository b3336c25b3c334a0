// Where the Kubernetes API server is and how to authenticate to it: a
// kubeconfig file (client-go's clientcmd, v1 Config) or the in-cluster
// service account (rest.InClusterConfig). Pure: the caller reads the files
// and the environment; certificate and key contents stay as the file gives
// them (-data fields base64, as in the file) for the HTTP layer to decode.
#pragma once

#include <string>
#include <string_view>

#include "core/result.h"

namespace daemonlet {

struct ApiEndpoint {
    std::string server;  // "https://host:port" (no trailing slash)
    std::string context;
    std::string namespace_;  // the context's namespace, "" when none

    // TLS: the server's CA (a file, or PEM bytes base64-encoded as in the
    // kubeconfig), the name to verify, or no verification at all.
    std::string certificate_authority;
    std::string certificate_authority_data;
    std::string tls_server_name;
    bool insecure_skip_tls_verify = false;

    // Authentication: a client certificate, a bearer token (inline or a
    // file re-read as it rotates), or basic credentials.
    std::string client_certificate;
    std::string client_certificate_data;
    std::string client_key;
    std::string client_key_data;
    std::string token;
    std::string token_file;
    std::string username;
    std::string password;
};

// Parses a kubeconfig, selects `context` (or current-context when empty) and
// returns its cluster and user. Relative paths are resolved against
// `base_dir` (the kubeconfig's directory), as clientcmd's ResolveLocalPaths.
// Errors name the file, the field path and the reason; what daemonlet
// cannot do (exec and auth-provider plugins) is an error too, rather than a
// silent anonymous connection.
Result<ApiEndpoint> parse_kubeconfig(std::string_view text, const std::string& file,
                                     const std::string& base_dir, const std::string& context = {});

// The in-cluster configuration (rest.InClusterConfig): the server from
// KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT (an IPv6 host is
// bracketed), the service account's token file and CA file.
inline constexpr char kServiceAccountDir[] = "/var/run/secrets/kubernetes.io/serviceaccount";
Result<ApiEndpoint> in_cluster_endpoint(const std::string& host, const std::string& port,
                                        const std::string& service_account_dir = kServiceAccountDir);

}  // namespace daemonlet
