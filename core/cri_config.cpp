#include "core/cri_config.h"

#include <set>

#include "core/oci_spec.h"

namespace daemonlet {
namespace {

Error invalid_for_cri(const Container& c, const std::string& field, const std::string& why) {
    return Error{ErrorCode::Invalid, "container " + c.name + ": " + field + ": " + why};
}

bool privileged(const Container& c) {
    return c.security_context && c.security_context->privileged.value_or(false);
}

CriSeccomp seccomp_type(const SeccompProfile& p) {
    if (p.type == "RuntimeDefault") return CriSeccomp::RuntimeDefault;
    if (p.type == "Localhost") return CriSeccomp::Localhost;
    return CriSeccomp::Unconfined;
}

std::map<std::string, std::string> pod_labels(const CriPodInput& pod) {
    std::map<std::string, std::string> l = pod.labels;
    l[std::string(kCriPodNameLabel)] = pod.name;
    l[std::string(kCriPodNamespaceLabel)] = pod.namespace_;
    l[std::string(kCriPodUidLabel)] = pod.uid;
    l[std::string(kCriManagedLabel)] = "true";
    return l;
}

// GetPodDNS's and ensureHostsFile's input: the pod's names and the node's files.
PodDNSInput dns_input(const CriPodInput& pod) {
    PodDNSInput dns;
    dns.spec = pod.spec;
    dns.pod_name = pod.name;
    dns.namespace_ = pod.namespace_;
    dns.cluster_dns = pod.cluster_dns;
    dns.cluster_domain = pod.cluster_domain;
    dns.host_resolv_conf = pod.host_resolv_conf;
    dns.host_hosts = pod.host_hosts;
    return dns;
}

constexpr char kEtcHosts[] = "/etc/hosts";  // kubelet_pods.go etcHostsPath

}  // namespace

std::string cri_pod_log_directory(const std::string& log_root, const std::string& namespace_,
                                  const std::string& name, const std::string& uid) {
    return log_root + "/" + namespace_ + "_" + name + "_" + uid;
}

std::vector<CriPortMapping> cri_port_mappings(const Container& c) {
    std::vector<CriPortMapping> out;
    std::set<std::string> names;
    for (const auto& p : c.ports) {
        CriPortMapping m;
        m.protocol = p.protocol == "UDP"    ? CriProtocol::UDP
                     : p.protocol == "SCTP" ? CriProtocol::SCTP
                                            : CriProtocol::TCP;
        m.container_port = p.container_port;
        m.host_port = p.host_port;
        m.host_ip = p.host_ip;
        const std::string family = p.host_ip.empty()                          ? "any"
                                   : p.host_ip.find(':') != std::string::npos ? "v6"
                                                                              : "v4";
        const std::string protocol = p.protocol.empty() ? "TCP" : p.protocol;
        const std::string name = !p.name.empty() ? p.name
                                                 : family + "-" + protocol + "-" + p.host_ip + ":" +
                                                       std::to_string(p.container_port) + ":" +
                                                       std::to_string(p.host_port);
        // A port name used more than once in a container: the first holds.
        if (!names.insert(name).second) continue;
        out.push_back(std::move(m));
    }
    return out;
}

CriSandboxConfig cri_sandbox_config(const CriPodInput& pod) {
    const PodSpec& spec = *pod.spec;
    CriSandboxConfig s;
    s.name = pod.name;
    s.namespace_ = pod.namespace_;
    s.uid = pod.uid;
    s.attempt = pod.attempt;
    const PodDNSFiles files = pod_dns_files(dns_input(pod));
    s.dns = files.dns;
    if (!spec.host_network) s.hostname = files.hostname.substr(0, files.hostname.size() - 1);
    s.log_directory = cri_pod_log_directory(pod.log_root, pod.namespace_, pod.name, pod.uid);
    s.labels = pod_labels(pod);
    // labels.go newPodAnnotations: the pod's annotations, as they are.
    s.annotations = pod.annotations;
    s.network = spec.host_network ? CriNamespaceMode::Node : CriNamespaceMode::Pod;
    s.pid = spec.host_pid ? CriNamespaceMode::Node : CriNamespaceMode::Container;
    s.ipc = spec.host_ipc ? CriNamespaceMode::Node : CriNamespaceMode::Pod;
    for (const auto* list : {&spec.init_containers, &spec.containers})
        for (const auto& c : *list) s.privileged = s.privileged || privileged(c);
    // kuberuntime_sandbox.go generatePodSandboxLinuxConfig.
    if (const auto& psc = spec.security_context) {
        s.run_as_user = psc->run_as_user;
        s.run_as_group = psc->run_as_group;
        s.supplemental_groups = pod_supplemental_groups(spec);
        for (const auto& sc : psc->sysctls) s.sysctls[sc.name] = sc.value;
        if (psc->seccomp_profile) s.seccomp = seccomp_type(*psc->seccomp_profile);
    }
    for (const auto& c : spec.containers)
        for (auto& m : cri_port_mappings(c)) s.port_mappings.push_back(std::move(m));
    return s;
}

Result<CriContainerConfig> cri_container_config(const CriPodInput& pod, const CriContainerInput& in) {
    const Container& c = *in.container;
    const PodSpec& spec = *pod.spec;
    const SecurityContext sc = determine_effective_security_context(spec, c);
    if (in.image_user)
        if (auto refused = verify_run_as_non_root(spec, c, format_pod(pod.name, pod.namespace_, pod.uid),
                                                  *in.image_user))
            return Error{ErrorCode::ContainerConfig, *refused};
    if (auto refused = check_sysctls(spec)) return Error{ErrorCode::ContainerConfig, *refused};
    CriContainerConfig out;
    out.name = c.name;
    out.attempt = in.restart_count;
    out.image = c.image;
    out.command = in.command;
    out.args = in.args;
    out.working_dir = c.working_dir;
    out.envs = in.env;
    out.labels = pod_labels(pod);
    out.labels[std::string(kCriContainerNameLabel)] = c.name;
    out.log_path = c.name + "/" + std::to_string(in.restart_count) + ".log";
    for (std::size_t i = 0; i < c.volume_mounts.size(); ++i) {
        const VolumeMount& vm = c.volume_mounts[i];
        const std::string field = "volumeMounts[" + std::to_string(i) + "]";
        auto host = volume_mount_source(c, i, in.volume_host_paths);
        if (!host) return host.error();
        CriMount m;
        m.container_path = vm.mount_path;
        m.host_path = host.value();
        m.readonly = vm.read_only;
        if (vm.mount_propagation == "HostToContainer")
            m.propagation = CriPropagation::HostToContainer;
        else if (vm.mount_propagation == "Bidirectional")
            m.propagation = CriPropagation::Bidirectional;
        else if (!vm.mount_propagation.empty() && vm.mount_propagation != "None")
            return invalid_for_cri(
                c, field + ".mountPropagation",
                "\"" + vm.mount_propagation +
                    "\": supported values: \"Bidirectional\", \"HostToContainer\", \"None\"");
        out.mounts.push_back(std::move(m));
    }
    const auto& limits = c.resources.limits;
    const auto& requests = c.resources.requests;
    if (auto m = limits.find("memory"); m != limits.end() && m->second.value() > 0)
        out.memory_limit_in_bytes = m->second.value();
    // Shares from the request, the limit when none was given (API
    // defaulting copies it), 2 for neither.
    std::int64_t cpu_request = 0;
    if (auto q = requests.find("cpu"); q != requests.end())
        cpu_request = q->second.milli;
    else if (auto l = limits.find("cpu"); l != limits.end())
        cpu_request = l->second.milli;
    out.cpu_shares = static_cast<std::int64_t>(milli_cpu_to_shares(cpu_request));
    if (auto l = limits.find("cpu"); l != limits.end() && l->second.milli > 0) {
        out.cpu_quota = milli_cpu_to_quota(l->second.milli, kCpuQuotaPeriod);
        out.cpu_period = kCpuQuotaPeriod;
    }
    out.oom_score_adj = in.oom_score_adj;
    out.privileged = sc.privileged.value_or(false);
    out.capabilities_add = sc.capabilities_add;
    out.capabilities_drop = sc.capabilities_drop;
    out.run_as_user = sc.run_as_user;
    if (!out.run_as_user && in.image_user) {
        if (in.image_user->uid)
            out.run_as_user = in.image_user->uid;
        else
            out.run_as_username = in.image_user->username;
    }
    out.run_as_group = sc.run_as_group;
    out.readonly_rootfs = sc.read_only_root_filesystem.value_or(false);
    out.supplemental_groups = pod_supplemental_groups(spec);
    out.no_new_privs = add_no_new_privileges(sc);
    out.masked_paths = masked_paths(sc.proc_mount);
    out.readonly_paths = readonly_paths(sc.proc_mount);
    const SeccompProfile profile = effective_seccomp_profile(spec, c);
    out.seccomp = seccomp_type(profile);
    if (out.seccomp == CriSeccomp::Localhost)
        out.seccomp_localhost_ref = pod.seccomp_profile_root + "/" + profile.localhost_profile;
    out.network = spec.host_network ? CriNamespaceMode::Node : CriNamespaceMode::Pod;
    out.pid = spec.host_pid ? CriNamespaceMode::Node : CriNamespaceMode::Container;
    out.ipc = spec.host_ipc ? CriNamespaceMode::Node : CriNamespaceMode::Pod;
    return out;
}

std::optional<std::string> cri_hosts_file(const CriPodInput& pod, const Container& c,
                                          const std::vector<std::string>& pod_ips) {
    // shouldMountHostsFile: a pod of its own network gets the file once its
    // sandbox has an IP; a hostNetwork pod always (the node's file).
    if (pod_ips.empty() && !pod.spec->host_network) return std::nullopt;
    // makeMounts: a container mounting a volume on /etc/hosts keeps it.
    for (const auto& vm : c.volume_mounts)
        if (vm.mount_path == kEtcHosts) return std::nullopt;
    PodDNSInput dns = dns_input(pod);
    dns.pod_ips = pod_ips;
    return pod_dns_files(dns).hosts;
}

CriMount cri_hosts_mount(const std::string& host_path) {
    CriMount m;
    m.container_path = kEtcHosts;
    m.host_path = host_path;
    m.readonly = false;
    return m;
}

}  // namespace daemonlet
