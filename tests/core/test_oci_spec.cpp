// config.json of a container (core/oci_spec.h). Each row changes a base
// container and image, then checks one field of the spec by its JSON
// pointer (or the error), and names the upstream rule it pins: containerd's
// CRI plugin (pkg/cri/opts/spec.go, spec_linux.go, pkg/cri/server
// container_create_linux.go, sandbox_run_linux.go), containerd's default
// spec (oci/spec.go, oci/mounts.go) and the kubelet (pkg/kubelet/cm
// helpers_linux.go, pkg/securitycontext).

#include <functional>
#include <string>
#include <vector>

#include "core/oci_spec.h"
#include "core/quantity.h"

#include <CppUTest/TestHarness.h>

using namespace daemonlet;

namespace {

struct Case {
    Container container;
    PodSpec pod;
    OciSpecInput in;
};

Case base_case() {
    Case k;
    k.container.name = "app";
    k.in.image.entrypoint = {"/bin/entry"};
    k.in.image.cmd = {"--serve"};
    k.in.image.env = {"PATH=/bin", "IMAGE=1"};
    k.in.rootfs = "rootfs";
    k.in.hostname = "pod-a";
    k.in.cgroups_path = "/daemonlet/pod-a/app";
    k.in.volume_host_paths = {{"data", "/var/lib/data"}, {"scratch", "/run/daemonlet/pods/a/scratch"}};
    return k;
}

Quantity q(const char* s) {
    auto r = parse_quantity(s);
    CHECK_TRUE(r.ok());
    return r.value();
}

SecurityContext& sc(Case& k) {
    if (!k.container.security_context) k.container.security_context.emplace();
    return *k.container.security_context;
}

struct Row {
    const char* rule;
    std::function<void(Case&)> setup;
    std::string pointer;  // JSON pointer into config.json
    Json want;            // its value; null: the field is absent
    std::string error;    // a substring of the error instead
};

const Json kDefaultCaps = Json(default_capabilities());
const Json kAllCaps = Json(all_capabilities());

std::vector<std::string> with(std::vector<std::string> v, const std::string& extra) {
    v.push_back(extra);
    return v;
}

const Row kRows[] = {
    // --- process.oomScoreAdj: the agent's value (core/qos.h), none when not given.
    {"process.oomScoreAdj as given (GetContainerOOMScoreAdjust's, restricted)",
     [](Case& k) { k.in.oom_score_adj = -997; }, "/process/oomScoreAdj", Json(-997), ""},
    {"no oomScoreAdj asked: none written (runc keeps its own)", [](Case&) {}, "/process/oomScoreAdj", Json(),
     ""},
    // --- process.args: containerd pkg/cri/opts/spec.go WithProcessArgs.
    {"neither command nor args: image Entrypoint + Cmd", [](Case&) {}, "/process/args",
     Json{"/bin/entry", "--serve"}, ""},
    {"command replaces Entrypoint and drops Cmd", [](Case& k) { k.container.command = {"/bin/sh"}; },
     "/process/args", Json{"/bin/sh"}, ""},
    {"args replace Cmd, Entrypoint kept", [](Case& k) { k.container.args = {"-v"}; }, "/process/args",
     Json{"/bin/entry", "-v"}, ""},
    {"command and args: both from the container",
     [](Case& k) {
         k.container.command = {"sh", "-c"};
         k.container.args = {"echo hi"};
     },
     "/process/args", Json{"sh", "-c", "echo hi"}, ""},
    {"Entrypoint [\"\"] is no Entrypoint (moby daemon/commit.go)",
     [](Case& k) { k.in.image.entrypoint = {""}; }, "/process/args", Json{"--serve"}, ""},
    {"no command anywhere is an error",
     [](Case& k) {
         k.in.image.entrypoint.clear();
         k.in.image.cmd.clear();
     },
     "", nullptr, "container \"app\": command: no command specified"},

    // --- process.env: oci/spec.go defaultUnixEnv, oci.WithEnv replaceOrAppendEnvValues;
    //     CRI adds HOSTNAME before the image's Env (container_create_linux.go).
    {"default PATH, HOSTNAME, image env, container env; same name replaced in place",
     [](Case& k) {
         k.in.env = {{"IMAGE", "2"}, {"MINE", "x=y"}};
     },
     "/process/env", Json{"PATH=/bin", "HOSTNAME=pod-a", "IMAGE=2", "MINE=x=y"}, ""},
    {"an image without PATH keeps the default one",
     [](Case& k) {
         k.in.image.env.clear();
         k.in.hostname.clear();
     },
     "/process/env", Json{std::string(kDefaultPathEnv)}, ""},

    // --- process.cwd: container_create_linux.go (WithProcessCwd).
    {"workingDir wins",
     [](Case& k) {
         k.container.working_dir = "/srv";
         k.in.image.working_dir = "/img";
     },
     "/process/cwd", "/srv", ""},
    {"else the image's WorkingDir", [](Case& k) { k.in.image.working_dir = "/img"; }, "/process/cwd", "/img",
     ""},
    {"else /", [](Case&) {}, "/process/cwd", "/", ""},

    // --- process.user: kubelet determineEffectiveSecurityContext (RunAsUser
    // from getImageUser), containerd generateUserString, oci.WithUser,
    // WithAdditionalGIDs, WithSupplementalGroups.
    {"no user: root", [](Case&) {}, "/process/user", Json{{"uid", 0}, {"gid", 0}, {"additionalGids", {0}}},
     ""},
    {"image User uid:gid: the kubelet passes the uid alone (getImageUser), gid from passwd else 0",
     [](Case& k) { k.in.image.user = "1000:2000"; }, "/process/user",
     Json{{"uid", 1000}, {"gid", 0}, {"additionalGids", {0}}}, ""},
    {"image uid found in passwd: its group (WithUser)",
     [](Case& k) {
         k.in.image.user = "1000";
         k.in.etc_passwd = "app:x:1000:1500::/home/app:/bin/sh\n";
     },
     "/process/user/gid", 1500, ""},
    {"runAsUser and runAsGroup override the image",
     [](Case& k) {
         k.in.image.user = "1000:2000";
         sc(k).run_as_user = 7;
         sc(k).run_as_group = 8;
     },
     "/process/user", Json{{"uid", 7}, {"gid", 8}, {"additionalGids", {8}}}, ""},
    {"pod runAsUser applies (DetermineEffectiveSecurityContext)",
     [](Case& k) {
         k.pod.security_context.emplace().run_as_user = 65534;
         k.in.pod = &k.pod;
     },
     "/process/user/uid", 65534, ""},
    {"a user name resolves in the image's /etc/passwd and /etc/group (GetExecUser, WithAdditionalGIDs)",
     [](Case& k) {
         k.in.image.user = "nobody";
         k.in.etc_passwd = "root:x:0:0::/root:/bin/sh\nnobody:x:65534:65533::/:/bin/false\n";
         k.in.etc_group = "nogroup:x:65533:\nvideo:x:44:nobody,other\n";
     },
     "/process/user", Json{{"uid", 65534}, {"gid", 65533}, {"additionalGids", {65533, 44}}}, ""},
    {"fsGroup then supplementalGroups appended (WithSupplementalGroups)",
     [](Case& k) {
         auto& psc = k.pod.security_context.emplace();
         psc.fs_group = 2000;
         psc.supplemental_groups = {3000, 3001};
         k.in.pod = &k.pod;
     },
     "/process/user/additionalGids", Json{0, 2000, 3000, 3001}, ""},
    {"a user name missing from the image: CreateContainerConfigError",
     [](Case& k) { k.in.image.user = "nobody"; }, "", nullptr, "unable to find user nobody"},
    {"runAsNonRoot with a root image (verifyRunAsNonRoot)",
     [](Case& k) {
         sc(k).run_as_non_root = true;
         k.in.pod_display = "p_ns(u)";
     },
     "", nullptr, "container has runAsNonRoot and image will run as root (pod: \"p_ns(u)\", container: app)"},
    {"runAsNonRoot with runAsUser 1000 runs",
     [](Case& k) {
         sc(k).run_as_non_root = true;
         sc(k).run_as_user = 1000;
     },
     "/process/user/uid", 1000, ""},

    // --- seccomp: kuberuntime getSeccompProfile; containerd: none when privileged.
    {"no profile: Unconfined, no linux.seccomp", [](Case&) {}, "/linux/seccomp", nullptr, ""},
    {"a profile read by the caller is converted",
     [](Case& k) {
         k.in.seccomp_profile =
             R"({"defaultAction":"SCMP_ACT_ERRNO","syscalls":[{"names":["read"],"action":"SCMP_ACT_ALLOW"}]})";
         k.in.seccomp_arch = "SCMP_ARCH_X86_64";
     },
     "/linux/seccomp/syscalls/0/names/0", "read", ""},
    {"privileged: no seccomp",
     [](Case& k) {
         sc(k).privileged = true;
         k.in.seccomp_profile = R"({"defaultAction":"SCMP_ACT_ERRNO"})";
     },
     "/linux/seccomp", nullptr, ""},

    // --- sysctls: the pod's namespaced ones (pkg/kubelet/sysctl validateSysctl).
    {"a namespaced sysctl is linux.sysctl",
     [](Case& k) {
         k.pod.security_context.emplace().sysctls = {{"net.ipv4.ip_unprivileged_port_start", "0"}};
         k.in.pod = &k.pod;
     },
     "/linux/sysctl/net.ipv4.ip_unprivileged_port_start", "0", ""},
    {"a node-wide sysctl is refused",
     [](Case& k) {
         k.pod.security_context.emplace().sysctls = {{"vm.swappiness", "1"}};
         k.in.pod = &k.pod;
     },
     "", nullptr, "\"vm.swappiness\" not allowlisted"},

    // --- procMount (ConvertToRuntimeMaskedPaths) and privileged devices.
    {"procMount Unmasked: nothing masked", [](Case& k) { sc(k).proc_mount = "Unmasked"; },
     "/linux/maskedPaths", Json::array(), ""},
    {"privileged: the host's devices (WithDevices(HostDevices()))",
     [](Case& k) {
         sc(k).privileged = true;
         k.in.host_devices =
             Json::array({Json{{"path", "/dev/null"}, {"type", "c"}, {"major", 1}, {"minor", 3}}});
     },
     "/linux/devices/0/path", "/dev/null", ""},

    // --- capabilities: oci/spec.go defaultUnixCaps; spec_linux.go WithCapabilities.
    {"default capabilities", [](Case&) {}, "/process/capabilities/bounding", kDefaultCaps, ""},
    {"effective equals bounding", [](Case&) {}, "/process/capabilities/effective", kDefaultCaps, ""},
    {"add NET_ADMIN appends CAP_NET_ADMIN", [](Case& k) { sc(k).capabilities_add = {"NET_ADMIN"}; },
     "/process/capabilities/permitted", Json(with(default_capabilities(), "CAP_NET_ADMIN")), ""},
    {"drop ALL then add one",
     [](Case& k) {
         sc(k).capabilities_drop = {"ALL"};
         sc(k).capabilities_add = {"CAP_KILL"};
     },
     "/process/capabilities/bounding", Json{"CAP_KILL"}, ""},
    {"an unknown capability is an error naming the field", [](Case& k) { sc(k).capabilities_add = {"FLY"}; },
     "", nullptr, "securityContext.capabilities.add[0]: unknown capability \"FLY\""},
    {"privileged: every capability", [](Case& k) { sc(k).privileged = true; },
     "/process/capabilities/bounding", kAllCaps, ""},
    {"privileged: the agent's own capabilities when known (WithAllCurrentCapabilities)",
     [](Case& k) {
         sc(k).privileged = true;
         k.in.current_capabilities = {"CAP_CHOWN", "CAP_SYS_ADMIN"};
     },
     "/process/capabilities/permitted", Json{"CAP_CHOWN", "CAP_SYS_ADMIN"}, ""},
    {"add ALL: the agent's own capabilities",
     [](Case& k) {
         sc(k).capabilities_add = {"ALL"};
         k.in.current_capabilities = {"CAP_KILL"};
     },
     "/process/capabilities/bounding", Json{"CAP_KILL"}, ""},
    {"noNewPrivileges only when allowPrivilegeEscalation is false (AddNoNewPrivileges)",
     [](Case& k) { sc(k).allow_privilege_escalation = false; }, "/process/noNewPrivileges", true, ""},
    {"no_new_privs off by default", [](Case&) {}, "/process/noNewPrivileges", false, ""},

    // --- mounts: oci/mounts.go defaultMounts; spec_linux.go WithMounts.
    {"proc first", [](Case&) {}, "/mounts/0/destination", "/proc", ""},
    {"sysfs read-only", [](Case&) {}, "/mounts/5/options/3", "ro", ""},
    {"privileged: sysfs read-write", [](Case& k) { sc(k).privileged = true; }, "/mounts/5/options/3", "rw",
     ""},
    {"a volume mount: rbind rprivate rw from its host path",
     [](Case& k) {
         k.container.volume_mounts = {{"data", "/data", "", false, ""}};
     },
     "/mounts/7",
     Json{{"destination", "/data"},
          {"type", "bind"},
          {"source", "/var/lib/data"},
          {"options", {"rbind", "rprivate", "rw"}}},
     ""},
    {"readOnly and HostToContainer: ro, rslave",
     [](Case& k) {
         k.container.volume_mounts = {{"data", "/data", "", true, "HostToContainer"}};
     },
     "/mounts/7/options", Json{"rbind", "rslave", "ro"}, ""},
    {"subPath joins the host path",
     [](Case& k) {
         k.container.volume_mounts = {{"data", "/etc/app", "conf", false, ""}};
     },
     "/mounts/7/source", "/var/lib/data/conf", ""},
    {"shallower destinations first (orderedMounts)",
     [](Case& k) {
         k.container.volume_mounts = {{"data", "/a/b/c", "", false, ""}, {"scratch", "/a", "", false, ""}};
     },
     "/mounts/7/destination", "/a", ""},
    {"a volume at a default destination replaces it",
     [](Case& k) {
         k.container.volume_mounts = {{"scratch", "/dev/shm", "", false, ""}};
     },
     "/mounts/6/source", "/run/daemonlet/pods/a/scratch", ""},
    {"a volume without a host path is an error",
     [](Case& k) {
         k.container.volume_mounts = {{"secret", "/s", "", true, ""}};
     },
     "", nullptr, "volumeMounts[0].name: volume \"secret\" has no host path"},
    {"a subPath with .. is an error",
     [](Case& k) {
         k.container.volume_mounts = {{"data", "/d", "x/../../etc", false, ""}};
     },
     "", nullptr, "volumeMounts[0].subPath: \"x/../../etc\" leaves the volume"},

    // --- masked and read-only paths: oci/spec.go populateDefaultUnixSpec; none when privileged.
    {"/proc/kcore masked", [](Case&) {}, "/linux/maskedPaths/2", "/proc/kcore", ""},
    {"/proc/sys read-only", [](Case&) {}, "/linux/readonlyPaths/3", "/proc/sys", ""},
    {"privileged: nothing masked", [](Case& k) { sc(k).privileged = true; }, "/linux/maskedPaths", nullptr,
     ""},

    // --- namespaces: sandbox_run_linux.go / container_create_linux.go namespace options.
    {"own pid, ipc, uts, mount, network", [](Case&) {}, "/linux/namespaces",
     Json{
         {{"type", "pid"}}, {{"type", "ipc"}}, {{"type", "uts"}}, {{"type", "mount"}}, {{"type", "network"}}},
     ""},
    {"hostNetwork: no network, no uts", [](Case& k) { k.in.host_network = true; }, "/linux/namespaces",
     Json{{{"type", "pid"}}, {{"type", "ipc"}}, {{"type", "mount"}}}, ""},
    {"hostNetwork: the host's hostname", [](Case& k) { k.in.host_network = true; }, "/hostname", nullptr, ""},
    {"hostPID: no pid namespace", [](Case& k) { k.in.host_pid = true; }, "/linux/namespaces/0/type", "ipc",
     ""},
    {"hostname set", [](Case&) {}, "/hostname", "pod-a", ""},

    // --- resources: kubelet helpers_linux.go milliCPUToQuota, MilliCPUToShares.
    {"memory limit in bytes", [](Case& k) { k.container.resources.limits["memory"] = q("64Mi"); },
     "/linux/resources/memory/limit", 67108864, ""},
    {"no memory limit: none", [](Case&) {}, "/linux/resources/memory", nullptr, ""},
    {"cpu 500m: quota 50000", [](Case& k) { k.container.resources.limits["cpu"] = q("500m"); },
     "/linux/resources/cpu/quota", 50000, ""},
    {"cpu period 100000", [](Case& k) { k.container.resources.limits["cpu"] = q("1"); },
     "/linux/resources/cpu/period", 100000, ""},
    {"cpu 1m: quota raised to MinQuotaPeriod 1000",
     [](Case& k) { k.container.resources.limits["cpu"] = q("1m"); }, "/linux/resources/cpu/quota", 1000, ""},
    {"no cpu limit: no quota", [](Case&) {}, "/linux/resources/cpu/quota", nullptr, ""},
    {"no cpu request: MinShares 2", [](Case&) {}, "/linux/resources/cpu/shares", 2, ""},
    {"request 250m: shares 256", [](Case& k) { k.container.resources.requests["cpu"] = q("250m"); },
     "/linux/resources/cpu/shares", 256, ""},
    {"a limit alone is the request (SetDefaults_ResourceList)",
     [](Case& k) { k.container.resources.limits["cpu"] = q("2"); }, "/linux/resources/cpu/shares", 2048, ""},
    {"devices denied (defaultUnixSpec)", [](Case&) {}, "/linux/resources/devices/0/allow", false, ""},
    {"privileged: devices allowed", [](Case& k) { sc(k).privileged = true; },
     "/linux/resources/devices/0/allow", true, ""},
    {"no negative oomScoreAdj, none at all", [](Case&) {}, "/process/oomScoreAdj", nullptr, ""},

    // --- root, cgroups.
    {"rootfs as given", [](Case&) {}, "/root/path", "rootfs", ""},
    {"readOnlyRootFilesystem: root read-only", [](Case& k) { sc(k).read_only_root_filesystem = true; },
     "/root/readonly", true, ""},
    {"cgroupsPath as given", [](Case&) {}, "/linux/cgroupsPath", "/daemonlet/pod-a/app", ""},
    {"spec version runc 1.1 takes", [](Case&) {}, "/ociVersion", "1.0.2", ""},
};

}  // namespace

TEST_GROUP(OciSpec){};

TEST(OciSpec, EachRowPinsItsRule) {
    for (const Row& row : kRows) {
        Case k = base_case();
        row.setup(k);
        k.in.container = &k.container;
        auto spec = build_oci_spec(k.in);
        if (!row.error.empty()) {
            CHECK_FALSE_TEXT(spec.ok(), row.rule);
            CHECK_TEXT(spec.error().message.find(row.error) != std::string::npos,
                       (std::string(row.rule) + ": got " + spec.error().message).c_str());
            continue;
        }
        CHECK_TEXT(spec.ok(),
                   (std::string(row.rule) + ": " + (spec.ok() ? "" : spec.error().message)).c_str());
        const Json::json_pointer ptr(row.pointer);
        if (row.want.is_null()) {
            CHECK_FALSE_TEXT(spec.value().contains(ptr),
                             (std::string(row.rule) + ": present: " + spec.value().dump()).c_str());
            continue;
        }
        CHECK_TEXT(spec.value().contains(ptr), (std::string(row.rule) + ": absent").c_str());
        STRCMP_EQUAL_TEXT(row.want.dump().c_str(), spec.value()[ptr].dump().c_str(), row.rule);
    }
}

struct CpuRow {
    const char* rule;
    std::int64_t milli;
    std::int64_t quota;
    std::uint64_t shares;
};

// kubelet helpers_linux_test.go TestMilliCPUToQuota and TestMilliCPUToShares rows.
const CpuRow kCpuRows[] = {
    {"0: no quota, MinShares", 0, 0, 2},
    {"1m: MinQuotaPeriod, shares floor 2", 1, 1000, 2},
    {"9m: quota 1000 (MinQuotaPeriod), shares 9", 9, 1000, 9},
    {"10m: 1000", 10, 1000, 10},
    {"200m: 20000", 200, 20000, 204},
    {"500m: 50000", 500, 50000, 512},
    {"1000m: 100000, 1024 shares", 1000, 100000, 1024},
    {"1500m: 150000", 1500, 150000, 1536},
    {"huge: shares capped at MaxShares 262144", 1000000, 100000000, 262144},
};

TEST(OciSpec, CpuQuotaAndSharesFollowTheKubelet) {
    for (const CpuRow& row : kCpuRows) {
        LONGLONGS_EQUAL_TEXT(row.quota, milli_cpu_to_quota(row.milli, kCpuQuotaPeriod), row.rule);
        UNSIGNED_LONGLONGS_EQUAL_TEXT(row.shares, milli_cpu_to_shares(row.milli), row.rule);
    }
}
