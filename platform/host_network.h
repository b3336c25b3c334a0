// The node's interfaces and default routes, as core/node_ips.h chooses the
// node's IP from them: getifaddrs(3) for the interfaces (flags, addresses),
// /proc/net/route and /proc/net/ipv6_route for the default routes (as
// k8s.io/apimachinery/pkg/util/net reads them).
#pragma once

#include <string>

#include "core/node_ips.h"
#include "core/result.h"

namespace daemonlet::platform {

// `proc_net` is /proc/net but for tests. A missing route file (no IPv6 in
// the kernel) is no default route of that family; getifaddrs failing is an
// error.
Result<HostNetworkState> read_host_network(const std::string& proc_net = "/proc/net");

}  // namespace daemonlet::platform
