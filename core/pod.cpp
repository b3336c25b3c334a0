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

}  // namespace daemonlet
