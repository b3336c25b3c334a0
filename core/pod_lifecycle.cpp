#include "core/pod_lifecycle.h"

#include <algorithm>
#include <string>

#include "core/image_wait.h"

namespace daemonlet {

BackoffPolicy crash_loop_policy(const AgentConfig& config) {
    return {config.backoff_initial_ms, config.backoff_max_ms, kCrashLoopResetAfterMs};
}

const ContainerStatus& container_at(const PodRecord& pod, std::size_t i) {
    const std::size_t n_init = pod.init_containers.size();
    return i < n_init ? pod.init_containers[i] : pod.containers[i - n_init];
}

ContainerStatus& container_at(PodRecord& pod, std::size_t i) {
    const std::size_t n_init = pod.init_containers.size();
    return i < n_init ? pod.init_containers[i] : pod.containers[i - n_init];
}

std::size_t container_count(const PodRecord& pod) {
    return pod.init_containers.size() + pod.containers.size();
}

bool pod_initialized(const PodRecord& pod) {
    for (const auto& c : pod.containers)
        if (c.started_at_ms > 0) return true;
    return false;
}

bool sidecar_lets_next_start(const ContainerStatus& sidecar, bool initialized) {
    return initialized || (sidecar.state == ContainerState::Running && sidecar.started);
}

PodStartStep next_start_step(const PodRecord& pod, const std::vector<bool>& idle, std::size_t from) {
    PodStartStep step;
    const std::size_t n_init = pod.init_containers.size();
    const std::size_t n = container_count(pod);
    const bool initialized = pod_initialized(pod);
    auto is_idle = [&](std::size_t i) { return i < idle.size() && idle[i]; };
    for (std::size_t i = from; i < n_init; ++i) {
        const ContainerStatus& cs = pod.init_containers[i];
        if (!cs.sidecar) {
            if (initialized || (cs.state == ContainerState::Terminated && cs.exit_code == 0)) continue;
            if (is_idle(i)) step.start.push_back(i);
            return step;
        }
        if (is_idle(i)) {
            step.start.push_back(i);
            step.then_check_sidecar = i;
            return step;
        }
        if (!sidecar_lets_next_start(cs, initialized)) return step;
    }
    for (std::size_t i = std::max(from, n_init); i < n; ++i)
        if (is_idle(i) && container_at(pod, i).state != ContainerState::Terminated) step.start.push_back(i);
    return step;
}

namespace {

// Its regular containers are done and none restarts: computePodActions'
// keepCount == 0 with nothing to start.
bool pod_finished(const PodRecord& pod, const std::string& restart_policy) {
    if (restart_policy == "Always" || restart_policy.empty()) return false;
    const PodPhase phase = pod_phase(pod, restart_policy);
    return phase == PodPhase::Succeeded || phase == PodPhase::Failed;
}

}  // namespace

bool container_restarts(const std::string& restart_policy, std::int32_t exit_code) {
    if (restart_policy == "Never") return false;
    if (restart_policy == "OnFailure") return exit_code != 0;
    return true;
}

ExitAction container_exit_action(const PodRecord& pod, std::size_t index, const std::string& restart_policy) {
    if (pod.deleting) return ExitAction::FinishPod;
    const ContainerStatus& cs = container_at(pod, index);
    if (index < pod.init_containers.size()) {
        if (cs.sidecar) return pod_finished(pod, restart_policy) ? ExitAction::Done : ExitAction::Restart;
        if (cs.exit_code == 0) return ExitAction::InitCompleted;
        return restart_policy == "Never" ? ExitAction::Done : ExitAction::Restart;
    }
    return container_restarts(restart_policy, cs.exit_code) ? ExitAction::Restart : ExitAction::Done;
}

std::vector<std::size_t> sidecars_to_stop(const PodRecord& pod, const std::string& restart_policy) {
    std::vector<std::size_t> stop;
    if (!pod_finished(pod, restart_policy)) return stop;
    for (std::size_t i = pod.init_containers.size(); i-- > 0;)
        if (pod.init_containers[i].sidecar && pod.init_containers[i].state != ContainerState::Terminated)
            stop.push_back(i);
    return stop;
}

PodPhase pod_phase(const PodRecord& pod, const std::string& restart_policy) {
    if (!pod.reason.empty()) return PodPhase::Failed;  // rejectPod
    int pending_init = 0, failed_init = 0;
    for (const auto& c : pod.init_containers) {
        if (c.sidecar) continue;
        if (c.state == ContainerState::Terminated) {
            if (c.exit_code != 0) ++failed_init;
        } else if (c.state == ContainerState::Waiting && !c.termination_reason.empty()) {
            if (c.exit_code != 0) ++failed_init;
        } else {
            ++pending_init;
        }
    }
    if (failed_init > 0 && restart_policy == "Never") return PodPhase::Failed;
    if (pending_init > 0 || failed_init > 0) return PodPhase::Pending;
    int running = 0, waiting = 0, stopped = 0, succeeded = 0;
    for (const auto& c : pod.containers) {
        if (c.state == ContainerState::Running) {
            ++running;
        } else if (c.state == ContainerState::Terminated) {
            ++stopped;
            if (c.exit_code == 0) ++succeeded;
        } else if (!c.termination_reason.empty()) {
            ++stopped;  // waiting to restart: lastState.terminated
        } else {
            ++waiting;
        }
    }
    if (waiting > 0 || pod.containers.empty()) return PodPhase::Pending;
    if (running > 0) return PodPhase::Running;
    if (restart_policy == "Always") return PodPhase::Running;
    if (stopped == succeeded) return PodPhase::Succeeded;
    if (restart_policy == "Never") return PodPhase::Failed;
    return PodPhase::Running;  // OnFailure: a failed one restarts
}

void set_crash_loop_waiting(ContainerStatus& cs, std::int64_t delay_ms) {
    cs.state = ContainerState::Waiting;
    cs.reason = "CrashLoopBackOff";
    cs.message = "back-off " + std::to_string(delay_ms / 1000) + "s restarting failed container=" + cs.name;
}

bool update_pod_conditions(PodRecord& pod, const std::string& restart_policy) {
    bool all_running = !pod.containers.empty() && !pod.deleting;
    bool all_ready = all_running;
    for (auto& c : pod.init_containers) {
        if (c.sidecar) {
            all_ready = all_ready && c.ready;
            continue;
        }
        c.ready = c.state == ContainerState::Terminated && c.exit_code == 0;
        c.started = c.state == ContainerState::Running;
    }
    for (const auto& c : pod.containers) {
        all_running = all_running && c.state == ContainerState::Running;
        all_ready = all_ready && c.ready;
    }
    pod.phase = all_running ? PodPhase::Running : PodPhase::Pending;
    if (restart_policy != "Always" || !pod.reason.empty()) {
        pod.phase = pod_phase(pod, restart_policy);
        if (pod.phase != PodPhase::Running) all_ready = false;
    }
    return all_ready;
}

std::optional<std::int64_t> ready_since(bool ready, std::optional<std::int64_t> since,
                                        std::int64_t now_mono_ms) {
    if (!ready) return std::nullopt;
    return since ? since : now_mono_ms;
}

const char* runtime_container_state(const ContainerStatus& cs, bool starting, bool state_unreadable) {
    if (state_unreadable) return "unknown";
    if (cs.state == ContainerState::Running) return "running";
    if (cs.state == ContainerState::Terminated) return "exited";
    if (starting) return "created";
    return nullptr;
}

StartFailure start_failure(ContainerStatus& cs, const Error& error, const std::string& image_pull_policy,
                           bool runtime_can_pull, const std::string& import_dir) {
    StartFailure f;
    const bool image_absent = error.code == ErrorCode::ImageNotFound;
    const bool image_waited = is_image_wait(cs.reason);
    f.image_missing = image_absent && !image_waited;
    if (image_absent && image_pull_policy != "Never" && runtime_can_pull) {
        f.kind = StartFailureKind::Pull;
        f.say = !image_waited;
        return f;
    }
    cs.state = ContainerState::Waiting;
    if (image_absent) {
        const bool never = image_pull_policy == "Never";
        f.kind = StartFailureKind::ImageWait;
        f.say = !image_waited;  // once per wait, not per retry
        f.never_pull_event = never;
        cs.reason = image_wait_reason(never, image_waited);
        cs.message = error.message + "; import it into " + import_dir;
        f.event_message = cs.reason;
        return f;
    }
    if (error.code == ErrorCode::ContainerConfig || error.code == ErrorCode::VolumeSetup) {
        const char* reason =
            error.code == ErrorCode::ContainerConfig ? "CreateContainerConfigError" : "ContainerCreating";
        f.kind = StartFailureKind::ConfigWait;
        f.say = cs.reason != reason || cs.message != error.message;
        f.mount_event = error.code == ErrorCode::VolumeSetup;
        cs.reason = reason;
        cs.message = error.message;
        f.event_message = error.message;
        return f;
    }
    f.kind = StartFailureKind::RunError;
    f.say = true;
    cs.reason = "RunContainerError";
    cs.message = error.message;
    f.event_message = error.message;
    return f;
}

}  // namespace daemonlet
