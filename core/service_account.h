// What a pod that talks to the API server gets (issue 13 §3), as the
// ServiceAccount admission plugin (plugin/pkg/admission/serviceaccount) and
// the kubelet give it (Kubernetes 1.28 to 1.30):
// - the `kubernetes` Service's env (pkg/kubelet/envvars FromServices, for
//   the one service getServiceEnvVarMap always adds), pointing at the API
//   server the board itself uses: a board is usually outside the cluster's
//   Service network, so the Service's cluster IP would not reach it;
// - the kube-api-access-* projected volume (TokenVolumeSource) mounted in
//   every container (mountServiceAccountToken);
// - the token's refresh rule and cache key (pkg/kubelet/token/token_manager.go),
//   and its binding to the pod's Pod (pkg/volume/projected collectData)
//   while a board pod may have none yet or see it made again.
//
// Pure: times and names come in.
#pragma once

#include <cstdint>
#include <optional>
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

// The Pod a token is bound to: TokenRequest spec.boundObjectRef
// (apiVersion v1, kind Pod), its name and uid in the API. Empty (no uid):
// the token is not bound.
struct BoundPod {
    std::string name;
    std::string uid;
    bool empty() const { return uid.empty(); }
    auto operator<=>(const BoundPod&) const = default;
};

// What the projected volume plugin asks the TokenRequest API for, and the
// token manager's cache key (keyFunc: name, namespace, audiences,
// expirationSeconds, boundObjectRef). The kubelet always binds the token
// to the pod (projected.go collectData); a board binds it when the pod has
// a Pod in the API (apiServer.podStatus), else it is unbound: see
// PodTokenBinding.
struct TokenRequestKey {
    std::string namespace_;
    std::string service_account;  // spec.serviceAccountName, defaulted to "default"
    std::string audience;         // "": the API server's own audiences
    std::int64_t expiration_seconds = 3600;
    BoundPod bound;
    auto operator<=>(const TokenRequestKey&) const = default;
};

// POST /api/v1/namespaces/NS/serviceaccounts/NAME/token's body:
// authentication.k8s.io/v1 TokenRequest, audiences only when one is given,
// boundObjectRef {apiVersion: v1, kind: Pod, name, uid} when bound.
Json token_request_object(const TokenRequestKey& key);

// What a board pod's tokens are bound to. Upstream a pod is its Pod, whose
// uid never changes; a board pod runs before its Pod exists (offline, or
// until ApiPods has made or taken it) and may see it made again with
// another uid, so the agent keeps, per pod, the Pod its tokens are bound to
// now and the binding before (empty: unbound), whose token stays mounted
// until the new one is issued.
struct PodTokenBinding {
    BoundPod current;
    BoundPod previous;
    bool operator==(const PodTokenBinding&) const = default;
};

// The pod's Pod is `pod` (nullopt: none known now). A Pod first known, or
// one of another uid, binds the tokens to it, the binding before kept as
// `previous`; none known leaves the binding as it is (a Pod being made
// again: the tokens of the one before stay until then). `current_issued`:
// a token bound to `current` was issued; if none was, `previous` stays (the
// token mounted is still the one before, not one of a Pod that got none).
// True when it changed.
bool rebind_pod_tokens(PodTokenBinding& b, const std::optional<BoundPod>& pod, bool current_issued);

// The keys the pod's token for `unbound` is looked up by, in order: the
// binding in force, then the one it replaces (its token mounted until the
// first one's is issued). `bind_pods`: the pods have Pods in the API
// (podStatus on); off, the unbound token is in force and the pod's last
// bound one is the fallback.
std::vector<TokenRequestKey> token_lookup_keys(const TokenRequestKey& unbound, const PodTokenBinding& b,
                                               bool bind_pods);

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
    // The token for the pod `pod_uid`'s projection `key` (unbound: the
    // source binds it to the pod's Pod, token_lookup_keys), or why there is
    // none ("failed to fetch token: ...", the projected plugin's message).
    virtual Result<std::string> token(const std::string& pod_uid, const TokenRequestKey& key) const = 0;
};

}  // namespace daemonlet
