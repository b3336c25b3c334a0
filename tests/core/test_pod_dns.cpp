// A pod's /etc/hosts, /etc/hostname and /etc/resolv.conf (core/pod_dns.h).
// Rows name the upstream test they follow: pkg/kubelet/network/dns
// dns_test.go (TestGetPodDNS, TestGetPodDNSCustom, TestMergeDNSOptions),
// kubelet_pods_test.go (TestManagedHostsFileContent,
// TestNodeHostsFileContent) and TestGeneratePodHostNameAndDomain.

#include <functional>
#include <string>

#include "core/pod_dns.h"

#include <CppUTest/TestHarness.h>

using namespace daemonlet;

namespace {

const char* kHostResolv =
    "# host\nnameserver 192.168.1.1\nnameserver 8.8.8.8\nsearch lan example.org\noptions edns0\n";

struct Row {
    const char* name;
    std::function<void(PodSpec&, PodDNSInput&)> setup;
    std::string resolv_conf;
    bool missing = false;
};

}  // namespace

TEST_GROUP(PodDNS){};

TEST(PodDNS, ResolvConfPerDnsPolicyAsGetPodDNS) {
    const Row rows[] = {
        {"ClusterFirst: cluster nameservers, searches, ndots:5 (TestGetPodDNS)",
         [](PodSpec&, PodDNSInput&) {},
         "search ns.svc.cluster.local svc.cluster.local cluster.local lan example.org\nnameserver "
         "10.96.0.10\n"
         "options ndots:5\n"},
        {"ClusterFirst with hostNetwork: Default, the host's (getPodDNSType)",
         [](PodSpec& s, PodDNSInput&) { s.host_network = true; },
         "search lan example.org\nnameserver 192.168.1.1\nnameserver 8.8.8.8\noptions edns0\n"},
        {"ClusterFirstWithHostNet: the cluster's",
         [](PodSpec& s, PodDNSInput&) {
             s.host_network = true;
             s.dns_policy = "ClusterFirstWithHostNet";
         },
         "search ns.svc.cluster.local svc.cluster.local cluster.local lan example.org\nnameserver "
         "10.96.0.10\n"
         "options ndots:5\n"},
        {"Default: the host's", [](PodSpec& s, PodDNSInput&) { s.dns_policy = "Default"; },
         "search lan example.org\nnameserver 192.168.1.1\nnameserver 8.8.8.8\noptions edns0\n"},
        {"ClusterFirst without cluster DNS: the host's, said (GetPodDNS fallback)",
         [](PodSpec&, PodDNSInput& in) { in.cluster_dns.clear(); },
         "search lan example.org\nnameserver 192.168.1.1\nnameserver 8.8.8.8\noptions edns0\n", true},
        {"None: dnsConfig alone (TestGetPodDNSCustom)",
         [](PodSpec& s, PodDNSInput&) {
             s.dns_policy = "None";
             s.dns_config = PodDNSConfig{{"203.0.113.1"}, {"my.dns.search.suffix"}, {"ndots:2", "edns0"}};
         },
         "search my.dns.search.suffix\nnameserver 203.0.113.1\noptions ndots:2 edns0\n"},
        {"ClusterFirst + dnsConfig: appended, duplicates dropped, options merged by name "
         "(TestMergeDNSOptions)",
         [](PodSpec& s, PodDNSInput&) {
             s.dns_config =
                 PodDNSConfig{{"10.96.0.10", "1.1.1.1"}, {"lan", "extra"}, {"ndots:2", "single-request"}};
         },
         "search ns.svc.cluster.local svc.cluster.local cluster.local lan example.org extra\n"
         "nameserver 10.96.0.10\nnameserver 1.1.1.1\noptions ndots:2 single-request\n"},
        {"more than 3 nameservers are cut to 3 (MaxDNSNameservers)",
         [](PodSpec& s, PodDNSInput&) {
             s.dns_policy = "Default";
             s.dns_config = PodDNSConfig{{"1.1.1.1", "9.9.9.9"}, {}, {}};
         },
         "search lan example.org\nnameserver 192.168.1.1\nnameserver 8.8.8.8\nnameserver 1.1.1.1\noptions "
         "edns0\n"},
    };
    for (const auto& row : rows) {
        PodSpec spec;
        PodDNSInput in;
        in.spec = &spec;
        in.pod_name = "p";
        in.namespace_ = "ns";
        in.cluster_dns = {"10.96.0.10"};
        in.host_resolv_conf = kHostResolv;
        row.setup(spec, in);
        const PodDNSFiles f = pod_dns_files(in);
        STRCMP_EQUAL_TEXT(row.resolv_conf.c_str(), f.resolv_conf.c_str(), row.name);
        CHECK_EQUAL_TEXT(row.missing, f.cluster_dns_missing, row.name);
    }
}

TEST(PodDNS, HostsAndHostnameAsTheKubelet) {
    PodSpec spec;
    PodDNSInput in;
    in.spec = &spec;
    in.pod_name = "agent-x7k2p";
    in.namespace_ = "edge";
    in.host_hosts = "127.0.0.1 localhost\n10.0.0.5 board\n";
    in.node_hostname = "board";

    // TestManagedHostsFileContent: no pod IP (a runc pod's loopback-only network): no hostname line.
    PodDNSFiles f = pod_dns_files(in);
    STRCMP_EQUAL(
        "# Kubernetes-managed hosts file.\n127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n"
        "fe00::0\tip6-localnet\nfe00::0\tip6-mcastprefix\nfe00::1\tip6-allnodes\nfe00::2\tip6-allrouters\n",
        f.hosts.c_str());
    STRCMP_EQUAL("agent-x7k2p\n", f.hostname.c_str());

    // TestGeneratePodHostNameAndDomain: hostname and subdomain; a pod IP gets the FQDN line; hostAliases
    // appended.
    spec.hostname = "web";
    spec.subdomain = "svc1";
    spec.host_aliases = {PodHostAlias{"10.1.2.3", {"foo", "bar"}}};
    in.pod_ips = {"10.244.0.7"};
    f = pod_dns_files(in);
    CHECK(f.hosts.find("10.244.0.7\tweb.svc1.edge.svc.cluster.local\tweb\n") != std::string::npos);
    CHECK(f.hosts.find("\n# Entries added by HostAliases.\n10.1.2.3\tfoo\tbar\n") != std::string::npos);
    STRCMP_EQUAL("web\n", f.hostname.c_str());

    // TestNodeHostsFileContent: hostNetwork: the node's file under its header, and its hostname.
    spec = PodSpec{};
    spec.host_network = true;
    f = pod_dns_files(in);
    STRCMP_EQUAL("# Kubernetes-managed hosts file (host network).\n127.0.0.1 localhost\n10.0.0.5 board\n",
                 f.hosts.c_str());
    STRCMP_EQUAL("board\n", f.hostname.c_str());
}
