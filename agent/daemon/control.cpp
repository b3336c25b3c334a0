// The agent's side of the control socket (ControlServer, control_server.h):
// what a delete, a rollout undo and a rollout status mean here, and the
// statuses after each reconcile.
#include <csignal>

#include "agent/daemon/agent.h"
#include "core/decision.h"
#include "platform/log.h"

namespace daemonlet::agent {

using platform::Level;
using platform::log;

void Agent::start_control() {
    // A client that goes away while we write must not kill the agent.
    std::signal(SIGPIPE, SIG_IGN);
    ControlServer::Handlers h;
    h.status = [this] { return status_json(); };
    h.stopping = [this] { return stopping_; };
    h.delete_pod = [this](const std::string& ns, const std::string& name) -> std::optional<std::string> {
        for (auto& [uid, p] : pods_) {
            if (p.rec.namespace_ != ns || p.rec.name != name) continue;
            log(Level::Notice, "pod " + ns + "/" + name + ": deleted by the user");
            p.deleted_by_user = true;
            schedule_reconcile();
            return uid;
        }
        return std::nullopt;
    };
    // `cp ds.yaml manifests/ && daemonlet rollout status ds/x` must not see
    // the spec before the copy: read what changed in the manifest directory
    // now rather than after the watch's settle delay (kubectl's
    // observedGeneration check, for a file source).
    h.undo = [this](const std::string& ns, const std::string& name, std::int64_t to,
                    ControlServer::Handlers::UndoReply reply) {
        rescan_manifests();
        rollbacks_->undo(ns, name, to, std::move(reply));
    };
    h.rollout_status = [this](const std::string& ns,
                              const std::string& name) -> std::optional<RolloutStatus> {
        rescan_manifests();
        const Desired* d = desired_.find(ns + "/" + name);
        if (!d) return std::nullopt;
        return rollout_status_of(*d, node_should_run_daemon_pod(node_state_->node(), d->ds()));
    };
    control_ = std::make_unique<ControlServer>(&loop_, config_.state_dir + "/daemonlet.sock", std::move(h));
}

// The DaemonSet's status on this node from the live pods.
RolloutStatus Agent::rollout_status_of(const Desired& d, const Decision& decision) const {
    std::vector<NodeDaemonPod> pods;
    const std::int64_t now = clock_.monotonic_ms();
    for (const auto& [uid, p] : pods_) {
        if (p.rec.namespace_ != d.ds().metadata.namespace_ || p.rec.daemonset != d.ds().metadata.name)
            continue;
        ObservedPod o;
        o.ready = p.ready_since_mono_ms.has_value();
        o.ready_since_mono_ms = p.ready_since_mono_ms;
        pods.push_back(NodeDaemonPod{p.rec.name, p.rec.created_at_ms, p.rec.revision_hash, o.ready,
                                     pod_available(o, d.ds().spec.min_ready_seconds, now)});
    }
    // The agent acts on a spec as soon as it reads it: always observed.
    return daemonset_rollout_status(d.ds(), daemonset_node_status(decision, std::move(pods), d.hash), true);
}

// After every reconcile: record the events that follow from the decisions
// and rollouts, answer the deletes whose pod has gone, push status changes.
void Agent::after_reconcile() {
    if (!control_) return;
    std::map<std::string, RolloutStatus> statuses;
    std::vector<std::pair<const Desired*, bool>> decided;
    std::size_t in_progress = 0;
    for (const auto& [key, d] : desired_) {
        Decision decision = node_should_run_daemon_pod(node_state_->node(), d.ds());
        ds_events_.placement(d, decision);
        RolloutStatus st = rollout_status_of(d, decision);
        decided.emplace_back(&d, decision.should_run);
        if (!st.done) ++in_progress;
        // RolloutComplete, once per hash (DaemonSetEvents::rollout_done).
        if (st.done && st.error.empty() && decision.should_run && ds_events_.rollout_done(d) && metrics_)
            metrics_->registry().add("daemonlet_rollouts_completed_total");
        statuses.emplace(key, std::move(st));
    }
    if (metrics_) count_daemonsets(decided, in_progress);
    control_->after_reconcile([this](const std::string& uid) { return pods_.contains(uid); }, statuses);
}

}  // namespace daemonlet::agent
