// The API server link: reflectors, Lease, Events on the loop (cluster_link.h).
#include "agent/daemon/cluster_link.h"
#include "agent/daemon/version.h"

#include <algorithm>
#include <cstdlib>
#include <utility>

#include "core/json_parse.h"
#include "core/strings.h"
#include "platform/http/credentials.h"
#include "platform/log.h"
#include "platform/system_info.h"

namespace daemonlet::agent {

using platform::Level;
using platform::log;

namespace {

constexpr std::int64_t kLeaseRenewMs = 10'000;   // kubelet's renewInterval: 1/4 of the duration
constexpr std::int32_t kLeaseDurationS = 40;     // kubelet's nodeLeaseDurationSeconds
constexpr std::int64_t kTokenRereadMs = 60'000;  // client-go's cachingTokenSource period
// A board has little memory: pages of 100 (client-go asks 500; halved for
// a follower whose page was over the bound, down to 1), each at
// most 4 MiB (a real DaemonSet is 2-20 KiB: a full page of them is at most
// 2 MiB). Larger is an error, retried with back-off, never a partial list.
// 16 MiB had the agent OOM-killed in a 32 MiB cgroup while it buffered an
// oversized page (bench/memory.sh, issue 15 §5).
constexpr std::int64_t kPageSize = 100;
constexpr std::size_t kMaxListBytes = 4 << 20;
constexpr std::size_t kMaxErrorBody = 64 * 1024;  // of a failed response, for its message

// Retry-After in seconds (the API server sends seconds, never a date).
std::int64_t retry_after_ms(const platform::HttpResponse& r) {
    for (const auto& [k, v] : r.headers) {
        std::string name = k;
        std::transform(name.begin(), name.end(), name.begin(), ::tolower);
        if (name != "retry-after") continue;
        char* end = nullptr;
        long s = std::strtol(v.c_str(), &end, 10);
        if (end != v.c_str() && s > 0) return std::min<std::int64_t>(s, 600) * 1000;
    }
    return 0;
}

template <class H>
void close_and_free(H*& h) {
    if (!h) return;
    uv_close(reinterpret_cast<uv_handle_t*>(h), [](uv_handle_t* p) { delete reinterpret_cast<H*>(p); });
    h = nullptr;
}

// A credential file's contents; an error names the file and why.
Result<std::string> credential(const std::string& path, bool secret) {
    auto c = platform::read_credential(path, secret);
    if (!c.ok()) return c.error();
    if (!c.value().warning.empty()) log(Level::Warning, c.value().warning);
    return std::move(c).value().data;
}

// A -data field (base64) or a file, whichever the kubeconfig gives.
Result<std::string> pem(const std::string& file, const std::string& data, bool secret, const char* what) {
    if (!data.empty()) {
        auto d = platform::base64_decode(data);
        if (!d.ok()) return Error{ErrorCode::Invalid, std::string(what) + "-data: " + d.error().message};
        return std::move(d).value();
    }
    if (file.empty()) return std::string();
    return credential(file, secret);
}

}  // namespace

std::uint32_t event_name_unique() {
    static std::uint32_t next = std::random_device{}() % 1'000'000U;
    next = (next + 1) % 1'000'000U;
    return next;
}

std::string describe_status(long status, const std::string& body) {
    std::string out = "HTTP " + std::to_string(status);
    Json j = parse_json(body);
    if (j.is_object() && j.contains("message") && j["message"].is_string())
        out += ": " + j["message"].get<std::string>().substr(0, 300);
    return out;
}

ClusterLink::ClusterLink(uv_loop_t* loop, ApiServerConfig config, std::string node_name, ClusterHooks hooks,
                         const platform::Clock& clock)
    : loop_(loop),
      clock_(clock),
      config_(std::move(config)),
      node_name_(std::move(node_name)),
      hooks_(std::move(hooks)),
      rng_(std::random_device{}()) {}

ClusterLink::~ClusterLink() = default;

Result<std::unique_ptr<ClusterLink>> ClusterLink::create(uv_loop_t* loop, const ApiServerConfig& config,
                                                         const std::string& node_name, ClusterHooks hooks,
                                                         const platform::Clock& clock) {
    std::unique_ptr<ClusterLink> link(new ClusterLink(loop, config, node_name, std::move(hooks), clock));
    if (auto s = link->init(); !s.ok()) return s.error();
    return link;
}

Status ClusterLink::init() {
    if (config_.in_cluster) {
        const char* host = std::getenv("KUBERNETES_SERVICE_HOST");
        const char* port = std::getenv("KUBERNETES_SERVICE_PORT");
        auto ep = in_cluster_endpoint(host ? host : "", port ? port : "", config_.service_account_dir);
        if (!ep.ok()) return ep.error();
        endpoint_ = std::move(ep).value();
    } else {
        // A kubeconfig holds tokens and keys: read as a secret.
        auto text = credential(config_.kubeconfig, true);
        if (!text.ok()) return text.error();
        const std::string dir = config_.kubeconfig.substr(0, config_.kubeconfig.rfind('/') + 1);
        auto ep =
            parse_kubeconfig(text.value(), config_.kubeconfig, dir.empty() ? "." : dir, config_.context);
        if (!ep.ok()) return ep.error();
        endpoint_ = std::move(ep).value();
    }
    const std::string where =
        config_.in_cluster ? std::string("in-cluster configuration") : config_.kubeconfig;
    if (!endpoint_.username.empty() || !endpoint_.password.empty())
        return Error{ErrorCode::Invalid, where +
                                             ": username/password: basic authentication was removed from "
                                             "kube-apiserver in 1.19; use a token or a client certificate"};
    if (!endpoint_.tls_server_name.empty())
        log(Level::Warning, where +
                                ": tls-server-name is not supported; the server's certificate is "
                                "verified against the host name of " +
                                endpoint_.server);
    tls_.verify = !endpoint_.insecure_skip_tls_verify;
    if (!tls_.verify)
        log(Level::Warning, where + ": insecure-skip-tls-verify: the API server's identity is not checked");
    auto ca = pem(endpoint_.certificate_authority, endpoint_.certificate_authority_data, false,
                  "certificate-authority");
    auto cert =
        pem(endpoint_.client_certificate, endpoint_.client_certificate_data, false, "client-certificate");
    auto key = pem(endpoint_.client_key, endpoint_.client_key_data, true, "client-key");
    for (auto* r : {&ca, &cert, &key})
        if (!r->ok()) return Error{ErrorCode::Invalid, where + ": " + r->error().message};
    tls_.ca_pem = std::move(ca).value();
    tls_.cert_pem = std::move(cert).value();
    tls_.key_pem = std::move(key).value();
    if (tls_.cert_pem.empty() != tls_.key_pem.empty())
        return Error{ErrorCode::Invalid,
                     where + ": a client certificate needs its key, and a key its certificate"};
    token_ = endpoint_.token;
    if (!endpoint_.token_file.empty()) {
        auto t = credential(endpoint_.token_file, true);
        if (!t.ok()) return t.error();
        token_ = trim(std::move(t).value());
        token_read_ms_ = now_ms();
    }

    http_ = std::make_unique<platform::ApiHttpClient>(loop_);
    auto add = [&](std::string scope, bool node, ListWatchTarget target) {
        target.page_size = kPageSize;
        auto f = std::make_unique<Follower>(std::move(scope), node, std::move(target));
        f->timer = new uv_timer_t;
        uv_timer_init(loop_, f->timer);
        f->timer->data = this;
        followers_.push_back(std::move(f));
    };
    if (config_.node_from_cluster)
        add("", true, {"/api/v1/nodes", "v1", "Node", "", "metadata.name=" + node_name_});
    if (config_.pod_status) {
        // The kubelet's pod source (config/apiserver.go): the node's Pods,
        // listed, then watched, for their deletions (api_pods.h).
        add("", false, {"/api/v1/pods", "v1", "Pod", "", "spec.nodeName=" + node_name_});
        followers_.back()->pods = true;
    }
    if (config_.namespaces.empty())
        add("", false, {"/apis/apps/v1/daemonsets", "apps/v1", "DaemonSet", config_.label_selector, ""});
    for (const auto& ns : config_.namespaces)
        add(ns, false,
            {"/apis/apps/v1/namespaces/" + ns + "/daemonsets", "apps/v1", "DaemonSet", config_.label_selector,
             ""});
    link_timer_ = new uv_timer_t;
    uv_timer_init(loop_, link_timer_);
    link_timer_->data = this;
    lease_timer_ = new uv_timer_t;
    uv_timer_init(loop_, lease_timer_);
    lease_timer_->data = this;
    if (config_.register_node) {
        node_timer_ = new uv_timer_t;
        uv_timer_init(loop_, node_timer_);
        node_timer_->data = this;
    }
    return Ok{};
}

void ClusterLink::start() {
    std::string where = " in all namespaces";
    if (!config_.namespaces.empty()) {
        where = " in namespace" + std::string(config_.namespaces.size() > 1 ? "s " : " ");
        for (std::size_t i = 0; i < config_.namespaces.size(); ++i)
            where += (i ? ", " : "") + config_.namespaces[i];
    }
    log(Level::Notice, "API server " + endpoint_.server + ": following DaemonSets" + where +
                           (config_.label_selector.empty() ? "" : " matching " + config_.label_selector) +
                           (config_.node_from_cluster ? ", and the Node " + node_name_ : "") +
                           (config_.pod_status ? ", and the Pods bound to " + node_name_ : ""));
    started_ = true;
    // Not proven either way yet: judged once connected, or after the down
    // threshold (a rollout the cluster paces waits until then).
    link_.begin(now_ms());
    arm_link_timer();
    for (auto& f : followers_) step(*f);
    uv_timer_start(
        lease_timer_, [](uv_timer_t* t) { static_cast<ClusterLink*>(t->data)->renew_lease(); }, 0,
        kLeaseRenewMs);
    if (node_timer_)
        uv_timer_start(
            node_timer_, [](uv_timer_t* t) { static_cast<ClusterLink*>(t->data)->node_tick(); }, 0,
            kNodeStatusUpdateMs);
}

void ClusterLink::close() {
    if (closed_) return;
    closed_ = true;
    if (http_) http_->close();
    for (auto& f : followers_) close_and_free(f->timer);
    close_and_free(link_timer_);
    close_and_free(lease_timer_);
    close_and_free(node_timer_);
}

std::int64_t ClusterLink::now_ms() const { return clock_.monotonic_ms(); }

double ClusterLink::jitter() { return std::uniform_real_distribution<double>(0.0, 1.0)(rng_); }

std::string ClusterLink::bearer_token() {
    if (!endpoint_.token_file.empty() && now_ms() - token_read_ms_ >= kTokenRereadMs) {
        token_read_ms_ = now_ms();
        auto t = platform::read_credential(endpoint_.token_file, true);
        if (t.ok())
            token_ = trim(std::move(t).value().data);
        else
            log(Level::Warning, t.error().message + "; keeping the token read before");
    }
    return token_;
}

platform::HttpRequest ClusterLink::base_request(const std::string& method, const std::string& target) {
    platform::HttpRequest r;
    r.method = method;
    r.url = endpoint_.server + target;
    r.tls = tls_;
    r.http2_multiplex = true;  // over h2, one connection for the lists, watches and Lease
    r.headers.emplace_back("Accept", "application/json");
    r.headers.emplace_back("User-Agent", std::string("daemonlet/") + daemonlet_version());
    // PATCH: the strategic-merge patch nodeutil.PatchNodeStatus sends.
    if (method == "PATCH")
        r.headers.emplace_back("Content-Type", "application/strategic-merge-patch+json");
    else if (method != "GET")
        r.headers.emplace_back("Content-Type", "application/json");
    if (std::string t = bearer_token(); !t.empty()) r.headers.emplace_back("Authorization", "Bearer " + t);
    ++requests_;
    return r;
}

// The next request of a reflector, or its wait. Always entered from a timer
// or start(), never from inside an HTTP callback.
void ClusterLink::step(Follower& f) {
    if (closed_) return;
    if (f.stopped) return reap(f);
    if (f.inflight) return;
    ReflectorRequest req = f.reflector.begin(now_ms(), jitter());
    if (req.kind == ReflectorRequest::Kind::Wait) return schedule(f, req.at_ms - now_ms());
    platform::HttpRequest r = base_request("GET", req.target);
    Follower* fp = &f;
    Result<platform::ApiHttpClient::RequestId> id = Error{ErrorCode::Http, ""};
    if (req.kind == ReflectorRequest::Kind::List) {
        // The metrics count the link's own reflectors (an object watch's
        // lists are its own: status().forPods).
        if (req.target.find("continue=") == std::string::npos && !f.id) ++relists_;
        r.timeout_ms = config_.request_timeout_ms;
        r.max_body_bytes = kMaxListBytes;
        id = http_->request(r, [this, fp](Result<platform::HttpResponse> res) {
            fp->inflight.reset();
            on_list(*fp, std::move(res));
        });
    } else {
        // The server ends the watch after timeoutSeconds; ours is a backstop
        // for a server that stalls.
        r.timeout_ms = (req.timeout_s + 30) * 1000;
        if (std::exchange(fp->watched, true) && !f.id) ++watch_restarts_;
        fp->decoder = WatchDecoder();
        fp->error_body.clear();
        fp->stream_error.clear();
        r.on_data = [this, fp](long status, std::string_view data) {
            return on_watch_data(*fp, status, data);
        };
        id = http_->request(r, [this, fp](Result<platform::HttpResponse> res) {
            fp->inflight.reset();
            on_watch_done(*fp, std::move(res));
        });
    }
    if (!id.ok()) {
        failed(f, 0, false, 0, id.error().message);
        return;
    }
    f.inflight = id.value();
}

void ClusterLink::schedule(Follower& f, std::int64_t delay_ms) {
    if (closed_) return;
    uv_timer_start(
        f.timer,
        [](uv_timer_t* t) {
            auto* self = static_cast<ClusterLink*>(t->data);
            for (auto& g : self->followers_)
                if (g->timer == t) return self->step(*g);  // step may remove it (reap)
        },
        static_cast<std::uint64_t>(std::max<std::int64_t>(0, delay_ms)), 0);
}

void ClusterLink::on_list(Follower& f, Result<platform::HttpResponse> r) {
    // A stopped object watch's request ended: removed at its next step.
    if (f.stopped) return schedule(f, 0);
    if (!r.ok()) {
        // A page over kMaxListBytes: the list starts again with smaller pages.
        if (r.error().code == ErrorCode::TooLarge && f.reflector.shrink_page())
            log(Level::Warning, "API server: a list page of " +
                                    std::string(f.id     ? f.what
                                                : f.pods ? "Pods"
                                                : f.node ? "Nodes"
                                                         : "DaemonSets") +
                                    " was larger than " + std::to_string(kMaxListBytes) +
                                    " bytes: pages of " + std::to_string(f.reflector.page_size()) +
                                    " from now on");
        return failed(f, 0, r.error().code == ErrorCode::Refused, 0, "list: " + r.error().message);
    }
    const platform::HttpResponse& resp = r.value();
    bytes_in_ += resp.body.size();
    if (resp.status != 200)
        return failed(f, static_cast<int>(resp.status), false, retry_after_ms(resp),
                      "list: " + describe_status(resp.status, resp.body));
    Json page = parse_json(resp.body);
    if (page.is_discarded()) return failed(f, 0, false, 0, "list: the response is not JSON");
    auto ch = f.reflector.on_list_page(page);
    if (!ch.ok()) return failed(f, 0, false, 0, ch.error().message);
    if (ch.value().replace) {
        // Back after failures: renew the Lease now rather than at the next
        // tick, so that the link is called connected 3 s later, not 13.
        if (!f.last_error.empty() && !lease_ok_ && !f.id) renew_lease();
        f.last_error.clear();
        deliver(f, std::move(ch).value());
    }
    report_health();
    schedule(f, 0);
}

bool ClusterLink::on_watch_data(Follower& f, long status, std::string_view data) {
    bytes_in_ += data.size();
    if (status != 200) {
        if (f.error_body.size() < kMaxErrorBody)
            f.error_body.append(data.substr(0, kMaxErrorBody - f.error_body.size()));
        return true;
    }
    auto events = f.decoder.feed(data);
    if (!events.ok()) {
        f.stream_error = events.error().message;
        return false;
    }
    const bool was_healthy = f.last_error.empty();
    f.last_error.clear();
    for (auto& ev : events.value()) {
        ++f.events;
        ReflectorChanges ch = f.reflector.on_watch_event(ev, now_ms(), jitter());
        if (!ch.objects.empty() || !ch.deleted.empty()) deliver(f, std::move(ch));
        if (f.stopped) return false;  // unwatched by its callback
        if (!f.reflector.watching()) {
            // An ERROR event: 410 lists again at once, others after a back-off.
            const Json& msg = ev.object.contains("message") ? ev.object["message"] : Json();
            f.stream_error = "relist";
            f.last_error =
                "watch: " + (msg.is_string() ? msg.get<std::string>().substr(0, 300) : "error event");
            return false;
        }
    }
    if (!was_healthy) {
        if (f.id && f.failure) f.failure("");
        report_health();
    }
    return true;
}

void ClusterLink::deliver(Follower& f, ReflectorChanges&& ch) {
    if (f.id) {
        if (!f.stopped && f.changes) f.changes(std::move(ch));
    } else if (f.pods) {
        if (hooks_.pods) hooks_.pods(std::move(ch));
    } else if (f.node) {
        hooks_.node(std::move(ch));
    } else {
        hooks_.daemonsets(f.scope, std::move(ch));
    }
}

// Entered from its timer only (step), never from inside an HTTP callback,
// so that cancelling its request is safe.
void ClusterLink::reap(Follower& f) {
    if (f.inflight) http_->cancel(*f.inflight);
    close_and_free(f.timer);
    std::erase_if(followers_, [&](const std::unique_ptr<Follower>& g) { return g.get() == &f; });
}

void ClusterLink::on_watch_done(Follower& f, Result<platform::HttpResponse> r) {
    if (f.stopped) return schedule(f, 0);
    if (!r.ok()) {
        if (r.error().code == ErrorCode::Stopped && f.stream_error == "relist") {
            report_health();
        } else if (r.error().code == ErrorCode::Stopped) {
            return failed(f, 0, false, 0, "watch: " + f.stream_error);
        } else {
            return failed(f, 0, r.error().code == ErrorCode::Refused, 0, "watch: " + r.error().message);
        }
    } else if (r.value().status != 200) {
        return failed(f, static_cast<int>(r.value().status), false, retry_after_ms(r.value()),
                      "watch: " + describe_status(r.value().status, f.error_body));
    } else if (f.decoder.mid_line()) {
        return failed(f, 0, false, 0, "watch: the stream ended inside an event (not JSON lines)");
    } else {
        f.reflector.on_watch_end(now_ms(), jitter());
    }
    schedule(f, 0);
}

void ClusterLink::failed(Follower& f, int status, bool refused, std::int64_t retry_after,
                         const std::string& why) {
    if (closed_) return;
    if (f.stopped) return schedule(f, 0);
    f.reflector.on_failure(status, refused, retry_after, now_ms(), jitter());
    const std::string what = f.id     ? f.what
                             : f.pods ? "Pods of node " + node_name_
                             : f.node ? "Node " + node_name_
                                      : "DaemonSets" + (f.scope.empty() ? std::string() : " in " + f.scope);
    // Once per distinct error (numbers aside: curl says "after 3 ms"): a
    // link down for an hour is one line, not 200.
    auto shape = [](std::string s) {
        std::erase_if(s, [](char c) { return c >= '0' && c <= '9'; });
        return s;
    };
    // An object watch that got no answer says nothing: the link's own
    // reflectors say it once (and the link goes disconnected), rather than
    // once per ConfigMap and Secret the pods use. An answer (403, 500) is
    // the object's own and is said.
    const bool quiet = f.id && status == 0;
    if (!quiet && shape(why) != shape(f.last_error))
        log(Level::Warning, "API server " + endpoint_.server + ": " + what + ": " + why +
                                (status == 403 ? " (check the RBAC in dist/rbac.yaml)" : "") +
                                "; retrying with back-off, nothing is removed until a complete list");
    f.last_error = why;
    if (f.id && f.failure) f.failure(why);
    report_health();
    schedule(f, 0);
}

void ClusterLink::report_health() {
    if (closed_) return;
    bool healthy = lease_ok_;
    std::string why = lease_error_;
    for (const auto& f : followers_) {
        // The Pods' watch is not the link's health: the board follows its
        // DaemonSets without it (a cluster whose RBAC lacks pods watch);
        // nor are the watches of the pods' ConfigMaps and Secrets.
        if (f->pods || f->id) continue;
        if (f->reflector.synced() && f->reflector.consecutive_failures() == 0 && f->last_error.empty())
            continue;
        healthy = false;
        if (why.empty()) why = f->last_error.empty() ? "not synced yet" : f->last_error;
    }
    if (link_.report(healthy, now_ms(), why)) announce();
    arm_link_timer();
}

void ClusterLink::announce() {
    if (link_.state() == LinkState::Connected) {
        log(Level::Notice, "API server " + endpoint_.server + ": connected");
        // Back from an outage: the node lifecycle controller may have set
        // Ready Unknown meanwhile; post the status now, not at the next
        // change or in 5 minutes. (The first connection follows the
        // registration or post of the first tick.)
        if (link_.transitions() > 1) post_node_status_now();
    } else {
        log(Level::Warning, "API server " + endpoint_.server + ": disconnected (" +
                                (link_.last_error().empty() ? "never connected" : link_.last_error()) +
                                "); pods keep running from the cache and the manifest directory");
    }
    hooks_.link(link_.state());
    send_events();
}

void ClusterLink::arm_link_timer() {
    auto next = link_.next_change_ms();
    if (!next || closed_) return;
    uv_timer_start(
        link_timer_,
        [](uv_timer_t* t) {
            auto* self = static_cast<ClusterLink*>(t->data);
            if (self->link_.tick(self->now_ms())) self->announce();
            self->arm_link_timer();
        },
        static_cast<std::uint64_t>(std::max<std::int64_t>(1, *next - now_ms())), 0);
}

void ClusterLink::renew_lease() {
    if (closed_ || lease_inflight_) return;
    const std::string base = "/apis/coordination.k8s.io/v1/namespaces/" + config_.lease_namespace + "/leases";
    std::string method = "PUT";
    std::string target = base + "/" + node_name_;
    std::string body;
    if (lease_resource_version_.empty()) {
        method = "GET";  // read it first: an update needs its resourceVersion
    } else {
        Json lease = lease_object(node_name_, config_.lease_namespace, kLeaseDurationS, clock_.wall_ms());
        if (lease_resource_version_ == "-") {
            method = "POST";  // absent: create it, as kubelet's ensureLease
            target = base;
        } else {
            lease["metadata"]["resourceVersion"] = lease_resource_version_;
        }
        body = lease.dump(-1, ' ', false, Json::error_handler_t::replace);
    }
    platform::HttpRequest r = base_request(method, target);
    r.body = std::move(body);
    r.timeout_ms = std::min(config_.request_timeout_ms, kLeaseRenewMs);
    auto id = http_->request(r, [this, method](Result<platform::HttpResponse> res) {
        lease_inflight_.reset();
        on_lease(method, std::move(res));
    });
    if (!id.ok()) {
        lease_ok_ = false;
        lease_error_ = "lease: " + id.error().message;
        report_health();
        return;
    }
    lease_inflight_ = id.value();
}

void ClusterLink::on_lease(const std::string& method, Result<platform::HttpResponse> r) {
    if (!r.ok()) {
        lease_ok_ = false;
        lease_error_ = "lease: " + r.error().message;
        report_health();
        return;
    }
    const auto& resp = r.value();
    bytes_in_ += resp.body.size();
    Json j = parse_json(resp.body);
    std::string rv;
    if (j.is_object() && j.contains("metadata") && j["metadata"].is_object())
        rv = j["metadata"].value("resourceVersion", "");
    if (resp.status == 200 || resp.status == 201) {
        lease_resource_version_ = rv.empty() ? "0" : rv;
        lease_error_.clear();
        if (method == "GET") {
            renew_lease();  // now renew it
            return;
        }
        lease_ok_ = true;
        lease_renewed_wall_ms_ = clock_.wall_ms();
        // Renewed late (paused, or failures): the node lifecycle controller
        // may have set the Node Ready=Unknown and tainted it unreachable,
        // which the agent's record of its last post does not show; read and
        // post it now, not at the 5-minute report (core/node_status.h).
        if (lease_gap_reposts_status(lease_renewed_ms_, now_ms(), kLeaseRenewMs)) post_node_status_now();
        lease_renewed_ms_ = now_ms();
        report_health();
        send_events();
        return;
    }
    if (resp.status == 404) {
        // Our Lease, renewed before, is gone: a server that lost its state
        // (or an admin's cleanup) may have lost the Node too; it is read and
        // registered again now, not in 5 minutes.
        if (lease_renewed_wall_ms_ != 0) post_node_status_now();
        lease_resource_version_ = "-";
        renew_lease();
        return;
    }
    if (resp.status == 409) {
        lease_resource_version_.clear();  // changed or created meanwhile: read it again next time
    }
    lease_ok_ = false;
    lease_error_ = "lease: " + describe_status(resp.status, resp.body);
    report_health();
}

void ClusterLink::add_event(ClusterEvent ev) {
    if (ev.event_name.empty()) ev.event_name = new_event_name(ev.name, ev.first_ms, event_name_unique());
    events_.add(std::move(ev));
    events_changed(true);
    send_events();
}

void ClusterLink::send_events() {
    if (closed_ || event_inflight_ || events_.empty() || link_.state() != LinkState::Connected) return;
    ClusterEvent ev = events_.front();
    // Recorded by a clock that was not set yet, by an agent that did not
    // see it set (core/wall_clock.h): sent with the time it is sent at
    // rather than as an Event of 1970 (under the name it was queued with).
    const std::int64_t now = clock_.wall_ms();
    if (wall_time_known(now) && !wall_time_known(ev.first_ms)) ev.first_ms = ev.last_ms = now;
    // A repeat PATCHes its Event's count (client-go's recordToSink).
    const std::string events = "/api/v1/namespaces/" + ev.namespace_ + "/events";
    platform::HttpRequest r =
        ev.repeat ? base_request("PATCH", events + "/" + event_name(ev)) : base_request("POST", events);
    r.body = (ev.repeat ? event_patch(ev) : event_object(ev, node_name_))
                 .dump(-1, ' ', false, Json::error_handler_t::replace);
    r.timeout_ms = config_.request_timeout_ms;
    auto id = http_->request(r, [this](Result<platform::HttpResponse> res) {
        event_inflight_.reset();
        events_.set_front_in_flight(false);
        if (!res.ok() || events_.empty()) return;  // kept: sent again with the next Lease renewal
        const long s = res.value().status;
        const ClusterEvent& front = events_.front();
        switch (event_answer(front, s)) {
        case EventAnswer::Retry: return;
        case EventAnswer::Create:
            // Gone (its TTL, a fresh server) or never made: created, with
            // its count, as the recorder does when the PATCH finds none.
            events_.front_repeat_created();
            events_changed(false);
            return send_events();
        case EventAnswer::PatchNext:
            events_.front_made();
            events_changed(false);
            return send_events();
        case EventAnswer::Sent: ++events_sent_; break;
        case EventAnswer::Refused:
            log(Level::Warning, "API server: event " + front.reason + " on " + front.kind + " " +
                                    front.namespace_ + "/" + front.name +
                                    " refused: " + describe_status(s, res.value().body));
            break;
        }
        events_.pop();
        events_changed(false);
        send_events();
    });
    if (id.ok()) {
        event_inflight_ = id.value();
        events_.set_front_in_flight(true);
    }
}

void ClusterLink::rebase_wall_times(const WallStep& step) {
    events_.rebase(step);
    if (!events_.empty()) events_changed(false);
    if (lease_renewed_wall_ms_) lease_renewed_wall_ms_ = rebase(lease_renewed_wall_ms_, step);
}

Json ClusterLink::status() const {
    const std::int64_t wall = clock_.wall_ms();
    const std::int64_t mono = clock_.monotonic_ms();
    Json followers = Json::array();
    for (const auto& f : followers_)
        if (!f->id)  // the objects' watches: forPods.objects (api_access.h)
            followers.push_back({{"resource", f->pods   ? "pods"
                                              : f->node ? "nodes"
                                                        : "daemonsets"},
                                 {"namespace", f->scope},
                                 {"synced", f->reflector.synced()},
                                 {"resourceVersion", f->reflector.resource_version()},
                                 {"failures", f->reflector.consecutive_failures()},
                                 {"lastError", f->last_error}});
    return Json{
        {"server", endpoint_.server},
        {"state", to_string(link_.state())},
        {"since", link_.transitions() == 0 ? std::string() : rfc3339(wall - (mono - link_.since_ms()))},
        {"lastError", link_.state() == LinkState::Connected ? std::string() : link_.last_error()},
        {"watches", followers},
        {"lease",
         {{"namespace", config_.lease_namespace},
          {"renewed", lease_renewed_wall_ms_ ? rfc3339(lease_renewed_wall_ms_) : std::string()}}},
        {"events", {{"queued", events_.size()}, {"sent", events_sent_}, {"dropped", events_.dropped()}}},
        {"nodeStatus",
         config_.register_node
             ? Json{{"registered", node_registered_},
                    {"posts", node_posts_},
                    {"posted", node_posted_wall_ms_ ? rfc3339(node_posted_wall_ms_) : std::string()},
                    {"lastError", node_error_}}
             : Json()},
        {"requests", requests_},
        {"bytesReceived", bytes_in_}};
}

}  // namespace daemonlet::agent
