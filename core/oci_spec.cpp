// config.json of a container: see oci_spec.h for the upstream rules.
#include "core/oci_spec.h"

#include <algorithm>
#include <cassert>
#include <cctype>
#include <charconv>
#include <limits>

#include "core/seccomp.h"
#include "core/security_context.h"

namespace daemonlet {
namespace {

Error invalid(const Container& c, const std::string& field, const std::string& reason) {
    return Error{ErrorCode::Invalid, "container \"" + c.name + "\": " + field + ": " + reason};
}

// containerd oci/spec.go replaceOrAppendEnvValues: an entry whose name is
// already there replaces it in place; a new name is appended.
void set_env(std::vector<std::string>& env, const std::string& entry) {
    const std::string name = entry.substr(0, entry.find('='));
    for (auto& e : env) {
        if (e.substr(0, e.find('=')) == name) {
            e = entry;
            return;
        }
    }
    env.push_back(entry);
}

// containerd pkg/cri/opts/spec.go WithProcessArgs (from moby's daemon/commit.go).
Result<std::vector<std::string>> process_args(const Container& c, const ImageConfig& image) {
    std::vector<std::string> command = c.command;
    std::vector<std::string> args = c.args;
    if (command.empty()) {
        if (args.empty()) args = image.cmd;
        if (!(image.entrypoint.size() == 1 && image.entrypoint[0].empty())) command = image.entrypoint;
    }
    if (command.empty() && args.empty())
        return invalid(c, "command", "no command specified: neither the container nor its image gives one");
    command.insert(command.end(), args.begin(), args.end());
    return command;
}

// The user string containerd's CRI plugin is given (kubelet
// determineEffectiveSecurityContext, containerd generateUserString), then
// resolved in the image's files, with the pod's groups appended.
Result<Json> process_user(const OciSpecInput& in, const SecurityContext& sc, const PodSpec& pod) {
    const Container& c = *in.container;
    std::string user;
    if (sc.run_as_user) {
        user = std::to_string(*sc.run_as_user);
    } else {
        const ImageUser image = image_user(in.image.user);
        user = image.uid ? std::to_string(*image.uid) : image.username;
    }
    if (sc.run_as_group) user += ":" + std::to_string(*sc.run_as_group);
    auto resolved = resolve_image_user(user, in.etc_passwd, in.etc_group);
    if (!resolved)
        return Error{ErrorCode::ContainerConfig,
                     "container \"" + c.name + "\": user \"" + user + "\": " + resolved.error().message};
    Json additional = Json::array();
    for (auto g : resolved.value().additional_gids) additional.push_back(g);
    for (auto g : pod_supplemental_groups(pod))
        additional.push_back(static_cast<std::uint32_t>(std::clamp<std::int64_t>(g, 0, 0xffffffffLL)));
    Json out{{"uid", resolved.value().uid}, {"gid", resolved.value().gid}};
    if (!additional.empty()) out["additionalGids"] = std::move(additional);
    return out;
}

// "NET_ADMIN" or "CAP_NET_ADMIN" -> "CAP_NET_ADMIN", if Linux knows it.
std::optional<std::string> capability_name(std::string name) {
    std::transform(name.begin(), name.end(), name.begin(),
                   [](unsigned char ch) { return static_cast<char>(std::toupper(ch)); });
    if (name.rfind("CAP_", 0) != 0) name = "CAP_" + name;
    const auto all = all_capabilities();
    if (std::find(all.begin(), all.end(), name) == all.end()) return std::nullopt;
    return name;
}

// containerd pkg/cri/opts/spec_linux.go WithCapabilities: add ALL, drop
// ALL, then the named adds, then the named drops.
Result<std::vector<std::string>> capabilities(const OciSpecInput& in, const SecurityContext& sc,
                                              bool privileged) {
    const Container& c = *in.container;
    const std::vector<std::string> every =
        in.current_capabilities.empty() ? all_capabilities() : in.current_capabilities;
    if (privileged) return every;
    std::vector<std::string> caps = default_capabilities();
    const auto& add = sc.capabilities_add;
    const auto& drop = sc.capabilities_drop;
    auto has_all = [](const std::vector<std::string>& v) {
        return std::any_of(v.begin(), v.end(), [](const std::string& s) { return s == "ALL" || s == "all"; });
    };
    if (has_all(add)) caps = every;
    if (has_all(drop)) caps.clear();
    // The named entries of `list` as CAP_ names, "ALL" left out.
    auto named = [&](const std::vector<std::string>& list,
                     const char* field) -> Result<std::vector<std::string>> {
        std::vector<std::string> out;
        for (std::size_t i = 0; i < list.size(); ++i) {
            if (list[i] == "ALL" || list[i] == "all") continue;
            auto name = capability_name(list[i]);
            if (!name)
                return invalid(
                    c, std::string("securityContext.capabilities.") + field + "[" + std::to_string(i) + "]",
                    "unknown capability \"" + list[i] + "\"");
            out.push_back(*name);
        }
        return out;
    };
    auto added = named(add, "add");
    if (!added) return added.error();
    auto dropped = named(drop, "drop");
    if (!dropped) return dropped.error();
    for (const auto& name : added.value())
        if (std::find(caps.begin(), caps.end(), name) == caps.end()) caps.push_back(name);
    for (const auto& name : dropped.value())
        caps.erase(std::remove(caps.begin(), caps.end(), name), caps.end());
    return caps;
}

Json mount(std::string destination, std::string type, std::string source, std::vector<std::string> options) {
    return Json{{"destination", std::move(destination)},
                {"type", std::move(type)},
                {"source", std::move(source)},
                {"options", std::move(options)}};
}

// containerd oci/mounts.go defaultMounts.
Json default_mounts(bool privileged) {
    Json m = Json::array();
    m.push_back(mount("/proc", "proc", "proc", {"nosuid", "noexec", "nodev"}));
    m.push_back(mount("/dev", "tmpfs", "tmpfs", {"nosuid", "strictatime", "mode=755", "size=65536k"}));
    m.push_back(mount("/dev/pts", "devpts", "devpts",
                      {"nosuid", "noexec", "newinstance", "ptmxmode=0666", "mode=0620", "gid=5"}));
    m.push_back(mount("/dev/shm", "tmpfs", "shm", {"nosuid", "noexec", "nodev", "mode=1777", "size=65536k"}));
    m.push_back(mount("/dev/mqueue", "mqueue", "mqueue", {"nosuid", "noexec", "nodev"}));
    // CRI clears "ro" of sysfs for a privileged container (WithMounts).
    m.push_back(mount("/sys", "sysfs", "sysfs", {"nosuid", "noexec", "nodev", privileged ? "rw" : "ro"}));
    m.push_back(mount("/run", "tmpfs", "tmpfs", {"nosuid", "strictatime", "mode=755", "size=65536k"}));
    return m;
}

bool leaves_volume(const std::string& sub_path) {
    if (sub_path.empty()) return false;
    if (sub_path.front() == '/') return true;
    std::size_t start = 0;
    while (start <= sub_path.size()) {
        const auto end = std::min(sub_path.find('/', start), sub_path.size());
        if (sub_path.compare(start, end - start, "..") == 0 && end - start == 2) return true;
        start = end + 1;
    }
    return false;
}

std::size_t depth(const std::string& path) {
    return static_cast<std::size_t>(std::count(path.begin(), path.end(), '/'));
}

// The volume mounts (containerd pkg/cri/opts/spec_linux.go WithMounts):
// rbind, the propagation mountPropagation asks, ro or rw; a default mount
// at the same destination is dropped; shallower destinations first
// (orderedMounts), so a mount inside another lands on top of it.
Status add_volume_mounts(const OciSpecInput& in, Json& mounts) {
    const Container& c = *in.container;
    std::vector<Json> volumes;
    for (std::size_t i = 0; i < c.volume_mounts.size(); ++i) {
        const VolumeMount& vm = c.volume_mounts[i];
        auto host = volume_mount_source(c, i, in.volume_host_paths);
        if (!host) return host.error();
        const std::string& source = host.value();
        const std::string propagation = vm.mount_propagation == "Bidirectional"     ? "rshared"
                                        : vm.mount_propagation == "HostToContainer" ? "rslave"
                                                                                    : "rprivate";
        volumes.push_back(
            mount(vm.mount_path, "bind", source, {"rbind", propagation, vm.read_only ? "ro" : "rw"}));
    }
    std::stable_sort(volumes.begin(), volumes.end(), [](const Json& a, const Json& b) {
        return depth(a["destination"].get<std::string>()) < depth(b["destination"].get<std::string>());
    });
    Json kept = Json::array();
    for (auto& m : mounts) {
        const bool replaced = std::any_of(volumes.begin(), volumes.end(), [&](const Json& v) {
            return v["destination"] == m["destination"];
        });
        if (!replaced) kept.push_back(std::move(m));
    }
    for (auto& v : volumes) kept.push_back(std::move(v));
    mounts = std::move(kept);
    return Ok{};
}

Json linux_resources(const Container& c, bool privileged) {
    Json r = Json::object();
    r["devices"] = Json::array({Json{{"allow", privileged}, {"access", "rwm"}}});
    const auto& limits = c.resources.limits;
    const auto& requests = c.resources.requests;
    if (auto m = limits.find("memory"); m != limits.end() && m->second.value() > 0)
        r["memory"] = Json{{"limit", m->second.value()}};
    // The kubelet sets shares from the request always (2 when none;
    // kuberuntime_container_linux.go generateLinuxContainerResources), and
    // API defaulting copies a limit into an absent request (core/v1
    // defaults.go SetDefaults_ResourceList).
    std::int64_t cpu_request = 0;
    if (auto q = requests.find("cpu"); q != requests.end())
        cpu_request = q->second.milli;
    else if (auto l = limits.find("cpu"); l != limits.end())
        cpu_request = l->second.milli;
    Json cpu = Json::object();
    cpu["shares"] = milli_cpu_to_shares(cpu_request);
    if (auto l = limits.find("cpu"); l != limits.end() && l->second.milli > 0) {
        cpu["quota"] = milli_cpu_to_quota(l->second.milli, kCpuQuotaPeriod);
        cpu["period"] = kCpuQuotaPeriod;
    }
    r["cpu"] = std::move(cpu);
    return r;
}

Json namespaces(const OciSpecInput& in) {
    Json ns = Json::array();
    if (!in.host_pid) ns.push_back(Json{{"type", "pid"}});
    if (!in.host_ipc) ns.push_back(Json{{"type", "ipc"}});
    if (!in.host_network) ns.push_back(Json{{"type", "uts"}});
    ns.push_back(Json{{"type", "mount"}});
    if (!in.host_network) ns.push_back(Json{{"type", "network"}});
    return ns;
}

}  // namespace

Result<std::string> volume_mount_source(const Container& c, std::size_t i,
                                        const std::map<std::string, std::string>& volume_host_paths) {
    const VolumeMount& vm = c.volume_mounts[i];
    const std::string field = "volumeMounts[" + std::to_string(i) + "]";
    auto host = volume_host_paths.find(vm.name);
    if (host == volume_host_paths.end() || host->second.empty())
        return invalid(c, field + ".name", "volume \"" + vm.name + "\" has no host path on this node");
    if (vm.mount_path.empty() || vm.mount_path.front() != '/')
        return invalid(c, field + ".mountPath", "\"" + vm.mount_path + "\" is not an absolute path");
    if (leaves_volume(vm.sub_path))
        return invalid(c, field + ".subPath", "\"" + vm.sub_path + "\" leaves the volume");
    return vm.sub_path.empty() ? host->second : host->second + "/" + vm.sub_path;
}

std::int64_t milli_cpu_to_quota(std::int64_t milli_cpu, std::int64_t period) {
    if (milli_cpu <= 0) return 0;
    const std::int64_t quota = milli_cpu > std::numeric_limits<std::int64_t>::max() / period
                                   ? std::numeric_limits<std::int64_t>::max() / 1000
                                   : milli_cpu * period / 1000;
    return std::max(quota, kMinCpuQuota);
}

std::uint64_t milli_cpu_to_shares(std::int64_t milli_cpu) {
    constexpr std::int64_t kMinShares = 2, kMaxShares = 262144;
    if (milli_cpu <= 0) return kMinShares;
    const std::int64_t shares = milli_cpu >= kMaxShares * 1000 / 1024 ? kMaxShares : milli_cpu * 1024 / 1000;
    return static_cast<std::uint64_t>(std::clamp(shares, kMinShares, kMaxShares));
}

std::vector<std::string> default_capabilities() {
    // A function-local array of literals: nothing allocated that outlives the call.
    static constexpr const char* kCaps[] = {
        "CAP_CHOWN",   "CAP_DAC_OVERRIDE", "CAP_FSETID",           "CAP_FOWNER",
        "CAP_MKNOD",   "CAP_NET_RAW",      "CAP_SETGID",           "CAP_SETUID",
        "CAP_SETFCAP", "CAP_SETPCAP",      "CAP_NET_BIND_SERVICE", "CAP_SYS_CHROOT",
        "CAP_KILL",    "CAP_AUDIT_WRITE",
    };
    return {std::begin(kCaps), std::end(kCaps)};
}

std::vector<std::string> all_capabilities() {
    // linux/capability.h, in number order (0 .. 40).
    static constexpr const char* kCaps[] = {
        "CAP_CHOWN",
        "CAP_DAC_OVERRIDE",
        "CAP_DAC_READ_SEARCH",
        "CAP_FOWNER",
        "CAP_FSETID",
        "CAP_KILL",
        "CAP_SETGID",
        "CAP_SETUID",
        "CAP_SETPCAP",
        "CAP_LINUX_IMMUTABLE",
        "CAP_NET_BIND_SERVICE",
        "CAP_NET_BROADCAST",
        "CAP_NET_ADMIN",
        "CAP_NET_RAW",
        "CAP_IPC_LOCK",
        "CAP_IPC_OWNER",
        "CAP_SYS_MODULE",
        "CAP_SYS_RAWIO",
        "CAP_SYS_CHROOT",
        "CAP_SYS_PTRACE",
        "CAP_SYS_PACCT",
        "CAP_SYS_ADMIN",
        "CAP_SYS_BOOT",
        "CAP_SYS_NICE",
        "CAP_SYS_RESOURCE",
        "CAP_SYS_TIME",
        "CAP_SYS_TTY_CONFIG",
        "CAP_MKNOD",
        "CAP_LEASE",
        "CAP_AUDIT_WRITE",
        "CAP_AUDIT_CONTROL",
        "CAP_SETFCAP",
        "CAP_MAC_OVERRIDE",
        "CAP_MAC_ADMIN",
        "CAP_SYSLOG",
        "CAP_WAKE_ALARM",
        "CAP_BLOCK_SUSPEND",
        "CAP_AUDIT_READ",
        "CAP_PERFMON",
        "CAP_BPF",
        "CAP_CHECKPOINT_RESTORE",
    };
    return {std::begin(kCaps), std::end(kCaps)};
}

Result<Json> build_oci_spec(const OciSpecInput& in) {
    assert(in.container != nullptr);
    const Container& c = *in.container;
    static const PodSpec kNoPod;
    const PodSpec& pod = in.pod ? *in.pod : kNoPod;
    const SecurityContext sc = determine_effective_security_context(pod, c);
    const bool privileged = sc.privileged.value_or(false);

    if (auto refused = verify_run_as_non_root(pod, c, in.pod_display, image_user(in.image.user)))
        return Error{ErrorCode::ContainerConfig, *refused};
    if (auto refused = check_sysctls(pod)) return Error{ErrorCode::ContainerConfig, *refused};
    auto args = process_args(c, in.image);
    if (!args) return args.error();
    auto user = process_user(in, sc, pod);
    if (!user) return user.error();
    auto caps = capabilities(in, sc, privileged);
    if (!caps) return caps.error();

    std::vector<std::string> env = {std::string(kDefaultPathEnv)};
    if (!in.hostname.empty()) set_env(env, "HOSTNAME=" + in.hostname);
    for (const auto& e : in.image.env) set_env(env, e);
    for (const auto& [name, value] : in.env) set_env(env, name + "=" + value);

    const std::string cwd = !c.working_dir.empty()          ? c.working_dir
                            : !in.image.working_dir.empty() ? in.image.working_dir
                                                            : "/";

    Json process = Json::object();
    process["terminal"] = false;
    process["user"] = std::move(user).value();
    process["args"] = std::move(args).value();
    process["env"] = std::move(env);
    process["cwd"] = cwd;
    const Json cap_list = caps.value();
    process["capabilities"] = Json{{"bounding", cap_list}, {"effective", cap_list}, {"permitted", cap_list}};
    process["rlimits"] = Json::array({Json{{"type", "RLIMIT_NOFILE"}, {"hard", 1024}, {"soft", 1024}}});
    process["noNewPrivileges"] = add_no_new_privileges(sc);
    if (in.oom_score_adj) process["oomScoreAdj"] = *in.oom_score_adj;

    Json mounts = default_mounts(privileged);
    for (const auto& [destination, source] : in.etc_files)
        mounts.push_back(
            mount(destination, "bind", source,
                  {"rbind", "rprivate", sc.read_only_root_filesystem.value_or(false) ? "ro" : "rw"}));
    if (auto st = add_volume_mounts(in, mounts); !st) return st.error();

    Json spec = Json::object();
    spec["ociVersion"] = kOciSpecVersion;
    spec["process"] = std::move(process);
    spec["root"] = Json{{"path", in.rootfs}, {"readonly", sc.read_only_root_filesystem.value_or(false)}};
    if (!in.host_network && !in.hostname.empty()) spec["hostname"] = in.hostname;
    spec["mounts"] = std::move(mounts);

    Json linux_ = Json::object();
    linux_["resources"] = linux_resources(c, privileged);
    if (privileged && !in.host_devices.empty()) linux_["devices"] = in.host_devices;
    if (!in.cgroups_path.empty()) linux_["cgroupsPath"] = in.cgroups_path;
    linux_["namespaces"] = namespaces(in);
    if (pod.security_context && !pod.security_context->sysctls.empty()) {
        Json sysctl = Json::object();
        for (const auto& s : pod.security_context->sysctls) sysctl[s.name] = s.value;
        linux_["sysctl"] = std::move(sysctl);
    }
    if (!privileged) {
        linux_["maskedPaths"] = masked_paths(sc.proc_mount);
        linux_["readonlyPaths"] = readonly_paths(sc.proc_mount);
        if (in.seccomp_profile) {
            auto seccomp =
                seccomp_to_oci(*in.seccomp_profile, in.seccomp_source, caps.value(), in.seccomp_arch);
            if (!seccomp) return invalid(c, "securityContext.seccompProfile", seccomp.error().message);
            linux_["seccomp"] = std::move(seccomp).value();
        }
    }
    spec["linux"] = std::move(linux_);
    return spec;
}

}  // namespace daemonlet
