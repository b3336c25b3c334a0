// What the operator commands share: reaching the running agent, and reading
// a DaemonSet's state from the store read-only when it is not running (or
// for what needs no agent: describe, rollout history).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/config.h"
#include "core/decision.h"
#include "core/model.h"
#include "core/pod.h"
#include "core/rollout_status.h"
#include "platform/line_server.h"
#include "store/store.h"

namespace daemonlet::agent {

std::string control_socket_path(const AgentConfig& cfg);

// Connected to the agent, or an error whose message starts "the agent is
// not running (no <path>)" (code "not_running") when nothing serves the socket.
Result<std::unique_ptr<platform::LineJsonClient>> connect_agent(const AgentConfig& cfg);

// One request, one response, within timeout_ms.
Result<Json> ask_agent(platform::LineJsonClient& client, const Json& request, std::int64_t timeout_ms);
// How long a verb waits for the agent's first answer (delete, rollout undo,
// rollout status).
inline constexpr std::int64_t kAnswerTimeoutMs = 10'000;

// The store of a stopped or running agent, read-only.
Result<std::unique_ptr<store::Store>> open_store_readonly(const AgentConfig& cfg);

// A DaemonSet as the store has it, with this node's decision and status.
struct DaemonSetView {
    store::StoredDaemonSet row;
    DaemonSet ds;
    Node node;
    Decision decision;
    std::vector<PodRecord> pods;  // this DaemonSet's, oldest first
    DaemonSetNodeStatus status;
    std::optional<store::StoredRollback> rollback;
};
// Empty when the store has no such DaemonSet. Availability is judged on the
// wall clock (the container's start and minReadySeconds): the agent's
// monotonic readiness times are not stored.
Result<std::optional<DaemonSetView>> view_daemonset(store::Store& store, const AgentConfig& cfg,
                                                    const std::string& ns, const std::string& name,
                                                    std::int64_t now_ms);

// `describe pod NAME` (describe_pod.cpp): one pod as kubectl describes it,
// a static pod controlled by the Node.
int describe_pod(store::Store& store, const AgentConfig& cfg, const std::string& ns, const std::string& name);

// kubectl's duration.ShortHumanDuration of now - since.
// kubectl's AGE; "<unknown>" for a time recorded before the wall clock was
// set when it is set now (a board booted at 1970, core/wall_clock.h), as
// kubectl shows a zero creationTimestamp; "<invalid>" for a time to come.
std::string short_age(std::int64_t since_ms, std::int64_t now_ms);
// Whether a recorded time means nothing now: recorded before the clock was
// set, read after.
bool wall_time_unknown(std::int64_t since_ms, std::int64_t now_ms);
// A recorded time (ms since the epoch) in UTC with strftime's FORMAT; none
// when nothing was recorded (0) or the time means nothing now
// (wall_time_unknown): each caller says that as kubectl does.
std::optional<std::string> utc_time(std::int64_t ms, std::int64_t now_ms, const char* format);

// Columns aligned as kubectl's tabwriter aligns them: each line starts with
// indent, columns are separated by `padding` spaces beyond the widest cell.
void print_columns(const std::vector<std::vector<std::string>>& rows, const std::string& indent,
                   std::size_t padding);

// A pod template as kubectl prints one (describe, rollout history
// --revision): labels, containers with image, command, args, env.
std::string describe_pod_template(const Json& tmpl, const std::string& indent);

// ds, daemonset, daemonsets, daemonset.apps, daemonsets.apps.
bool is_daemonset_kind(const std::string& kind);

// "daemonset.apps/NAME", "ds/NAME", "daemonsets/NAME" or "ds NAME" at args[i]:
// the name, advancing i past what it used; empty with *error set otherwise.
std::string daemonset_name_arg(const std::vector<std::string>& args, std::size_t& i, std::string* error);

}  // namespace daemonlet::agent
