// A pod's IPs and its probes' address (core/pod_network.h), and the node's
// IPs (core/node_ips.h). Each row names the upstream rule it pins:
// pkg/kubelet/kuberuntime/kuberuntime_sandbox.go determinePodSandboxIPs,
// pkg/kubelet/kubelet_pods.go generateAPIPodStatus and
// convertStatusToAPIStatus, pkg/kubelet/prober/prober.go runProbe;
// k8s.io/component-helpers/node/util ParseNodeIPArgument,
// pkg/kubelet/kubelet_node_status.go validateNodeIP,
// k8s.io/apimachinery/pkg/util/net/interface.go (ChooseHostInterface,
// chooseHostInterfaceFromRoute, getIPFromInterface, getMatchingGlobalIP,
// chooseIPFromHostInterfaces, parseIP4RouteFile / parseIP6RouteFile),
// Go's net.IP.IsGlobalUnicast.

#include <string>
#include <vector>

#include "core/node_ips.h"
#include "core/pod_network.h"

#include <CppUTest/TestHarness.h>

using namespace daemonlet;

namespace {

using Ips = std::vector<std::string>;

std::string join(const Ips& v) {
    std::string out;
    for (const auto& s : v) out += (out.empty() ? "" : ",") + s;
    return out;
}

struct SandboxRow {
    const char* rule;
    std::string ip;
    Ips additional;
    Ips expected;
};

const SandboxRow kSandboxRows[] = {
    {"determinePodSandboxIPs: network.ip is the first", "10.88.0.5", {}, {"10.88.0.5"}},
    {"determinePodSandboxIPs: additional_ips follow (dual stack)",
     "10.88.0.5",
     {"fd00:88::5"},
     {"10.88.0.5", "fd00:88::5"}},
    {"determinePodSandboxIPs: no network status (a hostNetwork sandbox) gives none", "", {}, {}},
    {"determinePodSandboxIPs: an IP that does not parse is dropped", "10.88.0.300", {"fd00::1"}, {"fd00::1"}},
    {"determinePodSandboxIPs: an additional IP that does not parse is dropped",
     "10.88.0.5",
     {"not-an-ip", "10.88.0.6/24"},
     {"10.88.0.5"}},
};

}  // namespace

TEST_GROUP(PodNetwork){};

TEST(PodNetwork, SandboxIpsAreTheRuntimesValidOnesInOrder) {
    for (const auto& r : kSandboxRows) {
        const Ips got = sandbox_pod_ips(r.ip, r.additional);
        if (got != r.expected)
            FAIL(
                (std::string(r.rule) + ": got [" + join(got) + "], want [" + join(r.expected) + "]").c_str());
    }
}

namespace {

struct StatusRow {
    const char* rule;
    bool host_network;
    Ips sandbox;
    Ips node;
    std::string pod_ip;
    Ips pod_ips;
};

const StatusRow kStatusRows[] = {
    {"generateAPIPodStatus: a pod with its own network has its sandbox's IPs",
     false,
     {"10.88.0.5"},
     {"192.168.1.20"},
     "10.88.0.5",
     {"10.88.0.5"}},
    {"convertStatusToAPIStatus: podIP is podIPs[0]",
     false,
     {"10.88.0.5", "fd00:88::5"},
     {"192.168.1.20"},
     "10.88.0.5",
     {"10.88.0.5", "fd00:88::5"}},
    {"generateAPIPodStatus: a pod with its own network and no sandbox IP yet has none (not the node's)",
     false,
     {},
     {"192.168.1.20"},
     "",
     {}},
    {"generateAPIPodStatus: HostNetwork Pods inherit the node IPs as PodIPs",
     true,
     {},
     {"192.168.1.20"},
     "192.168.1.20",
     {"192.168.1.20"}},
    {"generateAPIPodStatus: a dual-stack node's secondary IP follows (#105320)",
     true,
     {},
     {"fd00::20", "192.168.1.20"},
     "fd00::20",
     {"fd00::20", "192.168.1.20"}},
    {"generateAPIPodStatus: a secondary IP of the primary's family is not added",
     true,
     {},
     {"192.168.1.20", "192.168.1.21"},
     "192.168.1.20",
     {"192.168.1.20"}},
    {"generateAPIPodStatus: a hostNetwork pod's IPs from the runtime are kept",
     true,
     {"192.168.1.20"},
     {"192.168.1.21"},
     "192.168.1.20",
     {"192.168.1.20"}},
    {"generateAPIPodStatus: a hostNetwork pod on a node without an address has none", true, {}, {}, "", {}},
};

}  // namespace

TEST(PodNetwork, StatusIpsAreTheSandboxsOrTheNodesForHostNetwork) {
    for (const auto& r : kStatusRows) {
        const PodIPs got = pod_status_ips(r.host_network, r.sandbox, r.node);
        if (got.pod_ip != r.pod_ip || got.pod_ips != r.pod_ips)
            FAIL((std::string(r.rule) + ": got " + got.pod_ip + " [" + join(got.pod_ips) + "], want " +
                  r.pod_ip + " [" + join(r.pod_ips) + "]")
                     .c_str());
    }
}

namespace {

struct HostRow {
    const char* rule;
    std::string field;
    bool host_network;
    Ips pod_ips;
    std::string expected;  // "" is the prober's 127.0.0.1
};

const HostRow kHostRows[] = {
    {"runProbe: a probe without host connects to status.PodIP", "", false, {"10.88.0.5"}, "10.88.0.5"},
    {"runProbe: the first of podIPs (status.PodIP)", "", false, {"fd00:88::5", "10.88.0.5"}, "fd00:88::5"},
    {"runProbe: the probe's own host wins", "10.1.2.3", false, {"10.88.0.5"}, "10.1.2.3"},
    {"runProbe: the probe's own host wins in the node's network too",
     "example.test",
     true,
     {},
     "example.test"},
    {"runProbe: a hostNetwork pod: the node (127.0.0.1 here, the node's IP for kubelet)",
     "",
     true,
     {"192.168.1.20"},
     ""},
    {"runProbe: no pod IP known: the node", "", false, {}, ""},
};

}  // namespace

TEST(PodNetwork, ProbeHostIsTheProbesOrThePodsAddress) {
    for (const auto& r : kHostRows) {
        const std::string got = probe_host(r.field, r.host_network, r.pod_ips);
        if (got != r.expected)
            FAIL((std::string(r.rule) + ": got \"" + got + "\", want \"" + r.expected + "\"").c_str());
    }
}

TEST(PodNetwork, UnmappedHostPortsAreSaidForRuntimesWithoutCni) {
    struct Row {
        const char* rule;
        const char* runtime;
        bool host_network;
        std::int32_t container_port, host_port;
        const char* expected;  // a part of the reason; "" for none
    };
    const Row rows[] = {
        {"cri: CNI portmap maps it (generatePodSandboxConfig port_mappings)", "cri", false, 80, 8080, ""},
        {"runc without hostNetwork: loopback only, not mapped", "runc", false, 80, 8080,
         "hostPort 8080 of container \"app\" (containerPort 80) is not mapped: the runc runtime"},
        {"runc with hostNetwork: the node's port itself", "runc", true, 80, 80, ""},
        {"exec: a hostPort equal to containerPort holds in the node's network", "exec", false, 80, 80, ""},
        {"exec: another hostPort is not mapped", "exec", false, 80, 8080, "the exec runtime runs containers"},
        {"no hostPort: nothing to say", "runc", false, 80, 0, ""},
    };
    for (const auto& r : rows) {
        PodSpec spec;
        spec.host_network = r.host_network;
        Container c;
        c.name = "app";
        c.ports = {{"", r.container_port, r.host_port, "TCP", ""}};
        spec.containers.push_back(c);
        const std::string got = unmapped_host_ports(spec, r.runtime);
        if (std::string(r.expected).empty() ? !got.empty() : got.find(r.expected) == std::string::npos)
            FAIL((std::string(r.rule) + ": got \"" + got + "\"").c_str());
    }
}

namespace {

struct NodeIpRow {
    const char* rule;
    std::string value;
    Ips expected;       // when valid
    std::string error;  // a part of the reason, when not
};

const NodeIpRow kNodeIpRows[] = {
    {"ParseNodeIPArgument: a single IPv4", "192.168.1.20", {"192.168.1.20"}, ""},
    {"ParseNodeIPArgument: a single IPv6, canonical form", "FD00:0::20", {"fd00::20"}, ""},
    {"ParseNodeIPArgument: a dual-stack pair, IPv4 primary",
     "192.168.1.20,fd00::20",
     {"192.168.1.20", "fd00::20"},
     ""},
    {"ParseNodeIPArgument: a dual-stack pair keeps its order (IPv6 primary)",
     "fd00::20, 192.168.1.20",
     {"fd00::20", "192.168.1.20"},
     ""},
    {"ParseNodeIPArgument: two of one family are not a dual-stack pair",
     "192.168.1.20,192.168.1.21",
     {},
     "at most one IPv4 and one IPv6"},
    {"ParseNodeIPArgument: three IPs", "192.168.1.20,fd00::20,10.0.0.1", {}, "at most one IPv4 and one IPv6"},
    {"ParseNodeIPArgument: not an IP", "edge-01.local", {}, "\"edge-01.local\" is not an IP address"},
    {"ParseNodeIPArgument: a CIDR is not an IP", "192.168.1.20/24", {}, "is not an IP address"},
    {"ParseNodeIPArgument: an empty element", "192.168.1.20,", {}, "expected an IP address"},
    {"ParseNodeIPArgument: empty", "", {}, "expected an IP address"},
    {"validateNodeIP: loopback", "127.0.0.1", {}, "can't be loopback address"},
    {"validateNodeIP: IPv6 loopback", "::1", {}, "can't be loopback address"},
    {"validateNodeIP: all zeros", "0.0.0.0", {}, "can't be an all zeros address"},
    {"validateNodeIP: multicast", "224.0.0.1", {}, "can't be a multicast address"},
    {"validateNodeIP: link-local", "169.254.1.1", {}, "can't be a link-local unicast address"},
    {"validateNodeIP: IPv6 link-local", "fe80::1", {}, "can't be a link-local unicast address"},
};

}  // namespace

TEST_GROUP(NodeIps){};

TEST(NodeIps, NodeIpIsOneIpOrADualStackPairOfUsableAddresses) {
    for (const auto& r : kNodeIpRows) {
        auto got = parse_node_ip(r.value);
        if (r.error.empty()) {
            if (!got.ok()) FAIL((std::string(r.rule) + ": refused: " + got.error().message).c_str());
            if (got.value() != r.expected)
                FAIL((std::string(r.rule) + ": got [" + join(got.value()) + "], want [" + join(r.expected) +
                      "]")
                         .c_str());
        } else {
            if (got.ok()) FAIL((std::string(r.rule) + ": accepted [" + join(got.value()) + "]").c_str());
            if (got.error().message.find(r.error) == std::string::npos)
                FAIL((std::string(r.rule) + ": \"" + got.error().message + "\" lacks \"" + r.error + "\"")
                         .c_str());
        }
    }
}

namespace {

HostInterface lo() { return {"lo", true, true, false, {"127.0.0.1", "::1"}}; }
HostInterface eth0(std::vector<std::string> addrs, bool up = true) {
    return {"eth0", up, false, false, addrs};
}
HostInterface wlan0(std::vector<std::string> addrs) { return {"wlan0", true, false, false, addrs}; }

struct ChooseRow {
    const char* rule;
    HostNetworkState host;
    Ips configured;
    Ips expected;
};

const ChooseRow kChooseRows[] = {
    {"chooseHostInterfaceFromRoute: the IPv4 default route's interface",
     {{lo(), eth0({"10.0.0.5"}), wlan0({"192.168.1.20"})}, {"wlan0"}, {}},
     {},
     {"192.168.1.20"}},
    {"chooseHostInterfaceFromRoute: IPv4 before IPv6",
     {{lo(), eth0({"fd00::5", "10.0.0.5"})}, {"eth0"}, {"eth0"}},
     {},
     {"10.0.0.5"}},
    {"chooseHostInterfaceFromRoute: only an IPv6 default route gives the IPv6 address",
     {{lo(), eth0({"10.0.0.5", "2001:db8::5"}), wlan0({"192.168.1.20"})}, {}, {"wlan0", "eth0"}},
     {},
     {"2001:db8::5"}},
    {"getMatchingGlobalIP: link-local addresses are skipped",
     {{lo(), eth0({"fe80::1", "169.254.3.3", "10.0.0.5"})}, {"eth0"}, {}},
     {},
     {"10.0.0.5"}},
    {"getIPFromInterface: a down interface's route is passed over",
     {{lo(), eth0({"10.0.0.5"}, false), wlan0({"192.168.1.20"})}, {"eth0", "wlan0"}, {}},
     {},
     {"192.168.1.20"}},
    {"parseIP6RouteFile: the unreachable default route on lo gives nothing",
     {{lo(), eth0({"10.0.0.5"})}, {}, {"lo"}},
     {},
     {"10.0.0.5"}},
    {"chooseIPFromHostInterfaces: no default route: the first up non-loopback interface's global IPv4",
     {{lo(), eth0({"fd00::5"}), wlan0({"192.168.1.20"})}, {}, {}},
     {},
     {"192.168.1.20"}},
    {"chooseIPFromHostInterfaces: point-to-point and down interfaces are skipped",
     {{lo(), {"ppp0", true, false, true, {"100.64.0.1"}}, eth0({"10.0.0.5"}, false), wlan0({"fd00::20"})},
      {},
      {}},
     {},
     {"fd00::20"}},
    {"ChooseHostInterface: a board with only lo has no IP", {{lo()}, {}, {"lo"}}, {}, {}},
    {"ChooseHostInterface: nothing at all", {}, {}, {}},
    {"NodeAddress: --node-ip wins over the interfaces",
     {{lo(), eth0({"10.0.0.5"})}, {"eth0"}, {}},
     {"192.0.2.10", "2001:db8::10"},
     {"192.0.2.10", "2001:db8::10"}},
    {"NodeAddress: --node-ip is used even when no interface has it (validateNodeIP's host check is not done)",
     {{lo()}, {}, {}},
     {"192.0.2.10"},
     {"192.0.2.10"}},
};

}  // namespace

TEST(NodeIps, NodeHostIpsAreNodeIpElseTheDefaultRoutesInterfaces) {
    for (const auto& r : kChooseRows) {
        const Ips got = node_host_ips(r.configured, r.host);
        if (got != r.expected)
            FAIL(
                (std::string(r.rule) + ": got [" + join(got) + "], want [" + join(r.expected) + "]").c_str());
    }
}

namespace {

const char* const kProcNetRoute =
    "Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT\n"
    "wlan0\t0001A8C0\t00000000\t0001\t0\t0\t600\t00FFFFFF\t0\t0\t0\n"
    "eth0\t00000000\t0100000A\t0003\t0\t0\t100\t00000000\t0\t0\t0\n"
    "wlan0\t00000000\t0101A8C0\t0003\t0\t0\t600\t00000000\t0\t0\t0\n"
    "broken\n";

const char* const kProcNetIpv6Route =
    "fd000000000000000000000000000000 40 00000000000000000000000000000000 00 "
    "00000000000000000000000000000000 00000100 00000001 00000000 00000001     eth0\n"
    "00000000000000000000000000000000 00 00000000000000000000000000000000 00 "
    "fe800000000000000000000000000001 00000400 00000001 00000000 00000003     eth0\n"
    "00000000000000000000000000000000 00 00000000000000000000000000000000 00 "
    "00000000000000000000000000000000 ffffffff 00000001 00000000 00200200       lo\n";

}  // namespace

TEST(NodeIps, DefaultRoutesAreReadFromProcNet) {
    // parseIP4RouteFile: destination 0.0.0.0 (mask 0), in the file's order.
    CHECK((parse_ipv4_default_routes(kProcNetRoute) == Ips{"eth0", "wlan0"}));
    // parseIP6RouteFile: destination ::/0, the interface is the last field.
    CHECK((parse_ipv6_default_routes(kProcNetIpv6Route) == Ips{"eth0", "lo"}));
    CHECK_TRUE(parse_ipv4_default_routes("").empty());
    CHECK_TRUE(parse_ipv6_default_routes("garbage\n").empty());
}

TEST(NodeIps, GlobalUnicastAsGo) {
    struct Row {
        const char* ip;
        bool global;
    };
    const Row rows[] = {{"10.0.0.5", true},         {"192.168.1.20", true}, {"2001:db8::1", true},
                        {"fd00::1", true},          {"127.0.0.1", false},   {"::1", false},
                        {"169.254.1.1", false},     {"fe80::1", false},     {"224.0.0.1", false},
                        {"ff02::1", false},         {"0.0.0.0", false},     {"::", false},
                        {"255.255.255.255", false}, {"not-an-ip", false}};
    for (const auto& r : rows) CHECK_EQUAL_TEXT(r.global, is_global_unicast(r.ip), r.ip);
}
