#include "core/pod_network.h"

#include <arpa/inet.h>

namespace daemonlet {

bool is_ip_address(const std::string& s) {
    unsigned char buf[16];
    return inet_pton(AF_INET, s.c_str(), buf) == 1 || inet_pton(AF_INET6, s.c_str(), buf) == 1;
}

std::vector<std::string> sandbox_pod_ips(const std::string& ip,
                                         const std::vector<std::string>& additional_ips) {
    std::vector<std::string> out;
    if (is_ip_address(ip)) out.push_back(ip);
    for (const auto& a : additional_ips)
        if (is_ip_address(a)) out.push_back(a);
    return out;
}

PodIPs pod_status_ips(bool host_network, const std::vector<std::string>& sandbox_ips,
                      const std::vector<std::string>& node_ips) {
    PodIPs out;
    out.pod_ips = sandbox_ips;
    if (host_network && out.pod_ips.empty() && !node_ips.empty()) {
        out.pod_ips = {node_ips.front()};
        // A dual-stack node's second IP, when of the other family (#105320).
        if (node_ips.size() == 2 &&
            (node_ips[0].find(':') == std::string::npos) != (node_ips[1].find(':') == std::string::npos))
            out.pod_ips.push_back(node_ips[1]);
    }
    if (!out.pod_ips.empty()) out.pod_ip = out.pod_ips.front();
    return out;
}

std::string probe_host(const std::string& probe_host_field, bool host_network,
                       const std::vector<std::string>& pod_ips) {
    if (!probe_host_field.empty()) return probe_host_field;
    if (host_network || pod_ips.empty()) return {};
    return pod_ips.front();
}

std::string unmapped_host_ports(const PodSpec& spec, std::string_view runtime) {
    if (spec.host_network || runtime == "cri") return {};
    for (const auto* list : {&spec.init_containers, &spec.containers}) {
        for (const auto& c : *list) {
            for (const auto& p : c.ports) {
                if (p.host_port == 0) continue;
                const std::string port = "hostPort " + std::to_string(p.host_port) + " of container \"" +
                                         c.name + "\" (containerPort " + std::to_string(p.container_port) +
                                         ")";
                if (runtime == "exec") {
                    if (p.host_port == p.container_port && p.host_ip.empty()) continue;
                    return port +
                           " is not mapped: the exec runtime runs containers in the node's network, where "
                           "they listen on their containerPort themselves; use the cri runtime (its CNI "
                           "portmap "
                           "plugin maps hostPorts) or make hostPort equal to containerPort; the pod starts "
                           "without it";
                }
                return port + " is not mapped: the " + std::string(runtime) +
                       " runtime gives a pod without hostNetwork a network namespace of its own with "
                       "loopback only; "
                       "set hostNetwork: true or use the cri runtime (its CNI portmap plugin maps "
                       "hostPorts); "
                       "the pod starts without it";
            }
        }
    }
    return {};
}

}  // namespace daemonlet
