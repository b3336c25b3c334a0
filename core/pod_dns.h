// /etc/hosts, /etc/hostname and /etc/resolv.conf of a pod, as the kubelet
// and its CRI runtime make them. Pure: the caller gives the host's
// /etc/hosts and /etc/resolv.conf text and the agent's cluster DNS, and
// writes the files (platform/runc bind-mounts them into each container;
// under CRI the hosts text alone is the agent's, mounted as the kubelet's
// own by core/cri_config.h cri_hosts_file, and the CRI runtime writes the
// other two from the sandbox's hostname and dns_config).
//
//   hostname / domain   pkg/kubelet/kubelet_pods.go GeneratePodHostNameAndDomain:
//                       spec.hostname, else the pod's name (at most 63
//                       characters); with spec.subdomain the domain is
//                       <subdomain>.<namespace>.svc.<clusterDomain>.
//   /etc/hosts          kubelet_pods.go managedHostsFileContent (pod network:
//                       the loopback and ip6 lines, then "<IP>\t<fqdn>\t<hostname>"
//                       per pod IP, or "<IP>\t<hostname>" without a
//                       subdomain) and nodeHostsFileContent (hostNetwork:
//                       the node's file under its own header); hostAliases
//                       appended (hostsEntriesFromHostAliases). A pod without
//                       an IP (a runc pod's loopback-only network; the
//                       kubelet would not mount the file at all) gets its
//                       name line at 127.0.0.1, as podman gives a
//                       --network none container (podman PR 8101), so that
//                       it resolves its own name.
//   DNS                 pkg/kubelet/network/dns/dns.go GetPodDNS and
//                       getPodDNSType: None: dnsConfig only; ClusterFirst
//                       (without hostNetwork) and ClusterFirstWithHostNet:
//                       the cluster's nameservers, searches
//                       <ns>.svc.<domain>, svc.<domain>, <domain> then the
//                       host's, options ndots:5; Default (and ClusterFirst
//                       with hostNetwork): the host's resolv.conf. A
//                       cluster policy with no cluster DNS falls back to
//                       Default (cluster_dns_missing is set: the caller
//                       says so once). dnsConfig is then appended
//                       (appendDNSConfig: duplicates dropped, options
//                       merged by name), nameservers cut to 3 and searches
//                       to 32 (kubelet's validation limits).
//   /etc/resolv.conf    containerd's sandbox resolv.conf from that config:
//                       "search ...", "nameserver ..." lines, "options ...".
#pragma once

#include <string>
#include <vector>

#include "core/model.h"

namespace daemonlet {

struct PodDNSInput {
    const PodSpec* spec = nullptr;  // required
    std::string pod_name, namespace_;
    std::vector<std::string> pod_ips;      // none for a runc pod without hostNetwork
    std::vector<std::string> cluster_dns;  // config clusterDNS; empty: none
    std::string cluster_domain = "cluster.local";
    std::string host_hosts;        // the node's /etc/hosts text
    std::string host_resolv_conf;  // the node's /etc/resolv.conf text
    std::string node_hostname;     // for hostNetwork's /etc/hostname
};

struct DNSConfig {
    std::vector<std::string> nameservers, searches, options;
    bool operator==(const DNSConfig&) const = default;
};

struct PodDNSFiles {
    std::string hosts, hostname, resolv_conf;
    DNSConfig dns;
    bool cluster_dns_missing = false;
};

// resolv.conf's nameserver, search (and domain) and options lines.
DNSConfig parse_resolv_conf(const std::string& text);

PodDNSFiles pod_dns_files(const PodDNSInput& in);

}  // namespace daemonlet
