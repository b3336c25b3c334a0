// What a pod that talks to the API server gets from the cluster (issue 13
// §3): the ServiceAccount admission plugin's kube-api-access-* volume
// (core/service_account.h) and what fills it.
//
// - Tokens: the TokenRequest API (POST .../serviceaccounts/NAME/token),
//   unbound (the board's pods are not in the API), one per (namespace,
//   service account, audience, expirationSeconds) as the kubelet's token
//   manager caches them, refreshed by its rule (token_requires_refresh:
//   80% of the TTL, or a day) on a timer armed for the earliest refresh, a
//   failure retried with back-off (5 s doubling to 2 min). The token in
//   force is kept while a refresh fails, as upstream; and in the store, so
//   that a board that boots offline mounts the last one it had (upstream
//   has no cache across kubelet restarts).
// - The CA: the namespace's kube-root-ca.crt ConfigMap as the cluster has
//   it (GET, read with each token), else the kubeconfig's CA; kept in the
//   store too. Served as a ConfigMap for the volume's configMap source
//   (PodFacts::cluster_objects).
// - The admitted spec: each DaemonSet pod's spec with the volume mounted
//   (mount_service_account_token), made once per pod and revision.
// - The ConfigMaps and Secrets the pods reference that the manifest
//   directory does not define (issue 13 §2's cluster source), watched per
//   object as the kubelet's watch-based manager watches them
//   (configMapAndSecretChangeDetectionStrategy: Watch, its default;
//   pkg/kubelet/util/manager/watch_based_manager.go): for each, a
//   reflector (ClusterLink::watch) that lists its namespace's collection
//   with fieldSelector metadata.name=NAME, then watches it from the list's
//   resourceVersion with bookmarks, lists again on 410 Gone and backs off
//   on failures. Started when a pod first needs the object, stopped when no
//   live pod uses it (a pass after each pod leaves, and every minute), as
//   the manager's UnregisterPod stops it with the last pod; stopped too once
//   it is read immutable (immutable: true), as upstream. ADDED or MODIFIED
//   replaces it (the volumes are rewritten, waiting containers start); a
//   DELETED event or a complete list without it removes it, as a GET's 404
//   would. A failed list or watch keeps what was read. At most 250 objects
//   (HTTP/2 streams, 100 per connection at kube-apiserver's default; over
//   HTTP/1.1 each watch holds a connection of its own). Kept in the store
//   (an offline boot mounts them; their watches start again when the link
//   does); a Secret's values never reach a log.
//
// On the agent's loop; the requests go through ClusterLink::call. Tokens
// and CAs in api_access.cpp, the cluster's objects in api_objects.cpp.
#pragma once

#include <uv.h>

#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>

#include "agent/daemon/cluster_link.h"
#include "core/model.h"
#include "core/service_account.h"
#include "platform/clock.h"
#include "store/store.h"

namespace daemonlet::agent {

// A ConfigMap or Secret a pod references.
struct ObjectRef {
    bool secret = false;
    std::string namespace_;
    std::string name;
    auto operator<=>(const ObjectRef&) const = default;
};

class ApiAccess : public ServiceAccountTokenSource {
  public:
    // `changed`: a token or a CA changed (the agent rewrites the volumes and
    // starts the containers that waited for one).
    ApiAccess(uv_loop_t* loop, store::Store& store, const platform::Clock& clock,
              std::function<void()> changed);
    ApiAccess(const ApiAccess&) = delete;
    ApiAccess& operator=(const ApiAccess&) = delete;
    ~ApiAccess() override;

    // The tokens, CAs and objects as stored (an offline boot mounts them).
    void load();
    void close();

    // The link the requests go through (nullptr: none, `why_not` says why)
    // and the kubeconfig's CA.
    void set_link(ClusterLink* link, std::string why_not);
    // What the live pods use: tokens refreshed (others dropped once they
    // would need a refresh), objects watched (others' watches stopped and
    // the objects dropped).
    struct Wanted {
        std::set<TokenRequestKey> tokens;
        std::set<ObjectRef> objects;
    };
    void set_wanted(std::function<Wanted()> wanted) { wanted_ = std::move(wanted); }

    // A pod is about to start with these: what is missing is asked for now.
    void need(const std::set<TokenRequestKey>& keys);
    void need_objects(const std::set<ObjectRef>& refs);
    // Every ConfigMap and Secret the pod's spec references (volumes,
    // projected sources, env, envFrom; kube-root-ca.crt is read as the
    // token volumes' CA is).
    static std::set<ObjectRef> refs_of(const std::string& ns, const PodSpec& spec);

    // ServiceAccountTokenSource: the token in force, even expired (the
    // board departs: an offline board mounts what it has), or "failed to
    // fetch token: <why>".
    Result<std::string> token(const TokenRequestKey& key) const override;
    // kube-root-ca.crt per namespace needed so far, and the objects read.
    const ConfigObjects& objects() const { return objects_; }

    // The pod's spec as the ServiceAccount admission plugin leaves it
    // (`automount`: should_automount of its DaemonSet).
    std::shared_ptr<const PodSpec> admitted(const std::string& uid,
                                            const std::shared_ptr<const PodSpec>& spec, bool automount);
    // The pod is gone: the objects no live pod uses any more are dropped
    // (and their watches stopped) at the next pass, a second later.
    void forget(const std::string& uid);
    // True the first time for the pod: the agent then says it starts without
    // a token (no API server configured, or none answered yet).
    bool first_without_cluster(const std::string& uid) { return said_no_cluster_.insert(uid).second; }

    // For `daemonlet status`: each token's key, expiry and last error, each
    // object read from the cluster and its last error (never a value).
    Json status() const;

    // The keys a pod's (admitted) spec asks tokens for.
    static std::set<TokenRequestKey> keys_of(const std::string& ns, const PodSpec& spec);

  private:
    struct Entry {
        std::optional<ServiceAccountToken> token;
        bool inflight = false;
        std::int64_t inflight_since_ms = 0;
        std::int64_t retry_at_ms = 0;  // monotonic; 0: no failure
        std::int64_t backoff_ms = 0;
        std::string last_error;
        std::uint64_t fetches = 0;
    };
    void fetch(const TokenRequestKey& key, Entry& e);
    void on_token(const TokenRequestKey& key, Result<platform::HttpResponse> r);
    void fetch_root_ca(const std::string& ns);
    void set_root_ca(const std::string& ns, const std::string& pem, bool from_cluster);
    // api_objects.cpp: the ConfigMaps and Secrets from the cluster.
    struct ObjectEntry;
    void refresh_objects(const std::set<ObjectRef>& wanted);
    void watch_object(const ObjectRef& ref, ObjectEntry& e);
    void on_object_changes(const ObjectRef& ref, ReflectorChanges&& ch);
    void object_read(const ObjectRef& ref, ObjectEntry& e, Json object);
    void object_gone(const ObjectRef& ref, ObjectEntry& e);
    // Decodes and takes a ConfigMap or Secret as read; true when it changed.
    bool take_object(const ObjectRef& ref, const Json& object);
    void refresh();
    void arm();
    void save();

    // A request the link abandoned (closed by a reload) never calls back:
    // after this long it counts as gone.
    static constexpr std::int64_t kInflightMaxMs = 90'000;

    uv_loop_t* loop_;
    store::Store& store_;
    const platform::Clock& clock_;
    std::function<void()> changed_;
    std::function<Wanted()> wanted_;
    ClusterLink* link_ = nullptr;
    std::string why_no_link_;
    uv_timer_t* timer_ = nullptr;
    std::map<TokenRequestKey, Entry> tokens_;
    ConfigObjects objects_;  // kube-root-ca.crt by namespace
    std::map<std::string, bool>
        ca_from_cluster_;  // namespace -> read from the cluster (else the kubeconfig's)
    std::set<std::string> ca_inflight_;
    std::set<std::string> ca_said_;
    struct Admitted {
        std::shared_ptr<const PodSpec> source;
        std::shared_ptr<const PodSpec> spec;
    };
    std::map<std::string, Admitted> admitted_;  // by pod uid
    struct ObjectEntry {
        ClusterLink::WatchId watch = 0;  // 0: not watched (no link, or immutable)
        bool immutable = false;          // read immutable: not watched again
        std::string last_error;          // of its watch; "" once it watches again
        Json object;                     // as read (data included), for the store
    };
    std::map<ObjectRef, ObjectEntry> cluster_objects_;
    bool said_object_bound_ = false;
    bool objects_sweep_due_ = false;  // a pod left: drop what no pod uses, soon
    std::set<std::string> said_no_cluster_;
    std::string saved_;    // what the store has (compare-then-write)
    bool loaded_ = false;  // load() is over: changes are the agent's to act on
};

}  // namespace daemonlet::agent
