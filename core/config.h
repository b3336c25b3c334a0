// The agent's configuration file (YAML, camelCase keys as kubelet's
// configuration file). Parsing is pure: the caller reads the file and fills
// in what needs the system (the host name when nodeName is absent).
//
//   nodeName: edge-01              # default: the host name
//   nodeLabels: {disktype: ssd}    # plus kubernetes.io/hostname, /os, /arch
//   nodeTaints:
//     - {key: dedicated, value: sensors, effect: NoSchedule}
//   nodeIP: 192.168.1.20           # kubelet's --node-ip; "IPv4,IPv6" for dual
//                                  # stack; default: core/node_ips.h choose_host_ip
//   manifestDir: /etc/daemonlet/manifests
//   stateDir: /var/lib/daemonlet
//   seccompProfileRoot: /var/lib/daemonlet/seccomp  # default <stateDir>/seccomp
//                                  # (kubelet's <root-dir>/seccomp): Localhost
//                                  # seccomp profiles are read from here
//   clusterDNS: [10.96.0.10]       # kubelet's: ClusterFirst pods' nameservers;
//                                  # default none: such pods get the host's resolver
//   clusterDomain: cluster.local   # kubelet's: searches and subdomain FQDNs
//   allowedUnsafeSysctls: ["net.core.somaxconn", "kernel.msg*"]  # kubelet's: beside
//                                  # the safe set (core/sysctl.h); namespaced only
//   runtime: {type: exec}           # or, for containers from images:
//                                  # every type: maxParallelOperations: 4
//                                  # (starts and stops of different pods at once)
//   runtime: {type: runc, imageImportDir: /var/lib/daemonlet/import, runcPath: runc,
//             rootfs: auto,        # auto | overlay | copy
//             registryAuthFile: /etc/daemonlet/registry-auth.json,  # default: anonymous pulls
//             registryCertsDir: /etc/daemonlet/certs.d,  # <dir>/<host:port>/ca.crt
//             insecureRegistries: ["10.0.0.5:5000"]}     # plain HTTP, for these only
//   runtime: {type: cri, endpoint: unix:///run/containerd/containerd.sock,
//             imageImportDir: /var/lib/daemonlet/import,  # archives imported into containerd
//             snapshotter: overlayfs}  # the CRI plugin's; imports are unpacked for it
//   fileCheckFrequency: 20s
//   crashLoopBackoff: {initial: 10s, max: 300s}
//   containerLogMaxSize: 10Mi
//   containerLogMaxFiles: 5
//   apiServer:                     # absent: the manifest directory only
//     kubeconfig: /etc/daemonlet/kubeconfig   # or inCluster: true
//     context: ""                  # default: the kubeconfig's current-context
//     namespaces: [kube-system]    # default: all
//     labelSelector: "edge=true"   # only these DaemonSets
//     nodeFromCluster: false       # labels, taints from the Node object
//     registerNode: false          # create the Node, post its status (kubelet's)
//     podStatus: <registerNode>    # the board's DaemonSet pods as Pods of the API
//     rollouts: cluster            # or board: who paces a cluster DaemonSet's rollout
//     registerWithTaints:          # the new Node's taints
//       - {key: daemonlet.io/board, effect: NoSchedule}
//     leaseNamespace: kube-node-lease
//
// Unknown keys and bad values are errors naming the key's path; an agent
// with an invalid configuration refuses to start.
#pragma once

#include <algorithm>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/image_gc.h"
#include "core/model.h"
#include "core/result.h"

namespace daemonlet {

// The Kubernetes API server as a second source of DaemonSets.
struct ApiServerConfig {
    bool enabled = false;     // the apiServer key is present
    std::string kubeconfig;   // resolved against the configuration's directory
    bool in_cluster = false;  // the service account's token and CA instead
    std::string service_account_dir = "/var/run/secrets/kubernetes.io/serviceaccount";
    std::string context;
    std::vector<std::string> namespaces;  // empty: all
    // Whether DaemonSets of this namespace are followed (namespaces, or all).
    bool follows(const std::string& ns) const {
        return namespaces.empty() || std::find(namespaces.begin(), namespaces.end(), ns) != namespaces.end();
    }
    std::string label_selector;
    bool node_from_cluster = false;
    // registerNode: the agent registers the board's Node and keeps its
    // status, as the kubelet (core/node_status.h); registerWithTaints: the
    // taints the Node is created with (kubelet's --register-with-taints).
    bool register_node = false;
    std::vector<Taint> register_with_taints;
    // podStatus (default: registerNode): each pod the board runs for a
    // cluster DaemonSet is a Pod of the API, created or taken as the
    // DaemonSet controller would have made it, its status kept as the
    // kubelet's status manager keeps it (core/daemon_pod.h,
    // core/pod_api_status.h, agent/daemon/api_pods.h).
    bool pod_status = false;
    // rollouts (issue 14 §3): `cluster` (the default): while connected, a
    // cluster DaemonSet's pod that has its Pod is replaced when the
    // DaemonSet controller deletes that Pod (or, with maxSurge, makes the
    // new revision's Pod for this node), as a kubelet follows its Pods;
    // `board`: the board rolls it at once, as it does disconnected.
    bool cluster_paces_rollouts = true;
    std::string lease_namespace = "kube-node-lease";
    // A list page, a Lease renewal, an Event: each gives up after this (a
    // watch lasts its timeoutSeconds). kube-apiserver's own limit is 60 s.
    std::int64_t request_timeout_ms = 60'000;
    bool operator==(const ApiServerConfig&) const = default;
};

struct AgentConfig {
    std::string node_name;  // empty: the caller uses the host name
    Labels node_labels;
    std::vector<Taint> node_taints;
    bool node_unschedulable = false;
    // nodeIP, parsed (core/node_ips.h parse_node_ip): the node's IPs, the
    // primary first; empty: chosen from the interfaces and routes.
    std::vector<std::string> node_ips;
    std::string manifest_dir = "/etc/daemonlet/manifests";
    std::string state_dir = "/var/lib/daemonlet";
    // Where seccompProfile type Localhost's localhostProfile is found
    // (kubelet's --seccomp-profile-root); empty: <state_dir>/seccomp
    // (seccomp_profile_root_of()).
    std::string seccomp_profile_root;
    // kubelet's clusterDNS and clusterDomain (core/pod_dns.h): a pod's
    // resolv.conf for dnsPolicy ClusterFirst; none: the host's resolver.
    std::vector<std::string> cluster_dns;
    std::string cluster_domain = "cluster.local";
    // kubelet's allowedUnsafeSysctls: the sysctls (names, or prefixes
    // ending in '*') a pod may set beside the safe set, each namespaced
    // (core/sysctl.h new_sysctl_allowlist checked them).
    std::vector<std::string> allowed_unsafe_sysctls;
    std::string runtime_type = "exec";  // "exec", "runc" or "cri"
    // runc: archives dropped here are imported into the image store (cri:
    // into containerd's); empty:
    // <state_dir>/import (image_import_dir_of()).
    std::string image_import_dir;
    std::string runc_path = "runc";  // found on PATH unless it holds a '/'
    // runc: how a container's root filesystem is made from the image's
    // layers. "overlay": an overlayfs mount (no copy; an error at start when
    // the node cannot mount one); "copy": the layers copied into the bundle;
    // "auto": overlay when the node can, else the copy.
    std::string runtime_rootfs = "auto";
    // runc: runtime.imageGC {highThresholdPercent, lowThresholdPercent,
    // minimumAgeSeconds}, kubelet's image GC policy (core/image_gc.h).
    ImageGcPolicy image_gc;
    // runc registry pulls: a Docker config.json-style file of credentials
    // ({"auths": {"host:port": {"auth": base64(user:pass)}}}, as kubelet's
    // /var/lib/kubelet/config.json); empty: anonymous.
    std::string registry_auth_file;
    // Docker's certs.d convention: <dir>/<host:port>/ca.crt trusted for that
    // registry beside the system's CAs.
    std::string registry_certs_dir = "/etc/daemonlet/certs.d";
    // host[:port] of registries spoken to over plain HTTP (no TLS at all).
    std::vector<std::string> insecure_registries;
    // cri: the CRI runtime's gRPC socket, unix:///<absolute path> (kubelet's
    // --container-runtime-endpoint).
    std::string cri_endpoint = "unix:///run/containerd/containerd.sock";
    // cri: the snapshotter the CRI plugin uses (containerd's config.toml,
    // plugins."io.containerd.grpc.v1.cri".containerd.snapshotter), for which
    // `ctr images import` unpacks imported archives; empty: ctr's default,
    // overlayfs, the CRI plugin's default too. Another one still works: the
    // CRI plugin unpacks the image at the first container's creation.
    std::string cri_snapshotter;
    // runtime.maxParallelOperations: how many container starts and stops of
    // different pods run at once (each off the loop); one pod's run one at a
    // time, in order. kubelet has one pod worker per pod, unbounded; a board
    // bounds them so that a boot with many pods does not fork them all at once.
    std::uint32_t max_parallel_operations = 4;
    std::int64_t file_check_frequency_ms = 20'000;
    std::int64_t backoff_initial_ms = 10'000;
    std::int64_t backoff_max_ms = 300'000;
    std::uint64_t container_log_max_size = 10 * 1024 * 1024;
    std::uint32_t container_log_max_files = 5;
    // metricsBindAddress: where /metrics (Prometheus text format) and
    // /healthz are served, "host:port" (core/metrics.h parse_bind_address);
    // empty: not served. The kubelet's read-only port, on loopback only.
    std::string metrics_bind_address = "127.0.0.1:10255";
    ApiServerConfig api_server;
};

struct ConfigResult {
    AgentConfig config;
    std::vector<std::string> errors;  // "<file>: <key path>: <reason>"; empty when valid
};

// Parses and validates a configuration document. An empty document is the
// defaults. Relative manifestDir / stateDir are resolved against `base_dir`
// (the configuration file's directory), so a configuration can travel with
// its manifests.
ConfigResult parse_agent_config(std::string_view text, const std::string& file, const std::string& base_dir);

// The import directory in force: image_import_dir, else <state_dir>/import.
std::string image_import_dir_of(const AgentConfig& c);

// The seccomp profile root in force: seccomp_profile_root, else <state_dir>/seccomp.
std::string seccomp_profile_root_of(const AgentConfig& c);

// Go's time.ParseDuration for the units a configuration needs (ns, us, ms,
// s, m, h; "1m30s", "1.5s"), in milliseconds, rounded down. "0" is zero.
Result<std::int64_t> parse_duration_ms(std::string_view s);

}  // namespace daemonlet
