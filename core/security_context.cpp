// The effective security of a container: see security_context.h.
#include "core/security_context.h"

#include <algorithm>
#include <charconv>
#include <string_view>

#include "core/strings.h"
#include "core/sysctl.h"

namespace daemonlet {
namespace {

bool unmasked(const std::string& proc_mount) { return proc_mount == "Unmasked"; }

std::optional<std::int64_t> parse_int(std::string_view s) {
    std::int64_t v = 0;
    if (s.empty()) return std::nullopt;
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc() || p != s.data() + s.size()) return std::nullopt;
    return v;
}

std::optional<std::uint32_t> parse_id(std::string_view s) {
    auto v = parse_int(s);
    if (!v || *v < 0 || *v > 0xffffffffLL) return std::nullopt;
    return static_cast<std::uint32_t>(*v);
}

// The ':'-separated fields of each line of an /etc/passwd or /etc/group
// (comments and blank lines skipped), as runc's user.ParsePasswd.
std::vector<std::vector<std::string>> colon_lines(const std::string& text) {
    std::vector<std::vector<std::string>> out;
    std::size_t start = 0;
    while (start < text.size()) {
        std::size_t end = text.find('\n', start);
        if (end == std::string::npos) end = text.size();
        std::string line = trim(text.substr(start, end - start));
        start = end + 1;
        if (line.empty() || line.front() == '#') continue;
        std::vector<std::string> fields;
        std::size_t f = 0;
        while (true) {
            const std::size_t colon = line.find(':', f);
            fields.push_back(line.substr(f, colon == std::string::npos ? std::string::npos : colon - f));
            if (colon == std::string::npos) break;
            f = colon + 1;
        }
        out.push_back(std::move(fields));
    }
    return out;
}

std::vector<std::string> split_commas(const std::string& s) {
    std::vector<std::string> out;
    std::size_t start = 0;
    while (start <= s.size() && !s.empty()) {
        std::size_t end = s.find(',', start);
        if (end == std::string::npos) end = s.size();
        if (end > start) out.push_back(s.substr(start, end - start));
        start = end + 1;
    }
    return out;
}

}  // namespace

SecurityContext determine_effective_security_context(const PodSpec& pod, const Container& c) {
    SecurityContext effective;
    if (pod.security_context) {
        effective.run_as_user = pod.security_context->run_as_user;
        effective.run_as_group = pod.security_context->run_as_group;
        effective.run_as_non_root = pod.security_context->run_as_non_root;
    }
    if (!c.security_context) return effective;
    const SecurityContext& sc = *c.security_context;
    effective.capabilities_add = sc.capabilities_add;
    effective.capabilities_drop = sc.capabilities_drop;
    if (sc.privileged) effective.privileged = sc.privileged;
    if (sc.run_as_user) effective.run_as_user = sc.run_as_user;
    if (sc.run_as_group) effective.run_as_group = sc.run_as_group;
    if (sc.run_as_non_root) effective.run_as_non_root = sc.run_as_non_root;
    if (sc.read_only_root_filesystem) effective.read_only_root_filesystem = sc.read_only_root_filesystem;
    if (sc.allow_privilege_escalation) effective.allow_privilege_escalation = sc.allow_privilege_escalation;
    effective.proc_mount = sc.proc_mount;
    effective.seccomp_profile = sc.seccomp_profile;
    return effective;
}

std::optional<std::int64_t> fs_user_from(const PodSpec& pod) {
    std::optional<std::int64_t> user;
    bool first = true;
    for (const auto* list : {&pod.init_containers, &pod.containers})
        for (const auto& c : *list) {
            auto u = determine_effective_security_context(pod, c).run_as_user;
            if (!u || (!first && user != u)) return std::nullopt;
            user = u;
            first = false;
        }
    return user;
}

bool add_no_new_privileges(const SecurityContext& effective) {
    return effective.allow_privilege_escalation.has_value() && !*effective.allow_privilege_escalation;
}

SeccompProfile effective_seccomp_profile(const PodSpec& pod, const Container& c) {
    if (c.security_context && c.security_context->seccomp_profile)
        return *c.security_context->seccomp_profile;
    if (pod.security_context && pod.security_context->seccomp_profile)
        return *pod.security_context->seccomp_profile;
    return SeccompProfile{"Unconfined", ""};
}

std::vector<std::int64_t> pod_supplemental_groups(const PodSpec& pod) {
    std::vector<std::int64_t> groups;
    if (!pod.security_context) return groups;
    if (pod.security_context->fs_group) groups.push_back(*pod.security_context->fs_group);
    for (auto g : pod.security_context->supplemental_groups) groups.push_back(g);
    return groups;
}

std::vector<std::string> masked_paths(const std::string& proc_mount) {
    if (unmasked(proc_mount)) return {};
    return {"/proc/asound",
            "/proc/acpi",
            "/proc/kcore",
            "/proc/keys",
            "/proc/latency_stats",
            "/proc/timer_list",
            "/proc/timer_stats",
            "/proc/sched_debug",
            "/proc/scsi",
            "/sys/firmware",
            "/sys/devices/virtual/powercap"};
}

std::vector<std::string> readonly_paths(const std::string& proc_mount) {
    if (unmasked(proc_mount)) return {};
    return {"/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger"};
}

ImageUser image_user(const std::string& user) {
    ImageUser out;
    if (user.empty()) {
        out.uid = 0;
        return out;
    }
    const std::string name = user.substr(0, user.find(':'));
    if (auto uid = parse_int(name))
        out.uid = uid;
    else
        out.username = name;
    return out;
}

std::string format_pod(const std::string& name, const std::string& namespace_, const std::string& uid) {
    return name + "_" + namespace_ + "(" + uid + ")";
}

std::optional<std::string> verify_run_as_non_root(const PodSpec& spec, const Container& c,
                                                  const std::string& pod, const ImageUser& user) {
    const SecurityContext sc = determine_effective_security_context(spec, c);
    if (!sc.run_as_non_root || !*sc.run_as_non_root) return std::nullopt;
    const std::string where = "(pod: \"" + pod + "\", container: " + c.name + ")";
    if (sc.run_as_user) {
        if (*sc.run_as_user == 0) return "container's runAsUser breaks non-root policy " + where;
        return std::nullopt;
    }
    if (user.uid && *user.uid == 0) return "container has runAsNonRoot and image will run as root " + where;
    if (!user.uid && !user.username.empty())
        return "container has runAsNonRoot and image has non-numeric user (" + user.username +
               "), cannot verify user is non-root " + where;
    return std::nullopt;
}

std::optional<std::string> check_sysctls(const PodSpec& spec) {
    if (!spec.security_context) return std::nullopt;
    for (const auto& s : spec.security_context->sysctls) {
        const std::string name = normalize_sysctl(s.name);
        const std::string ns = sysctl_namespace(name);
        if (ns.empty()) return "\"" + name + "\" not allowlisted";
        if ((ns == "ipc" && spec.host_ipc) || (ns == "net" && spec.host_network))
            return "\"" + name + "\" not allowed with host " + ns + " enabled";
    }
    return std::nullopt;
}

Result<ResolvedUser> resolve_image_user(const std::string& user, const std::string& etc_passwd,
                                        const std::string& etc_group) {
    ResolvedUser out;
    const auto colon = user.find(':');
    const std::string user_part = user.substr(0, colon);
    const std::string group_part = colon == std::string::npos ? "" : user.substr(colon + 1);
    const auto passwd = colon_lines(etc_passwd);
    const auto groups = colon_lines(etc_group);
    // passwd: name:password:uid:gid:gecos:home:shell
    std::string username;
    bool found = false;
    const auto uid = parse_id(user_part);
    for (const auto& f : passwd) {
        if (f.size() < 4) continue;
        auto fuid = parse_id(f[2]);
        auto fgid = parse_id(f[3]);
        if (!fuid || !fgid) continue;
        if ((uid && *fuid == *uid) || (!uid && f[0] == user_part)) {
            out.uid = *fuid;
            out.gid = *fgid;
            username = f[0];
            found = true;
            break;
        }
    }
    if (!found) {
        if (!uid && !user_part.empty())
            return Error{ErrorCode::Invalid, "unable to find user " + user_part +
                                                 ": no matching entries in the image's /etc/passwd"};
        out.uid = uid.value_or(0);
        out.gid = 0;
    }
    // group: name:password:gid:member,member
    if (!group_part.empty()) {
        if (auto gid = parse_id(group_part)) {
            out.gid = *gid;
        } else {
            bool group_found = false;
            for (const auto& f : groups) {
                if (f.size() < 3 || f[0] != group_part) continue;
                if (auto fgid = parse_id(f[2])) {
                    out.gid = *fgid;
                    group_found = true;
                    break;
                }
            }
            if (!group_found)
                return Error{ErrorCode::Invalid, "unable to find group " + group_part +
                                                     ": no matching entries in the image's /etc/group"};
        }
    }
    // containerd's WithAdditionalGIDs (1.7, after CVE-2023-25173): the
    // primary group, then every other group listing the user.
    out.additional_gids.push_back(out.gid);
    if (!username.empty()) {
        for (const auto& f : groups) {
            if (f.size() < 4 || f[0] == username) continue;
            const auto members = split_commas(f[3]);
            if (std::find(members.begin(), members.end(), username) == members.end()) continue;
            auto gid = parse_id(f[2]);
            if (gid && std::find(out.additional_gids.begin(), out.additional_gids.end(), *gid) ==
                           out.additional_gids.end())
                out.additional_gids.push_back(*gid);
        }
    }
    return out;
}

}  // namespace daemonlet
