// A pod's hosts, hostname and resolv.conf: see pod_dns.h.
#include "core/pod_dns.h"

#include <algorithm>
#include <cassert>

#include "core/strings.h"

namespace daemonlet {
namespace {

constexpr std::size_t kMaxNameservers = 3;   // validation.MaxDNSNameservers
constexpr std::size_t kMaxSearchPaths = 32;  // validation.MaxDNSSearchPaths

void append_unique(std::vector<std::string>& to, const std::vector<std::string>& more) {
    for (const auto& m : more)
        if (std::find(to.begin(), to.end(), m) == to.end()) to.push_back(m);
}

std::string option_name(const std::string& o) { return o.substr(0, o.find(':')); }

// mergeDNSOptions: a later option of the same name replaces the earlier.
void merge_options(std::vector<std::string>& to, const std::vector<std::string>& more) {
    for (const auto& m : more) {
        auto it = std::find_if(to.begin(), to.end(),
                               [&](const std::string& o) { return option_name(o) == option_name(m); });
        if (it == to.end())
            to.push_back(m);
        else
            *it = m;
    }
}

}  // namespace

DNSConfig parse_resolv_conf(const std::string& text) {
    DNSConfig c;
    for (std::string_view line : lines_of(text)) {
        if (auto hash = line.find_first_of("#;"); hash != std::string_view::npos) line = line.substr(0, hash);
        const auto f = fields_of(line);
        if (f.empty()) continue;
        if (f[0] == "nameserver" && f.size() > 1) c.nameservers.push_back(f[1]);
        if ((f[0] == "search" || f[0] == "domain") && f.size() > 1)
            c.searches.assign(f.begin() + 1, f.end());  // the last one wins, as the resolver's
        if (f[0] == "options") c.options.insert(c.options.end(), f.begin() + 1, f.end());
    }
    return c;
}

PodDNSFiles pod_dns_files(const PodDNSInput& in) {
    assert(in.spec != nullptr);
    const PodSpec& spec = *in.spec;
    PodDNSFiles out;

    // GeneratePodHostNameAndDomain.
    std::string hostname = !spec.hostname.empty() ? spec.hostname : in.pod_name.substr(0, 63);
    while (!hostname.empty() && (hostname.back() == '-' || hostname.back() == '.')) hostname.pop_back();
    std::string domain;
    if (!spec.subdomain.empty()) domain = spec.subdomain + "." + in.namespace_ + ".svc." + in.cluster_domain;

    std::string aliases;
    if (!spec.host_aliases.empty()) {
        aliases = "\n# Entries added by HostAliases.\n";
        for (const auto& a : spec.host_aliases) aliases += a.ip + "\t" + join(a.hostnames, "\t") + "\n";
    }
    if (spec.host_network) {
        out.hosts = "# Kubernetes-managed hosts file (host network).\n" + in.host_hosts + aliases;
        out.hostname = in.node_hostname + "\n";
    } else {
        out.hosts =
            "# Kubernetes-managed hosts file.\n"
            "127.0.0.1\tlocalhost\n"
            "::1\tlocalhost ip6-localhost ip6-loopback\n"
            "fe00::0\tip6-localnet\n"
            "fe00::0\tip6-mcastprefix\n"
            "fe00::1\tip6-allnodes\n"
            "fe00::2\tip6-allrouters\n";
        // A pod without an IP (under runc, alone in a network namespace
        // with only loopback) still finds its own name: at 127.0.0.1.
        const std::vector<std::string> ips =
            in.pod_ips.empty() ? std::vector<std::string>{"127.0.0.1"} : in.pod_ips;
        for (const auto& ip : ips)
            out.hosts += domain.empty() ? ip + "\t" + hostname + "\n"
                                        : ip + "\t" + hostname + "." + domain + "\t" + hostname + "\n";
        out.hosts += aliases;
        out.hostname = hostname + "\n";
    }

    // getPodDNSType.
    const std::string& policy = spec.dns_policy.empty() ? std::string("ClusterFirst") : spec.dns_policy;
    enum { Cluster, Host, None } type = Host;
    if (policy == "None")
        type = None;
    else if (policy == "ClusterFirstWithHostNet" || (policy == "ClusterFirst" && !spec.host_network))
        type = Cluster;
    if (type == Cluster && in.cluster_dns.empty()) {
        out.cluster_dns_missing = true;
        type = Host;
    }
    const DNSConfig host = parse_resolv_conf(in.host_resolv_conf);
    if (type == Host) {
        out.dns = host;
    } else if (type == Cluster) {
        out.dns.nameservers = in.cluster_dns;
        // generateSearchesForDNSClusterFirst.
        out.dns.searches = {in.namespace_ + ".svc." + in.cluster_domain, "svc." + in.cluster_domain,
                            in.cluster_domain};
        append_unique(out.dns.searches, host.searches);
        out.dns.options = {"ndots:5"};
    }
    if (spec.dns_config) {
        append_unique(out.dns.nameservers, spec.dns_config->nameservers);
        append_unique(out.dns.searches, spec.dns_config->searches);
        merge_options(out.dns.options, spec.dns_config->options);
    }
    if (out.dns.nameservers.size() > kMaxNameservers) out.dns.nameservers.resize(kMaxNameservers);
    if (out.dns.searches.size() > kMaxSearchPaths) out.dns.searches.resize(kMaxSearchPaths);

    if (!out.dns.searches.empty()) out.resolv_conf += "search " + join(out.dns.searches, " ") + "\n";
    for (const auto& s : out.dns.nameservers) out.resolv_conf += "nameserver " + s + "\n";
    if (!out.dns.options.empty()) out.resolv_conf += "options " + join(out.dns.options, " ") + "\n";
    return out;
}

}  // namespace daemonlet
