// What a pod that talks to the API server gets (issue 13 §3), as the
// ServiceAccount admission plugin (plugin/pkg/admission/serviceaccount) and
// the kubelet give it (Kubernetes 1.28 to 1.30):
// - the `kubernetes` Service's env (pkg/kubelet/envvars FromServices, for
//   the one service getServiceEnvVarMap always adds), pointing at the API
//   server the board itself uses: a board is usually outside the cluster's
//   Service network, so the Service's cluster IP would not reach it;
// - the kube-api-access-* projected volume (TokenVolumeSource) mounted in
//   every container (mountServiceAccountToken);
// - the token's refresh rule (pkg/kubelet/token/token_manager.go).
//
// Pure: times and names come in.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/model.h"
#include "core/result.h"

namespace daemonlet {

// serviceaccount.DefaultAPITokenMountPath.
inline constexpr const char* kServiceAccountMountPath = "/var/run/secrets/kubernetes.io/serviceaccount";
// ServiceAccountVolumeName + "-": the admission plugin's generateName.
inline constexpr const char* kApiAccessVolumePrefix = "kube-api-access-";
// serviceaccount.WarnOnlyBoundTokenExpirationSeconds.
inline constexpr std::int64_t kApiAccessTokenExpirationSeconds = 3607;
// The root-ca-cert-publisher's ConfigMap, in every namespace.
inline constexpr const char* kRootCAConfigMap = "kube-root-ca.crt";
inline constexpr const char* kRootCAKey = "ca.crt";

// The API server's host and port from its URL ("https://h:6443" ->
// {"h", 6443}; no port: 443; "[::1]" -> "::1"). An error names the URL.
Result<std::pair<std::string, int>> api_server_host_port(const std::string& server_url);

// envvars.FromServices for the `kubernetes` Service of the default
// namespace (one port, named https, TCP) at host:port:
// KUBERNETES_SERVICE_HOST, KUBERNETES_SERVICE_PORT,
// KUBERNETES_SERVICE_PORT_HTTPS and the Docker link variables
// (makeLinkVariables: KUBERNETES_PORT, KUBERNETES_PORT_<p>_TCP and its
// _PROTO, _PORT, _ADDR), sorted by name. getServiceEnvVarMap adds them
// whatever enableServiceLinks says.
std::vector<std::pair<std::string, std::string>> kubernetes_service_env(const std::string& host, int port);

// shouldAutomount, the pod's half: unless the pod template's
// automountServiceAccountToken is false (`daemonset`: the DaemonSet object
// as read, DaemonSet::object). Upstream also asks the ServiceAccount
// object, which a board does not read.
bool should_automount(const Json& daemonset);

// The admission plugin's volume name for the pod: kApiAccessVolumePrefix
// and 5 characters of utilrand's alphabet. Upstream draws them at random
// once, when the API server admits the pod; a board admits its pods itself
// at each start of the agent, so they come from the pod's uid and stay the
// same.
std::string api_access_volume_name(const std::string& pod_uid);

// TokenVolumeSource as a volume: projected, defaultMode 0644, a
// serviceAccountToken (path "token", expirationSeconds 3607, the API
// server's default audience), the kube-root-ca.crt ConfigMap's ca.crt as
// "ca.crt", and the downward API's metadata.namespace as "namespace".
Volume api_access_volume(const std::string& name);

// mountServiceAccountToken: every init and app container without a mount
// at kServiceAccountMountPath gets a read-only one of the pod's
// kube-api-access-* volume (an existing one, or `volume_name`, added when a
// container needs it). False when nothing changed.
bool mount_service_account_token(PodSpec& spec, const std::string& volume_name);

// What the projected volume plugin asks the TokenRequest API for (and the
// token manager's cache key, keyFunc, without a bound object: the board's
// pods are not in the API).
struct TokenRequestKey {
    std::string namespace_;
    std::string service_account;  // spec.serviceAccountName, defaulted to "default"
    std::string audience;         // "": the API server's own audiences
    std::int64_t expiration_seconds = 3600;
    auto operator<=>(const TokenRequestKey&) const = default;
};

// POST /api/v1/namespaces/NS/serviceaccounts/NAME/token's body:
// authentication.k8s.io/v1 TokenRequest, audiences only when one is given.
Json token_request_object(const TokenRequestKey& key);

// A token as the API server issued it (status.token,
// status.expirationTimestamp, spec.expirationSeconds as granted).
struct ServiceAccountToken {
    std::string token;
    std::int64_t expiration_seconds = 0;  // 0: unknown (never refreshed, as upstream)
    std::int64_t expiration_ms = 0;       // wall time
    bool operator==(const ServiceAccountToken&) const = default;
};

// The TokenRequest the API server answered; an error names the field.
Result<ServiceAccountToken> parse_token_request(const Json& response);

// RFC 3339 ("2026-11-26T14:00:00Z", a fraction or an offset allowed) as
// milliseconds since the epoch.
Result<std::int64_t> parse_rfc3339(const std::string& text);

// token_manager.go's maxTTL: a token older than a day is refreshed.
inline constexpr std::int64_t kTokenMaxTtlMs = 24LL * 3600 * 1000;

// requiresRefresh: true once the token is older than maxTTL less the
// jitter, or within 20% of its TTL plus the jitter of its expiry (issued at
// expiry - expirationSeconds). A token without expirationSeconds is never
// refreshed. The kubelet draws the jitter at random up to 10 s.
bool token_requires_refresh(const ServiceAccountToken& t, std::int64_t now_ms, std::int64_t jitter_ms);

// The earliest wall time at which token_requires_refresh turns true
// (INT64_MAX for a token without expirationSeconds).
std::int64_t token_refresh_due_ms(const ServiceAccountToken& t, std::int64_t jitter_ms);

// Where tokens come from (the agent's TokenRequest client and its cache).
class ServiceAccountTokenSource {
  public:
    virtual ~ServiceAccountTokenSource() = default;
    // The token for `key`, or why there is none ("failed to fetch token:
    // ...", the projected plugin's message).
    virtual Result<std::string> token(const TokenRequestKey& key) const = 0;
};

}  // namespace daemonlet
