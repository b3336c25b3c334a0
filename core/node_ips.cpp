#include "core/node_ips.h"

#include <arpa/inet.h>

#include <array>
#include <optional>

#include "core/strings.h"

namespace daemonlet {
namespace {

// An address as bytes: 4 for IPv4, 16 for IPv6; nullopt if `s` is neither.
struct Ip {
    int family = 0;  // 4 or 6
    std::array<unsigned char, 16> b{};
};

std::optional<Ip> parse_ip(const std::string& s) {
    Ip ip;
    if (inet_pton(AF_INET, s.c_str(), ip.b.data()) == 1) {
        ip.family = 4;
        return ip;
    }
    if (inet_pton(AF_INET6, s.c_str(), ip.b.data()) == 1) {
        ip.family = 6;
        return ip;
    }
    return std::nullopt;
}

std::string canonical(const Ip& ip) {
    char buf[INET6_ADDRSTRLEN] = {};
    inet_ntop(ip.family == 4 ? AF_INET : AF_INET6, ip.b.data(), buf, sizeof buf);
    return buf;
}

bool all_zero(const Ip& ip) {
    const std::size_t n = ip.family == 4 ? 4 : 16;
    for (std::size_t i = 0; i < n; ++i)
        if (ip.b[i] != 0) return false;
    return true;
}

bool is_loopback(const Ip& ip) {
    if (ip.family == 4) return ip.b[0] == 127;
    for (std::size_t i = 0; i < 15; ++i)
        if (ip.b[i] != 0) return false;
    return ip.b[15] == 1;
}

bool is_multicast(const Ip& ip) { return ip.family == 4 ? (ip.b[0] & 0xf0) == 0xe0 : ip.b[0] == 0xff; }

bool is_link_local(const Ip& ip) {
    return ip.family == 4 ? ip.b[0] == 169 && ip.b[1] == 254 : ip.b[0] == 0xfe && (ip.b[1] & 0xc0) == 0x80;
}

bool global_unicast(const Ip& ip) {
    const bool broadcast =
        ip.family == 4 && ip.b[0] == 255 && ip.b[1] == 255 && ip.b[2] == 255 && ip.b[3] == 255;
    return !broadcast && !all_zero(ip) && !is_loopback(ip) && !is_multicast(ip) && !is_link_local(ip);
}

// The whitespace-separated fields of each line after the first (the
// header of /proc/net/route; ipv6_route has none, and its first line is a
// route: `skip_header` says which).
template <class F>
void for_each_route_line(std::string_view text, bool skip_header, F&& f) {
    bool first = true;
    for (std::string_view line : lines_of(text)) {
        if (first && skip_header) {
            first = false;
            continue;
        }
        first = false;
        f(fields_of(line));
    }
}

// getMatchingGlobalIP: the first global unicast address of `family`.
std::optional<std::string> first_global(const HostInterface& intf, int family) {
    for (const auto& a : intf.addresses) {
        auto ip = parse_ip(a);
        if (ip && ip->family == family && global_unicast(*ip)) return canonical(*ip);
    }
    return std::nullopt;
}

}  // namespace

std::vector<std::string> parse_ipv4_default_routes(std::string_view proc_net_route) {
    // Iface Destination Gateway Flags RefCnt Use Metric Mask MTU Window IRTT
    std::vector<std::string> out;
    for_each_route_line(proc_net_route, true, [&](const std::vector<std::string>& f) {
        if (f.size() >= 8 && f[1] == "00000000" && f[7] == "00000000") out.push_back(f[0]);
    });
    return out;
}

std::vector<std::string> parse_ipv6_default_routes(std::string_view proc_net_ipv6_route) {
    // dest dest_prefixlen src src_prefixlen nexthop metric refcnt use flags iface
    std::vector<std::string> out;
    for_each_route_line(proc_net_ipv6_route, false, [&](const std::vector<std::string>& f) {
        if (f.size() >= 10 && f[0] == std::string(32, '0') && f[1] == "00") out.push_back(f[9]);
    });
    return out;
}

Result<std::vector<std::string>> parse_node_ip(std::string_view value) {
    auto bad = [](const std::string& reason) { return Error{ErrorCode::Invalid, reason}; };
    std::vector<std::string> out;
    std::vector<int> families;
    std::size_t start = 0;
    while (true) {
        const std::size_t comma = value.find(',', start);
        const std::string part(
            trim(value.substr(start, comma == std::string_view::npos ? value.npos : comma - start)));
        if (part.empty())
            return bad("\"" + std::string(value) +
                       "\": expected an IP address, or an IPv4 and an IPv6 address separated by a comma "
                       "(leave nodeIP out to use the address of the default route's interface)");
        auto ip = parse_ip(part);
        if (!ip) return bad("\"" + part + "\" is not an IP address");
        if (all_zero(*ip)) return bad("\"" + part + "\": nodeIP can't be an all zeros address");
        if (is_loopback(*ip)) return bad("\"" + part + "\": nodeIP can't be loopback address");
        if (is_multicast(*ip)) return bad("\"" + part + "\": nodeIP can't be a multicast address");
        if (is_link_local(*ip)) return bad("\"" + part + "\": nodeIP can't be a link-local unicast address");
        for (int f : families)
            if (f == ip->family)
                return bad("\"" + std::string(value) +
                           "\": at most one IPv4 and one IPv6 address (a dual-stack pair)");
        families.push_back(ip->family);
        out.push_back(canonical(*ip));
        if (comma == std::string_view::npos) break;
        start = comma + 1;
    }
    return out;
}

std::vector<std::string> choose_host_ip(const HostNetworkState& host) {
    auto find = [&](const std::string& name) -> const HostInterface* {
        for (const auto& i : host.interfaces)
            if (i.name == name) return &i;
        return nullptr;
    };
    // chooseHostInterfaceFromRoute: IPv4 default routes first, then IPv6.
    for (int family : {4, 6}) {
        for (const auto& name : family == 4 ? host.ipv4_default_routes : host.ipv6_default_routes) {
            const HostInterface* intf = find(name);
            if (!intf || !intf->up) continue;
            if (auto ip = first_global(*intf, family)) return {*ip};
        }
    }
    // chooseIPFromHostInterfaces: per family, the interfaces in order.
    for (int family : {4, 6}) {
        for (const auto& intf : host.interfaces) {
            if (!intf.up || intf.loopback || intf.point_to_point) continue;
            if (auto ip = first_global(intf, family)) return {*ip};
        }
    }
    return {};
}

std::vector<std::string> node_host_ips(const std::vector<std::string>& configured,
                                       const HostNetworkState& host) {
    if (!configured.empty()) return configured;
    return choose_host_ip(host);
}

bool is_global_unicast(const std::string& ip) {
    auto p = parse_ip(ip);
    return p && global_unicast(*p);
}

}  // namespace daemonlet
