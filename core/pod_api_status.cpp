#include "core/pod_api_status.h"

#include <algorithm>

#include "core/cluster_report.h"
#include "core/json_diff.h"
#include "core/wall_clock.h"

namespace daemonlet {

namespace {

// A time the record holds, as Kubernetes writes it; null (a zero time, as
// Kubernetes marshals it) when it was recorded before the clock was set and
// the clock is set now (core/wall_clock.h).
Json api_time(std::int64_t ms, std::int64_t now) {
    if (ms <= 0) return "";
    if (!wall_time_known(ms) && wall_time_known(now)) return nullptr;
    return rfc3339(ms);
}

// Go's %s of a []string: "[a b]".
std::string go_list(const std::vector<std::string>& names) {
    std::string out = "[";
    for (std::size_t i = 0; i < names.size(); ++i) out += (i ? " " : "") + names[i];
    return out + "]";
}

Json condition(const char* type, bool is_true, const std::string& reason, const std::string& message,
               const Json& transition) {
    Json c = {{"type", type}, {"status", is_true ? "True" : "False"}, {"lastTransitionTime", transition}};
    if (!reason.empty()) c["reason"] = reason;
    if (!message.empty()) c["message"] = message;
    return c;
}

// getPhase with podIsTerminal, for a restartPolicy Always pod that is gone.
PodPhase terminal_phase(const PodRecord& p) {
    for (const auto& c : p.containers)
        if (c.state != ContainerState::Terminated || c.exit_code != 0) return PodPhase::Failed;
    return PodPhase::Succeeded;
}

// A strategic merge of a list with a merge key: the elements that differ
// (new or changed), "$patch": "delete" for the ones gone, and the order.
void keyed_list_patch(Json& out, const std::string& field, const char* key, const Json* old_list,
                      const Json& list) {
    if (!old_list || !old_list->is_array()) {
        out[field] = list;  // none before: the list as it is
        return;
    }
    Json changed = Json::array(), order = Json::array();
    for (const Json& e : list) {
        order.push_back({{key, e.is_object() && e.contains(key) ? e[key] : Json()}});
        const Json* o = nullptr;
        if (old_list && old_list->is_array())
            for (const Json& x : *old_list)
                if (json_text(x, key) == json_text(e, key)) o = &x;
        if (!o || !json_same(*o, e)) changed.push_back(e);
    }
    if (old_list && old_list->is_array())
        for (const Json& x : *old_list) {
            bool kept = false;
            for (const Json& e : list) kept = kept || json_text(x, key) == json_text(e, key);
            if (!kept)
                changed.push_back(
                    {{key, x.is_object() && x.contains(key) ? x[key] : Json()}, {"$patch", "delete"}});
        }
    if (changed.empty()) return;
    out["$setElementOrder/" + field] = std::move(order);
    out[field] = std::move(changed);
}

}  // namespace

bool pod_is_ready(const PodRecord& p) {
    if (p.containers.empty() || p.deleting) return false;
    auto ready = [](const ContainerStatus& c) { return c.ready; };
    return std::all_of(p.containers.begin(), p.containers.end(), ready) &&
           std::all_of(p.init_containers.begin(), p.init_containers.end(),
                       [](const ContainerStatus& c) { return !c.sidecar || c.ready; });
}

Json pod_api_status(const PodRecord& p, const PodStatusContext& ctx) {
    const std::int64_t now = ctx.now_ms;
    std::int64_t latest_ready_change = 0;
    std::int64_t first_start = 0;  // the pod's first container start: its sandbox made
    auto status_json = [&](const ContainerStatus& c, std::size_t index) {
        Json st = Json::object();
        st["name"] = c.name;
        st["ready"] = c.ready && !ctx.terminal;
        st["started"] = c.started && !ctx.terminal;
        st["restartCount"] = c.restart_count;
        if (index < ctx.images.size() && !ctx.images[index].empty()) {
            st["image"] = ctx.images[index];
            // convertContainerStatus: "Converting the digested image ref to
            // the Kubernetes public ContainerStatus.ImageID is historically
            // intentional": the runtime's imageRef.
            st["imageID"] = c.image_id;
        }
        const std::string container_id = c.runtime_id.empty() ? "" : ctx.runtime + "://" + c.runtime_id;
        if (!container_id.empty()) st["containerID"] = container_id;
        Json state = Json::object();
        if (c.state == ContainerState::Running) {
            state["running"] = {{"startedAt", api_time(c.started_at_ms, now)}};
        } else if (c.state == ContainerState::Terminated) {
            state["terminated"] = {{"exitCode", c.exit_code},
                                   {"reason", c.reason},
                                   {"startedAt", api_time(c.started_at_ms, now)},
                                   {"finishedAt", api_time(c.finished_at_ms, now)}};
            // ContainerStateTerminated.containerID: the instance that ended.
            if (!container_id.empty()) state["terminated"]["containerID"] = container_id;
        } else {
            Json w = {{"reason", c.reason}};
            if (!c.message.empty()) w["message"] = c.message;
            state["waiting"] = w;
        }
        st["state"] = state;
        // lastState: the previous instance's termination, once the container
        // waits to restart or runs again (a terminated one's own is in state).
        Json last = Json::object();
        if (c.state != ContainerState::Terminated && !c.termination_reason.empty()) {
            last["terminated"] = {{"exitCode", c.exit_code},
                                  {"reason", c.termination_reason},
                                  {"startedAt", api_time(c.termination_started_at_ms, now)},
                                  {"finishedAt", api_time(c.finished_at_ms, now)}};
            if (!c.termination_runtime_id.empty())
                last["terminated"]["containerID"] = ctx.runtime + "://" + c.termination_runtime_id;
        }
        st["lastState"] = last;
        latest_ready_change = std::max(latest_ready_change, c.started_at_ms);
        const std::int64_t began =
            c.termination_started_at_ms > 0 ? c.termination_started_at_ms : c.started_at_ms;
        if (began > 0 && (first_start == 0 || began < first_start)) first_start = began;
        return st;
    };
    Json init_statuses = Json::array();
    for (std::size_t i = 0; i < p.init_containers.size(); ++i)
        init_statuses.push_back(status_json(p.init_containers[i], i));
    Json statuses = Json::array();
    for (std::size_t i = 0; i < p.containers.size(); ++i)
        statuses.push_back(status_json(p.containers[i], p.init_containers.size() + i));
    std::stable_sort(statuses.begin(), statuses.end(), [](const Json& a, const Json& b) {
        return json_text(a, "name") < json_text(b, "name");
    });

    const PodPhase phase = ctx.terminal ? terminal_phase(p) : p.phase;
    const Json transition = api_time(latest_ready_change, now);
    // GeneratePodInitializedCondition: init containers done (a sidecar
    // started), or an app container has run already.
    std::vector<std::string> incomplete;
    bool app_started = false;
    for (const auto& c : p.containers) app_started = app_started || c.started_at_ms > 0;
    for (const auto& c : p.init_containers) {
        const bool done = c.sidecar ? c.started : c.state == ContainerState::Terminated && c.exit_code == 0;
        if (!done) incomplete.push_back(c.name);
    }
    Json conditions = Json::array();
    // GeneratePodReadyToStartContainersCondition (PodReadyToStartContainers,
    // beta and on since 1.29; PodHasNetwork before 1.28): True while the
    // pod's sandbox, network configured, exists (PodSandboxChanged says no
    // new one is needed). The board's runtimes make a pod's sandbox with its
    // first container: True once one has started, False before and once the
    // pod is gone (its sandbox removed).
    bool sandbox = !p.pod_ips.empty();
    for (const auto* list : {&p.init_containers, &p.containers})
        for (const auto& c : *list) sandbox = sandbox || c.started_at_ms > 0 || !c.runtime_id.empty();
    conditions.push_back(
        condition("PodReadyToStartContainers", sandbox && !ctx.terminal, "", "", api_time(first_start, now)));
    if (incomplete.empty() || app_started || phase == PodPhase::Succeeded)
        conditions.push_back(
            condition("Initialized", true,
                      phase == PodPhase::Succeeded && !p.init_containers.empty() ? "PodCompleted" : "", "",
                      transition));
    else
        conditions.push_back(condition("Initialized", false, "ContainersNotInitialized",
                                       "containers with incomplete status: " + go_list(incomplete),
                                       transition));
    // GenerateContainersReadyCondition and GeneratePodReadyCondition.
    std::vector<std::string> unready;
    for (const auto& c : p.init_containers)
        if (c.sidecar && !c.ready) unready.push_back(c.name);
    for (const auto& c : p.containers)
        if (!c.ready) unready.push_back(c.name);
    std::string reason, message;
    if (phase == PodPhase::Succeeded) {
        reason = "PodCompleted";
    } else if (phase == PodPhase::Failed) {
        reason = "PodFailed";
    } else if (!unready.empty() || p.containers.empty()) {
        reason = "ContainersNotReady";
        message = "containers with unready status: " + go_list(unready);
    }
    const bool ready = reason.empty() && pod_is_ready(p);
    conditions.push_back(condition("Ready", ready, reason, message, transition));
    conditions.push_back(condition("ContainersReady", ready, reason, message, transition));
    conditions.push_back(condition("PodScheduled", true, "", "", api_time(p.created_at_ms, now)));

    Json status = {{"phase", to_string(phase)}, {"conditions", conditions}};
    // kubelet's rejectPod: status.reason and status.message.
    if (!p.reason.empty()) {
        status["reason"] = p.reason;
        status["message"] = p.message;
    }
    if (!ctx.node_ips.empty()) {
        status["hostIP"] = ctx.node_ips.front();
        Json ips = Json::array();
        for (std::size_t i = 0; i < ctx.node_ips.size() && i < 2; ++i)
            ips.push_back({{"ip", ctx.node_ips[i]}});
        status["hostIPs"] = ips;
    }
    if (!p.pod_ips.empty()) {
        status["podIP"] = p.pod_ips.front();
        Json ips = Json::array();
        for (const auto& ip : p.pod_ips) ips.push_back({{"ip", ip}});
        status["podIPs"] = ips;
    }
    if (p.created_at_ms > 0) status["startTime"] = api_time(p.created_at_ms, now);
    if (!p.init_containers.empty()) status["initContainerStatuses"] = init_statuses;
    status["containerStatuses"] = statuses;
    if (!ctx.qos_class.empty()) status["qosClass"] = ctx.qos_class;
    return status;
}

void keep_transition_times(Json& status, const Json& old_status, const std::string& now) {
    if (!status.is_object() || !status.contains("conditions") || !status["conditions"].is_array()) return;
    const Json* old =
        old_status.is_object() && old_status.contains("conditions") && old_status["conditions"].is_array()
            ? &old_status["conditions"]
            : nullptr;
    for (Json& c : status["conditions"]) {
        Json transition = now;
        if (old)
            for (const Json& o : *old)
                if (json_text(o, "type") == json_text(c, "type") &&
                    json_text(o, "status") == json_text(c, "status") && o.contains("lastTransitionTime"))
                    transition = o["lastTransitionTime"];
        c["lastTransitionTime"] = std::move(transition);
    }
}

Json pod_status_patch(const Json& old_status, const Json& status, const std::string& uid) {
    const Json empty = Json::object();
    const Json& have = old_status.is_object() ? old_status : empty;
    Json st = Json::object();
    for (auto it = status.begin(); it != status.end(); ++it) {
        const std::string& key = it.key();
        const Json* h = have.contains(key) ? &have[key] : nullptr;
        if (h && json_same(*h, it.value())) continue;
        if (key == "conditions")
            keyed_list_patch(st, key, "type", h, it.value());
        else if (key == "podIPs" || key == "hostIPs")
            keyed_list_patch(st, key, "ip", h, it.value());
        else if (h && h->is_object() && it.value().is_object())
            st[key] = json_merge_diff(*h, it.value());
        else
            st[key] = it.value();
    }
    for (auto it = have.begin(); it != have.end(); ++it)
        if (!status.contains(it.key())) st[it.key()] = nullptr;
    if (st.empty()) return Json::object();
    return Json{{"metadata", {{"uid", uid}}}, {"status", std::move(st)}};
}

}  // namespace daemonlet
