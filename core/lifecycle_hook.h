// What the kubelet decides around a container's lifecycle hooks
// (postStart, preStop), as pure functions: the time left for the stop
// signal after a preStop hook, and the messages of a failed hook.
//
//   grace_after_pre_stop  pkg/kubelet/kuberuntime/kuberuntime_container.go
//                         killContainer: gracePeriod minus the seconds the
//                         preStop hook took (executePreStopHook, whole
//                         seconds), never below minimumGracePeriodInSeconds
//                         (2).
//   hook_failure_message  pkg/kubelet/lifecycle/handlers.go Run: "Exec
//                         lifecycle hook ([cmd]) for Container "c" in Pod
//                         "name_namespace(uid)" failed - error: ..., message:
//                         "..."", the HTTP and Sleep forms alike.
//   stop_record,          pkg/kubelet/kuberuntime/labels.go: what killing a
//   restore_stop          container needs without its pod's spec, kept with
//                         it when it starts (newContainerAnnotations:
//                         io.kubernetes.container.preStopHandler,
//                         io.kubernetes.container.ports,
//                         io.kubernetes.pod.terminationGracePeriod) and read
//                         back by killContainer when the pod is gone
//                         (restoreSpecsFromContainerLabels).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "core/json.h"

#include "core/model.h"

namespace daemonlet {

// kubelet's minimumGracePeriodInSeconds.
inline constexpr std::int64_t kMinimumGracePeriodSeconds = 2;

// Event reasons (pkg/kubelet/events).
inline constexpr char kFailedPostStartHook[] = "FailedPostStartHook";
inline constexpr char kFailedPreStopHook[] = "FailedPreStopHook";

// The grace period for the stop signal once a preStop hook that ran for
// `pre_stop_ms` is over (the hook's time is taken from `grace_seconds`).
std::int64_t grace_after_pre_stop(std::int64_t grace_seconds, std::int64_t pre_stop_ms);

// kubelet's format.Pod: "name_namespace(uid)".
std::string pod_ref(const std::string& name, const std::string& namespace_, const std::string& uid);

// The message of handler `h` of `container` in pod `pod` (pod_ref) that
// failed with `error` (and, for exec, the command's `output`).
std::string hook_failure_message(const Handler& h, const std::string& container, const std::string& pod,
                                 const std::string& error, const std::string& output);

// The stop record of container `container` of a pod whose (defaulted)
// spec is `pod_spec`, as JSON: a pod template with the pod's
// terminationGracePeriodSeconds and that one container's preStop hook and
// what the hook reads here: name and ports (a named port), and with
// `host_env` env, envFrom and workingDir (an exec hook of the exec runtime
// runs on the host with the container's environment; under runc and CRI it
// runs in the container, which has them, so they are not kept: a record is
// rewritten with its pod's row). Empty when the container has no preStop
// hook (a plain stop needs none).
std::string stop_record(const Json& pod_spec, const std::string& container, bool host_env);

// A stop record read back: the container (with its preStop hook) and the
// pod's grace period; nullopt when `record` is empty, not one, or of
// another container than `container`.
struct RestoredStop {
    Container container;
    std::int64_t grace_seconds = 30;
};
std::optional<RestoredStop> restore_stop(const std::string& record, const std::string& container);

}  // namespace daemonlet
