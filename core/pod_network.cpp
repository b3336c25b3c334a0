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

}  // namespace daemonlet
