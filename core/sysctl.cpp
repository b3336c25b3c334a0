// Which sysctls a pod may set: see sysctl.h.
#include "core/sysctl.h"

#include <cctype>
#include <cstdint>

#include "core/strings.h"

namespace daemonlet {
namespace {

constexpr std::size_t kSysctlMaxLength = 253;  // apivalidation.SysctlMaxLength
constexpr const char* kSysctlPatternFmt =      // policyvalidation.SysctlContainSlashPatternFmt
    "([a-z0-9]([-_a-z0-9]*[a-z0-9])?[\\./])*([a-z0-9][-_a-z0-9]*)?[a-z0-9*]";

bool lower_alnum(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }
bool inner(char c) { return lower_alnum(c) || c == '-' || c == '_'; }

// SysctlSegmentFmt: [a-z0-9]([-_a-z0-9]*[a-z0-9])?
bool segment(const std::string& s) {
    if (s.empty() || !lower_alnum(s.front()) || !lower_alnum(s.back())) return false;
    for (char c : s)
        if (!inner(c)) return false;
    return true;
}

// sysctlPatternSegmentFmt: ([a-z0-9][-_a-z0-9]*)?[a-z0-9*]
bool last_segment(const std::string& s) {
    if (s.empty()) return false;
    const char end = s.back();
    if (!lower_alnum(end) && end != '*') return false;
    if (s.size() == 1) return true;
    if (!lower_alnum(s.front())) return false;
    for (std::size_t i = 1; i + 1 < s.size(); ++i)
        if (!inner(s[i])) return false;
    return true;
}

struct KernelVersion {
    std::int64_t major = 0, minor = 0;  // 0.0: any kernel
};

// version.ParseGeneric's numbers: "5.10.0-28-amd64" -> {5, 10, 0}; none
// when fewer than two components lead the string.
std::optional<std::vector<std::int64_t>> parse_generic_version(const std::string& text) {
    std::size_t i = 0;
    while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i]))) ++i;
    if (i < text.size() && text[i] == 'v') ++i;
    std::vector<std::int64_t> parts;
    for (;;) {
        const std::size_t start = i;
        std::int64_t n = 0;
        while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i])) && n < 1'000'000'000)
            n = n * 10 + (text[i++] - '0');
        if (i == start) break;
        parts.push_back(n);
        if (i + 1 < text.size() && text[i] == '.' && std::isdigit(static_cast<unsigned char>(text[i + 1])))
            ++i;
        else
            break;
    }
    if (parts.size() < 2) return std::nullopt;
    return parts;
}

// Version.AtLeast(MustParseGeneric("X.Y")): the components after the
// first two only matter against a "X.Y.0" that has none, so they do not.
bool at_least(const std::vector<std::int64_t>& have, KernelVersion want) {
    if (have[0] != want.major) return have[0] > want.major;
    return have[1] >= want.minor;
}

struct SafeSysctl {
    const char* name;
    KernelVersion kernel;  // the release that namespaced it
};

// safe_sysctls.go safeSysctls (1.29 and 1.30), with pkg/util/kernel's
// *NamespacedKernelVersion constants.
constexpr SafeSysctl kSafeSysctls[] = {
    {"kernel.shm_rmid_forced", {}},
    {"net.ipv4.ip_local_port_range", {}},
    {"net.ipv4.tcp_syncookies", {}},
    {"net.ipv4.ping_group_range", {}},
    {"net.ipv4.ip_unprivileged_port_start", {}},
    {"net.ipv4.ip_local_reserved_ports", {3, 16}},
    {"net.ipv4.tcp_keepalive_time", {4, 5}},
    {"net.ipv4.tcp_fin_timeout", {4, 6}},
    {"net.ipv4.tcp_keepalive_intvl", {4, 5}},
    {"net.ipv4.tcp_keepalive_probes", {4, 5}},
};

}  // namespace

std::string sysctl_namespace(const std::string& name) {
    if (name == "kernel.sem") return "ipc";
    for (const char* prefix : {"kernel.shm", "kernel.msg", "fs.mqueue."})
        if (name.rfind(prefix, 0) == 0) return "ipc";
    if (name.rfind("net.", 0) == 0) return "net";
    return "";
}

std::string normalize_sysctl(std::string name) {
    const auto first = name.find_first_of("./");
    if (first == std::string::npos || name[first] != '/') return name;
    for (char& ch : name) ch = ch == '/' ? '.' : ch == '.' ? '/' : ch;
    return name;
}

bool is_valid_sysctl_pattern(const std::string& pattern) {
    if (pattern.size() > kSysctlMaxLength) return false;
    std::size_t start = 0;
    for (;;) {
        const std::size_t sep = pattern.find_first_of("./", start);
        if (sep == std::string::npos) return last_segment(pattern.substr(start));
        if (!segment(pattern.substr(start, sep - start))) return false;
        start = sep + 1;
    }
}

std::vector<std::string> safe_sysctl_allowlist(const std::string& kernel_release) {
    const auto version = parse_generic_version(kernel_release);
    std::vector<std::string> out;
    for (const auto& s : kSafeSysctls)
        if (s.kernel.major == 0 || (version && at_least(*version, s.kernel))) out.push_back(s.name);
    return out;
}

Result<SysctlAllowlist> new_sysctl_allowlist(const std::vector<std::string>& patterns) {
    SysctlAllowlist w;
    for (const auto& pattern : patterns) {
        if (!is_valid_sysctl_pattern(pattern))
            return Error{ErrorCode::Invalid, "sysctl " + go_quote(pattern) + " must have at most " +
                                                 std::to_string(kSysctlMaxLength) +
                                                 " characters and match regex " + kSysctlPatternFmt};
        const std::string s = normalize_sysctl(pattern);
        if (s.back() == '*') {
            const std::string prefix = s.substr(0, s.size() - 1);
            const std::string ns = sysctl_namespace(prefix);
            if (ns.empty())
                return Error{ErrorCode::Invalid,
                             "the sysctls " + go_quote(s) + " are not known to be namespaced"};
            w.prefixes[prefix] = ns;
        } else {
            const std::string ns = sysctl_namespace(s);
            if (ns.empty())
                return Error{ErrorCode::Invalid,
                             "the sysctl " + go_quote(s) + " are not known to be namespaced"};
            w.sysctls[s] = ns;
        }
    }
    return w;
}

Result<SysctlAllowlist> kubelet_sysctl_allowlist(const std::string& kernel_release,
                                                 const std::vector<std::string>& allowed_unsafe) {
    std::vector<std::string> all = safe_sysctl_allowlist(kernel_release);
    all.insert(all.end(), allowed_unsafe.begin(), allowed_unsafe.end());
    return new_sysctl_allowlist(all);
}

std::optional<std::string> validate_sysctl(const SysctlAllowlist& allowlist, const std::string& name,
                                           bool host_network, bool host_ipc) {
    const std::string sysctl = normalize_sysctl(name);
    auto refused = [&](const std::string& ns) -> std::optional<std::string> {
        if ((ns == "ipc" && host_ipc) || (ns == "net" && host_network))
            return go_quote(sysctl) + " not allowed with host " + ns + " enabled";
        return std::nullopt;
    };
    if (auto it = allowlist.sysctls.find(sysctl); it != allowlist.sysctls.end()) return refused(it->second);
    for (const auto& [prefix, ns] : allowlist.prefixes)
        if (sysctl.rfind(prefix, 0) == 0) return refused(ns);
    return go_quote(sysctl) + " not allowlisted";
}

std::optional<PodRejection> admit_sysctls(const SysctlAllowlist& allowlist, const PodSpec& spec) {
    if (!spec.security_context) return std::nullopt;
    for (const auto& s : spec.security_context->sysctls)
        if (auto why = validate_sysctl(allowlist, s.name, spec.host_network, spec.host_ipc))
            return PodRejection{kSysctlForbiddenReason, "forbidden sysctl: " + *why};
    return std::nullopt;
}

}  // namespace daemonlet
