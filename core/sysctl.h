// Which sysctls a pod may set, as the kubelet admits them (Kubernetes 1.28
// to 1.30). Pure: the agent passes in the kernel's release and its
// configuration's allowedUnsafeSysctls.
//
//   namespace         component-helpers/node/util/sysctl namespace.go
//                     NamespacedBy: kernel.sem, kernel.shm*, kernel.msg*,
//                     fs.mqueue.* are the IPC namespace's, net.* the
//                     network namespace's; anything else is node-wide.
//   normalize         ConvertSysctlVariableToDotsSeparator (NormalizeName):
//                     a name whose first separator is '/' has '.' and '/'
//                     swapped ("net/ipv4/ip_forward").
//   safe set          pkg/kubelet/sysctl/safe_sysctls.go
//                     SafeSysctlAllowlist: the sysctls every pod may set,
//                     some only from the kernel release that namespaced
//                     them (ip_local_reserved_ports 3.16, tcp_keepalive_*
//                     4.5, tcp_fin_timeout 4.6; 1.29's list). A release that
//                     does not parse keeps the unconditional ones only, as
//                     upstream drops them when getKernelVersion fails.
//   allowlist         pkg/kubelet/sysctl/allowlist.go NewAllowlist: the safe
//                     set plus allowedUnsafeSysctls, each a name or a
//                     pattern ending in '*' (a prefix); each must match
//                     policy validation's IsValidSysctlPattern and be
//                     namespaced, or the kubelet does not start (the
//                     agent's configuration is refused with its message).
//   validateSysctl    allowlist.go: allowed when listed (by name, else by a
//                     prefix), and not a net one with hostNetwork nor an
//                     IPC one with hostIPC.
//   admission         allowlist.go Admit: the first sysctl of the pod's
//                     securityContext refused rejects the pod, reason
//                     SysctlForbidden, message "forbidden sysctl: <why>".
//                     The kubelet runs this handler before the predicate
//                     one (kubelet.go NewMainKubelet's admitHandlers).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/model.h"
#include "core/pod.h"
#include "core/result.h"

namespace daemonlet {

// "ipc", "net", or "" (not namespaced).
std::string sysctl_namespace(const std::string& name);

// ConvertSysctlVariableToDotsSeparator.
std::string normalize_sysctl(std::string name);

// IsValidSysctlPattern: at most 253 characters matching
// ([a-z0-9]([-_a-z0-9]*[a-z0-9])?[./])*([a-z0-9][-_a-z0-9]*)?[a-z0-9*].
bool is_valid_sysctl_pattern(const std::string& pattern);

// SafeSysctlAllowlist for a kernel release as `uname -r` gives it.
std::vector<std::string> safe_sysctl_allowlist(const std::string& kernel_release);

struct SysctlAllowlist {
    std::map<std::string, std::string> sysctls;   // name -> namespace
    std::map<std::string, std::string> prefixes;  // pattern without its '*' -> namespace
};

// NewAllowlist; the error (code "invalid") is upstream's message.
Result<SysctlAllowlist> new_sysctl_allowlist(const std::vector<std::string>& patterns);

// The kubelet's allowlist: SafeSysctlAllowlist(kernel_release) followed by
// allowedUnsafeSysctls.
Result<SysctlAllowlist> kubelet_sysctl_allowlist(const std::string& kernel_release,
                                                 const std::vector<std::string>& allowed_unsafe);

// validateSysctl: why `name` is refused, else none.
std::optional<std::string> validate_sysctl(const SysctlAllowlist& allowlist, const std::string& name,
                                           bool host_network, bool host_ipc);

// The admit handler over a pod's securityContext.sysctls.
inline constexpr const char* kSysctlForbiddenReason = "SysctlForbidden";
std::optional<PodRejection> admit_sysctls(const SysctlAllowlist& allowlist, const PodSpec& spec);

}  // namespace daemonlet
