// The node's IPs, as the kubelet finds them: status.hostIP / hostIPs of every
// pod and status.podIP / podIPs of a hostNetwork pod (core/pod_network.h).
// Pure: the interfaces and the default routes come in as values
// (platform/host_network.h reads them from getifaddrs and /proc/net).
//
//   parse_node_ip    the nodeIP configuration key, kubelet's --node-ip: one
//                    IP, or a dual-stack pair "IPv4,IPv6" / "IPv6,IPv4"
//                    (k8s.io/component-helpers/node/util ParseNodeIPArgument:
//                    at most one per family), none of them loopback,
//                    multicast, link-local or all zeros
//                    (pkg/kubelet/kubelet_node_status.go validateNodeIP).
//                    The order is kept: the first is the primary, as
//                    setters.go NodeAddress lists them. The kubelet takes
//                    0.0.0.0 or :: as "choose, preferring this family";
//                    here they are refused (leave nodeIP out to choose).
//                    Nor is nodeIP checked against the interfaces (the
//                    kubelet's validateNodeIP does): an address that comes
//                    up after the agent is accepted.
//   choose_host_ip   without nodeIP, kubelet's NodeAddress falls back to
//                    k8s.io/apimachinery/pkg/util/net ResolveBindAddress ->
//                    ChooseHostInterface: IPv4 first, then IPv6, the first
//                    global unicast address of that family on the up
//                    interface that holds a default route
//                    (chooseHostInterfaceFromRoute, getIPFromInterface);
//                    with none, the first global unicast address of an up
//                    interface that is neither loopback nor point-to-point
//                    (chooseIPFromHostInterfaces). One departure: upstream
//                    uses the latter only when /proc/net/route is missing,
//                    and errors when default routes give no address; an
//                    air-gapped board often has no default route at all, so
//                    here it is the fallback. Another: the kubelet first
//                    looks the node's name up in DNS, which on Debian gives
//                    127.0.1.1 (rejected as loopback); that step is skipped.
//                    No address at all (a board with only lo): none.
//   node_host_ips    nodeIP when set, else choose_host_ip: what
//                    nodeutil.GetNodeHostIPs returns, the primary first.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"

namespace daemonlet {

struct HostInterface {
    std::string name;
    bool up = false;  // IFF_UP
    bool loopback = false;
    bool point_to_point = false;
    std::vector<std::string> addresses;  // without prefix length, in the kernel's order
};

struct HostNetworkState {
    std::vector<HostInterface> interfaces;  // in the kernel's order
    // The interfaces holding a default route, in the routing table's order.
    std::vector<std::string> ipv4_default_routes;
    std::vector<std::string> ipv6_default_routes;
};

// The interfaces of the default routes in /proc/net/route (destination
// 00000000) and /proc/net/ipv6_route (destination ::/0). Lines that do not
// parse are skipped.
std::vector<std::string> parse_ipv4_default_routes(std::string_view proc_net_route);
std::vector<std::string> parse_ipv6_default_routes(std::string_view proc_net_ipv6_route);

// nodeIP: the IPs in canonical form, or Error{ErrorCode::Invalid, reason}.
Result<std::vector<std::string>> parse_node_ip(std::string_view value);

// ChooseHostInterface: one IP, or none.
std::vector<std::string> choose_host_ip(const HostNetworkState& host);

// The node's IPs: `configured` (parse_node_ip's) when not empty, else
// choose_host_ip.
std::vector<std::string> node_host_ips(const std::vector<std::string>& configured,
                                       const HostNetworkState& host);

// Go's net.IP.IsGlobalUnicast: not unspecified, loopback, multicast,
// link-local or the IPv4 broadcast address.
bool is_global_unicast(const std::string& ip);

}  // namespace daemonlet
