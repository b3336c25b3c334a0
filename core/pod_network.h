// A pod's addresses, as the kubelet derives them, and the address its
// tcpSocket and httpGet probes connect to. Pure: the runtime's answers and
// the node's addresses come in as values.
//
//   sandbox_pod_ips   the pod sandbox's IPs from the CRI runtime's
//                     PodSandboxStatus: network.ip, then network.
//                     additional_ips, each kept only when it parses as an
//                     IP (pkg/kubelet/kuberuntime/kuberuntime_sandbox.go
//                     determinePodSandboxIPs: an unparsable one is logged
//                     and dropped).
//   pod_status_ips    status.podIPs and status.podIP: the sandbox's IPs; a
//                     hostNetwork pod whose runtime gives none has the
//                     node's (pkg/kubelet/kubelet_pods.go
//                     generateAPIPodStatus: "HostNetwork Pods inherit the
//                     node IPs as PodIPs": the primary, then a dual-stack
//                     node's second IP of the other family, #105320);
//                     podIP is podIPs[0] (convertStatusToAPIStatus). The
//                     node's IPs are core/node_ips.h's, as last read (after
//                     a board's DHCP lease changed, the new address).
//   probe_host        the probe's own host when it sets one, else the pod's
//                     IP (pkg/kubelet/prober/prober.go runProbe: tcpSocket
//                     "host = status.PodIP" when Host is empty; httpGet
//                     through pkg/probe/http/request.go
//                     NewRequestForHTTPGetAction). One departure: a pod in
//                     the node's network (or one whose runtime gave no IP)
//                     is probed on 127.0.0.1, where the kubelet dials the
//                     node's IP: the same listeners on a board, without
//                     asking the network which IP is the node's.
//   unmapped_host_ports  why `runtime` leaves a pod's hostPorts unmapped
//                     (a departure of the runtimes without CNI): runc gives
//                     a pod without hostNetwork a network namespace with
//                     only loopback, so no hostPort reaches it; the exec
//                     runtime's containers are in the node's network, where
//                     a hostPort equal to its containerPort holds by itself
//                     and any other is not mapped. The pod starts anyway, as
//                     the kubelet's does on a CNI without portmap; the cri
//                     runtime maps them (cri_config.h port mappings).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/model.h"

namespace daemonlet {

std::vector<std::string> sandbox_pod_ips(const std::string& ip,
                                         const std::vector<std::string>& additional_ips);

struct PodIPs {
    std::string pod_ip;                // status.podIP ("" when none)
    std::vector<std::string> pod_ips;  // status.podIPs
};

PodIPs pod_status_ips(bool host_network, const std::vector<std::string>& sandbox_ips,
                      const std::vector<std::string>& node_ips);

// "" means the prober's default, 127.0.0.1.
std::string probe_host(const std::string& probe_host_field, bool host_network,
                       const std::vector<std::string>& pod_ips);

// "" when every hostPort of `spec`'s containers holds under `runtime`
// ("exec", "runc", "cri"), else the reason, naming the first one that does
// not and what to do.
std::string unmapped_host_ports(const PodSpec& spec, std::string_view runtime);

// Whether `s` is an IPv4 or IPv6 address (no port, no zone, no brackets).
bool is_ip_address(const std::string& s);

}  // namespace daemonlet
