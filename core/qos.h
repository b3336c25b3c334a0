// A pod's QoS class and its containers' OOM score adjustment, as the
// kubelet computes them, so that the right process dies first when a small
// board runs out of memory.
//
//   pod_qos_class            pkg/apis/core/v1/helper/qos GetPodQOS: cpu and
//                            memory only, summed over init and app
//                            containers; a limit without a request counts as
//                            that request (the API server's SetDefaults_Pod
//                            sets requests = limits: the agent's documents
//                            are not defaulted by one).
//   container_oom_score_adj  pkg/kubelet/qos/policy.go
//                            GetContainerOOMScoreAdjust: node-critical pods
//                            and Guaranteed -997, BestEffort 1000, Burstable
//                            1000 - 1000 * memoryRequest / memoryCapacity
//                            within [3, 999] (a sidecar no higher than the
//                            pod's smallest regular container).
//   is_node_critical_pod     pkg/kubelet/types IsNodeCriticalPod: the
//                            priorityClassName system-node-critical (the
//                            priority admission gives it a priority above
//                            SystemCriticalPriority, so IsCriticalPod holds).
#pragma once

#include <cstdint>
#include <optional>

#include "core/model.h"

namespace daemonlet {

enum class QOSClass { Guaranteed, Burstable, BestEffort };
const char* to_string(QOSClass c);

QOSClass pod_qos_class(const PodSpec& spec);

bool is_node_critical_pod(const PodSpec& spec);

// pkg/kubelet/qos/policy.go's constants.
inline constexpr int kGuaranteedOOMScoreAdj = -997;
inline constexpr int kBestEffortOOMScoreAdj = 1000;

// The oom_score_adj of `container` (one of spec's containers or init
// containers) on a node with `memory_capacity_bytes` of memory (> 0).
int container_oom_score_adj(const PodSpec& spec, const Container& container,
                            std::int64_t memory_capacity_bytes);

// The score asked of the runtime where a negative one cannot be set: with
// `floor` (the agent's own oom_score_adj, when it lacks CAP_SYS_RESOURCE,
// as the kernel allows no process to go below that without it), `wanted`
// is raised to it, as containerd's restrict_oom_score_adj does
// (pkg/cri/server/container_create_linux.go restrictOOMScoreAdj); none:
// `wanted` as is. runc 1.1 fails the whole start when the kernel refuses
// the score ("nsexec: failed to update /proc/self/oom_score_adj").
int restrict_oom_score_adj(int wanted, std::optional<int> floor);

}  // namespace daemonlet
