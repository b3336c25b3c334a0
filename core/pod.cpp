#include "core/pod.h"

namespace daemonlet {

// The spellings of the Kubernetes API: ContainerState's member names and
// PodPhase's values (k8s.io/api/core/v1 types.go).
const char* to_string(ContainerState s) {
    switch (s) {
    case ContainerState::Waiting: return "Waiting";
    case ContainerState::Running: return "Running";
    case ContainerState::Terminated: return "Terminated";
    }
    return "Unknown";
}

const char* to_string(PodPhase p) {
    switch (p) {
    case PodPhase::Pending: return "Pending";
    case PodPhase::Running: return "Running";
    case PodPhase::Succeeded: return "Succeeded";
    case PodPhase::Failed: return "Failed";
    case PodPhase::Unknown: return "Unknown";
    }
    return "Unknown";
}

PodColumns pod_columns(const PodRecord& p) {
    PodColumns out;
    out.status = to_string(p.phase);
    if (!p.reason.empty()) out.status = p.reason;  // printPod: status.reason over the phase
    out.total = p.containers.size();
    std::int32_t sidecar_restarts = 0;
    bool initializing = false;
    for (const auto& c : p.init_containers) {
        if (!c.sidecar) continue;
        ++out.total;
        sidecar_restarts += c.restart_count;
    }
    for (std::size_t i = 0; i < p.init_containers.size(); ++i) {
        const ContainerStatus& c = p.init_containers[i];
        out.restarts += c.restart_count;
        if (c.state == ContainerState::Terminated && c.exit_code == 0) continue;
        if (c.sidecar && c.started) {
            if (c.ready) ++out.ready;
            continue;
        }
        if (c.state == ContainerState::Terminated) {
            out.status =
                c.reason.empty() ? "Init:ExitCode:" + std::to_string(c.exit_code) : "Init:" + c.reason;
        } else if (c.state == ContainerState::Waiting && !c.reason.empty() && c.reason != "PodInitializing") {
            out.status = "Init:" + c.reason;
        } else {
            out.status = "Init:" + std::to_string(i) + "/" + std::to_string(p.init_containers.size());
        }
        initializing = true;
        break;
    }
    if (!initializing) {
        out.restarts = sidecar_restarts;
        bool has_running = false;
        for (auto it = p.containers.rbegin(); it != p.containers.rend(); ++it) {
            const ContainerStatus& c = *it;
            out.restarts += c.restart_count;
            if (c.state == ContainerState::Waiting && !c.reason.empty())
                out.status = c.reason;
            else if (c.state == ContainerState::Terminated && !c.reason.empty())
                out.status = c.reason;
            else if (c.state == ContainerState::Running && c.ready) {
                has_running = true;
                ++out.ready;
            }
        }
        // printPod: a pod with a running container whose status is still
        // "Completed" shows Running (or NotReady when not ready).
        if (out.status == "Completed" && has_running) out.status = "Running";
    }
    if (p.deleting) out.status = "Terminating";
    return out;
}

}  // namespace daemonlet
