// The security a container runs with, from its pod's and its own
// securityContext, merged as the kubelet merges them. Pure; both runtimes
// (core/oci_spec.cpp for runc, core/cri_config.cpp for CRI) take the
// result.
//
// The rules, each from upstream (kubernetes 1.28 to 1.30):
//   merge            pkg/securitycontext/util.go
//                    DetermineEffectiveSecurityContext: the pod's runAsUser,
//                    runAsGroup, runAsNonRoot, each replaced by the
//                    container's when it sets it; everything else is the
//                    container's.
//   groups           kuberuntime/security_context.go
//                    determineEffectiveSecurityContext: fsGroup, then
//                    supplementalGroups, as supplementary groups.
//   no_new_privs     pkg/securitycontext AddNoNewPrivileges: set only when
//                    allowPrivilegeEscalation is explicitly false (the API
//                    server refuses false with privileged or CAP_SYS_ADMIN).
//   masked paths     pkg/securitycontext ConvertToRuntimeMaskedPaths /
//                    ConvertToRuntimeReadonlyPaths: the default lists,
//                    none for procMount Unmasked.
//   seccomp          kuberuntime/helpers.go getSeccompProfile: the
//                    container's profile, else the pod's, else Unconfined
//                    (the kubelet's SeccompDefault is off by default);
//                    Localhost is <seccompProfileRoot>/<localhostProfile>.
//   runAsNonRoot     kuberuntime/security_context_others.go
//                    verifyRunAsNonRoot, with its messages.
//   sysctls          pkg/kubelet/sysctl allowlist.go validateSysctl and
//                    component-helpers/node/util/sysctl namespace.go: only
//                    namespaced sysctls (net.*, kernel.shm*, kernel.msg*,
//                    kernel.sem, fs.mqueue.*), and none of a namespace the
//                    pod shares with the host. The pod was admitted against
//                    the kubelet's allowlist before (core/sysctl.h); this is
//                    the runtimes' last check when a container is made.
//   image user       containerd's ImageStatus / kuberuntime getImageUser:
//                    "uid[:gid]" numeric is a uid, anything else a name;
//                    no user is root. A name resolves through the image's
//                    /etc/passwd and /etc/group (runc's user.GetExecUser).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/model.h"
#include "core/result.h"

namespace daemonlet {

// DetermineEffectiveSecurityContext (never null: an empty one when neither is set).
SecurityContext determine_effective_security_context(const PodSpec& pod, const Container& c);

// AddNoNewPrivileges.
bool add_no_new_privileges(const SecurityContext& effective);

// The effective seccomp profile: container's, pod's, else {"Unconfined"}.
SeccompProfile effective_seccomp_profile(const PodSpec& pod, const Container& c);

// volume/util FsUserFrom: the runAsUser every init and app container runs
// as (its own or the pod's), when they all name the same one; nullopt when
// one names none or two differ. The kube-api-access token is then that
// user's, mode 0600 (core/volume_payload.h).
std::optional<std::int64_t> fs_user_from(const PodSpec& pod);

// fsGroup then supplementalGroups of the pod.
std::vector<std::int64_t> pod_supplemental_groups(const PodSpec& pod);

// The default masked and read-only /proc and /sys paths (containerd's, the
// kubelet's securitycontext.DefaultProcMount lists); empty for Unmasked.
std::vector<std::string> masked_paths(const std::string& proc_mount);
std::vector<std::string> readonly_paths(const std::string& proc_mount);

// The image's User as containerd's ImageStatus reports it: a numeric uid
// (the part before ':'), else a user name; none at all is uid 0.
struct ImageUser {
    std::optional<std::int64_t> uid;
    std::string username;
};
ImageUser image_user(const std::string& user);

// verifyRunAsNonRoot: the kubelet's error message when the container must
// not run as root and would (or cannot be shown not to), else none. `pod`
// is format.Pod's "<name>_<namespace>(<uid>)".
std::optional<std::string> verify_run_as_non_root(const PodSpec& spec, const Container& c,
                                                  const std::string& pod, const ImageUser& user);

// validateSysctl over the pod's sysctls: the first error, as the kubelet
// says it ("\"vm.x\" not allowlisted", "\"net.x\" not allowed with host
// net enabled"), else none.
std::optional<std::string> check_sysctls(const PodSpec& spec);

// The process's user from the image's User and its /etc/passwd and
// /etc/group contents (empty when the file is absent), as runc's
// GetExecUser: "name", "uid", "name:group", "uid:gid", names looked up,
// numbers taken as they are; the group defaults to the user's passwd
// entry's (0 for a uid without one). additional_gids: the groups that
// list the user by name (containerd's WithAdditionalGIDs). Errors (code
// "invalid") say which name is missing from which file.
struct ResolvedUser {
    std::uint32_t uid = 0;
    std::uint32_t gid = 0;
    std::vector<std::uint32_t> additional_gids;
    bool operator==(const ResolvedUser&) const = default;
};
Result<ResolvedUser> resolve_image_user(const std::string& user, const std::string& etc_passwd,
                                        const std::string& etc_group);

// "<name>_<namespace>(<uid>)" (pkg/kubelet/util/format Pod).
std::string format_pod(const std::string& name, const std::string& namespace_, const std::string& uid);

}  // namespace daemonlet
