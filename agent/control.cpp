// The control socket, <stateDir>/daemonlet.sock: the CLI's way to ask the
// running agent for what changes state (delete pod, rollout undo) or needs
// it live (rollout status --watch). One JSON object per line each way
// (platform/line_server.h):
//
//   {"op":"delete_pod","namespace":NS,"name":POD,"wait":true}
//       -> {"deleted":true,"uid":UID}, then {"gone":true} once its containers
//          have stopped (no polling: answered from the reconcile that sees it go)
//   {"op":"undo","namespace":NS,"name":DS,"to_revision":N}
//       -> {"result":"rolled back"} or {"result":"skipped rollback (...)"}
//   {"op":"rollout_status","namespace":NS,"name":DS,"watch":true}
//       -> {"status":{"message":...,"done":...}} now and at every change
//          until done
//   {"op":"status"} -> the agent's state (Agent::status_json, cluster.cpp)
//   any error -> {"error":CODE,"message":...}
#include <csignal>

#include "agent/agent.h"
#include "core/decision.h"
#include "platform/log.h"
#include "platform/system_info.h"

namespace daemonlet::agent {

using platform::Level;
using platform::log;
using ClientId = platform::LineJsonServer::ClientId;

namespace {

Json error_response(const std::string& code, const std::string& message) {
    return Json{{"error", code}, {"message", message}};
}

Json status_response(const RolloutStatus& st) {
    return Json{{"status", {{"message", st.message}, {"done", st.done}, {"error", st.error}}}};
}

}  // namespace

void Agent::start_control() {
    // A client that goes away while we write must not kill the agent.
    std::signal(SIGPIPE, SIG_IGN);
    control_ = std::make_unique<platform::LineJsonServer>(
        &loop_, config_.state_dir + "/daemonlet.sock", platform::LineJsonServer::Limits{},
        [this](ClientId c, const Json& req) { on_control(c, req); },
        [this](ClientId c) { on_control_gone(c); });
}

void Agent::on_control(ClientId client, const Json& req) {
    auto str = [&](const char* k) {
        return req.contains(k) && req[k].is_string() ? req[k].get<std::string>() : "";
    };
    const std::string op = str("op");
    const std::string ns = str("namespace");
    const std::string name = str("name");
    const bool wait = req.value("wait", false) || req.value("watch", false);
    if (op == "status") {
        control_->send(client, status_json());
        control_->finish(client);
        return;
    }
    if (op.empty() || ns.empty() || name.empty()) {
        control_->send(client, error_response("BadRequest", "a request needs op, namespace and name"));
        control_->finish(client);
        return;
    }
    if (stopping_) {
        control_->send(client, error_response("Unavailable", "the agent is stopping"));
        control_->finish(client);
        return;
    }

    if (op == "delete_pod") {
        for (auto& [uid, p] : pods_) {
            if (p.rec.namespace_ != ns || p.rec.name != name) continue;
            log(Level::Notice, "pod " + ns + "/" + name + ": deleted by the user");
            p.deleted_by_user = true;
            schedule_reconcile();
            control_->send(client, Json{{"deleted", true}, {"uid", uid}});
            if (wait)
                delete_waiters_[uid].push_back(client);
            else
                control_->finish(client);
            return;
        }
        control_->send(client, error_response("NotFound", "pods \"" + name + "\" not found"));
        control_->finish(client);
        return;
    }

    // `cp ds.yaml manifests/ && daemonlet rollout status ds/x` must not see
    // the spec before the copy: read what changed in the manifest directory
    // now rather than after the watch's settle delay (kubectl's
    // observedGeneration check, for a file source).
    if (op == "undo" || op == "rollout_status") rescan_manifests();

    if (op == "undo") {
        std::int64_t to = 0;
        if (req.contains("to_revision") && req["to_revision"].is_number_integer())
            to = req["to_revision"].get<std::int64_t>();
        auto r = undo(ns, name, to);
        control_->send(
            client, r.ok() ? Json{{"result", r.value()}} : error_response(r.error().code, r.error().message));
        control_->finish(client);
        return;
    }

    if (op == "rollout_status") {
        const std::string key = ns + "/" + name;
        auto it = desired_.find(key);
        if (it == desired_.end()) {
            control_->send(client, error_response("NotFound", "daemonsets.apps \"" + name + "\" not found"));
            control_->finish(client);
            return;
        }
        RolloutStatus st = rollout_status_of(it->second, node_should_run_daemon_pod(node_, it->second.ds()));
        control_->send(client, status_response(st));
        if (!wait || st.done)
            control_->finish(client);
        else
            watchers_[client] = StatusWatcher{key, st.message};
        return;
    }

    control_->send(client, error_response("BadRequest", "unknown op \"" + op + "\""));
    control_->finish(client);
}

void Agent::on_control_gone(ClientId client) {
    watchers_.erase(client);
    for (auto it = delete_waiters_.begin(); it != delete_waiters_.end();) {
        std::erase(it->second, client);
        it = it->second.empty() ? delete_waiters_.erase(it) : std::next(it);
    }
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

// After every reconcile: answer the deletes whose pod has gone, record the
// events that follow from the decisions and rollouts, push status changes.
void Agent::after_reconcile() {
    if (!control_) return;
    // send() and finish() may drop a client and call on_control_gone, which
    // edits these maps: collect first, then answer.
    std::vector<ClientId> answered;
    for (auto it = delete_waiters_.begin(); it != delete_waiters_.end();) {
        if (pods_.count(it->first)) {
            ++it;
            continue;
        }
        answered.insert(answered.end(), it->second.begin(), it->second.end());
        it = delete_waiters_.erase(it);
    }
    for (ClientId c : answered) {
        control_->send(c, Json{{"gone", true}});
        control_->finish(c);
    }
    std::map<std::string, RolloutStatus> statuses;
    for (const auto& [key, d] : desired_) {
        Decision decision = node_should_run_daemon_pod(node_, d.ds());
        record_placement(d, decision);
        RolloutStatus st = rollout_status_of(d, decision);
        if (st.done && st.error.empty() && decision.should_run && rolled_out_[key] != d.hash) {
            rolled_out_[key] = d.hash;
            record_event(d.ds().metadata.namespace_, d.ds().metadata.name, "Normal", "RolloutComplete",
                         "Revision " + std::to_string(d.revision) + " (" + d.hash + ") rolled out");
        }
        statuses.emplace(key, std::move(st));
    }
    std::vector<std::pair<ClientId, Json>> updates;
    std::vector<ClientId> finished;
    for (auto& [client, w] : watchers_) {
        auto st = statuses.find(w.key);
        if (st == statuses.end()) {
            updates.emplace_back(client, error_response("NotFound", "the DaemonSet " + w.key + " is gone"));
            finished.push_back(client);
            continue;
        }
        if (st->second.message != w.last_message || st->second.done) {
            w.last_message = st->second.message;
            updates.emplace_back(client, status_response(st->second));
        }
        if (st->second.done) finished.push_back(client);
    }
    for (const auto& [client, response] : updates) control_->send(client, response);
    for (ClientId c : finished) {
        watchers_.erase(c);
        control_->finish(c);
    }
}

}  // namespace daemonlet::agent
