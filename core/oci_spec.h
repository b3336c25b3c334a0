// The OCI runtime-spec bundle configuration (config.json) of one container,
// as runc takes it (opencontainers/runtime-spec v1.0.2; Debian 12's runc
// 1.1.5 reports "spec: 1.0.2-dev"), built from the pod's container spec and
// the image config the way the kubelet and containerd's CRI plugin build it.
// Pure: the caller resolves volumes to host directories, the environment
// (downward API, $(VAR) expansion: agent container_env) and the cgroup path.
//
// The rules, each from upstream:
//   process.args   containerd pkg/cri/opts/spec.go WithProcessArgs: command
//                  replaces the image's Entrypoint and drops its Cmd; args
//                  replace Cmd; neither gives Entrypoint + Cmd; an Entrypoint
//                  of [""] counts as none; nothing at all is an error.
//   process.env    containerd oci.WithDefaultSpec's PATH, then HOSTNAME, then the
//                  image's Env, then the container's env; a later entry of the
//                  same name replaces the earlier one in place
//                  (oci.WithEnv / replaceOrAppendEnvValues).
//   process.cwd    workingDir, else the image's WorkingDir, else "/"
//                  (containerd pkg/cri/server container_create_linux.go).
//   security       the pod's and the container's securityContext merged
//                  (core/security_context.h: DetermineEffectiveSecurityContext,
//                  verifyRunAsNonRoot, AddNoNewPrivileges, masked paths by
//                  procMount, the pod's namespaced sysctls as linux.sysctl,
//                  seccomp from the profile the caller read; none when
//                  privileged, as containerd's CRI plugin).
//   process.user   as the kubelet and containerd's CRI make it: the user
//                  string is runAsUser (else the image's uid, when its User
//                  is numeric, else the image's user name) with
//                  ":runAsGroup" when set, resolved in the image's
//                  /etc/passwd and /etc/group (security_context.h
//                  resolve_image_user; oci.WithUser, WithAdditionalGIDs),
//                  then fsGroup and supplementalGroups appended
//                  (WithSupplementalGroups).
//   capabilities   containerd oci/spec.go defaultUnixCaps, then
//                  securityContext.capabilities add / drop ("ALL" allowed;
//                  pkg/cri/opts/spec_linux.go WithCapabilities); privileged
//                  and add ALL: the capabilities the agent itself has
//                  (oci.WithAllCurrentCapabilities, containerd 1.7: a
//                  capability outside runc's own bounding set makes the
//                  start fail with "unable to apply caps").
//   mounts         containerd oci/mounts.go defaultMounts (proc, /dev tmpfs,
//                  devpts, /dev/shm, mqueue, sysfs ro, /run tmpfs), then the
//                  volume mounts as rbind with the propagation of
//                  mountPropagation (pkg/cri/opts/spec_linux.go WithMounts);
//                  privileged: /sys read-write.
//   masked / readonly paths   containerd oci/spec.go populateDefaultUnixSpec;
//                  none when privileged (CRI's WithoutDefaultSecuritySettings).
//   namespaces     pid, ipc, uts, mount, network; hostNetwork drops network
//                  and uts (and no hostname is set), hostPID drops pid,
//                  hostIPC drops ipc (pkg/cri/server/sandbox_run_linux.go).
//   resources      limits.memory -> memory.limit (bytes); limits.cpu ->
//                  cpu.quota / cpu.period, the kubelet's milliCPUToQuota
//                  (period 100000 us, quota at least 1000 us); requests.cpu
//                  (else limits.cpu) -> cpu.shares, MilliCPUToShares (2 ..
//                  262144). Devices: deny all but runc's defaults, unless
//                  privileged: then every device node of the host's /dev
//                  (host_devices; containerd's WithDevices(HostDevices()))
//                  and all allowed.
//   oomScoreAdj    process.oomScoreAdj as given (core/qos.h
//                  container_oom_score_adj, restricted by the caller where
//                  the machine refuses a negative one: runc 1.1.5 then
//                  fails the start).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/json.h"
#include "core/model.h"
#include "core/oci_image.h"
#include "core/result.h"

namespace daemonlet {

inline constexpr std::string_view kOciSpecVersion = "1.0.2";
// containerd oci/spec.go defaultUnixEnv.
inline constexpr std::string_view kDefaultPathEnv =
    "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
// The kubelet's cm.QuotaPeriod and cm.MinQuotaPeriod (microseconds).
inline constexpr std::int64_t kCpuQuotaPeriod = 100000;
inline constexpr std::int64_t kMinCpuQuota = 1000;

struct OciSpecInput {
    const Container* container = nullptr;  // required
    const PodSpec* pod = nullptr;          // its pod's spec; none: a pod without securityContext
    std::string pod_display;               // format_pod's "<name>_<namespace>(<uid>)", for errors
    ImageConfig image;
    bool host_network = false;
    bool host_pid = false;
    bool host_ipc = false;
    // The container's environment, resolved (downward API, $(VAR)), in order.
    std::vector<std::pair<std::string, std::string>> env;
    // Volume name -> the host directory or file mounted for it: hostPath's
    // path, the directory the caller made for an emptyDir.
    std::map<std::string, std::string> volume_host_paths;
    std::string rootfs;        // root.path: absolute, or relative to the bundle
    std::string hostname;      // the pod's hostname; unused with hostNetwork
    std::string cgroups_path;  // linux.cgroupsPath; empty: runc chooses
    // The agent's effective capabilities (platform current_capabilities),
    // given to a privileged container; empty: all_capabilities().
    std::vector<std::string> current_capabilities;
    // The image's /etc/passwd and /etc/group (empty when absent): a user
    // name resolves through them.
    std::string etc_passwd, etc_group;
    // The seccomp profile's text when the effective profile is
    // RuntimeDefault or Localhost (effective_seccomp_profile), read by the
    // caller; seccomp_source names the file; seccomp_arch is
    // seccomp_arch(the machine).
    std::optional<std::string> seccomp_profile;
    std::string seccomp_source, seccomp_arch;
    // linux.devices entries for a privileged container: the host's device
    // nodes ({path, type, major, minor, fileMode, uid, gid}).
    Json host_devices = Json::array();
    // /etc/hosts, /etc/hostname, /etc/resolv.conf -> the pod's file on the
    // host (core/pod_dns.h), bind-mounted (read-only with a read-only
    // root, as containerd's CRI plugin mounts its own); a volumeMount at
    // the same path wins.
    std::map<std::string, std::string> etc_files;
    // process.oomScoreAdj (core/qos.h, as the agent computed it); none: not set.
    std::optional<int> oom_score_adj;
};

// config.json for `in`. Errors (code "invalid") name the container and the
// field: no command at all, a volume mount of a volume without a host path,
// a subPath leaving its volume, a malformed capability or seccomp profile.
// Errors (code "container_config", the kubelet's
// CreateContainerConfigError) with the kubelet's message: runAsNonRoot
// refused, a sysctl refused, a user or group not in the image.
Result<Json> build_oci_spec(const OciSpecInput& in);

// The host path mounted for c.volume_mounts[i]: its volume's host path
// (volume_host_paths), joined with its subPath. Errors (code "invalid")
// name the container and field: a volume without a host path, a relative
// mountPath, a subPath leaving the volume (absolute or with a ".."
// component; kubelet_pods.go makeMounts).
Result<std::string> volume_mount_source(const Container& c, std::size_t i,
                                        const std::map<std::string, std::string>& volume_host_paths);

// The kubelet's milliCPUToQuota (pkg/kubelet/cm/helpers_linux.go): 0 for
// 0 (no limit), else milli * period / 1000, at least kMinCpuQuota.
std::int64_t milli_cpu_to_quota(std::int64_t milli_cpu, std::int64_t period);

// The kubelet's MilliCPUToShares: milli * 1024 / 1000 within [2, 262144];
// 2 for 0.
std::uint64_t milli_cpu_to_shares(std::int64_t milli_cpu);

// containerd's defaultUnixCaps, in its order.
std::vector<std::string> default_capabilities();

// Every capability Linux 6.x knows (CAP_CHOWN .. CAP_CHECKPOINT_RESTORE),
// in number order: bit i of a capability mask is all_capabilities()[i].
std::vector<std::string> all_capabilities();

}  // namespace daemonlet
