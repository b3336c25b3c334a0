// What build_oci_spec needs of the node and the image for a container's
// security, read on the host: the image's /etc/passwd and /etc/group from
// its rootfs (never through a symbolic link, which would resolve on the
// host), the seccomp profile the effective seccompProfile names
// (RuntimeDefault: kRuntimeDefaultSeccompProfile; Localhost:
// <seccomp_root>/<localhostProfile>; a profile that cannot be read is
// error code "container_config"), and for a privileged container the
// host's device nodes (containerd's oci.HostDevices).
#pragma once

#include <string>
#include <vector>

#include "core/oci_spec.h"
#include "core/result.h"
#include "platform/runtime.h"

namespace daemonlet::platform {

// The agent's settings for runc pods (config seccompProfileRoot,
// clusterDNS, clusterDomain).
struct RuncPodSettings {
    std::string seccomp_profile_root;
    std::vector<std::string> cluster_dns;
    std::string cluster_domain = "cluster.local";
};

// The pod's /etc/hosts, /etc/hostname and /etc/resolv.conf (core/pod_dns.h,
// from the node's /etc/hosts, /etc/resolv.conf and host name) written into
// <pod_dir>/etc, each by a rename, and named in in.etc_files.
Status write_pod_etc_files(const RuncPodSettings& settings, const ContainerLaunch& launch,
                           const std::string& pod_dir, OciSpecInput& in);

Status read_security_inputs(const std::string& seccomp_root, const ContainerLaunch& launch,
                            const std::string& rootfs, OciSpecInput& in);

}  // namespace daemonlet::platform
