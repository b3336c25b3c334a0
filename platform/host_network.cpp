#include "platform/host_network.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>

#include <cerrno>
#include <cstring>
#include <memory>

#include "platform/file.h"

namespace daemonlet::platform {

Result<HostNetworkState> read_host_network(const std::string& proc_net) {
    HostNetworkState host;
    ifaddrs* list = nullptr;
    if (::getifaddrs(&list) != 0)
        return Error{ErrorCode::Io, std::string("getifaddrs: ") + std::strerror(errno)};
    std::unique_ptr<ifaddrs, void (*)(ifaddrs*)> guard(list, ::freeifaddrs);
    // One entry per (interface, address), plus an AF_PACKET one per
    // interface: grouped by name, in the kernel's order.
    for (const ifaddrs* a = list; a; a = a->ifa_next) {
        if (!a->ifa_name) continue;
        HostInterface* intf = nullptr;
        for (auto& i : host.interfaces)
            if (i.name == a->ifa_name) intf = &i;
        if (!intf) {
            host.interfaces.push_back({a->ifa_name,
                                       (a->ifa_flags & IFF_UP) != 0,
                                       (a->ifa_flags & IFF_LOOPBACK) != 0,
                                       (a->ifa_flags & IFF_POINTOPOINT) != 0,
                                       {}});
            intf = &host.interfaces.back();
        }
        if (!a->ifa_addr) continue;
        char buf[INET6_ADDRSTRLEN] = {};
        if (a->ifa_addr->sa_family == AF_INET) {
            const auto* sin = reinterpret_cast<const sockaddr_in*>(a->ifa_addr);
            if (inet_ntop(AF_INET, &sin->sin_addr, buf, sizeof buf)) intf->addresses.push_back(buf);
        } else if (a->ifa_addr->sa_family == AF_INET6) {
            const auto* sin6 = reinterpret_cast<const sockaddr_in6*>(a->ifa_addr);
            if (inet_ntop(AF_INET6, &sin6->sin6_addr, buf, sizeof buf)) intf->addresses.push_back(buf);
        }
    }
    // A routing table of thousands of routes (a router board) stays well
    // under this; a larger one reads as no default route (the interfaces'
    // fallback then chooses).
    constexpr std::size_t kMax = 4 * 1024 * 1024;
    if (auto r = read_file(proc_net + "/route", kMax); r.ok())
        host.ipv4_default_routes = parse_ipv4_default_routes(r.value());
    if (auto r = read_file(proc_net + "/ipv6_route", kMax); r.ok())
        host.ipv6_default_routes = parse_ipv6_default_routes(r.value());
    return host;
}

}  // namespace daemonlet::platform
