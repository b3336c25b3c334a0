// What a pod that talks to the API server gets from the cluster (issue 13
// §3): the ServiceAccount admission plugin's kube-api-access-* volume
// (core/service_account.h) and what fills it.
//
// - Tokens: the TokenRequest API (POST .../serviceaccounts/NAME/token),
//   one per (namespace, service account, audience, expirationSeconds,
//   boundObjectRef) as the kubelet's token manager caches them (keyFunc),
//   refreshed by its rule (token_requires_refresh: 80% of the TTL, or a
//   day) on a timer armed for the earliest refresh, a failure retried with
//   back-off (5 s doubling to 2 min). The token in force is kept while a
//   refresh fails, as upstream; and in the store, so that a board that
//   boots offline mounts the last one it had (upstream has no cache across
//   kubelet restarts).
// - Binding: the kubelet binds every token to its pod (boundObjectRef
//   kind Pod, name, uid). A pod of a cluster DaemonSet whose Pod the agent
//   keeps (apiServer.podStatus, api_pods.h) gets tokens bound to that Pod
//   (bind(), from the Pod ApiPods made or took), the binding kept in the
//   store with the tokens; a new uid (the Pod made again) gets new tokens.
//   A pod without a Pod in the API gets unbound tokens, a departure: with
//   podStatus off, before its Pod is made (the first start, an offline
//   boot of a pod never bound), and always for static pods and manifest
//   files' DaemonSet pods, whose mirror pods may not reference a service
//   account (the ServiceAccount admission plugin forbids it, so the API
//   server would refuse a token bound to one). A pod whose binding changes
//   keeps its token mounted until the new one is issued, then the volume
//   is rewritten in place as for a refresh (core token_lookup_keys); the
//   container keeps running. A pod gone drops its bound tokens
//   (DeleteServiceAccountToken).
// - The CA: the namespace's kube-root-ca.crt ConfigMap as the cluster has
//   it (watched per namespace as the objects below are, while a pod of
//   the namespace needs it), else the kubeconfig's CA; kept in the store
//   too. Served as a ConfigMap for the volume's configMap source
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
#include <vector>

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

    // The pods have Pods in the API (podStatus on): their tokens are bound
    // to them.
    void set_bind_pods(bool on) { bind_pods_ = on; }
    // The pod `pod_uid`'s Pod in the API is `pod`: its tokens are bound to
    // it from now on (core rebind_pod_tokens). True when that changed: the
    // agent then asks for its tokens (need).
    bool bind(const std::string& pod_uid, const BoundPod& pod);
    // A pod is about to start with these (unbound, keys_of): what is
    // missing is asked for now, bound as the pod's tokens are.
    void need(const std::string& pod_uid, const std::set<TokenRequestKey>& keys);
    // The keys the pod's tokens are kept and refreshed under: the binding in
    // force, and the one it replaces while the new token is not issued.
    std::set<TokenRequestKey> wanted_keys(const std::string& pod_uid,
                                          const std::set<TokenRequestKey>& keys) const;
    void need_objects(const std::set<ObjectRef>& refs);
    // Every ConfigMap and Secret the pod's spec references (volumes,
    // projected sources, env, envFrom; kube-root-ca.crt is read as the
    // token volumes' CA is).
    static std::set<ObjectRef> refs_of(const std::string& ns, const PodSpec& spec);

    // ServiceAccountTokenSource: the pod's token in force, even expired (the
    // board departs: an offline board mounts what it has), or "failed to
    // fetch token: <why>".
    Result<std::string> token(const std::string& pod_uid, const TokenRequestKey& key) const override;
    // kube-root-ca.crt per namespace needed so far, and the objects read.
    const ConfigObjects& objects() const { return objects_; }

    // The pod's spec as the ServiceAccount admission plugin leaves it
    // (`automount`: should_automount of its DaemonSet).
    std::shared_ptr<const PodSpec> admitted(const std::string& uid,
                                            const std::shared_ptr<const PodSpec>& spec, bool automount);
    // The pod is gone: the objects no live pod uses any more are dropped
    // (and their watches stopped) at the next pass, a second later.
    void forget(const std::string& uid);
    // forget() for each pod with a binding that is not in `live` (gone
    // while no agent ran): at start, after adoption.
    void sweep(const std::set<std::string>& live);
    // True the first time for the pod: the agent then says it starts without
    // a token (no API server configured, or none answered yet).
    bool first_without_cluster(const std::string& uid) { return said_no_cluster_.insert(uid).second; }

    // For `daemonlet status`: each token's key, expiry and last error, each
    // object read from the cluster and its last error (never a value).
    Json status() const;

    // The keys a pod's (admitted) spec asks tokens for, unbound.
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
    // The token issued under `key` (even expired), or none.
    const ServiceAccountToken* issued(const TokenRequestKey& key) const;
    // token_lookup_keys for the pod's binding.
    std::vector<TokenRequestKey> lookup_keys(const std::string& pod_uid, const TokenRequestKey& key) const;
    void fetch(const TokenRequestKey& key, Entry& e);
    void on_token(const TokenRequestKey& key, Result<platform::HttpResponse> r);
    // The namespace's kube-root-ca.crt, watched as the kubelet's
    // watch-based manager watches the kube-api-access volume's configMap
    // source (its rotation reaches the volumes), while a pod of the
    // namespace has a token or references it (sync_root_ca_watches, each
    // refresh pass).
    void watch_root_ca(const std::string& ns);
    void sync_root_ca_watches(const Wanted& wanted);
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
    std::map<std::string, ClusterLink::WatchId> ca_watches_;  // namespace -> its kube-root-ca.crt's
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
    bool bind_pods_ = false;
    std::map<std::string, PodTokenBinding> bindings_;  // by pod uid (stored)
    std::string saved_;                                // what the store has (compare-then-write)
    bool loaded_ = false;                              // load() is over: changes are the agent's to act on
};

}  // namespace daemonlet::agent
