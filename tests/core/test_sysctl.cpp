// Which sysctls a pod may set (core/sysctl.h): the kubelet's safe set per
// kernel release, its allowlist with allowedUnsafeSysctls, and its
// admission. Rows are seeded from pkg/kubelet/sysctl allowlist_test.go and
// safe_sysctls_test.go and name the upstream test they pin.
#include <string>
#include <vector>

#include "core/security_context.h"
#include "core/sysctl.h"

#include <CppUTest/TestHarness.h>

using namespace daemonlet;

namespace {

std::string joined(const std::vector<std::string>& v) {
    std::string out;
    for (const auto& s : v) out += s + ",";
    return out;
}

const std::string kUnconditional =
    "kernel.shm_rmid_forced,net.ipv4.ip_local_port_range,net.ipv4.tcp_syncookies,net.ipv4.ping_group_range,"
    "net.ipv4.ip_unprivileged_port_start,";

// allowlist_test.go's fixture: NewAllowlist(append(SafeSysctlAllowlist(), "kernel.msg*", "kernel.sem")).
SysctlAllowlist fixture() {
    auto w = kubelet_sysctl_allowlist("6.1.0-18-amd64", {"kernel.msg*", "kernel.sem"});
    CHECK_TRUE(w.ok());
    return w.value();
}

PodSpec pod_with(std::vector<Sysctl> sysctls) {
    PodSpec spec;
    spec.security_context.emplace().sysctls = std::move(sysctls);
    return spec;
}

// One sysctl with hostNetwork / hostIPC, and the refusal expected ("" none).
struct HostRow {
    const char* name;
    std::string sysctl;
    bool host_net, host_ipc;
    std::string error;
};

}  // namespace

TEST_GROUP(Sysctl){};

TEST(Sysctl, SafeSetFollowsTheKernelRelease) {
    struct Row {
        const char* name;
        std::string release;
        std::string want;
    };
    const Row rows[] = {
        {"Test_getSafeSysctlAllowlist 'failed to get kernelVersion': the unconditional ones", "",
         kUnconditional},
        {"Test_getSafeSysctlAllowlist: a release that is no version", "linux", kUnconditional},
        {"Test_getSafeSysctlAllowlist 'kernelVersion is 3.18.0': and ip_local_reserved_ports (3.16)",
         "3.18.0", kUnconditional + "net.ipv4.ip_local_reserved_ports,"},
        {"pkg/util/kernel: 4.5 namespaced tcp_keepalive_*, not tcp_fin_timeout (4.6)", "4.5.7-generic",
         kUnconditional +
             "net.ipv4.ip_local_reserved_ports,net.ipv4.tcp_keepalive_time,net.ipv4.tcp_keepalive_intvl,"
             "net.ipv4.tcp_keepalive_probes,"},
        {"Test_getSafeSysctlAllowlist 'kernelVersion is 5.15.0': all of them (1.29's list)",
         "5.15.0-91-generic",
         kUnconditional +
             "net.ipv4.ip_local_reserved_ports,net.ipv4.tcp_keepalive_time,net.ipv4.tcp_fin_timeout,"
             "net.ipv4.tcp_keepalive_intvl,net.ipv4.tcp_keepalive_probes,"},
        {"version.ParseGeneric: two components are enough", "4.6",
         kUnconditional + "net.ipv4.ip_local_reserved_ports,net.ipv4.tcp_"
                          "keepalive_time,net.ipv4.tcp_fin_timeout,"
                          "net.ipv4.tcp_keepalive_intvl,net.ipv4.tcp_"
                          "keepalive_probes,"},
        {"version.ParseGeneric: one component is no version", "6", kUnconditional},
    };
    for (const auto& row : rows)
        STRCMP_EQUAL_TEXT(row.want.c_str(), joined(safe_sysctl_allowlist(row.release)).c_str(), row.name);
}

TEST(Sysctl, NewAllowlistTakesNamespacedNamesAndPatterns) {
    struct Row {
        const char* name;
        std::string pattern;
        std::string error;  // "" when accepted
    };
    const std::string regex =
        " must have at most 253 characters and match regex "
        "([a-z0-9]([-_a-z0-9]*[a-z0-9])?[\\./])*([a-z0-9][-_a-z0-9]*)?[a-z0-9*]";
    const Row rows[] = {
        {"TestNewAllowlist: kernel.msg*", "kernel.msg*", ""},
        {"TestNewAllowlist: kernel.sem", "kernel.sem", ""},
        {"TestNewAllowlist: ' kernel.msg*'", " kernel.msg*", "sysctl \" kernel.msg*\"" + regex},
        {"TestNewAllowlist: 'kernel.msg* '", "kernel.msg* ", "sysctl \"kernel.msg* \"" + regex},
        {"TestNewAllowlist: net.-", "net.-", "sysctl \"net.-\"" + regex},
        {"TestNewAllowlist: net.*.foo", "net.*.foo", "sysctl \"net.*.foo\"" + regex},
        {"TestNewAllowlist: net.*/foo", "net.*/foo", "sysctl \"net.*/foo\"" + regex},
        {"TestNewAllowlist: foo", "foo", "the sysctl \"foo\" are not known to be namespaced"},
        {"TestNewAllowlist: foo*", "foo*", "the sysctls \"foo*\" are not known to be namespaced"},
        {"IsValidSysctlPattern: the slash form, converted to dots", "net/ipv4/ip_forward", ""},
        {"IsValidSysctlPattern: upper case is no sysctl", "NET.core.somaxconn",
         "sysctl \"NET.core.somaxconn\"" + regex},
        {"IsValidSysctlPattern: more than 253 characters", "net." + std::string(250, 'a'),
         "sysctl \"net." + std::string(250, 'a') + "\"" + regex},
        {"NamespacedBy: fs.mqueue.* is the IPC namespace's", "fs.mqueue.*", ""},
        {"NamespacedBy: '*' alone is no namespace", "*", "the sysctls \"*\" are not known to be namespaced"},
        {"NamespacedBy: kernel.* reaches node-wide ones", "kernel.*",
         "the sysctls \"kernel.*\" are not known to be namespaced"},
    };
    for (const auto& row : rows) {
        auto w = new_sysctl_allowlist({row.pattern});
        STRCMP_EQUAL_TEXT(row.error.c_str(), w.ok() ? "" : w.error().message.c_str(), row.name);
    }
}

TEST(Sysctl, ValidateSysctlAgainstTheAllowlistAndTheHostNamespaces) {
    const HostRow rows[] = {
        {"TestAllowlist valid: kernel.shm_rmid_forced", "kernel.shm_rmid_forced", false, false, ""},
        {"TestAllowlist valid: kernel/shm_rmid_forced", "kernel/shm_rmid_forced", false, false, ""},
        {"TestAllowlist valid: net.ipv4.ip_local_port_range", "net.ipv4.ip_local_port_range", false, false,
         ""},
        {"TestAllowlist valid: kernel.msgmax (kernel.msg*)", "kernel.msgmax", false, false, ""},
        {"TestAllowlist valid: kernel.sem", "kernel.sem", false, false, ""},
        {"TestAllowlist valid: kernel/sem", "kernel/sem", false, false, ""},
        {"TestAllowlist invalid: kernel.shm_rmid_forced with hostIPC", "kernel.shm_rmid_forced", false, true,
         "\"kernel.shm_rmid_forced\" not allowed with host ipc enabled"},
        {"TestAllowlist invalid: net.ipv4.ip_local_port_range with hostNet", "net.ipv4.ip_local_port_range",
         true, false, "\"net.ipv4.ip_local_port_range\" not allowed with host net enabled"},
        {"TestAllowlist invalid: foo", "foo", false, false, "\"foo\" not allowlisted"},
        {"TestAllowlist invalid: net.a.b.c (namespaced, not listed)", "net.a.b.c", false, false,
         "\"net.a.b.c\" not allowlisted"},
        {"TestAllowlist invalid: net.ipv4.ip_local_port_range.a.b.c", "net.ipv4.ip_local_port_range.a.b.c",
         false, false, "\"net.ipv4.ip_local_port_range.a.b.c\" not allowlisted"},
        {"TestAllowlist invalid: kernel.msgmax with hostIPC", "kernel.msgmax", false, true,
         "\"kernel.msgmax\" not allowed with host ipc enabled"},
        {"TestAllowlist invalid: kernel.sem with hostIPC", "kernel.sem", false, true,
         "\"kernel.sem\" not allowed with host ipc enabled"},
        {"TestAllowlist invalid: net.b.c with hostNet: not listed comes first", "net.b.c", true, false,
         "\"net.b.c\" not allowlisted"},
        {"validateSysctl: a node-wide sysctl", "vm.swappiness", false, false,
         "\"vm.swappiness\" not allowlisted"},
        {"validateSysctl: an ipc sysctl with hostNetwork only", "kernel.msgmnb", true, false, ""},
    };
    const SysctlAllowlist w = fixture();
    for (const auto& row : rows)
        STRCMP_EQUAL_TEXT(row.error.c_str(),
                          validate_sysctl(w, row.sysctl, row.host_net, row.host_ipc).value_or("").c_str(),
                          row.name);
}

TEST(Sysctl, AllowedUnsafePatternsWidenTheAllowlist) {
    auto w = kubelet_sysctl_allowlist("6.1.0", {"net.core.*", "net.ipv4.tcp_rmem"});
    CHECK_TRUE(w.ok());
    struct Row {
        const char* name;
        std::string sysctl;
        bool allowed;
    };
    const Row rows[] = {
        {"NewAllowlist prefixes: net.core.* lets net.core.somaxconn in", "net.core.somaxconn", true},
        {"NewAllowlist sysctls: an exact name", "net.ipv4.tcp_rmem", true},
        {"NewAllowlist sysctls: an exact name is no prefix", "net.ipv4.tcp_rmem_x", false},
        {"SafeSysctlAllowlist still applies", "net.ipv4.tcp_syncookies", true},
        {"unlisted", "net.ipv4.tcp_wmem", false},
    };
    for (const auto& row : rows)
        CHECK_EQUAL_TEXT(row.allowed, !validate_sysctl(w.value(), row.sysctl, false, false), row.name);
    CHECK_FALSE(kubelet_sysctl_allowlist("6.1.0", {"vm.*"}).ok());
}

TEST(Sysctl, AdmitRejectsAPodWithTheFirstForbiddenSysctl) {
    const SysctlAllowlist w = fixture();
    CHECK_FALSE(admit_sysctls(w, PodSpec{}).has_value());  // Admit: no securityContext
    CHECK_FALSE(admit_sysctls(w, pod_with({})).has_value());
    CHECK_FALSE(
        admit_sysctls(w, pod_with({{"net.ipv4.tcp_syncookies", "1"}, {"kernel.sem", "1"}})).has_value());

    auto r = admit_sysctls(w, pod_with({{"kernel.sem", "1"}, {"net.core.somaxconn", "1024"}, {"vm.x", "1"}}));
    CHECK_TRUE(r.has_value());
    STRCMP_EQUAL("SysctlForbidden", r->reason.c_str());  // allowlist.go ForbiddenReason
    STRCMP_EQUAL("forbidden sysctl: \"net.core.somaxconn\" not allowlisted", r->message.c_str());

    PodSpec host = pod_with({{"net.ipv4.ip_local_port_range", "1024 65000"}});
    host.host_network = true;
    auto h = admit_sysctls(w, host);
    CHECK_TRUE(h.has_value());
    STRCMP_EQUAL("forbidden sysctl: \"net.ipv4.ip_local_port_range\" not allowed with host net enabled",
                 h->message.c_str());
}

// The runtimes' last check when a container is made (core/security_context.h
// check_sysctls): every namespaced sysctl, as a kubelet with them all in
// allowedUnsafeSysctls (allowlist_test.go TestAllowlist's rules).
TEST(Sysctl, RuntimesCheckOnlyNamespacedSysctlsNotSharedWithTheHost) {
    const HostRow rows[] = {
        {"net.* in the pod's network namespace", "net.ipv4.ip_local_port_range", false, false, ""},
        {"slash form normalised (NormalizeName)", "net/ipv4/ip_forward", false, false, ""},
        {"kernel.shm_rmid_forced (ipc)", "kernel.shm_rmid_forced", false, false, ""},
        {"fs.mqueue.* (ipc)", "fs.mqueue.msg_max", false, false, ""},
        {"not namespaced", "kernel.panic", false, false, "\"kernel.panic\" not allowlisted"},
        {"net with hostNetwork", "net.core.somaxconn", true, false,
         "\"net.core.somaxconn\" not allowed with host net enabled"},
        {"ipc with hostIPC", "kernel.msgmax", false, true,
         "\"kernel.msgmax\" not allowed with host ipc enabled"},
    };
    for (const auto& row : rows) {
        PodSpec spec = pod_with({{row.sysctl, "1"}});
        spec.host_network = row.host_net;
        spec.host_ipc = row.host_ipc;
        STRCMP_EQUAL_TEXT(row.error.c_str(), check_sysctls(spec).value_or("").c_str(), row.name);
    }
}
