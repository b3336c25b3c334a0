// Sockets in another network namespace: a container's, for the probes that
// kubelet runs against the pod's address (tcpSocket, httpGet). A socket
// belongs to the namespace it was made in for its whole life, so a thread
// of its own enters the namespace (setns(2) moves only the calling thread),
// makes the socket and ends; the agent's loop then connects it as any
// other. Needs CAP_SYS_ADMIN (the runc runtime's agent runs as root).
#pragma once

#include <string>

#include "core/result.h"

namespace daemonlet::platform {

// socket(domain, type | SOCK_CLOEXEC, protocol) in the network namespace
// `netns` (a path such as /proc/<pid>/ns/net). Errors name the path and
// the step that failed.
Result<int> socket_in_netns(const std::string& netns, int domain, int type, int protocol);

}  // namespace daemonlet::platform
