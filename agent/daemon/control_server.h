// The ControlServer component: the control socket, <stateDir>/daemonlet.sock,
// the CLI's way to ask the running agent for what changes state (delete pod,
// rollout undo) or needs it live (rollout status --watch). It owns the
// socket (platform/line_server.h), the clients waiting for a deleted pod to
// go and the rollout status watchers; what the requests mean is the agent's,
// through Handlers. One JSON object per line each way:
//
//   {"op":"delete_pod","namespace":NS,"name":POD,"wait":true}
//       -> {"deleted":true,"uid":UID}, then {"gone":true} once its containers
//          have stopped (no polling: answered from the reconcile that sees it go)
//   {"op":"undo","namespace":NS,"name":DS,"to_revision":N}
//       -> {"result":"rolled back"} or {"result":"skipped rollback (...)"},
//          once the rollback is durable (the loop serves others meanwhile)
//   {"op":"rollout_status","namespace":NS,"name":DS,"watch":true}
//       -> {"status":{"message":...,"done":...}} now and at every change
//          until done
//   {"op":"status"} -> the agent's state (Agent::status_json, cluster.cpp)
//   any error -> {"error":CODE,"message":...}
#pragma once

#include <uv.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/json.h"
#include "core/result.h"
#include "core/rollout_status.h"
#include "platform/line_server.h"

namespace daemonlet::agent {

class ControlServer {
  public:
    using ClientId = platform::LineJsonServer::ClientId;
    // What the requests ask of the agent.
    struct Handlers {
        std::function<Json()> status;  // the agent's state
        std::function<bool()> stopping;
        // Marks the pod deleted by the user: its uid, or nullopt when no
        // such pod runs.
        std::function<std::optional<std::string>(const std::string& ns, const std::string& name)> delete_pod;
        // kubectl rollout undo (to_revision 0: the previous one): what was
        // done, given to `reply` exactly once, at once or later on the loop
        // (once the rollback is on the disk: the store's worker flushes it).
        using UndoReply = std::function<void(Result<std::string>)>;
        std::function<void(const std::string& ns, const std::string& name, std::int64_t to_revision,
                           UndoReply reply)>
            undo;
        // The DaemonSet's rollout status on this node now; nullopt when it
        // is not in force.
        std::function<std::optional<RolloutStatus>(const std::string& ns, const std::string& name)>
            rollout_status;
    };

    ControlServer(uv_loop_t* loop, std::string path, Handlers handlers);
    ControlServer(const ControlServer&) = delete;
    ControlServer& operator=(const ControlServer&) = delete;

    // Binds the socket. Fails synchronously; "busy": another agent serves it.
    Status start();
    // Closes every connection and removes the socket: clients see the agent
    // is not running.
    void close();

    // After every reconcile: the deletes waited on whose pod is gone
    // (`pod_exists` false) are answered, and each watcher gets its
    // DaemonSet's status when it changed (`statuses` by "namespace/name";
    // absent: the DaemonSet is gone), until done.
    void after_reconcile(const std::function<bool(const std::string& uid)>& pod_exists,
                         const std::map<std::string, RolloutStatus>& statuses);

  private:
    struct StatusWatcher {
        std::string key;  // "namespace/name"
        std::string last_message;
    };

    void on_request(ClientId client, const Json& req);
    void on_gone(ClientId client);
    void answer(ClientId client, const Json& response);  // sends and finishes

    Handlers handlers_;
    platform::LineJsonServer server_;
    std::map<std::string, std::vector<ClientId>> delete_waiters_;  // by pod uid
    std::map<ClientId, StatusWatcher> watchers_;
};

}  // namespace daemonlet::agent
