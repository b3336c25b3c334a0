// The node's IPs (core/node_ips.h): the NodeAddresses component, as the
// kubelet's node status setters (nodestatus.NodeAddress) find them, and the
// copy kept in the store's meta table so that `daemonlet get pods -o json`
// reports status.hostIP / hostIPs whether the agent runs or not.
#pragma once

#include <uv.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/node_ips.h"
#include "core/result.h"
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

// Owns the node's IPs: nodeIP when configured, else chosen from the
// interfaces and default routes, read at start, on refresh (SIGHUP) and
// every kNodeIpsPeriodMs. A change is logged, written to the store and told
// to `changed` (hostNetwork pods' IPs are the node's). An unreadable
// interface list keeps the IPs known, said once until it reads again.
class NodeAddresses {
  public:
    // The interfaces and default routes (platform::read_host_network; a
    // test passes its own).
    using ReadHost = std::function<Result<HostNetworkState>()>;
    using Changed = std::function<void()>;

    NodeAddresses(store::Store& store, ReadHost read_host, Changed changed);
    NodeAddresses(const NodeAddresses&) = delete;
    NodeAddresses& operator=(const NodeAddresses&) = delete;
    ~NodeAddresses();

    // Reads them now with `configured` (nodeIP, parse_node_ip's; empty: the
    // interfaces), then every kNodeIpsPeriodMs on `loop`.
    void start(uv_loop_t* loop, std::vector<std::string> configured);
    // Reads them now; `configured` stays for the periodic re-checks.
    void refresh(std::vector<std::string> configured);
    // The primary first; none on a board with only lo, or before the first read.
    const std::vector<std::string>& ips() const { return ips_; }
    // Stops the re-checks; the timer is freed once the loop runs.
    void close();

  private:
    void check();

    store::Store& store_;
    ReadHost read_host_;
    Changed changed_;
    std::vector<std::string> configured_;
    std::vector<std::string> ips_;
    bool known_ = false;           // found once (and logged)
    bool read_failed_ = false;     // the interfaces could not be read (logged once)
    uv_timer_t* timer_ = nullptr;  // freed in its close callback
};

}  // namespace daemonlet::agent
