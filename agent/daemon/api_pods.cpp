// The board's DaemonSet pods as Pods of the API (api_pods.h).
#include "agent/daemon/api_pods.h"

#include <algorithm>
#include <cstring>
#include <set>
#include <utility>

#include "core/cluster_report.h"
#include "core/json_diff.h"
#include "core/json_parse.h"
#include "core/pod_api_status.h"
#include "core/reflector.h"
#include "platform/log.h"

namespace daemonlet::agent {

using platform::Level;
using platform::log;

namespace {

// A pod whose template has no ControllerRevision yet: the revisions are
// listed again after 1 s (the controller writes one within its sync), then
// after twice as long each time, up to 30 s (a cluster whose controller is
// down costs a request per DaemonSet every 30 s, not every second).
constexpr std::int64_t kRevisionRetryMs = 1'000;
constexpr std::int64_t kRevisionRetryMaxMs = 30'000;

std::string selector_of(const DaemonSet& ds) {
    return ds.spec.selector ? label_selector_string(*ds.spec.selector) : std::string();
}

}  // namespace

std::string ApiPods::pod_path(const std::string& ns, const std::string& name) {
    return "/api/v1/namespaces/" + ns + "/pods/" + name;
}

// status.Manager's deletePod: no grace (the containers have stopped), the uid as a precondition.
Json ApiPods::confirm_delete_options(const std::string& uid) {
    return Json{{"apiVersion", "v1"},
                {"kind", "DeleteOptions"},
                {"gracePeriodSeconds", 0},
                {"preconditions", {{"uid", uid}}}};
}

bool ApiPods::terminal_phase(const std::string& phase) { return phase == "Failed" || phase == "Succeeded"; }

Result<platform::ApiHttpClient::RequestId> ClusterLink::request(
    const std::string& method, const std::string& target, std::string body,
    std::function<void(Result<platform::HttpResponse>)> done) {
    if (closed_ || !http_) return Error{ErrorCode::Closed, "the API server link is closed"};
    platform::HttpRequest r = base_request(method, target);
    r.body = std::move(body);
    r.timeout_ms = config_.request_timeout_ms;
    return http_->request(r, [this, done = std::move(done)](Result<platform::HttpResponse> res) {
        if (res.ok()) bytes_in_ += res.value().body.size();
        done(std::move(res));
    });
}

ApiPods::ApiPods(uv_loop_t* loop, ClusterLink& link, std::string node_name, const platform::Clock& clock,
                 Hooks hooks)
    : loop_(loop), link_(link), node_name_(std::move(node_name)), clock_(clock), hooks_(std::move(hooks)) {}

ApiPods::~ApiPods() { close(); }

void ApiPods::start() {
    if (timer_ || closed_) return;
    timer_ = new uv_timer_t;
    uv_timer_init(loop_, timer_);
    timer_->data = this;
    arm(0);
}

void ApiPods::close() {
    if (closed_) return;
    closed_ = true;
    if (timer_)
        uv_close(reinterpret_cast<uv_handle_t*>(timer_),
                 [](uv_handle_t* h) { delete reinterpret_cast<uv_timer_t*>(h); });
    timer_ = nullptr;
}

void ApiPods::arm(std::uint64_t delay_ms) {
    if (!timer_ || closed_) return;
    uv_timer_start(
        timer_, [](uv_timer_t* t) { static_cast<ApiPods*>(t->data)->sync(); }, delay_ms, 0);
}

void ApiPods::changed() { arm(0); }

void ApiPods::reconnected() {
    for (auto& [key, m] : mirrors_) m.posted = Json::object();
    arm(0);
}

void ApiPods::pod_finished(const std::string& uid, Json final_status) {
    auto it = mirrors_.find(uid);
    if (it == mirrors_.end()) return;
    it->second.final_status = std::move(final_status);
    arm(0);
}

// One step: the first thing to do, one request; its answer calls sync
// again. Nothing to do: the next check in kSyncPeriodMs.
void ApiPods::sync() {
    if (closed_ || busy_) return;
    if (link_.state() != LinkState::Connected) return arm(kSyncPeriodMs);  // changed() on connecting
    const std::vector<BoardPod> pods = hooks_.pods();
    std::map<std::string, const BoardPod*> by_uid;
    for (const auto& p : pods) by_uid[p.rec.uid] = &p;
    for (const auto& p : pods) {
        if (!p.mirror.is_null() && !mirrors_.count(p.rec.uid)) {
            Mirror m;
            m.mirror_pod = true;
            m.ns = p.rec.namespace_;
            m.template_hash = p.rec.uid;  // the config hash
            mirrors_.emplace(p.rec.uid, std::move(m));
        }
        if (!p.ds) continue;
        if (auto known = mirrors_.find(p.rec.uid); known != mirrors_.end()) {
            Mirror& m = known->second;
            if (m.ds_uid != p.ds->metadata.uid) {
                // The DaemonSet was deleted and made again (its Pods went
                // with the old one): the pod gets a Pod of the new one.
                m.ds_uid = p.ds->metadata.uid;
                m.ds_name = p.ds->metadata.name;
                m.name.clear();
                m.uid.clear();
                m.looked_up = false;
                m.posted = Json::object();
            }
            continue;
        }
        Mirror m;
        m.ns = p.rec.namespace_;
        m.ds_name = p.ds->metadata.name;
        m.ds_uid = p.ds->metadata.uid;
        m.template_hash = p.rec.revision_hash;
        mirrors_.emplace(p.rec.uid, std::move(m));
    }
    // The revisions of DaemonSets the board no longer runs a pod of are forgotten.
    std::set<std::string> in_use;
    for (const auto& p : pods)
        if (p.ds) in_use.insert(p.ds->metadata.uid);
    std::erase_if(revisions_, [&](const auto& kv) { return !in_use.count(kv.first); });
    std::erase_if(revision_waits_,
                  [&](const auto& kv) { return !in_use.count(kv.first.substr(0, kv.first.find('/'))); });
    const std::int64_t now = clock_.monotonic_ms();
    bool waiting = false;
    restart_deleted(by_uid);
    // The board's pods that are gone: their Pods finished, then deleted.
    for (auto it = mirrors_.begin(); it != mirrors_.end();) {
        if (by_uid.count(it->first)) {
            ++it;
        } else if (it->second.uid.empty()) {
            it = mirrors_.erase(it);  // never created: nothing to delete
        } else if (it->second.retry_at_ms > now) {
            waiting = true;
            ++it;
        } else {
            return finish(it->first);
        }
    }
    if (tend_node_pods(pods, now)) return;
    // A Pod of a revision the list lacks: listed again (has_unclaimed_pod),
    // at the sync period's pace, backing off to kRevisionRetryMaxMs.
    for (const auto& p : pods) {
        auto revs = p.ds ? revisions_.find(p.ds->metadata.uid) : revisions_.end();
        if (revs == revisions_.end() || !unlisted_revision_pod(revs->first, revs->second)) continue;
        RevisionWait& w = revision_waits_[revs->first + "/pods"];
        if (now - w.listed_ms < w.delay_ms) continue;
        w.listed_ms = now;
        w.delay_ms = w.delay_ms == 0 ? kRevisionRetryMs : std::min(2 * w.delay_ms, kRevisionRetryMaxMs);
        return list_revisions(p.rec.uid, *p.ds);
    }
    for (const auto& p : pods) {
        auto it = mirrors_.find(p.rec.uid);
        if (it == mirrors_.end()) continue;
        Mirror& m = it->second;
        if (m.retry_at_ms > now) {
            waiting = true;  // its last request failed: tried again after a while
            continue;
        }
        if (m.mirror_pod) {
            if (p.mirror.is_null()) continue;
            const std::string& node_uid = link_.node_uid();
            // The Node not read yet: no owner to name. Its uid's arrival
            // (ClusterHooks::node_uid) syncs again.
            if (node_uid.empty()) continue;
            if (m.pod_deleted) {
                // Removed outright (a forced delete): made again; the pod runs on.
                if (!m.uid.empty())
                    log(Level::Notice, "API server: the mirror pod " + m.ns + "/" + m.name +
                                           " was deleted; making it again");
                m.name.clear();
                m.uid.clear();
                m.pod_deleted = false;
                m.posted = Json::object();
            }
            if (m.uid.empty()) return create_mirror(it->first, p);
            auto w = node_pods_.find(m.uid);
            if (m.node_uid != node_uid || (w != node_pods_.end() && w->second.pod.deleting))
                return delete_mirror(
                    it->first, m.name, m.uid,
                    m.node_uid != node_uid ? "it names another Node uid" : "it is being deleted");
        } else if (m.uid.empty()) {
            // A pod that stops gets no Pod again (its own was deleted).
            if (!p.ds || m.restarting || p.rec.deleting) continue;
            auto revs = revisions_.find(m.ds_uid);
            const ClusterRevision* rev =
                revs == revisions_.end() ? nullptr : revision_for(revs->second, m.template_hash);
            if (!rev) {
                RevisionWait& w = revision_waits_[m.ds_uid + "/" + m.template_hash];
                if (revs == revisions_.end() || now - w.listed_ms >= w.delay_ms) {
                    w.listed_ms = now;
                    w.delay_ms =
                        w.delay_ms == 0 ? kRevisionRetryMs : std::min(2 * w.delay_ms, kRevisionRetryMaxMs);
                    return list_revisions(it->first, *p.ds);
                }
                waiting = true;  // the controller has not written its revision yet
                continue;
            }
            if (!m.looked_up) return list_pods(it->first, *p.ds, *rev);
            return create(it->first, *p.ds, *rev);
        }
        Json status = p.status;
        keep_transition_times(status, m.posted, rfc3339(clock_.wall_ms()));
        if (!pod_status_patch(m.posted, status, m.uid).empty())
            return patch_status(it->first, std::move(status));
    }
    arm(waiting ? static_cast<std::uint64_t>(kRevisionRetryMs) : kSyncPeriodMs);
}

bool ApiPods::send(const std::string& method, const std::string& target, Json body, const std::string& what,
                   const std::string& key, std::function<void(const platform::HttpResponse&)> done) {
    std::string text_body =
        body.is_null() ? std::string() : body.dump(-1, ' ', false, Json::error_handler_t::replace);
    auto id = link_.request(method, target, std::move(text_body),
                            [this, what, key, done = std::move(done)](Result<platform::HttpResponse> res) {
                                busy_ = false;
                                if (closed_) return;
                                if (!res.ok()) return failed(what + ": " + res.error().message, key);
                                if (auto it = mirrors_.find(key); it != mirrors_.end())
                                    it->second.retry_at_ms = 0;
                                if (key.rfind(kNodeKey, 0) == 0)
                                    node_retry_at_.erase(key.substr(std::strlen(kNodeKey)));
                                if (res.value().status < 300 && !error_.empty()) {
                                    log(Level::Notice, "API server: Pods of node " + node_name_ + ": " +
                                                           what + " succeeded after an error");
                                    error_.clear();
                                }
                                done(res.value());
                            });
    if (!id.ok()) {
        failed(what + ": " + id.error().message, key);
        return false;
    }
    busy_ = true;
    return true;
}

// Logged once per distinct error. The pod's next request waits
// kSyncPeriodMs (the status manager tries again at its next syncBatch); the
// other pods go on.
void ApiPods::failed(const std::string& what, const std::string& key, std::uint64_t retry_ms) {
    if (auto it = mirrors_.find(key); it != mirrors_.end())
        it->second.retry_at_ms = clock_.monotonic_ms() + static_cast<std::int64_t>(retry_ms);
    if (key.rfind(kNodeKey, 0) == 0)
        node_retry_at_[key.substr(std::strlen(kNodeKey))] =
            clock_.monotonic_ms() + static_cast<std::int64_t>(retry_ms);
    if (what != error_)
        log(Level::Warning, "API server: Pods of node " + node_name_ + ": " + what +
                                (what.find("HTTP 403") != std::string::npos && retry_ms == kSyncPeriodMs
                                     ? " (check the RBAC in dist/rbac.yaml)"
                                     : "") +
                                "; retrying in " + std::to_string(retry_ms / 1000) + " s");
    error_ = what;
    arm(0);  // the others go on; this one waits for its retry_at_ms
}

void ApiPods::list_revisions(const std::string& key, const DaemonSet& ds) {
    const Mirror& m = mirrors_.at(key);
    auto shared = std::make_shared<const DaemonSet>(ds);
    const std::string target = "/apis/apps/v1/namespaces/" + m.ns +
                               "/controllerrevisions?labelSelector=" + query_escape(selector_of(ds));
    send("GET", target, nullptr, "controllerrevisions of DaemonSet " + m.ns + "/" + m.ds_name, key,
         [this, key, shared](const platform::HttpResponse& resp) {
             const std::string what = "controllerrevisions of DaemonSet " + shared->metadata.namespace_ +
                                      "/" + shared->metadata.name;
             if (resp.status != 200)
                 return failed(what + ": " + describe_status(resp.status, resp.body), key);
             Json list = parse_json(resp.body);
             if (!list.is_object()) return failed(what + ": the response is not a JSON object", key);
             revisions_[shared->metadata.uid] = cluster_revisions(*shared, list);
             if (hooks_.node_pods_changed) hooks_.node_pods_changed();
             arm(0);
         });
}

// The Pods of the DaemonSet on this node: the one of this revision no other
// board pod has is taken (an earlier agent's, or the controller's).
void ApiPods::list_pods(const std::string& key, const DaemonSet& ds, const ClusterRevision& rev) {
    const std::string target = "/api/v1/namespaces/" + ds.metadata.namespace_ +
                               "/pods?fieldSelector=" + query_escape("spec.nodeName=" + node_name_) +
                               "&labelSelector=" + query_escape(selector_of(ds));
    const std::string ds_uid = ds.metadata.uid, hash = rev.hash;
    send("GET", target, nullptr, "pods of DaemonSet " + ds.metadata.namespace_ + "/" + ds.metadata.name, key,
         [this, key, ds_uid, hash](const platform::HttpResponse& resp) {
             auto it = mirrors_.find(key);
             if (it == mirrors_.end()) return arm(0);
             Mirror& m = it->second;
             const std::string what = "pods of DaemonSet " + m.ns + "/" + m.ds_name;
             if (resp.status != 200)
                 return failed(what + ": " + describe_status(resp.status, resp.body), key);
             Json list = parse_json(resp.body);
             if (!list.is_object()) return failed(what + ": the response is not a JSON object", key);
             std::set<std::string> claimed;
             for (const auto& [k, other] : mirrors_)
                 if (!other.uid.empty()) claimed.insert(other.uid);
             // A Pod being deleted is taken only when no other is (an agent
             // that was down when it was deleted: its pod then restarts); a
             // finished one (refused, failed) never is.
             std::vector<Json> candidates = controlled_pods(list, ds_uid, node_name_, true);
             std::stable_partition(candidates.begin(), candidates.end(), [](const Json& pod) {
                 return json_member(json_member(pod, "metadata"), "deletionTimestamp").is_null();
             });
             for (const Json& pod : candidates) {
                 const Json& meta = json_member(pod, "metadata");
                 if (claimed.count(json_text(meta, "uid")) ||
                     json_text(json_member(meta, "labels"), kControllerRevisionHashLabel) != hash ||
                     terminal_phase(json_text(json_member(pod, "status"), "phase")))
                     continue;
                 m.name = json_text(meta, "name");
                 m.uid = json_text(meta, "uid");
                 m.posted =
                     json_member(pod, "status").is_object() ? json_member(pod, "status") : Json::object();
                 ++adopted_;
                 log(Level::Notice, "API server: the Pod " + m.ns + "/" + m.name +
                                        " is the board's pod of DaemonSet " + m.ds_name + " (taken)");
                 break;
             }
             m.looked_up = true;
             if (hooks_.node_pods_changed) hooks_.node_pods_changed();
             arm(0);
         });
}

void ApiPods::create(const std::string& key, const DaemonSet& ds, const ClusterRevision& rev) {
    // Each create follows its own list: a create whose answer is lost (a
    // timeout after the server made the Pod) finds that Pod next time
    // instead of making a second one.
    mirrors_.at(key).looked_up = false;
    send("POST", "/api/v1/namespaces/" + ds.metadata.namespace_ + "/pods",
         daemon_pod_object(ds, rev, node_name_),
         "create a Pod of DaemonSet " + ds.metadata.namespace_ + "/" + ds.metadata.name, key,
         [this, key](const platform::HttpResponse& resp) {
             auto it = mirrors_.find(key);
             if (it == mirrors_.end()) return arm(0);
             Mirror& m = it->second;
             if (resp.status != 201 && resp.status != 200)
                 return failed("create a Pod of DaemonSet " + m.ns + "/" + m.ds_name + ": " +
                                   describe_status(resp.status, resp.body),
                               key);
             Json pod = parse_json(resp.body);
             const Json& meta = json_member(pod, "metadata");
             if (json_text(meta, "name").empty() || json_text(meta, "uid").empty())
                 return failed("create a Pod of DaemonSet " + m.ns + "/" + m.ds_name +
                                   ": the response has no name or uid",
                               key);
             m.name = json_text(meta, "name");
             m.uid = json_text(meta, "uid");
             m.posted = json_member(pod, "status").is_object() ? json_member(pod, "status") : Json::object();
             ++created_;
             log(Level::Notice, "API server: created the Pod " + m.ns + "/" + m.name +
                                    " for the board's pod of DaemonSet " + m.ds_name);
             arm(0);
         });
}

void ApiPods::patch_status(const std::string& key, Json status) {
    Mirror& m = mirrors_.at(key);
    Json patch = pod_status_patch(m.posted, status, m.uid);
    send("PATCH", "/api/v1/namespaces/" + m.ns + "/pods/" + m.name + "/status", std::move(patch),
         "status of Pod " + m.ns + "/" + m.name, key,
         [this, key, status = std::move(status)](const platform::HttpResponse& resp) {
             auto it = mirrors_.find(key);
             if (it == mirrors_.end()) return arm(0);
             Mirror& cur = it->second;
             if (resp.status == 404 || resp.status == 409) {
                 // Deleted meanwhile, or another Pod of that name (the uid
                 // precondition): the board's pod gets its Pod again.
                 log(Level::Notice, "API server: the Pod " + cur.ns + "/" + cur.name + " is gone (" +
                                        describe_status(resp.status, resp.body) + "); making it again");
                 cur.name.clear();
                 cur.uid.clear();
                 cur.looked_up = false;
                 cur.posted = Json::object();
                 return arm(0);
             }
             if (resp.status != 200)
                 return failed("status of Pod " + cur.ns + "/" + cur.name + ": " +
                                   describe_status(resp.status, resp.body),
                               key);
             cur.posted = status;
             ++patches_;
             arm(0);
         });
}

// The board's pod is gone: its terminal status, then the Pod deleted
// (DeleteOptions with the uid precondition, no grace: the containers have
// stopped already).
void ApiPods::finish(const std::string& key) {
    Mirror& m = mirrors_.at(key);
    // A mirror pod is deleted at once (deleteOrphanedMirrorPods).
    if (m.mirror_pod) return delete_mirror(key, m.name, m.uid, "its pod is gone");
    if (m.final_status) {
        Json status = *m.final_status;
        keep_transition_times(status, m.posted, rfc3339(clock_.wall_ms()));
        if (!pod_status_patch(m.posted, status, m.uid).empty()) return patch_status(key, std::move(status));
    }
    send("DELETE", pod_path(m.ns, m.name), confirm_delete_options(m.uid), "delete Pod " + m.ns + "/" + m.name,
         key, [this, key](const platform::HttpResponse& resp) {
             auto it = mirrors_.find(key);
             if (it == mirrors_.end()) return arm(0);
             Mirror& cur = it->second;
             if (resp.status != 200 && resp.status != 202 && resp.status != 404 && resp.status != 409)
                 return failed(
                     "delete Pod " + cur.ns + "/" + cur.name + ": " + describe_status(resp.status, resp.body),
                     key);
             if (resp.status == 200 || resp.status == 202) {
                 ++deleted_;
                 log(Level::Notice,
                     "API server: deleted the Pod " + cur.ns + "/" + cur.name + ": the board's pod is gone");
             }
             mirrors_.erase(it);
             arm(0);
         });
}

std::optional<ApiPodRef> ApiPods::pod_of(const std::string& uid) const {
    auto it = mirrors_.find(uid);
    // Mirror pods get no Events (the kubelet's go on the static pod).
    if (it == mirrors_.end() || it->second.uid.empty() || it->second.mirror_pod) return std::nullopt;
    return ApiPodRef{it->second.ns, it->second.name, it->second.uid};
}

Json ApiPods::status() const {
    std::size_t kept = 0, mirrors = 0;
    for (const auto& [k, m] : mirrors_)
        if (!m.uid.empty()) ++(m.mirror_pod ? mirrors : kept);
    return Json{{"pods", kept},
                {"created", created_},
                {"taken", adopted_},
                {"patches", patches_},
                {"deleted", deleted_},
                {"restarted", restarted_},
                {"refused", refused_},
                {"mirrorPods", mirrors},
                {"mirrorsCreated", mirrors_created_},
                {"mirrorsDeleted", mirrors_deleted_},
                {"lastError", error_}};
}

}  // namespace daemonlet::agent
