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

// kubelet_pods_test.go TestManagedHostsFileContent and
// TestNodeHostsFileContent, TestGeneratePodHostNameAndDomain.
TEST(PodDNS, HostsAndHostnameAsTheKubelet) {
    const std::string managed =
        "# Kubernetes-managed hosts file.\n127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n"
        "fe00::0\tip6-localnet\nfe00::0\tip6-mcastprefix\nfe00::1\tip6-allnodes\nfe00::2\tip6-allrouters\n";
    const std::string node_hosts =
        "# hosts file for testing.\n127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n"
        "123.45.67.89\tsome.domain\n";
    const std::string fqdn = "podFoo.domainFoo.edge.svc.cluster.local";
    struct Row {
        const char* name;
        std::function<void(PodSpec&, PodDNSInput&)> setup;
        std::string hosts, hostname;
    };
    const Row rows[] = {
        {"TestManagedHostsFileContent: one IP, no domain: <IP>\t<hostname>",
         [](PodSpec& s, PodDNSInput& in) {
             s.hostname = "podFoo";
             in.pod_ips = {"123.45.67.89"};
         },
         managed + "123.45.67.89\tpodFoo\n", "podFoo\n"},
        {"TestManagedHostsFileContent: a domain: <IP>\t<fqdn>\t<hostname>",
         [](PodSpec& s, PodDNSInput& in) {
             s.hostname = "podFoo";
             s.subdomain = "domainFoo";
             in.pod_ips = {"203.0.113.1"};
         },
         managed + "203.0.113.1\t" + fqdn + "\tpodFoo\n", "podFoo\n"},
        {"TestManagedHostsFileContent: hostAliases appended, one line per IP",
         [](PodSpec& s, PodDNSInput& in) {
             s.hostname = "podFoo";
             s.subdomain = "domainFoo";
             s.host_aliases = {PodHostAlias{"123.45.67.89", {"foo", "bar", "baz"}},
                               PodHostAlias{"456.78.90.123", {"park", "doo", "boo"}}};
             in.pod_ips = {"203.0.113.1"};
         },
         managed + "203.0.113.1\t" + fqdn +
             "\tpodFoo\n\n# Entries added by "
             "HostAliases.\n123.45.67.89\tfoo\tbar\tbaz\n456.78.90.123\tpark\tdoo\t"
             "boo\n",
         "podFoo\n"},
        {"TestManagedHostsFileContent: dual stack: a line per pod IP",
         [](PodSpec& s, PodDNSInput& in) {
             s.hostname = "podFoo";
             s.subdomain = "domainFoo";
             in.pod_ips = {"203.0.113.1", "fd00::6"};
         },
         managed + "203.0.113.1\t" + fqdn + "\tpodFoo\nfd00::6\t" + fqdn + "\tpodFoo\n", "podFoo\n"},
        {"GeneratePodHostNameAndDomain: no hostname: the pod's name",
         [](PodSpec&, PodDNSInput& in) { in.pod_ips = {"10.244.0.7"}; },
         managed + "10.244.0.7\tagent-x7k2p\n", "agent-x7k2p\n"},
        {"daemonlet: no pod IP (runc, loopback only): the own-name line at 127.0.0.1",
         [](PodSpec&, PodDNSInput&) {}, managed + "127.0.0.1\tagent-x7k2p\n", "agent-x7k2p\n"},
        {"daemonlet: no pod IP, a subdomain: the FQDN at 127.0.0.1, then hostAliases",
         [](PodSpec& s, PodDNSInput&) {
             s.hostname = "podFoo";
             s.subdomain = "domainFoo";
             s.host_aliases = {PodHostAlias{"10.1.2.3", {"foo"}}};
         },
         managed + "127.0.0.1\t" + fqdn + "\tpodFoo\n\n# Entries added by HostAliases.\n10.1.2.3\tfoo\n",
         "podFoo\n"},
        {"TestNodeHostsFileContent: hostNetwork: the node's file under its header",
         [](PodSpec& s, PodDNSInput& in) {
             s.host_network = true;
             in.pod_ips = {"10.0.0.5"};
         },
         "# Kubernetes-managed hosts file (host network).\n" + node_hosts, "board\n"},
        {"TestNodeHostsFileContent: hostNetwork with hostAliases appended",
         [](PodSpec& s, PodDNSInput&) {
             s.host_network = true;
             s.hostname = "ignored";
             s.host_aliases = {PodHostAlias{"123.45.67.89", {"foo", "bar", "baz"}}};
         },
         "# Kubernetes-managed hosts file (host network).\n" + node_hosts +
             "\n# Entries added by HostAliases.\n123.45.67.89\tfoo\tbar\tbaz\n",
         "board\n"},
    };
    for (const auto& row : rows) {
        PodSpec spec;
        PodDNSInput in;
        in.spec = &spec;
        in.pod_name = "agent-x7k2p";
        in.namespace_ = "edge";
        in.host_hosts = node_hosts;
        in.node_hostname = "board";
        row.setup(spec, in);
        const PodDNSFiles f = pod_dns_files(in);
        STRCMP_EQUAL_TEXT(row.hosts.c_str(), f.hosts.c_str(), row.name);
        STRCMP_EQUAL_TEXT(row.hostname.c_str(), f.hostname.c_str(), row.name);
    }
}
