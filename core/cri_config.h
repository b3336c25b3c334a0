// What the CRI runtime asks a CRI runtime (containerd) for, per pod and per
// container, as plain values: the pod sandbox's config and a container's
// config (k8s.io/cri-api runtime.v1 PodSandboxConfig and ContainerConfig),
// built from the pod's spec the way the kubelet's kuberuntime builds them.
// Pure: platform/cri/cri_runtime.cpp copies these into the protobuf messages.
//
// The rules, each from upstream (kubernetes pkg/kubelet/kuberuntime):
//   sandbox metadata   name, namespace, uid of the pod, attempt
//                      (kuberuntime_sandbox.go generatePodSandboxConfig).
//   sandbox hostname   the pod's name; none with hostNetwork (the node's).
//   log directory      <root>/<namespace>_<name>_<uid>
//                      (kubelet pkg/kubelet/kuberuntime/helpers.go
//                      BuildPodLogsDirectory); a container's log_path is
//                      <container name>/<restart count>.log
//                      (BuildContainerLogsDirectory + "<attempt>.log").
//   labels             io.kubernetes.pod.name / .namespace / .uid on the
//                      sandbox, plus io.kubernetes.container.name on a
//                      container (labels.go newPodLabels,
//                      newContainerLabels), plus the agent's own and
//                      io.daemonlet.managed=true, which re-adoption lists by.
//   namespaces         network and ipc NODE for hostNetwork / hostIPC else
//                      POD; pid NODE for hostPID else CONTAINER
//                      (kuberuntime/util/util.go NetworkNamespaceForPod,
//                      PidNamespaceForPod: a v1 pod's pid namespace is
//                      the container's unless shareProcessNamespace).
//   command / args     command and args as given (already $(VAR)
//                      expanded), the image's entrypoint when empty:
//                      the runtime merges them (kuberuntime_container.go
//                      generateContainerConfig).
//   mounts             one per volumeMount: hostPath's path or the emptyDir's
//                      host directory (+ subPath), readOnly, propagation
//                      None -> PRIVATE, HostToContainer, Bidirectional
//                      (kubelet_pods.go makeMounts, translateMountPropagation).
//   resources          memory_limit_in_bytes = limits.memory; cpu_shares =
//                      MilliCPUToShares(requests.cpu, else limits.cpu);
//                      cpu_quota / cpu_period = milliCPUToQuota(limits.cpu)
//                      with period 100000 us (kuberuntime_container_linux.go
//                      generateLinuxContainerResources, calculateLinuxResources).
//   privileged         securityContext.privileged, on the container and its
//                      sandbox (security_context.go
//                      determineEffectiveSecurityContext; sandbox privileged
//                      when any container is: kuberuntime_sandbox.go).
//   security           the merged securityContext (core/security_context.h):
//                      run_as_user (else the image's numeric uid) or
//                      run_as_username, run_as_group, readonly_rootfs,
//                      supplemental_groups (fsGroup, supplementalGroups),
//                      no_new_privs, masked / readonly paths by procMount,
//                      seccomp (RuntimeDefault, Unconfined, Localhost as
//                      <seccompProfileRoot>/<localhostProfile>:
//                      kuberuntime helpers.go getSeccompProfile); the
//                      sandbox gets the pod's sysctls and groups
//                      (kuberuntime_sandbox.go generatePodSandboxLinuxConfig).
//   DNS                the sandbox's dns_config from dnsPolicy and dnsConfig
//                      (core/pod_dns.h GetPodDNS; kuberuntime_sandbox.go);
//                      hostname spec.hostname, else the pod's name
//                      (GeneratePodHostNameAndDomain). The CRI runtime
//                      writes /etc/resolv.conf and /etc/hostname from them.
//   /etc/hosts         the kubelet's own file, not the CRI runtime's
//                      (kubelet_pods.go makeMounts, shouldMountHostsFile,
//                      makeHostsMount): managedHostsFileContent with the
//                      sandbox's IPs, nodeHostsFileContent with
//                      hostNetwork (core/pod_dns.h), mounted read-write at
//                      /etc/hosts, where containerd then mounts none of its
//                      own (containerMounts: isInCRIMounts). None for a pod
//                      of its own network whose sandbox has no IP, nor for a
//                      container with a volumeMount at /etc/hosts.
//   port mappings      every port of the app containers (not init
//                      containers), hostPort 0 included, each named port
//                      (else family-protocol-hostIP:containerPort:hostPort)
//                      once per container (pkg/kubelet/container/helpers.go
//                      MakePortMappings; kuberuntime_sandbox.go
//                      generatePodSandboxConfig): containerd's CNI portmap
//                      plugin maps those with a hostPort.
//                      runAsNonRoot and sysctls are checked first (error code
//                      "container_config" with the kubelet's message).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/model.h"
#include "core/pod_dns.h"
#include "core/result.h"
#include "core/security_context.h"

namespace daemonlet {

// The label every sandbox and container the agent makes carries, and which
// the CRI runtime lists by: what else the CRI runtime runs is not ours.
inline constexpr std::string_view kCriManagedLabel = "io.daemonlet.managed";
// kubelet's labels.go.
inline constexpr std::string_view kCriPodNameLabel = "io.kubernetes.pod.name";
inline constexpr std::string_view kCriPodNamespaceLabel = "io.kubernetes.pod.namespace";
inline constexpr std::string_view kCriPodUidLabel = "io.kubernetes.pod.uid";
inline constexpr std::string_view kCriContainerNameLabel = "io.kubernetes.container.name";

enum class CriNamespaceMode { Pod = 0, Container = 1, Node = 2 };  // runtime.v1 NamespaceMode
enum class CriPropagation { Private = 0, HostToContainer = 1, Bidirectional = 2 };
enum class CriSeccomp { RuntimeDefault = 0, Unconfined = 1, Localhost = 2 };  // SecurityProfile.ProfileType

enum class CriProtocol { TCP = 0, UDP = 1, SCTP = 2 };  // runtime.v1 Protocol

// runtime.v1 PortMapping: what containerd's CNI portmap plugin maps.
struct CriPortMapping {
    CriProtocol protocol = CriProtocol::TCP;
    std::int32_t container_port = 0;
    std::int32_t host_port = 0;
    std::string host_ip;
    bool operator==(const CriPortMapping&) const = default;
};

struct CriSandboxConfig {
    std::string name, namespace_, uid;
    std::uint32_t attempt = 0;
    std::string hostname;  // empty with hostNetwork
    std::string log_directory;
    std::map<std::string, std::string> labels;
    std::map<std::string, std::string> annotations;
    CriNamespaceMode network = CriNamespaceMode::Pod;
    CriNamespaceMode pid = CriNamespaceMode::Container;
    CriNamespaceMode ipc = CriNamespaceMode::Pod;
    bool privileged = false;
    std::optional<std::int64_t> run_as_user, run_as_group;
    std::vector<std::int64_t> supplemental_groups;
    std::map<std::string, std::string> sysctls;
    CriSeccomp seccomp = CriSeccomp::Unconfined;
    DNSConfig dns;  // dns_config
    std::vector<CriPortMapping> port_mappings;
};

struct CriMount {
    std::string container_path;
    std::string host_path;
    bool readonly = false;
    CriPropagation propagation = CriPropagation::Private;
    bool operator==(const CriMount&) const = default;
};

struct CriContainerConfig {
    std::string name;
    std::uint32_t attempt = 0;
    std::string image;
    std::vector<std::string> command;
    std::vector<std::string> args;
    std::string working_dir;
    std::vector<std::pair<std::string, std::string>> envs;
    std::vector<CriMount> mounts;
    std::map<std::string, std::string> labels;
    std::string log_path;  // relative to the sandbox's log_directory
    std::int64_t memory_limit_in_bytes = 0;
    std::int64_t cpu_shares = 0;
    std::int64_t cpu_quota = 0;
    std::int64_t cpu_period = 0;
    std::optional<int> oom_score_adj;  // LinuxContainerResources.oom_score_adj (the input's)
    bool privileged = false;
    std::vector<std::string> capabilities_add;
    std::vector<std::string> capabilities_drop;
    std::optional<std::int64_t> run_as_user, run_as_group;
    std::string run_as_username;
    bool readonly_rootfs = false;
    std::vector<std::int64_t> supplemental_groups;
    bool no_new_privs = false;
    std::vector<std::string> masked_paths, readonly_paths;
    CriSeccomp seccomp = CriSeccomp::Unconfined;
    std::string seccomp_localhost_ref;  // absolute, for Localhost
    CriNamespaceMode network = CriNamespaceMode::Pod;
    CriNamespaceMode pid = CriNamespaceMode::Container;
    CriNamespaceMode ipc = CriNamespaceMode::Pod;
};

struct CriPodInput {
    const PodSpec* spec = nullptr;  // required
    std::string name, namespace_, uid;
    std::uint32_t attempt = 0;
    std::string log_root;                            // the sandbox's log directory's parent
    std::map<std::string, std::string> labels;       // the agent's, kept on sandbox and containers
    std::map<std::string, std::string> annotations;  // the pod's (its template's metadata.annotations)
    std::string seccomp_profile_root;                // config seccompProfileRoot
    std::vector<std::string> cluster_dns;            // config clusterDNS
    std::string cluster_domain = "cluster.local";    // config clusterDomain
    std::string host_resolv_conf;                    // the node's /etc/resolv.conf text
    std::string host_hosts;                          // the node's /etc/hosts text (hostNetwork)
};

struct CriContainerInput {
    const Container* container = nullptr;  // required
    std::uint32_t restart_count = 0;
    // Resolved by the agent: $(VAR) expansion and the downward API.
    std::vector<std::string> command, args;
    std::vector<std::pair<std::string, std::string>> env;
    // Volume name -> the host path mounted for it (hostPath's path, the
    // directory made for an emptyDir).
    std::map<std::string, std::string> volume_host_paths;
    // The image's user as the runtime's ImageStatus reports it
    // (security_context.h image_user); none: unknown, the runtime's own.
    std::optional<ImageUser> image_user;
    // The kubelet's oom_score_adj for the container (core/qos.h), as the
    // agent restricted it; none: not set (0, the runtime's default).
    std::optional<int> oom_score_adj;
};

// <log_root>/<namespace>_<name>_<uid> (BuildPodLogsDirectory).
std::string cri_pod_log_directory(const std::string& log_root, const std::string& namespace_,
                                  const std::string& name, const std::string& uid);

CriSandboxConfig cri_sandbox_config(const CriPodInput& pod);

// MakePortMappings of one container.
std::vector<CriPortMapping> cri_port_mappings(const Container& c);

// Errors (code "invalid") name the container and field: a volumeMount of a
// volume without a host path, a subPath leaving its volume, an unknown
// mountPropagation. Code "container_config": runAsNonRoot or a sysctl
// refused, with the kubelet's message.
Result<CriContainerConfig> cri_container_config(const CriPodInput& pod, const CriContainerInput& in);

// The text of the pod's hosts file for container `c`, whose sandbox reports
// `pod_ips` (PodSandboxStatus network.ip and additional_ips), or none when
// the kubelet mounts none (shouldMountHostsFile: no IP and no hostNetwork;
// makeMounts: a volumeMount at /etc/hosts). See /etc/hosts above.
std::optional<std::string> cri_hosts_file(const CriPodInput& pod, const Container& c,
                                          const std::vector<std::string>& pod_ips);

// makeHostsMount: the pod's hosts file at `host_path` on /etc/hosts,
// read-write whatever readOnlyRootFilesystem says, propagation private.
CriMount cri_hosts_mount(const std::string& host_path);

}  // namespace daemonlet
