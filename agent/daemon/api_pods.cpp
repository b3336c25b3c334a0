// The board's DaemonSet pods as Pods of the API (api_pods.h).
#include "agent/daemon/api_pods.h"

#include <algorithm>
#include <set>
#include <utility>

#include "core/cluster_report.h"
#include "core/json_diff.h"
#include "core/pod_api_status.h"
#include "core/reflector.h"
#include "platform/log.h"

namespace daemonlet::agent {

using platform::Level;
using platform::log;

namespace {

// status.Manager's syncBatch period: every Pod's status is checked again.
constexpr std::uint64_t kSyncPeriodMs = 10'000;
// A pod whose template has no ControllerRevision yet: the revisions are
// listed again after 1 s (the controller writes one within its sync), then
// after twice as long each time, up to 30 s (a cluster whose controller is
// down costs a request per DaemonSet every 30 s, not every second).
constexpr std::int64_t kRevisionRetryMs = 1'000;
constexpr std::int64_t kRevisionRetryMaxMs = 30'000;

std::string selector_of(const DaemonSet& ds) {
    return ds.spec.selector ? label_selector_string(*ds.spec.selector) : std::string();
}

// The requests about a Pod of the node no board pod has are keyed apart
// from the board pods' (by Pod uid), for their retry.
constexpr const char* kNodeKey = "node/";

std::string pod_path(const std::string& ns, const std::string& name) {
    return "/api/v1/namespaces/" + ns + "/pods/" + name;
}

// status.Manager's deletePod: no grace (the containers have stopped), the uid as a precondition.
Json confirm_delete_options(const std::string& uid) {
    return Json{{"apiVersion", "v1"},
                {"kind", "DeleteOptions"},
                {"gracePeriodSeconds", 0},
                {"preconditions", {{"uid", uid}}}};
}

bool terminal_phase(const std::string& phase) { return phase == "Failed" || phase == "Succeeded"; }

}  // namespace

Result<platform::HttpClient::RequestId> ClusterLink::request(
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

void ApiPods::on_pods(ReflectorChanges&& changes) {
    if (changes.replace) {
        node_pods_.clear();
        node_pods_synced_ = true;
    }
    for (const Json& o : changes.objects) {
        NodePod pod = node_pod_of(o);
        if (pod.uid.empty()) continue;
        const Json& status = json_member(o, "status");
        const std::string uid = pod.uid;
        node_pods_[uid] = WatchedPod{std::move(pod), status.is_object() ? status : Json::object()};
    }
    for (const Json& o : changes.deleted) {
        const std::string uid = json_text(json_member(o, "metadata"), "uid");
        node_pods_.erase(uid);
        node_retry_at_.erase(uid);
        // Removed outright (HandlePodRemoves): the board's pod whose Pod it
        // was stops (sync, while connected). Not on a relist that lacks it:
        // a server that lost its state would restart every pod.
        for (auto& [key, m] : mirrors_)
            if (!uid.empty() && m.uid == uid && !m.final_status) m.pod_deleted = true;
    }
    arm(0);
}

// The board pods whose Pod is being deleted (a deletionTimestamp:
// HandlePodUpdates) or was deleted (HandlePodRemoves): each stops, within
// the Pod's grace, and is replaced (Hooks::restart). Cluster DaemonSets'
// pods only.
void ApiPods::restart_deleted(const std::map<std::string, const BoardPod*>& by_uid) {
    for (auto& [key, m] : mirrors_) {
        auto bp = by_uid.find(key);
        if (bp == by_uid.end() || !bp->second->ds || m.restarting || m.final_status) continue;
        std::optional<std::int64_t> grace;
        if (m.pod_deleted) {
            grace = 0;
        } else {
            auto w = m.uid.empty() ? node_pods_.end() : node_pods_.find(m.uid);
            if (w == node_pods_.end()) continue;
            const NodePodVerdict v = judge_node_pod(w->second.pod, true, OwnerView{});
            if (v.action != NodePodAction::RestartBoardPod) continue;
            grace = w->second.pod.deletion_grace_seconds;
        }
        m.restarting = true;
        ++restarted_;
        const std::string why = "its Pod " + m.ns + "/" + m.name +
                                (m.pod_deleted ? " was deleted" : " is being deleted") + " through the API";
        log(Level::Notice, "API server: the board's pod of DaemonSet " + m.ds_name + " restarts: " + why);
        if (m.pod_deleted) {
            m.name.clear();  // nothing left to confirm
            m.uid.clear();
        }
        if (hooks_.restart) hooks_.restart(key, grace, why);
    }
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
    for (const auto& p : pods) {
        auto it = mirrors_.find(p.rec.uid);
        if (it == mirrors_.end()) continue;
        Mirror& m = it->second;
        if (m.retry_at_ms > now) {
            waiting = true;  // its last request failed: tried again after a while
            continue;
        }
        if (m.uid.empty()) {
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
                                if (key.rfind(kNodeKey, 0) == 0) node_retry_at_.erase(key.substr(5));
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
void ApiPods::failed(const std::string& what, const std::string& key) {
    if (auto it = mirrors_.find(key); it != mirrors_.end())
        it->second.retry_at_ms = clock_.monotonic_ms() + static_cast<std::int64_t>(kSyncPeriodMs);
    if (key.rfind(kNodeKey, 0) == 0)
        node_retry_at_[key.substr(5)] = clock_.monotonic_ms() + static_cast<std::int64_t>(kSyncPeriodMs);
    if (what != error_)
        log(Level::Warning,
            "API server: Pods of node " + node_name_ + ": " + what +
                (what.find("HTTP 403") != std::string::npos ? " (check the RBAC in dist/rbac.yaml)" : "") +
                "; retrying in " + std::to_string(kSyncPeriodMs / 1000) + " s");
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
             Json list = Json::parse(resp.body, nullptr, false);
             if (!list.is_object()) return failed(what + ": the response is not a JSON object", key);
             revisions_[shared->metadata.uid] = cluster_revisions(*shared, list);
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
             Json list = Json::parse(resp.body, nullptr, false);
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
             Json pod = Json::parse(resp.body, nullptr, false);
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

Json ApiPods::status() const {
    std::size_t kept = 0;
    for (const auto& [k, m] : mirrors_)
        if (!m.uid.empty()) ++kept;
    return Json{{"pods", kept},        {"created", created_}, {"taken", adopted_},
                {"patches", patches_}, {"deleted", deleted_}, {"restarted", restarted_},
                {"refused", refused_}, {"lastError", error_}};
}

// The node's Pods no board pod has, judged (core judge_node_pod) against
// what the board runs: the first that needs a request gets it.
bool ApiPods::tend_node_pods(const std::vector<BoardPod>& pods, std::int64_t now) {
    if (!node_pods_synced_) return false;
    std::set<std::string> claimed;
    for (const auto& [key, m] : mirrors_)
        if (!m.uid.empty()) claimed.insert(m.uid);
    // Per DaemonSet uid: the board's pods of it, and whether each has its Pod.
    std::map<std::string, std::pair<std::size_t, bool>> per_ds;
    for (const auto& p : pods) {
        if (!p.ds) continue;
        auto& [count, all] = per_ds[p.ds->metadata.uid];
        if (count++ == 0) all = true;
        auto m = mirrors_.find(p.rec.uid);
        all = all && m != mirrors_.end() && !m->second.uid.empty() && node_pods_.count(m->second.uid);
    }
    for (const auto& [uid, w] : node_pods_) {
        if (claimed.count(uid)) continue;
        if (auto r = node_retry_at_.find(uid); r != node_retry_at_.end() && r->second > now) continue;
        OwnerView owner;
        if (w.pod.owner_kind == "DaemonSet" && !w.pod.owner_uid.empty() && hooks_.owner) {
            owner = hooks_.owner(w.pod.namespace_, w.pod.owner_name, w.pod.owner_uid);
            if (auto o = owner_present_.find(w.pod.owner_uid);
                owner.state == OwnerState::Unchecked && o != owner_present_.end())
                owner.state = o->second ? OwnerState::NotFollowed : OwnerState::Absent;
            if (auto e = per_ds.find(w.pod.owner_uid); e != per_ds.end()) {
                owner.board_pods = e->second.first;
                owner.all_have_pods = e->second.second;
            }
        }
        const NodePodVerdict v = judge_node_pod(w.pod, false, owner);
        switch (v.action) {
        case NodePodAction::Keep:
        case NodePodAction::RestartBoardPod: continue;
        case NodePodAction::Refuse: refuse(w.pod, v); return true;
        case NodePodAction::Finish: finish_node_pod(w.pod, v.message); return true;
        case NodePodAction::CheckOwner: check_owner(w.pod); return true;
        }
    }
    return false;
}

// kubelet.go rejectPod: phase Failed, the predicate's reason and message.
void ApiPods::refuse(const NodePod& pod, const NodePodVerdict& v) {
    Json patch = {{"metadata", {{"uid", pod.uid}}},
                  {"status", {{"phase", "Failed"}, {"reason", v.reason}, {"message", v.message}}}};
    const std::string key = kNodeKey + pod.uid, name = pod.namespace_ + "/" + pod.name;
    send("PATCH", pod_path(pod.namespace_, pod.name) + "/status", std::move(patch), "refuse Pod " + name, key,
         [this, key, name, uid = pod.uid, v](const platform::HttpResponse& resp) {
             if (resp.status == 404 || resp.status == 409) {
                 node_pods_.erase(uid);  // gone, or another Pod of that name
                 return arm(0);
             }
             if (resp.status != 200)
                 return failed("refuse Pod " + name + ": " + describe_status(resp.status, resp.body), key);
             if (auto it = node_pods_.find(uid); it != node_pods_.end()) {
                 it->second.pod.phase = "Failed";
                 it->second.pod.reason = v.reason;
             }
             ++refused_;
             log(Level::Notice,
                 "API server: the Pod " + name + " bound to this node is refused: " + v.message);
             arm(0);
         });
}

// A Pod bound here that no board pod has and none will: its terminal
// status (unless it has one), then deleted as the status manager deletes a
// finished Pod.
void ApiPods::finish_node_pod(const NodePod& pod, const std::string& why) {
    auto it = node_pods_.find(pod.uid);
    if (it == node_pods_.end()) return;
    const std::string key = kNodeKey + pod.uid, name = pod.namespace_ + "/" + pod.name;
    if (!terminal_phase(pod.phase)) {
        Json status = orphan_terminal_status(it->second.status, rfc3339(clock_.wall_ms()));
        Json patch = pod_status_patch(it->second.status, status, pod.uid);
        if (!patch.empty()) {
            send("PATCH", pod_path(pod.namespace_, pod.name) + "/status", std::move(patch),
                 "status of Pod " + name, key,
                 [this, key, name, uid = pod.uid, status](const platform::HttpResponse& resp) {
                     auto w = node_pods_.find(uid);
                     if (resp.status == 404 || resp.status == 409) {
                         if (w != node_pods_.end()) node_pods_.erase(w);
                         return arm(0);
                     }
                     if (resp.status != 200)
                         return failed(
                             "status of Pod " + name + ": " + describe_status(resp.status, resp.body), key);
                     if (w != node_pods_.end()) {
                         w->second.pod.phase = "Failed";
                         w->second.status = status;
                     }
                     ++patches_;
                     arm(0);
                 });
            return;
        }
    }
    send("DELETE", pod_path(pod.namespace_, pod.name), confirm_delete_options(pod.uid), "delete Pod " + name,
         key, [this, key, name, why, uid = pod.uid](const platform::HttpResponse& resp) {
             if (resp.status != 200 && resp.status != 202 && resp.status != 404 && resp.status != 409)
                 return failed("delete Pod " + name + ": " + describe_status(resp.status, resp.body), key);
             if (resp.status == 200 || resp.status == 202) {
                 ++deleted_;
                 log(Level::Notice, "API server: deleted the Pod " + name + " bound to this node: " + why);
             }
             node_pods_.erase(uid);
             arm(0);
         });
}

// A DaemonSet the board does not follow (another namespace, another
// selector) or that is gone: GET it once. 403: taken as not the board's.
void ApiPods::check_owner(const NodePod& pod) {
    const std::string key = kNodeKey + pod.uid;
    const std::string what = "DaemonSet " + pod.namespace_ + "/" + pod.owner_name + " of Pod " + pod.name;
    send("GET", "/apis/apps/v1/namespaces/" + pod.namespace_ + "/daemonsets/" + pod.owner_name, nullptr, what,
         key, [this, key, what, owner_uid = pod.owner_uid](const platform::HttpResponse& resp) {
             if (resp.status == 200) {
                 Json ds = Json::parse(resp.body, nullptr, false);
                 owner_present_[owner_uid] = json_text(json_member(ds, "metadata"), "uid") == owner_uid;
             } else if (resp.status == 404) {
                 owner_present_[owner_uid] = false;
             } else if (resp.status == 403) {
                 owner_present_[owner_uid] = true;
                 log(Level::Notice, "API server: " + what + ": " + describe_status(resp.status, resp.body) +
                                        "; its Pods are left alone");
             } else {
                 return failed(what + ": " + describe_status(resp.status, resp.body), key);
             }
             arm(0);
         });
}

}  // namespace daemonlet::agent
