// platform/host_network.h: the real getifaddrs and route files as read for
// the node's IP (core/node_ips.h chooses from them).
#include <stdlib.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "platform/host_network.h"

#include <CppUTest/TestHarness.h>

using namespace daemonlet;

TEST_GROUP(HostNetwork) {
    std::string dir;
    void setup() override {
        char tmpl[] = "/tmp/daemonlet-hostnet.XXXXXX";
        dir = ::mkdtemp(tmpl);
    }
    void teardown() override { std::filesystem::remove_all(dir); }
    void write(const std::string& name, const std::string& text) { std::ofstream(dir + "/" + name) << text; }
};

TEST(HostNetwork, LoopbackIsAnUpLoopbackInterfaceWith127001) {
    auto host = platform::read_host_network(dir);
    CHECK_TEXT(host.ok(), host.ok() ? "" : host.error().message.c_str());
    auto lo = std::find_if(host.value().interfaces.begin(), host.value().interfaces.end(),
                           [](const HostInterface& i) { return i.name == "lo"; });
    CHECK_TRUE(lo != host.value().interfaces.end());
    CHECK_TRUE(lo->up);
    CHECK_TRUE(lo->loopback);
    CHECK_TRUE(std::find(lo->addresses.begin(), lo->addresses.end(), "127.0.0.1") != lo->addresses.end());
    // No route files: no default routes, not an error.
    CHECK_TRUE(host.value().ipv4_default_routes.empty());
    CHECK_TRUE(host.value().ipv6_default_routes.empty());
    // And lo alone never makes a node IP.
    HostNetworkState only_lo;
    only_lo.interfaces = {*lo};
    CHECK_TRUE(choose_host_ip(only_lo).empty());
}

TEST(HostNetwork, DefaultRoutesAreReadFromTheRouteFiles) {
    write("route",
          "Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT\n"
          "eth9\t00000000\t0101A8C0\t0003\t0\t0\t0\t00000000\t0\t0\t0\n");
    write("ipv6_route",
          "00000000000000000000000000000000 00 00000000000000000000000000000000 00 "
          "fe800000000000000000000000000001 00000400 00000001 00000000 00000003     wlan9\n");
    auto host = platform::read_host_network(dir);
    CHECK_TRUE(host.ok());
    CHECK((host.value().ipv4_default_routes == std::vector<std::string>{"eth9"}));
    CHECK((host.value().ipv6_default_routes == std::vector<std::string>{"wlan9"}));
}
