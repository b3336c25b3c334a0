// registerNode: the board's Node, registered and its status kept as the
// kubelet does (kubelet_node_status.go registerWithAPIServer,
// tryRegisterWithAPIServer, updateNodeStatus; pkg/util/node
// PatchNodeStatus). The pure parts are core/node_status.h; this is the
// HTTP: every kNodeStatusUpdateMs the status is computed from the board's
// measurements (hooks.node_status) and, when it changed since the last post,
// when 5 minutes passed, or when the link came back, the Node is read (GET,
// for the server's conditions and labels) and patched
// (PATCH nodes/NAME/status, strategic merge): never replaced, so labels and
// taints an admin set stay. Absent, it is created (POST). One request at a
// time; a failure is retried at the next tick.
#include "agent/daemon/cluster_link.h"
#include "core/json_diff.h"
#include "platform/log.h"

namespace daemonlet::agent {

using platform::Level;
using platform::log;

namespace {

// updateDefaultLabels' labels (the ones a board has): reconciled on an
// existing Node at registration.
const std::vector<std::string> kDefaultLabels = {"kubernetes.io/hostname", "kubernetes.io/os",
                                                 "kubernetes.io/arch", "beta.kubernetes.io/os",
                                                 "beta.kubernetes.io/arch"};
// tryUpdateNodeStatus: os and arch reconciled on every update.
const std::vector<std::string> kStatusLabels = {"kubernetes.io/os", "kubernetes.io/arch"};

Labels labels_of(const Json& node, const std::vector<std::string>& keys) {
    Labels out;
    if (!node.contains("metadata") || !node["metadata"].contains("labels")) return out;
    const Json& l = node["metadata"]["labels"];
    for (const auto& k : keys)
        if (l.contains(k) && l[k].is_string()) out[k] = l[k].get<std::string>();
    return out;
}

}  // namespace

// The next tick now, and a post whatever changed.
void ClusterLink::post_node_status_now() {
    if (!node_timer_ || closed_) return;
    node_post_now_ = true;
    uv_timer_start(
        node_timer_, [](uv_timer_t* t) { static_cast<ClusterLink*>(t->data)->node_tick(); }, 0,
        kNodeStatusUpdateMs);
}

void ClusterLink::node_tick() {
    if (closed_ || node_inflight_ || !hooks_.node_status) return;
    if (!node_registered_) return get_node();
    // Against the status last posted, so that a condition that holds keeps
    // its lastTransitionTime and only a real change counts.
    const Json posted = Json{{"status", node_posted_}};
    Json status = node_status(hooks_.node_status(), &posted, clock_.wall_ms());
    const bool changed = node_posted_.is_null() || node_status_changed(node_posted_, status);
    if (!node_post_now_ && !status_report_due(changed, node_posted_ms_, now_ms())) return;
    get_node();
}

// One Node request, one at a time; `done` gets a response the server gave.
void ClusterLink::node_request(const std::string& method, const std::string& target, std::string body,
                               const char* what, std::function<void(const platform::HttpResponse&)> done) {
    platform::HttpRequest r = base_request(method, target);
    r.body = std::move(body);
    r.timeout_ms = std::min<std::int64_t>(config_.request_timeout_ms, kNodeStatusUpdateMs);
    auto id = http_->request(r, [this, what, done = std::move(done)](Result<platform::HttpResponse> res) {
        node_inflight_.reset();
        if (closed_) return;
        if (!res.ok()) return node_failed(std::string(what) + ": " + res.error().message);
        bytes_in_ += res.value().body.size();
        done(res.value());
    });
    if (!id.ok()) return node_failed(std::string(what) + ": " + id.error().message);
    node_inflight_ = id.value();
}

void ClusterLink::node_posted(Json status) {
    if (!node_error_.empty())
        log(Level::Notice, "API server: the Node " + node_name_ + "'s status is posted again");
    node_posted_ = std::move(status);
    node_posted_ms_ = now_ms();
    node_posted_wall_ms_ = clock_.wall_ms();
    node_post_now_ = false;
    node_error_.clear();
    ++node_posts_;
}

// The Node as the server has it; 404: register it.
void ClusterLink::get_node() {
    node_request("GET", "/api/v1/nodes/" + node_name_, {}, "get", [this](const platform::HttpResponse& resp) {
        if (resp.status == 404) {
            node_registered_ = false;
            return register_node(node_status(hooks_.node_status(), nullptr, clock_.wall_ms()));
        }
        if (resp.status != 200) return node_failed("get: " + describe_status(resp.status, resp.body));
        Json node = Json::parse(resp.body, nullptr, false);
        if (!node.is_object()) return node_failed("get: the response is not a JSON object");
        // Found without having created it (an earlier run, or an admin):
        // tryRegisterWithAPIServer's reconcile of the default labels.
        const bool first = !node_registered_;
        node_registered_ = true;
        set_node_uid(json_text(json_member(node, "metadata"), "uid"));
        patch_node_status(node, labels_of(hooks_.node_object(), first ? kDefaultLabels : kStatusLabels));
    });
}

void ClusterLink::set_node_uid(const std::string& uid) {
    if (uid.empty() || uid == node_uid_) return;
    node_uid_ = uid;
    if (hooks_.node_uid) hooks_.node_uid();
}

void ClusterLink::register_node(const Json& status) {
    node_request(
        "POST", "/api/v1/nodes",
        registration_node(hooks_.node_object(), status).dump(-1, ' ', false, Json::error_handler_t::replace),
        "create", [this, status](const platform::HttpResponse& resp) {
            if (resp.status == 409) {
                // Created meanwhile: read it and patch it with the default
                // labels reconciled (tryRegisterWithAPIServer, updateDefaultLabels).
                node_post_now_ = true;
                return get_node();
            }
            if (resp.status != 201 && resp.status != 200)
                return node_failed("create: " + describe_status(resp.status, resp.body));
            log(Level::Notice, "API server: registered the Node " + node_name_);
            node_registered_ = true;
            const Json node = Json::parse(resp.body, nullptr, false);
            set_node_uid(json_text(json_member(node, "metadata"), "uid"));
            node_posted(status);
        });
}

void ClusterLink::patch_node_status(const Json& server_node, const Labels& reconcile) {
    Json status = node_status(hooks_.node_status(), &server_node, clock_.wall_ms());
    Json patch = node_status_patch(server_node, status, reconcile);
    if (patch.empty()) return node_posted(std::move(status));
    node_request("PATCH", "/api/v1/nodes/" + node_name_ + "/status",
                 patch.dump(-1, ' ', false, Json::error_handler_t::replace), "status",
                 [this, status](const platform::HttpResponse& resp) {
                     if (resp.status == 404) {
                         node_registered_ = false;  // deleted meanwhile: created at the next tick
                         return node_failed("status: the Node is gone; registering it again");
                     }
                     if (resp.status != 200)
                         return node_failed("status: " + describe_status(resp.status, resp.body));
                     node_posted(status);
                 });
}

// Logged once per distinct error; retried at the next tick, as a post then.
void ClusterLink::node_failed(const std::string& why) {
    if (why != node_error_)
        log(Level::Warning,
            "API server " + endpoint_.server + ": Node " + node_name_ + ": " + why +
                (why.find("HTTP 403") != std::string::npos ? " (check the RBAC in dist/rbac.yaml)" : "") +
                "; retrying in " + std::to_string(kNodeStatusUpdateMs / 1000) + " s");
    node_error_ = why;
    node_post_now_ = true;
}

}  // namespace daemonlet::agent
