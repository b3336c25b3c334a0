// The labels every container is started with (platform::ContainerLaunch::
// labels, kept by the runtime as CRI labels are): with the pod's uid, name
// and namespace, enough to rebuild the pod's record when the database is
// lost (agent/daemon/adopt.cpp).
#pragma once

#include <map>
#include <string>

#include "core/pod.h"

namespace daemonlet::agent {

std::map<std::string, std::string> pod_labels(const PodRecord& rec);

}  // namespace daemonlet::agent
