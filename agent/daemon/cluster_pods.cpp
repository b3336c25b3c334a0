// apiServer.podStatus: what the ApiPods component (api_pods.h) reads of the
// agent's pods: each pod the board runs for a DaemonSet, its cluster
// DaemonSet, and its status as the kubelet reports it
// (core/pod_api_status.h, the converter `daemonlet get pods -o json` uses).
#include <algorithm>
#include <vector>

#include "agent/daemon/agent.h"
#include "core/cluster_report.h"
#include "core/decision.h"
#include "core/json_diff.h"
#include "core/pod_api_status.h"
#include "core/qos.h"
#include "platform/log.h"

namespace daemonlet::agent {

void Agent::start_api_pods() {
    if (!cluster_ || !config_.api_server.pod_status) return;
    ApiPods::Hooks hooks;
    hooks.pods = [this] { return board_pods(); };
    hooks.restart = [this](const std::string& uid, std::optional<std::int64_t> grace,
                           const std::string& why) { restart_for_api(uid, grace, why); };
    hooks.owner = [this](const std::string& ns, const std::string& name, const std::string& uid) {
        return pod_owner(ns, name, uid);
    };
    hooks.mirror_pods = config_.api_server.register_node;
    // A Pod of the node no board pod has (the controller's surge Pod) may
    // start a paced rollout's new pod.
    hooks.node_pods_changed = [this] { schedule_reconcile(); };
    api_pods_ = std::make_unique<ApiPods>(&loop_, *cluster_, node_state_->name(), clock_, std::move(hooks));
    api_pods_->start();
    // The pods' tokens are bound to their Pods (api_access.h).
    if (api_access_) api_access_->set_bind_pods(true);
}

void Agent::close_api_pods() {
    if (api_pods_) api_pods_->close();
    api_pods_.reset();
    if (api_access_) api_access_->set_bind_pods(false);
}

// `kubectl delete pod` (or the controller's rollout) on a board pod's Pod:
// the pod stops as `daemonlet delete pod` stops it (the reconcile replaces
// it), its containers within the Pod's grace (core kill_grace_seconds).
// A cluster DaemonSet's pod only: a file's DaemonSet, a static pod, are
// the board's alone.
void Agent::restart_for_api(const std::string& uid, std::optional<std::int64_t> grace,
                            const std::string& why) {
    LivePod* found = pods_.find(uid);
    if (!found) return;
    LivePod& p = *found;
    const Desired* d = desired_.for_pod(p.rec);
    if (!d || !d->from_api() || p.rec.deleting || p.deleted_by_user) return;
    const std::shared_ptr<const PodSpec> spec = pod_source(p.rec).spec;
    const std::int64_t spec_grace = (spec ? spec->termination_grace_period_seconds
                                          : d->ds().spec.template_.spec.termination_grace_period_seconds)
                                        .value_or(30);
    p.rec.deletion_grace_seconds = kill_grace_seconds(grace, spec_grace);
    p.deleted_by_user = true;
    log(platform::Level::Notice, "pod " + p.rec.namespace_ + "/" + p.rec.name + ": " + why +
                                     "; stopping it within " + std::to_string(*p.rec.deletion_grace_seconds) +
                                     " s, a new pod replaces it");
    schedule_reconcile();
}

void Agent::pace_by_cluster(const Desired& d, DesiredDaemonSet& w) const {
    if (!config_.api_server.cluster_paces_rollouts || !api_pods_ || !cluster_ || !d.from_api()) return;
    // Who paces it: core cluster_paces_rollout, from the link and whether
    // the API has each old-revision pod's Pod (the node's Pods listed, its
    // own looked for).
    std::vector<PodInApi> old_pods;
    if (cluster_->state() == LinkState::Connected)
        for (const auto& [uid, p] : pods_)
            if (p.rec.namespace_ == d.ds().metadata.namespace_ && p.rec.daemonset == d.ds().metadata.name &&
                p.rec.revision_hash != d.hash && !p.rec.deleting)
                old_pods.push_back(!api_pods_->has_pod_known(uid) ? PodInApi::Unknown
                                   : api_pods_->pod_of(uid)       ? PodInApi::Present
                                                                  : PodInApi::Absent);
    w.paced_by_cluster = cluster_paces_rollout(cluster_->state(), cluster_->judged(), old_pods);
    // The controller's surge Pod starts the new pod once every old pod's Pod is known.
    if (w.paced_by_cluster && cluster_->state() == LinkState::Connected &&
        std::find(old_pods.begin(), old_pods.end(), PodInApi::Unknown) == old_pods.end())
        w.cluster_made_new_pod = api_pods_->has_unclaimed_pod(d.ds().metadata.uid, d.hash);
}

// The pod's Pod as ApiPods made or took it: its service-account tokens are
// bound to it (kubelet.go getServiceAccountToken binds every token to its
// pod), asked for at once; the volume takes the new token in place when it
// comes, as a refresh (api_access.h). Looked at each time ApiPods syncs,
// which it does after each Pod it makes or takes.
void Agent::bind_tokens(const LivePod& p) {
    if (!api_access_ || !config_.api_server.enabled || p.rec.deleting) return;
    const auto pod = api_pods_->pod_of(p.rec.uid);
    if (!pod || !api_access_->bind(p.rec.uid, BoundPod{pod->name, pod->uid})) return;
    if (const PodSource src = pod_source(p.rec); src.spec)
        api_access_->need(p.rec.uid, ApiAccess::keys_of(p.rec.namespace_, *src.spec));
}

// What the board knows of a Pod's owning DaemonSet (core OwnerView).
OwnerView Agent::pod_owner(const std::string& ns, const std::string& name, const std::string& uid) const {
    OwnerView v;
    auto a = sources_->api().find(ns + "/" + name);
    if (a == sources_->api().end()) return v;  // Unchecked: the server is asked
    if (a->second.uid != uid) {
        v.state = OwnerState::Absent;  // made again since: the Pod's DaemonSet is gone
        return v;
    }
    const Desired* d = desired_.find(ns + "/" + name);
    if (!d || !d->from_api()) {
        v.state = OwnerState::NotFollowed;  // a manifest file of that name wins: not the cluster's here
        return v;
    }
    v.state = OwnerState::Followed;
    v.decision = node_should_run_daemon_pod(node_state_->node(), d->ds());
    return v;
}

Json Agent::board_pod_status(const LivePod& p, bool terminal) const {
    PodStatusContext ctx;
    ctx.runtime = config_.runtime_type;
    if (node_ips_) ctx.node_ips = node_ips_->ips();
    ctx.now_ms = clock_.wall_ms();
    ctx.terminal = terminal;
    // The spec of the pod's own revision: the template in force, or an old
    // revision's while its DaemonSet rolls.
    std::shared_ptr<const PodSpec> spec = pod_source(p.rec).spec;
    if (!spec) {
        if (const DaemonSet* old = desired_.cached_pod_revision(p.rec))
            spec = std::make_shared<const PodSpec>(old->spec.template_.spec);
    }
    if (spec) {
        for (const auto& c : spec->init_containers) ctx.images.push_back(c.image);
        for (const auto& c : spec->containers) ctx.images.push_back(c.image);
        ctx.qos_class = to_string(pod_qos_class(*spec));
    }
    return pod_api_status(p.rec, ctx);
}

std::vector<BoardPod> Agent::board_pods() {
    // ApiPods syncs after each Pod it makes or takes: the Events its pod
    // had meanwhile go now.
    flush_pod_events();
    std::vector<BoardPod> out;
    const bool mirrors = config_.api_server.register_node;
    for (const auto& [uid, p] : pods_) {
        BoardPod b;
        b.rec = p.rec;
        if (p.rec.is_static()) {
            // Its mirror pod copies the static pod of its file; a pod no
            // file defines any more has none (it is deleted).
            const StaticPods::Desired* s = static_pods_.offered(uid);
            if (!mirrors || !s) continue;
            b.mirror = s->pod->object;
        } else if (const Desired* d = desired_.for_pod(p.rec); d && d->from_api()) {
            auto a = sources_->api().find(p.rec.namespace_ + "/" + p.rec.daemonset);
            if (a != sources_->api().end()) b.ds = a->second.object;
            bind_tokens(p);
        } else if (d && mirrors) {
            // A manifest file's DaemonSet pod: its mirror pod copies its
            // template, under the pod's name.
            const Json& tmpl = json_member(json_member(d->ds().object, "spec"), "template");
            Json meta =
                json_member(tmpl, "metadata").is_object() ? json_member(tmpl, "metadata") : Json::object();
            meta["name"] = p.rec.name;
            meta["namespace"] = p.rec.namespace_;
            meta["labels"][kControllerRevisionHashLabel] = p.rec.revision_hash;
            meta["annotations"]["kubernetes.io/config.source"] = "file";
            meta["annotations"]["daemonlet.io/daemonset"] = p.rec.daemonset;
            b.mirror = Json{{"metadata", std::move(meta)}, {"spec", json_member(tmpl, "spec")}};
        }
        b.status = board_pod_status(p, false);
        out.push_back(std::move(b));
    }
    return out;
}

}  // namespace daemonlet::agent
