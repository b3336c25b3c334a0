// The Pods bound to this node, as the pod watch has them, and what the
// board does about each (api_pods.h; the rules are core/node_pods.h).
#include "agent/daemon/api_pods.h"

#include <algorithm>
#include <set>

#include "core/cluster_report.h"
#include "core/int_or_percent.h"
#include "core/json_diff.h"
#include "core/json_parse.h"
#include "core/pod_api_status.h"
#include "core/reflector.h"
#include "core/template_hash.h"
#include "platform/log.h"

namespace daemonlet::agent {

using platform::Level;
using platform::log;

void ApiPods::on_pods(ReflectorChanges&& changes) {
    // The first complete list: a rollout the cluster paces held until the
    // node's Pods are known is judged again (has_pod_known).
    bool news = changes.replace && !node_pods_synced_;
    if (changes.replace) {
        // A relist: what was kept per Pod and per owner starts afresh (so
        // neither grows with Pods and DaemonSets long gone).
        node_pods_.clear();
        node_retry_at_.clear();
        owner_present_.clear();
        node_pods_synced_ = true;
    }
    for (const Json& o : changes.objects) {
        NodePod pod = node_pod_of(o);
        if (pod.uid.empty()) continue;
        news = news || unclaimed_followed(pod);
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
    if (news && hooks_.node_pods_changed) hooks_.node_pods_changed();
    arm(0);
}

// A live Pod of a DaemonSet the board follows that no board pod has: one
// that may start a paced rollout's new pod. Not a refused Pod, another
// DaemonSet's, nor a status patch of one the board has.
bool ApiPods::unclaimed_followed(const NodePod& pod) const {
    if (pod.mirror || pod.deleting || terminal_phase(pod.phase) || pod.owner_kind != "DaemonSet" ||
        !hooks_.owner)
        return false;
    if (std::any_of(mirrors_.begin(), mirrors_.end(),
                    [&](const auto& kv) { return kv.second.uid == pod.uid; }))
        return false;
    return hooks_.owner(pod.namespace_, pod.owner_name, pod.owner_uid).state == OwnerState::Followed;
}

bool ApiPods::has_pod_known(const std::string& uid) const {
    if (!node_pods_synced_) return false;
    auto it = mirrors_.find(uid);
    return it != mirrors_.end() && (!it->second.uid.empty() || it->second.looked_up);
}

// The uids of the Pods the board's pods have.
std::set<std::string> ApiPods::claimed_uids() const {
    std::set<std::string> claimed;
    for (const auto& [key, m] : mirrors_)
        if (!m.uid.empty()) claimed.insert(m.uid);
    return claimed;
}

bool ApiPods::has_unclaimed_pod(const std::string& ds_uid, const std::string& template_hash) const {
    // The controller makes Pods of its current revision only: a Pod of
    // another (a leftover, an earlier template's surge Pod) is not the one
    // for the current template. Unknown until its revision is listed.
    auto revs = revisions_.find(ds_uid);
    const ClusterRevision* rev =
        revs == revisions_.end() ? nullptr : revision_for(revs->second, template_hash);
    if (!rev) return false;
    const std::set<std::string> claimed = claimed_uids();
    for (const auto& [uid, w] : node_pods_)
        if (is_current_surge_pod(w.pod, ds_uid, rev->hash) && !claimed.count(uid)) return true;
    return false;
}

// A Pod no board pod has of the DaemonSet `ds_uid` whose revision the list
// lacks (the controller's surge Pod of a template newer than the list).
bool ApiPods::unlisted_revision_pod(const std::string& ds_uid,
                                    const std::vector<ClusterRevision>& revs) const {
    const std::set<std::string> claimed = claimed_uids();
    for (const auto& [uid, w] : node_pods_) {
        const NodePod& p = w.pod;
        if (p.owner_uid == ds_uid && !p.mirror && !p.deleting && !terminal_phase(p.phase) &&
            !claimed.count(uid) && std::none_of(revs.begin(), revs.end(), [&](const ClusterRevision& r) {
                return r.hash == p.revision_hash;
            }))
            return true;
    }
    return false;
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
            if (take_twin(m, *bp->second->ds, w->second.pod)) continue;
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

// The board made its Pod while the DaemonSet controller made one for the
// node too (both saw none): without surge the controller keeps the oldest
// and deletes the other (podsShouldBeOnNode, "delete the excess daemon
// pods"). When it deletes the board's, the board takes the twin (a live Pod
// of the same DaemonSet and revision on this node that no board pod has)
// instead of restarting containers that did not change. With surge a
// second Pod is the controller's next one, and a deletion restarts.
bool ApiPods::take_twin(Mirror& m, const DaemonSet& ds, const NodePod& deleting) {
    const auto surge = surge_count(ds, 1);
    if (surge.ok() && surge.value() > 0) return false;
    const std::set<std::string> claimed = claimed_uids();
    for (const auto& [uid, w] : node_pods_) {
        const NodePod& p = w.pod;
        if (p.deleting || claimed.count(uid) || p.phase == "Failed" || p.phase == "Succeeded" ||
            p.owner_uid != deleting.owner_uid || p.revision_hash != deleting.revision_hash)
            continue;
        log(Level::Info, "API server: DaemonSet " + m.ds_name + ": its Pod " + m.ns + "/" + m.name +
                             " is deleted as a duplicate; the board's pod takes " + p.namespace_ + "/" +
                             p.name);
        m.name = p.name;
        m.uid = p.uid;
        m.posted = w.status;
        ++adopted_;
        return true;
    }
    return false;
}

// The node's Pods no board pod has, judged (core judge_node_pod) against
// what the board runs: the first that needs a request gets it.
bool ApiPods::tend_node_pods(const std::vector<BoardPod>& pods, std::int64_t now) {
    if (!node_pods_synced_) return false;
    const std::set<std::string> claimed = claimed_uids();
    // Per DaemonSet uid: the board's pods of it, whether each has its Pod,
    // their Pods' revisions and the controller's current one.
    std::map<std::string, OwnerView> per_ds;
    for (const auto& p : pods) {
        if (!p.ds) continue;
        OwnerView& o = per_ds[p.ds->metadata.uid];
        if (o.board_pods++ == 0) {
            o.all_have_pods = true;
            auto revs = revisions_.find(p.ds->metadata.uid);
            const std::string current = template_hash(
                json_member(json_member(p.ds->object, "spec"), "template"), p.ds->status.collision_count);
            if (const ClusterRevision* rev =
                    revs == revisions_.end() ? nullptr : revision_for(revs->second, current))
                o.current_hash = rev->hash;
        }
        auto m = mirrors_.find(p.rec.uid);
        auto w =
            m == mirrors_.end() || m->second.uid.empty() ? node_pods_.end() : node_pods_.find(m->second.uid);
        o.all_have_pods = o.all_have_pods && w != node_pods_.end();
        if (w != node_pods_.end()) o.board_pod_hashes.push_back(w->second.pod.revision_hash);
    }
    // The mirror pods the board's pods are to have (namespace/name).
    std::set<std::string> mirror_names;
    for (const auto& p : pods)
        if (!p.mirror.is_null())
            mirror_names.insert(p.rec.namespace_ + "/" +
                                json_text(json_member(p.mirror, "metadata"), "name"));
    for (const auto& [uid, w] : node_pods_) {
        if (claimed.count(uid)) continue;
        if (auto r = node_retry_at_.find(uid); r != node_retry_at_.end() && r->second > now) continue;
        if (hooks_.mirror_pods && w.pod.mirror) {
            const NodePodVerdict v = judge_mirror_pod(
                w.pod, node_name_, mirror_names.count(w.pod.namespace_ + "/" + w.pod.name) > 0);
            if (v.action != NodePodAction::DeleteMirror) continue;
            finish_node_pod(w.pod, v.message, false);
            return true;
        }
        OwnerView owner;
        if (w.pod.owner_kind == "DaemonSet" && !w.pod.owner_uid.empty() && hooks_.owner) {
            owner = hooks_.owner(w.pod.namespace_, w.pod.owner_name, w.pod.owner_uid);
            if (auto o = owner_present_.find(w.pod.owner_uid);
                owner.state == OwnerState::Unchecked && o != owner_present_.end())
                owner.state = o->second ? OwnerState::NotFollowed : OwnerState::Absent;
            if (auto e = per_ds.find(w.pod.owner_uid); e != per_ds.end()) {
                owner.board_pods = e->second.board_pods;
                owner.all_have_pods = e->second.all_have_pods;
                owner.board_pod_hashes = e->second.board_pod_hashes;
                owner.current_hash = e->second.current_hash;
            }
        }
        const NodePodVerdict v = judge_node_pod(w.pod, false, owner);
        switch (v.action) {
        case NodePodAction::Keep:
        case NodePodAction::DeleteMirror:
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
// A mirror pod (`status_first` false) is deleted at once (DeleteMirrorPod).
void ApiPods::finish_node_pod(const NodePod& pod, const std::string& why, bool status_first) {
    auto it = node_pods_.find(pod.uid);
    if (it == node_pods_.end()) return;
    const std::string key = kNodeKey + pod.uid, name = pod.namespace_ + "/" + pod.name;
    if (status_first && !terminal_phase(pod.phase)) {
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
         key, [this, key, name, why, status_first, uid = pod.uid](const platform::HttpResponse& resp) {
             if (resp.status != 200 && resp.status != 202 && resp.status != 404 && resp.status != 409)
                 return failed("delete Pod " + name + ": " + describe_status(resp.status, resp.body), key);
             if (resp.status == 200 || resp.status == 202) {
                 ++(status_first ? deleted_ : mirrors_deleted_);
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
                 Json ds = parse_json(resp.body);
                 const std::string uid = json_text(json_member(ds, "metadata"), "uid");
                 // A body that says nothing is no proof the DaemonSet is gone.
                 if (uid.empty()) return failed(what + ": the answer has no metadata.uid", key);
                 owner_present_[owner_uid] = uid == owner_uid;
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

namespace daemonlet::agent {

// CreateMirrorPod: the pod's copy, of its name. AlreadyExists: the Pod of
// that name is read (adopt_mirror).
void ApiPods::create_mirror(const std::string& key, const BoardPod& pod) {
    Mirror& m = mirrors_.at(key);
    const std::string node_uid = link_.node_uid();
    Json obj = mirror_pod_object(pod.mirror, m.template_hash, node_name_, node_uid);
    const std::string name = json_text(json_member(obj, "metadata"), "name");
    const std::string what = "create the mirror pod " + m.ns + "/" + name;
    send("POST", "/api/v1/namespaces/" + m.ns + "/pods", std::move(obj), what, key,
         [this, key, name, node_uid, what](const platform::HttpResponse& resp) {
             auto it = mirrors_.find(key);
             if (it == mirrors_.end()) return arm(0);
             Mirror& cur = it->second;
             if (resp.status == 409) return adopt_mirror(key, name, cur.template_hash);
             // Refused for what it is (kube-apiserver's admission: a mirror
             // pod may not reference a ServiceAccount, Secrets or
             // ConfigMaps, as upstream's static pods may not; an invalid
             // object): asked again every 5 minutes, not every sync.
             if (resp.status == 400 || resp.status == 403 || resp.status == 422)
                 return failed(what + ": " + describe_status(resp.status, resp.body), key, 300'000);
             if (resp.status != 201 && resp.status != 200)
                 return failed(what + ": " + describe_status(resp.status, resp.body), key);
             Json made = Json::parse(resp.body, nullptr, false);
             const Json& meta = json_member(made, "metadata");
             if (json_text(meta, "uid").empty()) return failed(what + ": the response has no uid", key);
             cur.name = json_text(meta, "name");
             cur.uid = json_text(meta, "uid");
             cur.node_uid = node_uid;
             cur.posted =
                 json_member(made, "status").is_object() ? json_member(made, "status") : Json::object();
             ++mirrors_created_;
             log(Level::Notice, "API server: created the mirror pod " + cur.ns + "/" + cur.name);
             arm(0);
         });
}

// The Pod of the mirror pod's name: one IsMirrorPodOf this pod and Node
// is kept (an earlier run's); another mirror pod (outdated) is deleted and
// made again; a Pod that is no mirror pod is left alone, and the mirror
// pod waits (the kubelet's CreateMirrorPod fails alike).
void ApiPods::adopt_mirror(const std::string& key, const std::string& name, const std::string& hash) {
    const std::string ns = mirrors_.at(key).ns;
    const std::string what = "the mirror pod " + ns + "/" + name;
    send("GET", pod_path(ns, name), nullptr, what, key,
         [this, key, name, hash, what](const platform::HttpResponse& resp) {
             auto it = mirrors_.find(key);
             if (it == mirrors_.end() || resp.status == 404) return arm(0);
             if (resp.status != 200)
                 return failed(what + ": " + describe_status(resp.status, resp.body), key);
             Json pod = Json::parse(resp.body, nullptr, false);
             const Json& meta = json_member(pod, "metadata");
             const std::string uid = json_text(meta, "uid");
             if (is_mirror_pod_of(pod, hash, link_.node_uid()) &&
                 json_member(meta, "deletionTimestamp").is_null()) {
                 Mirror& cur = it->second;
                 cur.name = name;
                 cur.uid = uid;
                 cur.node_uid = link_.node_uid();
                 cur.posted =
                     json_member(pod, "status").is_object() ? json_member(pod, "status") : Json::object();
                 log(Level::Info,
                     "API server: the mirror pod " + cur.ns + "/" + name + " is the board's (kept)");
                 return arm(0);
             }
             // Deleted already and held by a finalizer: waited for, not
             // deleted again and again.
             if (!json_member(meta, "deletionTimestamp").is_null() &&
                 json_member(meta, "finalizers").is_array() && !json_member(meta, "finalizers").empty())
                 return failed(what + ": still being deleted (a finalizer holds it)", key);
             if (json_member(json_member(meta, "annotations"), kConfigMirrorAnnotation).is_string() &&
                 !uid.empty())
                 return delete_mirror(key, name, uid, "it is outdated");
             failed(what + ": a Pod of that name that is not a mirror pod exists", key);
         });
}

// DeleteMirrorPod: no grace, the uid as a precondition. The pod runs on;
// its mirror pod is made again at the next sync if the pod is still there.
void ApiPods::delete_mirror(const std::string& key, const std::string& name, const std::string& uid,
                            const std::string& why) {
    const std::string ns = mirrors_.at(key).ns;
    const std::string what = "delete the mirror pod " + ns + "/" + name;
    send("DELETE", pod_path(ns, name), confirm_delete_options(uid), what, key,
         [this, key, name, uid, why, what](const platform::HttpResponse& resp) {
             if (resp.status != 200 && resp.status != 202 && resp.status != 404 && resp.status != 409)
                 return failed(what + ": " + describe_status(resp.status, resp.body), key);
             if (resp.status == 200 || resp.status == 202) {
                 ++mirrors_deleted_;
                 log(Level::Notice, "API server: deleted the mirror pod " + name + ": " + why);
             }
             if (auto it = mirrors_.find(key); it != mirrors_.end() && it->second.uid == uid) {
                 it->second.name.clear();
                 it->second.uid.clear();
                 it->second.pod_deleted = false;
                 it->second.posted = Json::object();
             }
             node_pods_.erase(uid);
             // Kept by a finalizer (the answer is the Pod, still there, its
             // finalizers listed): the next create waits a sync period
             // rather than looping.
             const Json kept = Json::parse(resp.body, nullptr, false);
             const Json& finalizers = json_member(json_member(kept, "metadata"), "finalizers");
             if (resp.status == 200 && finalizers.is_array() && !finalizers.empty())
                 return failed(what + ": kept by a finalizer", key);
             arm(0);
         });
}

}  // namespace daemonlet::agent
