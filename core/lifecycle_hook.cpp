#include "core/lifecycle_hook.h"

#include <algorithm>

#include "core/decode.h"
#include "core/strings.h"
#include "core/template_hash.h"

namespace daemonlet {

std::int64_t grace_after_pre_stop(std::int64_t grace_seconds, std::int64_t pre_stop_ms) {
    const std::int64_t left = grace_seconds - std::max<std::int64_t>(0, pre_stop_ms) / 1000;
    return std::max(left, kMinimumGracePeriodSeconds);
}

std::string pod_ref(const std::string& name, const std::string& namespace_, const std::string& uid) {
    return name + "_" + namespace_ + "(" + uid + ")";
}

std::string hook_failure_message(const Handler& h, const std::string& container, const std::string& pod,
                                 const std::string& error, const std::string& output) {
    const std::string in =
        " for Container " + go_quote(container) + " in Pod " + go_quote(pod) + " failed - error: " + error;
    if (h.exec) {
        // %v of a []string: [a b c]
        std::string cmd = "[";
        for (std::size_t i = 0; i < h.exec->command.size(); ++i) cmd += (i ? " " : "") + h.exec->command[i];
        cmd += "]";
        return "Exec lifecycle hook (" + cmd + ")" + in + ", message: " + go_quote(output);
    }
    if (h.http_get) return "HTTP lifecycle hook (" + h.http_get->path + ")" + in;
    if (h.sleep_seconds) return "Sleep lifecycle hook (" + std::to_string(*h.sleep_seconds) + ")" + in;
    return "Cannot run handler: " + error;
}

std::string stop_record(const Json& pod_spec, const std::string& container, bool host_env) {
    if (!pod_spec.is_object()) return {};
    for (const char* list : {"containers", "initContainers"}) {
        auto l = pod_spec.find(list);
        if (l == pod_spec.end() || !l->is_array()) continue;
        for (const Json& c : *l) {
            if (!c.is_object() || c.value("name", Json()) != container) continue;
            auto lifecycle = c.find("lifecycle");
            if (lifecycle == c.end() || !lifecycle->is_object() || !lifecycle->contains("preStop")) return {};
            Json kept = Json::object();
            std::vector<const char*> keys{"name", "ports"};
            if (host_env) keys.insert(keys.end(), {"env", "envFrom", "workingDir"});
            for (const char* key : keys)
                if (auto k = c.find(key); k != c.end()) kept[key] = *k;
            kept["lifecycle"] = Json{{"preStop", lifecycle->at("preStop")}};
            Json spec{{"containers", Json::array({std::move(kept)})}};
            if (auto g = pod_spec.find("terminationGracePeriodSeconds"); g != pod_spec.end())
                spec["terminationGracePeriodSeconds"] = *g;
            return canonical_json(Json{{"spec", std::move(spec)}});
        }
    }
    return {};
}

std::optional<RestoredStop> restore_stop(const std::string& record, const std::string& container) {
    if (record.empty()) return std::nullopt;
    Json j = Json::parse(record, nullptr, false);
    Pod pod;
    if (!j.is_object() || !decode_pod(j, pod).empty() || pod.spec.containers.size() != 1 ||
        pod.spec.containers[0].name != container || !pod.spec.containers[0].lifecycle ||
        !pod.spec.containers[0].lifecycle->pre_stop)
        return std::nullopt;
    return RestoredStop{std::move(pod.spec.containers[0]),
                        pod.spec.termination_grace_period_seconds.value_or(30)};
}

}  // namespace daemonlet
