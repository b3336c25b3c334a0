// The node's IPs as the agent last found them (core/node_ips.h), kept in the
// store's meta table so that `daemonlet get pods -o json` reports
// status.hostIP / hostIPs whether the agent runs or not.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "store/store.h"

namespace daemonlet::agent {

// meta key: a JSON array of the node's IPs, the primary first; [] when the
// node has none.
inline constexpr const char* kNodeIpsMeta = "node.ips";

// The re-check of the interfaces, for a board whose DHCP lease changes its
// address. The kubelet re-reads them with every node status update
// (nodeStatusUpdateFrequency, 10 s); a minute is enough for a board, and
// costs a getifaddrs and two small /proc reads.
inline constexpr std::uint64_t kNodeIpsPeriodMs = 60'000;

// The stored IPs; none when absent or unreadable.
std::vector<std::string> stored_node_ips(store::Store& store);

}  // namespace daemonlet::agent
