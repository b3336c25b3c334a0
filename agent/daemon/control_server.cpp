// The ControlServer component (control_server.h).
#include "agent/daemon/control_server.h"

namespace daemonlet::agent {

namespace {

Json error_response(const std::string& code, const std::string& message) {
    return Json{{"error", code}, {"message", message}};
}

Json status_response(const RolloutStatus& st) {
    return Json{{"status", {{"message", st.message}, {"done", st.done}, {"error", st.error}}}};
}

}  // namespace

ControlServer::ControlServer(uv_loop_t* loop, std::string path, Handlers handlers)
    : handlers_(std::move(handlers)),
      server_(
          loop, std::move(path), platform::LineJsonServer::Limits{},
          [this](ClientId c, const Json& req) { on_request(c, req); }, [this](ClientId c) { on_gone(c); }) {}

Status ControlServer::start() { return server_.start(); }

void ControlServer::close() { server_.close(); }

void ControlServer::answer(ClientId client, const Json& response) {
    server_.send(client, response);
    server_.finish(client);
}

void ControlServer::on_request(ClientId client, const Json& req) {
    auto str = [&](const char* k) {
        return req.contains(k) && req[k].is_string() ? req[k].get<std::string>() : "";
    };
    const std::string op = str("op");
    const std::string ns = str("namespace");
    const std::string name = str("name");
    const bool wait = req.value("wait", false) || req.value("watch", false);
    if (op == "status") return answer(client, handlers_.status());
    if (op.empty() || ns.empty() || name.empty())
        return answer(client, error_response("BadRequest", "a request needs op, namespace and name"));
    if (handlers_.stopping()) return answer(client, error_response("Unavailable", "the agent is stopping"));

    if (op == "delete_pod") {
        const auto uid = handlers_.delete_pod(ns, name);
        if (!uid) return answer(client, error_response("NotFound", "pods \"" + name + "\" not found"));
        server_.send(client, Json{{"deleted", true}, {"uid", *uid}});
        if (wait)
            delete_waiters_[*uid].push_back(client);
        else
            server_.finish(client);
        return;
    }
    if (op == "undo") {
        std::int64_t to = 0;
        if (req.contains("to_revision") && req["to_revision"].is_number_integer())
            to = req["to_revision"].get<std::int64_t>();
        // The reply may come after the client has gone, or after close():
        // answering a client no longer connected does nothing.
        handlers_.undo(ns, name, to, [this, client](Result<std::string> r) {
            answer(client, r.ok() ? Json{{"result", r.value()}}
                                  : error_response(r.error().code_name(), r.error().message));
        });
        return;
    }
    if (op == "rollout_status") {
        const auto st = handlers_.rollout_status(ns, name);
        if (!st)
            return answer(client, error_response("NotFound", "daemonsets.apps \"" + name + "\" not found"));
        server_.send(client, status_response(*st));
        if (!wait || st->done)
            server_.finish(client);
        else
            watchers_[client] = StatusWatcher{ns + "/" + name, st->message};
        return;
    }
    answer(client, error_response("BadRequest", "unknown op \"" + op + "\""));
}

void ControlServer::on_gone(ClientId client) {
    watchers_.erase(client);
    for (auto it = delete_waiters_.begin(); it != delete_waiters_.end();) {
        std::erase(it->second, client);
        it = it->second.empty() ? delete_waiters_.erase(it) : std::next(it);
    }
}

void ControlServer::after_reconcile(const std::function<bool(const std::string& uid)>& pod_exists,
                                    const std::map<std::string, RolloutStatus>& statuses) {
    // send() and finish() may drop a client and call on_gone, which edits
    // these maps: collect first, then answer.
    std::vector<ClientId> answered;
    for (auto it = delete_waiters_.begin(); it != delete_waiters_.end();) {
        if (pod_exists(it->first)) {
            ++it;
            continue;
        }
        answered.insert(answered.end(), it->second.begin(), it->second.end());
        it = delete_waiters_.erase(it);
    }
    for (ClientId c : answered) answer(c, Json{{"gone", true}});
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
    for (const auto& [client, response] : updates) server_.send(client, response);
    for (ClientId c : finished) {
        watchers_.erase(c);
        server_.finish(c);
    }
}

}  // namespace daemonlet::agent
