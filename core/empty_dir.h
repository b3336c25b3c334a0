// The size of a Memory emptyDir's tmpfs, as the kubelet sizes it
// (Kubernetes 1.28 to 1.30, SizeMemoryBackedVolumes on by default). Pure:
// the agent passes in the node's allocatable memory.
//
//   pod_memory_limit        pkg/kubelet/cm/helpers_linux.go ResourceConfigForPod's
//                           Memory: the pod's memory limit (component-helpers
//                           resource.PodLimits: the app containers' limits
//                           and sidecars' summed, at least each regular init
//                           container's plus the sidecars started before it),
//                           only when every container declares one
//                           (memoryLimitsDeclared); none otherwise.
//   empty_dir_memory_size   pkg/volume/emptydir/empty_dir.go
//                           calculateEmptyDirMemorySize: the node's allocatable
//                           memory, lowered to the pod's memory limit and then
//                           to the volume's sizeLimit, each only when above 0
//                           and not above the size so far; setupTmpfs mounts
//                           with size=<that> when it is above 0, else with the
//                           kernel's default (half the RAM).
#pragma once

#include <cstdint>
#include <optional>

#include "core/model.h"

namespace daemonlet {

std::optional<std::int64_t> pod_memory_limit(const PodSpec& spec);

// The tmpfs size of `v` in bytes; none for a volume that is no Memory
// emptyDir, and when nothing bounds it (no allocatable known, no limit).
std::optional<std::int64_t> empty_dir_memory_size(const Volume& v, const PodSpec& spec,
                                                  std::optional<std::int64_t> node_allocatable_memory);

}  // namespace daemonlet
