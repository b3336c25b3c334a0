// A pod's IPs and its probes' address (core/pod_network.h). Each row names
// the kubelet rule it pins: pkg/kubelet/kuberuntime/kuberuntime_sandbox.go
// determinePodSandboxIPs, pkg/kubelet/kubelet_pods.go generateAPIPodStatus
// and convertStatusToAPIStatus, pkg/kubelet/prober/prober.go runProbe.

#include <string>
#include <vector>

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
     {"192.168.1.20", "fd00::20"},
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
