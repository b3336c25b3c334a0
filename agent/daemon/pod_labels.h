// The labels every container is started with (platform::ContainerLaunch::
// labels, kept by the runtime as CRI labels are): with the pod's uid, name
// and namespace, enough to rebuild the pod's record when the database is
// lost (agent/daemon/adoption.cpp).
#pragma once

#include <map>
#include <string>

#include "core/pod.h"

namespace daemonlet::agent {

// Labels kept with every container (platform::ContainerLaunch::labels): with
// the pod's uid, name and namespace the runtime keeps anyway, enough to
// rebuild the pod's record when the database is lost.
inline constexpr char kLabelDaemonSet[] = "daemonlet.io/daemonset";
inline constexpr char kLabelRevisionHash[] = "controller-revision-hash";
inline constexpr char kLabelRevision[] = "daemonlet.io/revision";
inline constexpr char kLabelCreatedAt[] = "daemonlet.io/created-at";
inline constexpr char kLabelContainers[] = "daemonlet.io/containers";
inline constexpr char kLabelInitContainers[] = "daemonlet.io/init-containers";  // "name" or "name:sidecar"

// Made by the ContainerConfig (container_config.cpp), read back by adoption
// (adoption.cpp).
std::map<std::string, std::string> pod_labels(const PodRecord& rec);

}  // namespace daemonlet::agent
