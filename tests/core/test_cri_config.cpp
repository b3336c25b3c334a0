// The CRI sandbox and container configs of a pod (core/cri_config.h). Each
// row changes a base pod and container, then checks one field (or the
// error), and names the kubelet rule it pins (pkg/kubelet/kuberuntime:
// kuberuntime_sandbox.go, kuberuntime_container.go,
// kuberuntime_container_linux.go, labels.go, helpers.go, util/util.go;
// pkg/kubelet/kubelet_pods.go; pkg/kubelet/cm/helpers_linux.go).

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/cri_config.h"
#include "core/quantity.h"

#include <CppUTest/TestHarness.h>

using namespace daemonlet;

namespace {

struct Case {
    PodSpec spec;
    Container container;
    CriPodInput pod;
    CriContainerInput in;
};

Case base_case() {
    Case k;
    k.container.name = "app";
    k.container.image = "busybox:1.36";
    k.pod.name = "agent-x7k2p";
    k.pod.namespace_ = "edge";
    k.pod.uid = "0b1c";
    k.pod.log_root = "/var/lib/daemonlet/runtime/logs";
    k.pod.labels = {{"daemonlet.io/daemonset", "agent"}};
    k.in.volume_host_paths = {{"data", "/srv/data"}};
    return k;
}

Quantity q(const char* s) {
    auto r = parse_quantity(s);
    CHECK_TRUE(r.ok());
    return r.value();
}

void mount(Case& k, const char* name, const char* path, const char* sub = "", const char* prop = "") {
    VolumeMount vm;
    vm.name = name;
    vm.mount_path = path;
    vm.sub_path = sub;
    vm.mount_propagation = prop;
    k.container.volume_mounts.push_back(vm);
}

struct Row {
    const char* rule;
    std::function<void(Case&)> setup;
    // Checks the configs built; returns what was found when it fails.
    std::function<std::string(const CriSandboxConfig&, const CriContainerConfig&)> check;
    std::string error;  // a substring of the container config's error instead
};

// "" when the check holds, else what was found (never empty).
std::string expect(bool ok, const std::string& got) { return ok ? std::string() : "[" + got + "]"; }

const Row kRows[] = {
    // --- Sandbox: kuberuntime_sandbox.go generatePodSandboxConfig.
    {"sandbox metadata: the pod's name, namespace, uid and attempt", [](Case& k) { k.pod.attempt = 2; },
     [](const CriSandboxConfig& s, const CriContainerConfig&) {
         return expect(s.name == "agent-x7k2p" && s.namespace_ == "edge" && s.uid == "0b1c" && s.attempt == 2,
                       s.name + " " + s.namespace_ + " " + s.uid);
     },
     ""},
    {"sandbox hostname: the pod's name", [](Case&) {},
     [](const CriSandboxConfig& s, const CriContainerConfig&) {
         return expect(s.hostname == "agent-x7k2p", s.hostname);
     },
     ""},
    {"hostNetwork: no hostname, network NODE (util.go NetworkNamespaceForPod)",
     [](Case& k) { k.spec.host_network = true; },
     [](const CriSandboxConfig& s, const CriContainerConfig& c) {
         return expect(
             s.hostname.empty() && s.network == CriNamespaceMode::Node && c.network == CriNamespaceMode::Node,
             s.hostname);
     },
     ""},
    {"no hostNetwork: network POD", [](Case&) {},
     [](const CriSandboxConfig& s, const CriContainerConfig&) {
         return expect(s.network == CriNamespaceMode::Pod, "not POD");
     },
     ""},
    {"hostPID: pid NODE (util.go PidNamespaceForPod)", [](Case& k) { k.spec.host_pid = true; },
     [](const CriSandboxConfig& s, const CriContainerConfig& c) {
         return expect(s.pid == CriNamespaceMode::Node && c.pid == CriNamespaceMode::Node, "not NODE");
     },
     ""},
    {"no hostPID: a v1 pod's pid namespace is the container's (CONTAINER)", [](Case&) {},
     [](const CriSandboxConfig& s, const CriContainerConfig& c) {
         return expect(s.pid == CriNamespaceMode::Container && c.pid == CriNamespaceMode::Container,
                       "not CONTAINER");
     },
     ""},
    {"hostIPC: ipc NODE (util.go IpcNamespaceForPod)", [](Case& k) { k.spec.host_ipc = true; },
     [](const CriSandboxConfig& s, const CriContainerConfig&) {
         return expect(s.ipc == CriNamespaceMode::Node, "not NODE");
     },
     ""},
    {"log directory <root>/<namespace>_<name>_<uid> (helpers.go BuildPodLogsDirectory)", [](Case&) {},
     [](const CriSandboxConfig& s, const CriContainerConfig&) {
         return expect(s.log_directory == "/var/lib/daemonlet/runtime/logs/edge_agent-x7k2p_0b1c",
                       s.log_directory);
     },
     ""},
    {"pod labels io.kubernetes.pod.* and the managed label on the sandbox (labels.go newPodLabels)",
     [](Case&) {},
     [](const CriSandboxConfig& s, const CriContainerConfig&) {
         auto l = s.labels;
         return expect(l["io.kubernetes.pod.name"] == "agent-x7k2p" &&
                           l["io.kubernetes.pod.namespace"] == "edge" &&
                           l["io.kubernetes.pod.uid"] == "0b1c" && l["io.daemonlet.managed"] == "true" &&
                           l["daemonlet.io/daemonset"] == "agent" && l.size() == 5,
                       std::to_string(l.size()) + " labels");
     },
     ""},
    {"the pod's annotations on the sandbox, as they are (labels.go newPodAnnotations)",
     [](Case& k) {
         k.pod.annotations = {{"prometheus.io/scrape", "true"}, {"example.com/x", ""}};
     },
     [](const CriSandboxConfig& s, const CriContainerConfig&) {
         auto a = s.annotations;
         return expect(a.size() == 2 && a["prometheus.io/scrape"] == "true" && a.count("example.com/x"),
                       std::to_string(a.size()) + " annotations");
     },
     ""},
    {"a privileged container makes its sandbox privileged (kuberuntime_sandbox.go)",
     [](Case& k) {
         Container other;
         other.name = "priv";
         other.security_context.emplace();
         other.security_context->privileged = true;
         k.spec.containers.push_back(other);
     },
     [](const CriSandboxConfig& s, const CriContainerConfig& c) {
         return expect(s.privileged && !c.privileged, "sandbox not privileged, or the other container is");
     },
     ""},
    // --- Container: kuberuntime_container.go generateContainerConfig.
    {"metadata: name, attempt = restart count; log path <name>/<attempt>.log",
     [](Case& k) { k.in.restart_count = 3; },
     [](const CriSandboxConfig&, const CriContainerConfig& c) {
         return expect(c.name == "app" && c.attempt == 3 && c.log_path == "app/3.log", c.log_path);
     },
     ""},
    {"command, args, workingDir, env as resolved by the agent; image as written",
     [](Case& k) {
         k.in.command = {"/bin/sh", "-c"};
         k.in.args = {"echo $X"};
         k.in.env = {{"X", "1"}};
         k.container.working_dir = "/work";
     },
     [](const CriSandboxConfig&, const CriContainerConfig& c) {
         return expect(c.command.size() == 2 && c.args.size() == 1 && c.envs.size() == 1 &&
                           c.working_dir == "/work" && c.image == "busybox:1.36",
                       c.image);
     },
     ""},
    {"no command: none sent, the runtime uses the image's entrypoint", [](Case&) {},
     [](const CriSandboxConfig&, const CriContainerConfig& c) {
         return expect(c.command.empty() && c.args.empty(), "a command was set");
     },
     ""},
    {"container labels add io.kubernetes.container.name (labels.go newContainerLabels)", [](Case&) {},
     [](const CriSandboxConfig&, const CriContainerConfig& c) {
         auto l = c.labels;
         return expect(l["io.kubernetes.container.name"] == "app" && l["io.kubernetes.pod.uid"] == "0b1c" &&
                           l["io.daemonlet.managed"] == "true",
                       l["io.kubernetes.container.name"]);
     },
     ""},
    // --- Mounts: kubelet_pods.go makeMounts, translateMountPropagation.
    {"a hostPath mount: its host path, read-write, PRIVATE", [](Case& k) { mount(k, "data", "/data"); },
     [](const CriSandboxConfig&, const CriContainerConfig& c) {
         return expect(c.mounts.size() == 1 &&
                           c.mounts[0] == CriMount{"/data", "/srv/data", false, CriPropagation::Private},
                       std::to_string(c.mounts.size()));
     },
     ""},
    {"subPath joins the volume's path; readOnly; HostToContainer",
     [](Case& k) {
         mount(k, "data", "/cfg", "conf/a", "HostToContainer");
         k.container.volume_mounts.back().read_only = true;
     },
     [](const CriSandboxConfig&, const CriContainerConfig& c) {
         return expect(c.mounts.size() == 1 && c.mounts[0] == CriMount{"/cfg", "/srv/data/conf/a", true,
                                                                       CriPropagation::HostToContainer},
                       c.mounts.empty() ? "" : c.mounts[0].host_path);
     },
     ""},
    {"Bidirectional propagation", [](Case& k) { mount(k, "data", "/d", "", "Bidirectional"); },
     [](const CriSandboxConfig&, const CriContainerConfig& c) {
         return expect(c.mounts.size() == 1 && c.mounts[0].propagation == CriPropagation::Bidirectional, "");
     },
     ""},
    {"a mount of a volume with no host path is an error", [](Case& k) { mount(k, "cfg", "/cfg"); }, nullptr,
     "volumeMounts[0].name: volume \"cfg\""},
    {"a subPath leaving its volume is an error (makeMounts: no '..')",
     [](Case& k) { mount(k, "data", "/d", "../etc"); }, nullptr, "volumeMounts[0].subPath"},
    {"an unknown mountPropagation is an error", [](Case& k) { mount(k, "data", "/d", "", "Sideways"); },
     nullptr, "volumeMounts[0].mountPropagation"},
    {"a relative mountPath is an error", [](Case& k) { mount(k, "data", "d"); }, nullptr,
     "volumeMounts[0].mountPath"},
    // --- Resources: kuberuntime_container_linux.go calculateLinuxResources.
    {"limits.memory is memory_limit_in_bytes",
     [](Case& k) { k.container.resources.limits["memory"] = q("64Mi"); },
     [](const CriSandboxConfig&, const CriContainerConfig& c) {
         return expect(c.memory_limit_in_bytes == 64 * 1024 * 1024, std::to_string(c.memory_limit_in_bytes));
     },
     ""},
    {"no resources: shares 2 (MinShares), no quota, no memory limit", [](Case&) {},
     [](const CriSandboxConfig&, const CriContainerConfig& c) {
         return expect(
             c.cpu_shares == 2 && c.cpu_quota == 0 && c.cpu_period == 0 && c.memory_limit_in_bytes == 0,
             std::to_string(c.cpu_shares));
     },
     ""},
    {"requests.cpu 250m: shares 256 (MilliCPUToShares)",
     [](Case& k) { k.container.resources.requests["cpu"] = q("250m"); },
     [](const CriSandboxConfig&, const CriContainerConfig& c) {
         return expect(c.cpu_shares == 256 && c.cpu_quota == 0, std::to_string(c.cpu_shares));
     },
     ""},
    {"limits.cpu 500m: quota 50000 per 100000 us (milliCPUToQuota); shares from the limit",
     [](Case& k) { k.container.resources.limits["cpu"] = q("500m"); },
     [](const CriSandboxConfig&, const CriContainerConfig& c) {
         return expect(c.cpu_quota == 50000 && c.cpu_period == 100000 && c.cpu_shares == 512,
                       std::to_string(c.cpu_quota) + " " + std::to_string(c.cpu_shares));
     },
     ""},
    {"limits.cpu 1m: quota at least MinQuotaPeriod (1000 us)",
     [](Case& k) { k.container.resources.limits["cpu"] = q("1m"); },
     [](const CriSandboxConfig&, const CriContainerConfig& c) {
         return expect(c.cpu_quota == 1000, std::to_string(c.cpu_quota));
     },
     ""},
    // --- Security: kuberuntime_container_linux.go, pkg/securitycontext.
    {"privileged and capabilities pass through",
     [](Case& k) {
         k.container.security_context.emplace();
         k.container.security_context->privileged = true;
         k.container.security_context->capabilities_add = {"NET_ADMIN"};
         k.container.security_context->capabilities_drop = {"ALL"};
     },
     [](const CriSandboxConfig& s, const CriContainerConfig& c) {
         return expect(c.privileged && s.privileged &&
                           c.capabilities_add == std::vector<std::string>{"NET_ADMIN"} &&
                           c.capabilities_drop == std::vector<std::string>{"ALL"},
                       "");
     },
     ""},
    {"pod runAsUser, fsGroup and supplementalGroups (security_context.go determineEffectiveSecurityContext)",
     [](Case& k) {
         auto& psc = k.spec.security_context.emplace();
         psc.run_as_user = 1000;
         psc.run_as_group = 3000;
         psc.fs_group = 2000;
         psc.supplemental_groups = {4000};
     },
     [](const CriSandboxConfig& s, const CriContainerConfig& c) {
         return expect(c.run_as_user == 1000 && c.run_as_group == 3000 &&
                           c.supplemental_groups == std::vector<std::int64_t>{2000, 4000} &&
                           s.run_as_user == 1000,
                       "");
     },
     ""},
    {"no runAsUser: the image's uid (getImageUser)", [](Case& k) { k.in.image_user = image_user("1001:5"); },
     [](const CriSandboxConfig&, const CriContainerConfig& c) {
         return expect(c.run_as_user == 1001 && c.run_as_username.empty(), "");
     },
     ""},
    {"no runAsUser: the image's user name as run_as_username",
     [](Case& k) { k.in.image_user = image_user("app"); },
     [](const CriSandboxConfig&, const CriContainerConfig& c) {
         return expect(!c.run_as_user && c.run_as_username == "app", c.run_as_username);
     },
     ""},
    {"runAsNonRoot and a root image: CreateContainerConfigError (verifyRunAsNonRoot)",
     [](Case& k) {
         k.container.security_context.emplace().run_as_non_root = true;
         k.in.image_user = image_user("");
     },
     nullptr,
     "container has runAsNonRoot and image will run as root (pod: \"agent-x7k2p_edge(0b1c)\", container: "
     "app)"},
    {"readOnlyRootFilesystem, no_new_privs, masked paths (AddNoNewPrivileges, ConvertToRuntimeMaskedPaths)",
     [](Case& k) {
         auto& sc = k.container.security_context.emplace();
         sc.read_only_root_filesystem = true;
         sc.allow_privilege_escalation = false;
     },
     [](const CriSandboxConfig&, const CriContainerConfig& c) {
         return expect(
             c.readonly_rootfs && c.no_new_privs && !c.masked_paths.empty() && !c.readonly_paths.empty(), "");
     },
     ""},
    {"procMount Unmasked: no masked or read-only paths",
     [](Case& k) { k.container.security_context.emplace().proc_mount = "Unmasked"; },
     [](const CriSandboxConfig&, const CriContainerConfig& c) {
         return expect(c.masked_paths.empty() && c.readonly_paths.empty(), "");
     },
     ""},
    {"seccomp unset: Unconfined (getSeccompProfile, SeccompDefault off)", [](Case&) {},
     [](const CriSandboxConfig&, const CriContainerConfig& c) {
         return expect(c.seccomp == CriSeccomp::Unconfined, "");
     },
     ""},
    {"seccomp Localhost: <seccompProfileRoot>/<localhostProfile>",
     [](Case& k) {
         k.pod.seccomp_profile_root = "/var/lib/daemonlet/seccomp";
         k.spec.security_context.emplace().seccomp_profile = SeccompProfile{"RuntimeDefault", ""};
         k.container.security_context.emplace().seccomp_profile = SeccompProfile{"Localhost", "audit.json"};
     },
     [](const CriSandboxConfig& s, const CriContainerConfig& c) {
         return expect(c.seccomp == CriSeccomp::Localhost &&
                           c.seccomp_localhost_ref == "/var/lib/daemonlet/seccomp/audit.json" &&
                           s.seccomp == CriSeccomp::RuntimeDefault,
                       c.seccomp_localhost_ref);
     },
     ""},
    {"the pod's sysctls on the sandbox (generatePodSandboxLinuxConfig)",
     [](Case& k) {
         k.spec.security_context.emplace().sysctls = {{"net.ipv4.tcp_syncookies", "1"}};
     },
     [](const CriSandboxConfig& s, const CriContainerConfig&) {
         return expect(s.sysctls.at("net.ipv4.tcp_syncookies") == "1", "");
     },
     ""},
    {"sandbox dns_config from dnsPolicy None and dnsConfig (GetPodDNS)",
     [](Case& k) {
         k.spec.dns_policy = "None";
         k.spec.dns_config = PodDNSConfig{{"203.0.113.1"}, {"x.example"}, {"ndots:2"}};
     },
     [](const CriSandboxConfig& s, const CriContainerConfig&) {
         return expect(s.dns == DNSConfig{{"203.0.113.1"}, {"x.example"}, {"ndots:2"}}, "");
     },
     ""},
    {"sandbox dns_config ClusterFirst with clusterDNS (generateSearchesForDNSClusterFirst)",
     [](Case& k) { k.pod.cluster_dns = {"10.96.0.10"}; },
     [](const CriSandboxConfig& s, const CriContainerConfig&) {
         return expect(s.dns.nameservers == std::vector<std::string>{"10.96.0.10"} &&
                           s.dns.searches.at(0) == "edge.svc.cluster.local" &&
                           s.dns.options == std::vector<std::string>{"ndots:5"},
                       "");
     },
     ""},
    {"sandbox hostname: spec.hostname (GeneratePodHostNameAndDomain)",
     [](Case& k) { k.spec.hostname = "web"; },
     [](const CriSandboxConfig& s, const CriContainerConfig&) {
         return expect(s.hostname == "web", s.hostname);
     },
     ""},
    {"port_mappings: every port of the container, hostPort 0 too (MakePortMappings, "
     "generatePodSandboxConfig)",
     [](Case& k) {
         k.container.ports = {
             {"http", 8080, 80, "TCP", ""}, {"", 53, 0, "UDP", ""}, {"", 9100, 9100, "TCP", "127.0.0.1"}};
     },
     [](const CriSandboxConfig& s, const CriContainerConfig&) {
         const std::vector<CriPortMapping> want = {{CriProtocol::TCP, 8080, 80, ""},
                                                   {CriProtocol::UDP, 53, 0, ""},
                                                   {CriProtocol::TCP, 9100, 9100, "127.0.0.1"}};
         return expect(s.port_mappings == want, std::to_string(s.port_mappings.size()) + " mappings");
     },
     ""},
    {"port_mappings: a port name used twice in a container maps once (MakePortMappings' names)",
     [](Case& k) {
         k.container.ports = {{"web", 8080, 80, "TCP", ""}, {"web", 8443, 443, "TCP", ""}};
     },
     [](const CriSandboxConfig& s, const CriContainerConfig&) {
         return expect(s.port_mappings.size() == 1 && s.port_mappings[0].host_port == 80,
                       std::to_string(s.port_mappings.size()) + " mappings");
     },
     ""},
    {"port_mappings: init containers' ports are not mapped (generatePodSandboxConfig: Spec.Containers)",
     [](Case& k) {
         Container init;
         init.name = "init";
         init.ports = {{"", 7000, 7000, "TCP", ""}};
         k.spec.init_containers.push_back(init);
     },
     [](const CriSandboxConfig& s, const CriContainerConfig&) {
         return expect(s.port_mappings.empty(), std::to_string(s.port_mappings.size()) + " mappings");
     },
     ""},
    {"oom_score_adj as the agent computed it (LinuxContainerResources.oom_score_adj)",
     [](Case& k) { k.in.oom_score_adj = -997; },
     [](const CriSandboxConfig&, const CriContainerConfig& c) {
         return expect(c.oom_score_adj == -997, c.oom_score_adj ? std::to_string(*c.oom_score_adj) : "none");
     },
     ""},
    {"a node-wide sysctl is refused (validateSysctl)",
     [](Case& k) {
         k.spec.security_context.emplace().sysctls = {{"kernel.panic", "1"}};
     },
     nullptr, "\"kernel.panic\" not allowlisted"},
};

}  // namespace

TEST_GROUP(CriConfig){};

TEST(CriConfig, EachRowBuildsTheKubeletsSandboxAndContainerConfig) {
    for (const auto& row : kRows) {
        Case k = base_case();
        row.setup(k);
        k.spec.containers.insert(k.spec.containers.begin(), k.container);
        k.pod.spec = &k.spec;
        k.in.container = &k.spec.containers.front();
        CriSandboxConfig s = cri_sandbox_config(k.pod);
        auto c = cri_container_config(k.pod, k.in);
        if (!row.error.empty()) {
            if (c.ok()) FAIL((std::string(row.rule) + ": expected an error").c_str());
            if (c.error().message.find(row.error) == std::string::npos)
                FAIL((std::string(row.rule) + ": error \"" + c.error().message + "\"").c_str());
            continue;
        }
        if (!c.ok()) FAIL((std::string(row.rule) + ": " + c.error().message).c_str());
        const std::string got = row.check(s, c.value());
        if (!got.empty()) FAIL((std::string(row.rule) + ": got " + got).c_str());
    }
}

// kubelet_pods.go makeMounts' /etc/hosts under the CRI runtime: whether the
// kubelet mounts its own file (shouldMountHostsFile, the volumeMount check)
// and its text (ensureHostsFile: managedHostsFileContent,
// nodeHostsFileContent; the texts' own rows are tests/core/test_pod_dns.cpp).
TEST(CriConfig, HostsFileAsMakeMounts) {
    const std::string managed =
        "# Kubernetes-managed hosts file.\n127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n"
        "fe00::0\tip6-localnet\nfe00::0\tip6-mcastprefix\nfe00::1\tip6-allnodes\nfe00::2\tip6-allrouters\n";
    const std::string node_hosts = "127.0.0.1\tlocalhost\n192.168.1.20\tboard\n";
    struct HostsRow {
        const char* rule;
        std::function<void(Case&)> setup;
        std::vector<std::string> pod_ips;
        std::optional<std::string> hosts;
    };
    const HostsRow rows[] = {
        {"shouldMountHostsFile, managedHostsFileContent: the sandbox's IP with the pod's name",
         [](Case&) {},
         {"10.213.77.5"},
         managed + "10.213.77.5\tagent-x7k2p\n"},
        {"managedHostsFileContent: every sandbox IP (dual stack), hostname and subdomain's FQDN",
         [](Case& k) {
             k.spec.hostname = "web";
             k.spec.subdomain = "sub";
         },
         {"10.213.77.5", "fd00::5"},
         managed + "10.213.77.5\tweb.sub.edge.svc.cluster.local\tweb\nfd00::5\tweb.sub.edge.svc.cluster."
                   "local\tweb\n"},
        {"hostsEntriesFromHostAliases: appended under their header",
         [](Case& k) {
             k.spec.host_aliases = {PodHostAlias{"203.0.113.9", {"reg", "reg.local"}}};
         },
         {"10.213.77.5"},
         managed +
             "10.213.77.5\tagent-x7k2p\n\n# Entries added by HostAliases.\n203.0.113.9\treg\treg.local\n"},
        {"shouldMountHostsFile: a pod of its own network without an IP gets none (the runtime's own)",
         [](Case&) {},
         {},
         std::nullopt},
        {"shouldMountHostsFile, nodeHostsFileContent: hostNetwork, no sandbox IP: the node's file",
         [&](Case& k) {
             k.spec.host_network = true;
             k.spec.host_aliases = {PodHostAlias{"203.0.113.9", {"reg"}}};
             k.pod.host_hosts = node_hosts;
         },
         {},
         "# Kubernetes-managed hosts file (host network).\n" + node_hosts +
             "\n# Entries added by HostAliases.\n203.0.113.9\treg\n"},
        {"makeMounts: a container with a volumeMount at /etc/hosts keeps it",
         [](Case& k) { mount(k, "data", "/etc/hosts", "hosts"); },
         {"10.213.77.5"},
         std::nullopt},
    };
    for (const auto& row : rows) {
        Case k = base_case();
        row.setup(k);
        k.pod.spec = &k.spec;
        const auto got = cri_hosts_file(k.pod, k.container, row.pod_ips);
        CHECK_EQUAL_TEXT(row.hosts.has_value(), got.has_value(), row.rule);
        if (row.hosts) STRCMP_EQUAL_TEXT(row.hosts->c_str(), got->c_str(), row.rule);
    }
    // makeHostsMount: read-write at /etc/hosts, private.
    const CriMount m = cri_hosts_mount("/var/lib/daemonlet/runtime/pods/0b1c/etc-hosts");
    CHECK_TRUE(m == (CriMount{"/etc/hosts", "/var/lib/daemonlet/runtime/pods/0b1c/etc-hosts", false,
                              CriPropagation::Private}));
}
