// The agent's link to the Kubernetes API server: the reflectors that follow
// the cluster's DaemonSets (one per followed namespace, or one for all) and,
// with nodeFromCluster, the board's own Node object; the heartbeat Lease;
// the Events queue. Everything runs on the agent's libuv loop through
// platform::ApiHttpClient (mbed TLS; HTTP/2 streams of one connection when
// the server takes h2, else HTTP/1.1 with kept-alive connections, one per
// request in flight: a watch holds its own); the decisions (what to
// request next, back-off, what changed, connected or not) are core's
// Reflector and Connectivity.
//
//   Reflector.begin --> ApiHttpClient GET (list page | streamed watch)
//     --> WatchDecoder --> Reflector.on_* --> hooks.daemonsets / hooks.node
//   every 10 s: Lease GET/POST/PUT; then queued Events, oldest first
//   podStatus: a reflector of the Pods bound to the node --> hooks.pods
//     (not part of the link's health)
//   watch(): a reflector of one object for another component (the
//     ConfigMaps and Secrets the pods use, api_access.h) --> its callback
//     (not part of the link's health either)
//   registerNode, every 10 s: the Node's status from hooks.node_status;
//     posted (GET, then PATCH of nodes/NAME/status) when it changed, every
//     5 min, and at once on reconnecting; POST when the Node is absent
//     (cluster_node.cpp, core/node_status.h)
//   health (all reflectors synced and not failing, Lease renewed)
//     --> Connectivity (hysteresis) --> hooks.link on a change
//
// Credentials: the kubeconfig's (or the service account's) token, token
// file (re-read every minute, as client-go does, so rotation works), client
// certificate and key, CA: files read with their permissions checked
// (platform/http/credentials.h). Neither tokens nor keys reach a log.
#pragma once

#include <uv.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "core/cluster_report.h"
#include "core/config.h"
#include "core/connectivity.h"
#include "core/kubeconfig.h"
#include "core/node_status.h"
#include "core/reflector.h"
#include "platform/clock.h"
#include "platform/http/api_http_client.h"

namespace daemonlet::agent {

// kubelet's nodeStatusUpdateFrequency: how often the status is computed
// (and posted when it changed; core status_report_due).
inline constexpr std::uint64_t kNodeStatusUpdateMs = 10'000;

// A new Event's `unique` (core new_event_name): a counter of the process,
// started at random, so that names differ within a millisecond and across
// restarts.
std::uint32_t event_name_unique();

// "HTTP 403: daemonsets.apps is forbidden: ..." from a Status body, bounded.
std::string describe_status(long status, const std::string& body);

struct ClusterHooks {
    // A DaemonSet reflector's changes; `scope` is the namespace it follows
    // ("" for all), which bounds what a replace removes.
    std::function<void(const std::string& scope, ReflectorChanges&&)> daemonsets;
    // The Node reflector's changes (nodeFromCluster).
    std::function<void(ReflectorChanges&&)> node;
    // podStatus: the changes of the Pods bound to this node
    // (fieldSelector spec.nodeName=<node>, api_pods.h).
    std::function<void(ReflectorChanges&&)> pods;
    std::function<void(LinkState)> link;
    // registerNode: the Node's uid became known or changed (read or
    // created): mirror Pods name it as their owner.
    std::function<void()> node_uid;
    // registerNode: the board's status now (measured when called), and the
    // Node it registers (make_local_node's object: automatic labels,
    // nodeLabels, registerWithTaints).
    std::function<NodeStatusInput()> node_status;
    std::function<Json()> node_object;
    // The queue of Events changed (`queued`: an Event was added), for the
    // agent to keep it in the store (QueuedEvents, queued_events.h).
    std::function<void(bool queued)> events_changed;
};

class ClusterLink {
  public:
    // Resolves the endpoint (kubeconfig or in-cluster) and reads the
    // credentials; an error names the file and the reason.
    // Time is read from `clock` only.
    static Result<std::unique_ptr<ClusterLink>> create(
        uv_loop_t* loop, const ApiServerConfig& config, const std::string& node_name, ClusterHooks hooks,
        const platform::Clock& clock = platform::system_clock());
    ClusterLink(const ClusterLink&) = delete;
    ClusterLink& operator=(const ClusterLink&) = delete;
    ~ClusterLink();

    void start();
    void close();  // cancels every request and closes the handles; idempotent

    // Queues an Event for the cluster; sent (in order) while connected. One
    // without a name gets one (new_event_name).
    void add_event(ClusterEvent ev);
    // A step of the wall clock (core/wall_clock.h): the queued Events' and
    // the Lease's times move with it.
    void rebase_wall_times(const WallStep& step);
    // What is still queued (to keep across an agent restart).
    const std::deque<ClusterEvent>& queued_events() const { return events_.items(); }
    // The seq its next Event gets, and (a link taking over a closed link's
    // queue) never below `seq`.
    std::int64_t next_event_seq() const { return events_.next_seq(); }
    void continue_event_seqs(std::int64_t seq) { events_.continue_seqs(seq); }

    LinkState state() const { return link_.state(); }
    // Whether state() is a verdict (core/connectivity.h): false from the
    // link's start until it connects or has failed for the down threshold.
    bool judged() const { return link_.judged(); }
    // One request of another component (api_pods.h) to the link's server,
    // with its credentials, counted in its requests and bytes; `done` is
    // called once, unless the link closes first. An error when it cannot be
    // sent (then `done` is never called).
    Result<platform::ApiHttpClient::RequestId> request(
        const std::string& method, const std::string& target, std::string body,
        std::function<void(Result<platform::HttpResponse>)> done);
    // For the agent's metrics (metrics.h): counts since the link started.
    struct Counts {
        // Of the link's own reflectors (DaemonSets, Node, Pods), not of the
        // objects' watches (watch()).
        std::uint64_t relists = 0;         // first pages of a list (each follower's first list too)
        std::uint64_t watch_restarts = 0;  // watches begun after a follower's first one
        std::uint64_t events_sent = 0;
        std::uint64_t events_dropped = 0;
        std::size_t events_queued = 0;
    };
    Counts counts() const {
        return {relists_, watch_restarts_, events_sent_, events_.dropped(), events_.size()};
    }
    // For `daemonlet status` and the STATUS= line.
    Json status() const;
    const std::string& server() const { return endpoint_.server; }
    // registerNode: the Node's metadata.uid as last read or created (the
    // owner of the board's mirror pods); "" before.
    const std::string& node_uid() const { return node_uid_; }

    // cluster_api.cpp: one request of the agent's own (a TokenRequest, a
    // ConfigMap's GET: api_access.h) with the link's endpoint and
    // credentials, whatever the link's state. `done` is called once, on the
    // loop, unless the link closes first; false when it is closed.
    using ApiDone = std::function<void(Result<platform::HttpResponse>)>;
    bool call(const std::string& method, const std::string& target, std::string body, ApiDone done);
    // The CA the kubeconfig (or the in-cluster configuration) gives, PEM;
    // "" when it names none.
    const std::string& ca_pem() const { return tls_.ca_pem; }

    // cluster_api.cpp: a reflector of another component's (the kubelet's
    // watch-based manager's per-object reflector, api_objects.cpp): list
    // `target` (a namespace's collection with fieldSelector
    // metadata.name=NAME), then watch it from the list's resourceVersion,
    // as the link's own reflectors do (allowWatchBookmarks, 410 lists
    // again, back-off on failures). `changes` gets the complete lists and
    // the events; `failure` each failure's reason ("" once it watches
    // again). Not part of the link's health. Both are called on the loop,
    // never after unwatch(). `what` names it in the log ("configmap ns/x").
    using WatchId = std::uint64_t;
    WatchId watch(ListWatchTarget target, std::string what, std::function<void(ReflectorChanges&&)> changes,
                  std::function<void(const std::string&)> failure);
    // Stops it (its request is cancelled from the loop, not from the
    // caller's stack: unwatch() may be called from its own callback). No-op
    // for an unknown id or a closed link.
    void unwatch(WatchId id);

  private:
    struct Follower {
        Follower(std::string s, bool n, ListWatchTarget t)
            : scope(std::move(s)), node(n), reflector(std::move(t)) {}
        std::string scope;  // namespace, "" for all; "node" reflector: unused
        bool node = false;
        bool pods = false;  // apiServer.podStatus: the Pods bound to this node
        Reflector reflector;
        uv_timer_t* timer = nullptr;
        std::optional<platform::ApiHttpClient::RequestId> inflight;
        WatchDecoder decoder;
        std::string error_body;  // a failed watch's body (bounded)
        std::string stream_error;
        std::string last_error;
        std::int64_t events = 0;
        bool watched = false;  // a watch has begun before
        // watch(): another component's reflector; 0 for the link's own.
        WatchId id = 0;
        std::string what;
        std::function<void(ReflectorChanges&&)> changes;
        std::function<void(const std::string&)> failure;
        bool stopped = false;  // unwatch(): removed at its next step
    };

    ClusterLink(uv_loop_t* loop, ApiServerConfig config, std::string node_name, ClusterHooks hooks,
                const platform::Clock& clock);
    Status init();
    platform::HttpRequest base_request(const std::string& method, const std::string& target);
    void step(Follower& f);
    void deliver(Follower& f, ReflectorChanges&& ch);
    void reap(Follower& f);
    void schedule(Follower& f, std::int64_t delay_ms);
    void on_list(Follower& f, Result<platform::HttpResponse> r);
    bool on_watch_data(Follower& f, long status, std::string_view data);
    void on_watch_done(Follower& f, Result<platform::HttpResponse> r);
    void failed(Follower& f, int status, bool refused, std::int64_t retry_after_ms, const std::string& why);
    void renew_lease();
    void on_lease(const std::string& method, Result<platform::HttpResponse> r);
    void send_events();
    // The queue of Events changed (`queued`: one was added): the hook, if set.
    void events_changed(bool queued) {
        if (hooks_.events_changed) hooks_.events_changed(queued);
    }
    void report_health();
    void announce();
    void arm_link_timer();
    // registerNode (cluster_node.cpp)
    void node_tick();
    void post_node_status_now();
    void get_node();
    void set_node_uid(const std::string& uid);
    void register_node(const Json& status);
    void patch_node_status(const Json& server_node, const Labels& reconcile);
    void node_failed(const std::string& why);
    void node_request(const std::string& method, const std::string& target, std::string body,
                      const char* what, std::function<void(const platform::HttpResponse&)> done);
    void node_posted(Json status);
    std::string bearer_token();
    double jitter();
    std::int64_t now_ms() const;

    uv_loop_t* loop_;
    const platform::Clock& clock_;
    ApiServerConfig config_;
    std::string node_name_;
    ClusterHooks hooks_;
    ApiEndpoint endpoint_;
    platform::HttpTls tls_;
    std::string token_;  // inline, or the token file's last contents
    std::int64_t token_read_ms_ = -1;
    std::unique_ptr<platform::ApiHttpClient> http_;
    std::vector<std::unique_ptr<Follower>> followers_;
    Connectivity link_;
    uv_timer_t* link_timer_ = nullptr;
    uv_timer_t* lease_timer_ = nullptr;
    std::optional<platform::ApiHttpClient::RequestId> lease_inflight_;
    std::string lease_resource_version_;  // of the Lease as last read or written; "" read it first
    bool lease_ok_ = false;
    std::string lease_error_;
    std::int64_t lease_renewed_wall_ms_ = 0;
    std::optional<std::int64_t> lease_renewed_ms_;  // monotonic, of the last successful renewal
    // registerNode: kubelet's nodeStatusUpdateFrequency timer, the status
    // last posted, when (monotonic), and a post due at once (reconnected).
    uv_timer_t* node_timer_ = nullptr;
    std::optional<platform::ApiHttpClient::RequestId> node_inflight_;
    bool node_registered_ = false;  // created by us, or found: PATCH from now on
    std::string node_uid_;
    Json node_posted_;  // status last posted; null: none yet
    std::optional<std::int64_t> node_posted_ms_;
    std::int64_t node_posted_wall_ms_ = 0;  // for `daemonlet status`
    bool node_post_now_ = true;
    std::string node_error_;
    std::uint64_t node_posts_ = 0;
    EventQueue events_;
    std::optional<platform::ApiHttpClient::RequestId> event_inflight_;
    std::uint64_t events_sent_ = 0;
    std::uint64_t requests_ = 0;
    std::uint64_t relists_ = 0;
    std::uint64_t watch_restarts_ = 0;
    std::uint64_t bytes_in_ = 0;
    std::mt19937 rng_;
    WatchId next_watch_id_ = 1;
    bool started_ = false;
    bool closed_ = false;
};

}  // namespace daemonlet::agent
