#include "core/lifecycle_hook.h"

#include <algorithm>

#include "core/strings.h"

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

}  // namespace daemonlet
