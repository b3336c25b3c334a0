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

#include "core/oci_spec.h"
#include "core/result.h"
#include "platform/runtime.h"

namespace daemonlet::platform {

Status read_security_inputs(const std::string& seccomp_root, const ContainerLaunch& launch,
                            const std::string& rootfs, OciSpecInput& in);

}  // namespace daemonlet::platform
