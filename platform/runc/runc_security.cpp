// What a runc container's config.json needs of the node and the image for
// its security: see runc_security.h.
#include "platform/runc/runc_security.h"

#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/utsname.h>

#include <unistd.h>

#include <filesystem>
#include <system_error>

#include "core/pod_dns.h"
#include "core/seccomp.h"
#include "core/security_context.h"
#include "platform/file.h"
#include "platform/runc/runc_runtime.h"  // kRuntimeDefaultSeccompProfile

namespace daemonlet::platform {
namespace {

namespace fs = std::filesystem;

// A file of the image's rootfs, read unless it is (or is reached through)
// a symbolic link, which would be resolved on the host: "" then, and when
// absent.
std::string read_image_file(const std::string& rootfs, const std::string& rel) {
    std::error_code ec;
    for (fs::path p = rootfs; const auto& part : fs::path(rel)) {
        p /= part;
        if (fs::is_symlink(p, ec)) return "";
    }
    auto text = read_file(rootfs + "/" + rel, 1024 * 1024);
    return text ? text.value() : "";
}

// The host's device nodes under /dev (containerd's oci.HostDevices: pts,
// shm, mqueue and friends skipped, /dev/console too), as linux.devices.
Json host_devices() {
    Json out = Json::array();
    std::error_code ec;
    fs::recursive_directory_iterator it("/dev", fs::directory_options::skip_permission_denied, ec);
    for (; !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
        const std::string name = it->path().filename().string();
        if (it->is_directory(ec) && !it->is_symlink(ec)) {
            if (name == "pts" || name == "shm" || name == "fd" || name == "mqueue" || name == ".lxc" ||
                name == ".lxd-mounts" || name == ".udev")
                it.disable_recursion_pending();
            continue;
        }
        const std::string path = it->path().string();
        if (path == "/dev/console") continue;
        struct stat st {};
        if (::lstat(path.c_str(), &st) != 0) continue;
        const char* type = S_ISCHR(st.st_mode) ? "c" : S_ISBLK(st.st_mode) ? "b" : nullptr;
        if (!type) continue;
        out.push_back(Json{{"path", path},
                           {"type", type},
                           {"major", major(st.st_rdev)},
                           {"minor", minor(st.st_rdev)},
                           {"fileMode", st.st_mode & 0777},
                           {"uid", st.st_uid},
                           {"gid", st.st_gid}});
    }
    return out;
}

// What the spec needs of the node and the image for the container's
// security: the image's /etc/passwd and /etc/group, the seccomp profile
// (RuntimeDefault: containers-common's; Localhost: under the profile
// root), the host's devices for a privileged container.
}  // namespace

Status read_security_inputs(const std::string& seccomp_root, const ContainerLaunch& launch,
                            const std::string& rootfs, OciSpecInput& in) {
    const Container& c = *launch.container;
    in.etc_passwd = read_image_file(rootfs, "etc/passwd");
    in.etc_group = read_image_file(rootfs, "etc/group");
    const SecurityContext sc = determine_effective_security_context(*launch.pod_spec, c);
    if (sc.privileged.value_or(false)) {
        in.host_devices = host_devices();
        return Ok{};
    }
    const SeccompProfile profile = effective_seccomp_profile(*launch.pod_spec, c);
    std::string file;
    if (profile.type == "RuntimeDefault")
        file = kRuntimeDefaultSeccompProfile;
    else if (profile.type == "Localhost")
        file = seccomp_root + "/" + profile.localhost_profile;
    else
        return Ok{};
    auto text = read_file(file, 4 * 1024 * 1024);
    if (!text)
        return Error{
            ErrorCode::ContainerConfig,
            "container \"" + c.name + "\": seccomp profile " + profile.type + " " + file + ": " +
                text.error().message +
                (profile.type == "RuntimeDefault" ? " (apt-get install golang-github-containers-common)"
                                                  : "")};
    in.seccomp_profile = std::move(text).value();
    in.seccomp_source = file;
    struct utsname u {};
    in.seccomp_arch = seccomp_arch(::uname(&u) == 0 ? u.machine : "x86_64");
    return Ok{};
}

Status write_pod_etc_files(const RuncPodSettings& settings, const ContainerLaunch& launch,
                           const std::string& pod_dir, OciSpecInput& in) {
    PodDNSInput dns;
    dns.spec = launch.pod_spec.get();
    dns.pod_name = launch.pod_name;
    dns.namespace_ = launch.pod_namespace;
    dns.cluster_dns = settings.cluster_dns;
    dns.cluster_domain = settings.cluster_domain;
    // A runc pod without hostNetwork has loopback only: no pod IP.
    auto hosts = read_file("/etc/hosts", 1024 * 1024);
    dns.host_hosts = hosts ? hosts.value() : "";
    auto resolv = read_file("/etc/resolv.conf", 1024 * 1024);
    dns.host_resolv_conf = resolv ? resolv.value() : "";
    char host[256] = {};
    if (::gethostname(host, sizeof host - 1) == 0) dns.node_hostname = host;
    const PodDNSFiles files = pod_dns_files(dns);
    const std::string dir = pod_dir + "/etc";
    if (auto s = make_dirs(dir); !s) return s;
    const std::pair<const char*, const std::string*> wanted[] = {
        {"hosts", &files.hosts}, {"hostname", &files.hostname}, {"resolv.conf", &files.resolv_conf}};
    for (const auto& [name, text] : wanted) {
        const std::string path = dir + "/" + name;
        if (auto s = replace_file(path, *text, std::to_string(::getpid()) + "-" + launch.container_name); !s)
            return s;
        in.etc_files["/etc/" + std::string(name)] = path;
    }
    return Ok{};
}

}  // namespace daemonlet::platform
