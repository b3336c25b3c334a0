// The effective security of a container (core/security_context.h), hostPath
// types (core/host_path.h) and seccomp profiles (core/seccomp.h). Each row
// names the upstream test or function it pins.

#include <functional>
#include <string>
#include <vector>

#include "core/host_path.h"
#include "core/seccomp.h"
#include "core/security_context.h"

#include <CppUTest/TestHarness.h>

using namespace daemonlet;

namespace {

struct Subject {
    PodSpec spec;
    Container c;
    SecurityContext& sc() {
        if (!c.security_context) c.security_context.emplace();
        return *c.security_context;
    }
    PodSecurityContext& psc() {
        if (!spec.security_context) spec.security_context.emplace();
        return *spec.security_context;
    }
};

std::string opt(const std::optional<std::int64_t>& v) { return v ? std::to_string(*v) : "nil"; }
std::string opt(const std::optional<bool>& v) { return v ? (*v ? "true" : "false") : "nil"; }

}  // namespace

TEST_GROUP(SecurityContext){};

// pkg/securitycontext util_test.go TestDetermineEffectiveSecurityContext
// (as the pod-level fields it has: runAsUser, runAsGroup, runAsNonRoot).
TEST(SecurityContext, DetermineEffectiveSecurityContextMergesPodUnderContainer) {
    struct Row {
        const char* name;
        std::function<void(Subject&)> setup;
        std::string user, group, non_root;
    };
    const Row rows[] = {
        {"neither: empty", [](Subject&) {}, "nil", "nil", "nil"},
        {"pod only: the pod's",
         [](Subject& p) {
             p.psc().run_as_user = 1;
             p.psc().run_as_group = 2;
             p.psc().run_as_non_root = true;
         },
         "1", "2", "true"},
        {"container only: the container's", [](Subject& p) { p.sc().run_as_user = 3; }, "3", "nil", "nil"},
        {"both: the container's wins field by field",
         [](Subject& p) {
             p.psc().run_as_user = 1;
             p.psc().run_as_group = 2;
             p.sc().run_as_user = 3;
             p.sc().run_as_non_root = false;
         },
         "3", "2", "false"},
    };
    for (const auto& row : rows) {
        Subject p;
        row.setup(p);
        const SecurityContext sc = determine_effective_security_context(p.spec, p.c);
        STRCMP_EQUAL_TEXT(row.user.c_str(), opt(sc.run_as_user).c_str(), row.name);
        STRCMP_EQUAL_TEXT(row.group.c_str(), opt(sc.run_as_group).c_str(), row.name);
        STRCMP_EQUAL_TEXT(row.non_root.c_str(), opt(sc.run_as_non_root).c_str(), row.name);
    }
}

// pkg/securitycontext util_test.go TestAddNoNewPrivileges.
TEST(SecurityContext, NoNewPrivsOnlyWhenAllowPrivilegeEscalationIsFalse) {
    SecurityContext sc;
    CHECK_FALSE_TEXT(add_no_new_privileges(sc), "nil: false");
    sc.allow_privilege_escalation = true;
    CHECK_FALSE_TEXT(add_no_new_privileges(sc), "true: false");
    sc.allow_privilege_escalation = false;
    CHECK_TEXT(add_no_new_privileges(sc), "false: true");
}

// pkg/volume/util util_test.go TestFsUserFrom: the one runAsUser of every
// init and app container (their own or the pod's), else none.
TEST(SecurityContext, FsUserFromIsTheOneRunAsUserOfEveryContainer) {
    Subject p;
    p.spec.containers = {Container{}, Container{}};
    p.spec.init_containers = {Container{}};
    STRCMP_EQUAL("nil", opt(fs_user_from(p.spec)).c_str());
    p.psc().run_as_user = 1000;
    STRCMP_EQUAL("1000", opt(fs_user_from(p.spec)).c_str());
    p.spec.containers[1].security_context.emplace().run_as_user = 1000;
    STRCMP_EQUAL("1000", opt(fs_user_from(p.spec)).c_str());
    p.spec.init_containers[0].security_context.emplace().run_as_user = 0;
    STRCMP_EQUAL("nil", opt(fs_user_from(p.spec)).c_str());
    p.spec.init_containers.clear();
    p.psc().run_as_user.reset();
    STRCMP_EQUAL("nil", opt(fs_user_from(p.spec)).c_str());
    PodSpec empty;
    STRCMP_EQUAL("nil", opt(fs_user_from(empty)).c_str());
}

// kuberuntime security_context.go determineEffectiveSecurityContext: fsGroup, then supplementalGroups.
TEST(SecurityContext, FsGroupComesBeforeSupplementalGroups) {
    Subject p;
    CHECK_TRUE(pod_supplemental_groups(p.spec).empty());
    p.psc().supplemental_groups = {5, 6};
    p.psc().fs_group = 4;
    CHECK(pod_supplemental_groups(p.spec) == (std::vector<std::int64_t>{4, 5, 6}));
}

// kuberuntime helpers_test.go TestGetSeccompProfile: container over pod, Unconfined when neither.
TEST(SecurityContext, SeccompProfileContainerOverPodElseUnconfined) {
    Subject p;
    STRCMP_EQUAL("Unconfined", effective_seccomp_profile(p.spec, p.c).type.c_str());
    p.psc().seccomp_profile = SeccompProfile{"RuntimeDefault", ""};
    STRCMP_EQUAL("RuntimeDefault", effective_seccomp_profile(p.spec, p.c).type.c_str());
    p.sc().seccomp_profile = SeccompProfile{"Localhost", "a.json"};
    STRCMP_EQUAL("a.json", effective_seccomp_profile(p.spec, p.c).localhost_profile.c_str());
}

// kuberuntime security_context_others_test.go TestVerifyRunAsNonRoot.
TEST(SecurityContext, VerifyRunAsNonRootAsTheKubelet) {
    struct Row {
        const char* name;
        std::function<void(Subject&)> setup;
        std::string image_user;
        std::string error;  // empty: allowed
    };
    const std::string where = " (pod: \"p_ns(u)\", container: c)";
    const Row rows[] = {
        {"Pass if SecurityContext is not set", [](Subject&) {}, "", ""},
        {"Pass if RunAsNonRoot is not set", [](Subject& p) { p.sc().run_as_user = 0; }, "", ""},
        {"Pass if RunAsNonRoot is false (image user is root)",
         [](Subject& p) { p.sc().run_as_non_root = false; }, "", ""},
        {"Pass if container's user and image's user aren't set and RunAsNonRoot is false",
         [](Subject& p) { p.sc().run_as_non_root = false; }, "", ""},
        {"Fail if container's RunAsUser is root and RunAsNonRoot is true",
         [](Subject& p) {
             p.sc().run_as_non_root = true;
             p.sc().run_as_user = 0;
         },
         "", "container's runAsUser breaks non-root policy" + where},
        {"Fail if image's user is root and RunAsNonRoot is true",
         [](Subject& p) { p.sc().run_as_non_root = true; }, "0",
         "container has runAsNonRoot and image will run as root" + where},
        {"Fail if no user is set and RunAsNonRoot is true (root)",
         [](Subject& p) { p.psc().run_as_non_root = true; }, "",
         "container has runAsNonRoot and image will run as root" + where},
        {"Fail if image's username is set and RunAsNonRoot is true",
         [](Subject& p) { p.sc().run_as_non_root = true; }, "test",
         "container has runAsNonRoot and image has non-numeric user (test), cannot verify user is non-root" +
             where},
        {"Pass if image's user is non-root and RunAsNonRoot is true",
         [](Subject& p) { p.sc().run_as_non_root = true; }, "1000:0", ""},
        {"Pass if container's user is non-root, even if image's isn't",
         [](Subject& p) {
             p.psc().run_as_non_root = true;
             p.sc().run_as_user = 1000;
         },
         "test", ""},
    };
    for (const auto& row : rows) {
        Subject p;
        p.c.name = "c";
        row.setup(p);
        auto err =
            verify_run_as_non_root(p.spec, p.c, format_pod("p", "ns", "u"), image_user(row.image_user));
        STRCMP_EQUAL_TEXT(row.error.c_str(), err.value_or("").c_str(), row.name);
    }
}

// containerd's getUserFromImage and the kubelet's getImageUser.
TEST(SecurityContext, ImageUserIsAUidOrAName) {
    CHECK(image_user("").uid == 0);
    CHECK(image_user("1000:50").uid == 1000);
    CHECK_FALSE(image_user("app:50").uid.has_value());
    STRCMP_EQUAL("app", image_user("app:50").username.c_str());
}

// runc libcontainer/user user_test.go TestGetExecUser, containerd's WithAdditionalGIDs.
TEST(SecurityContext, ImageUserResolvesThroughItsPasswdAndGroup) {
    const std::string passwd =
        "# comment\nroot:x:0:0:root:/root:/bin/sh\nadm:x:3:4:adm:/var/adm:/bin/false\n"
        "nobody:x:65534:65534::/:/bin/false\n";
    const std::string group = "root:x:0:root\nadm:x:4:root,adm\nwheel:x:10:adm\nnogroup:x:65534:\n";
    struct Row {
        const char* name;
        std::string user;
        ResolvedUser want;
        std::string error;
    };
    const Row rows[] = {
        {"empty: root", "", {0, 0, {0}}, ""},
        {"a name: its uid and group, and the groups that list it", "adm", {3, 4, {4, 10}}, ""},
        {"a uid in passwd: its group", "65534", {65534, 65534, {65534}}, ""},
        {"a uid not in passwd: gid 0", "4242", {4242, 0, {0}}, ""},
        {"name:group by name", "adm:wheel", {3, 10, {10}}, ""},
        {"uid:gid numbers as they are", "5:6", {5, 6, {6}}, ""},
        {"an unknown name", "ghost", {}, "unable to find user ghost"},
        {"an unknown group", "adm:ghosts", {}, "unable to find group ghosts"},
    };
    for (const auto& row : rows) {
        auto got = resolve_image_user(row.user, passwd, group);
        if (!row.error.empty()) {
            CHECK_FALSE_TEXT(got.ok(), row.name);
            CHECK_TEXT(got.error().message.find(row.error) != std::string::npos, row.name);
            continue;
        }
        CHECK_TEXT(got.ok(), row.name);
        CHECK_EQUAL_TEXT(row.want.uid, got.value().uid, row.name);
        CHECK_EQUAL_TEXT(row.want.gid, got.value().gid, row.name);
        CHECK_TEXT(row.want.additional_gids == got.value().additional_gids, row.name);
    }
}

TEST_GROUP(HostPath){};

// pkg/volume/hostpath host_path_test.go TestOSFileTypeChecker and checkTypeInternal.
TEST(HostPath, TypeChecksAsTheKubelet) {
    struct Row {
        const char* name;
        std::string type;
        FileKind kind;
        HostPathAction action;
        std::string error;
    };
    const Row rows[] = {
        {"no type: no check", "", FileKind::Missing, HostPathAction::None, ""},
        {"DirectoryOrCreate, missing: mkdir", "DirectoryOrCreate", FileKind::Missing,
         HostPathAction::MakeDirectory, ""},
        {"DirectoryOrCreate, a directory", "DirectoryOrCreate", FileKind::Directory, HostPathAction::None,
         ""},
        {"DirectoryOrCreate, a file", "DirectoryOrCreate", FileKind::File, HostPathAction::None,
         "hostPath type check failed: /x is not a directory"},
        {"Directory, missing", "Directory", FileKind::Missing, HostPathAction::None,
         "hostPath type check failed: /x is not a directory"},
        {"FileOrCreate, missing: a file", "FileOrCreate", FileKind::Missing, HostPathAction::MakeFile, ""},
        {"FileOrCreate, a directory", "FileOrCreate", FileKind::Directory, HostPathAction::None,
         "hostPath type check failed: /x is not a file"},
        {"File, a file", "File", FileKind::File, HostPathAction::None, ""},
        {"Socket, a file", "Socket", FileKind::File, HostPathAction::None,
         "hostPath type check failed: /x is not a socket file"},
        {"CharDevice, a char device", "CharDevice", FileKind::CharDevice, HostPathAction::None, ""},
        {"CharDevice, a block device", "CharDevice", FileKind::BlockDevice, HostPathAction::None,
         "hostPath type check failed: /x is not a character device"},
        {"BlockDevice, missing", "BlockDevice", FileKind::Missing, HostPathAction::None,
         "hostPath type check failed: /x is not a block device"},
        {"unknown type", "Pipe", FileKind::File, HostPathAction::None, "Pipe is an invalid volume type"},
    };
    for (const auto& row : rows) {
        auto got = host_path_check(row.type, "/x", row.kind);
        if (!row.error.empty()) {
            CHECK_FALSE_TEXT(got.ok(), row.name);
            STRCMP_EQUAL_TEXT(row.error.c_str(), got.error().message.c_str(), row.name);
            CHECK_TEXT(got.error().code == ErrorCode::VolumeSetup, row.name);
            continue;
        }
        CHECK_TEXT(got.ok(), row.name);
        CHECK_TEXT(got.value() == row.action, row.name);
    }
}

TEST_GROUP(Seccomp){};

// moby profiles/seccomp seccomp_test.go TestLoadProfile / setupSeccomp's
// includes and excludes, on the docker format Debian's containers-common ships.
TEST(Seccomp, DockerFormatFiltersRulesByCapabilityAndArchitecture) {
    const std::string profile = R"({
      "defaultAction": "SCMP_ACT_ERRNO", "defaultErrnoRet": 1,
      "archMap": [{"architecture": "SCMP_ARCH_X86_64", "subArchitectures": ["SCMP_ARCH_X86", "SCMP_ARCH_X32"]},
                  {"architecture": "SCMP_ARCH_AARCH64", "subArchitectures": ["SCMP_ARCH_ARM"]}],
      "syscalls": [
        {"names": ["read", "write"], "action": "SCMP_ACT_ALLOW", "args": [], "includes": {}, "excludes": {}},
        {"names": ["mount"], "action": "SCMP_ACT_ALLOW", "includes": {"caps": ["CAP_SYS_ADMIN"]}},
        {"names": ["arch_prctl"], "action": "SCMP_ACT_ALLOW", "includes": {"arches": ["amd64", "x32"]}},
        {"names": ["ptrace"], "action": "SCMP_ACT_ERRNO", "errnoRet": 1, "excludes": {"caps": ["CAP_SYS_PTRACE"]}},
        {"names": ["personality"], "action": "SCMP_ACT_ALLOW",
         "args": [{"index": 0, "value": 8, "valueTwo": 0, "op": "SCMP_CMP_EQ"}]}
      ]})";
    auto got = seccomp_to_oci(profile, "p.json", {"CAP_CHOWN"}, seccomp_arch("x86_64"));
    CHECK_TEXT(got.ok(), got.ok() ? "" : got.error().message.c_str());
    const Json& j = got.value();
    STRCMP_EQUAL(R"(["SCMP_ARCH_X86_64","SCMP_ARCH_X86","SCMP_ARCH_X32"])",
                 j["architectures"].dump().c_str());
    STRCMP_EQUAL("SCMP_ACT_ERRNO", j["defaultAction"].get<std::string>().c_str());
    CHECK_EQUAL(4u, j["syscalls"].size());  // mount needs CAP_SYS_ADMIN
    STRCMP_EQUAL("arch_prctl", j["syscalls"][1]["names"][0].get<std::string>().c_str());
    STRCMP_EQUAL("ptrace", j["syscalls"][2]["names"][0].get<std::string>().c_str());
    STRCMP_EQUAL(R"([{"index":0,"value":8,"op":"SCMP_CMP_EQ"}])", j["syscalls"][3]["args"].dump().c_str());

    auto admin =
        seccomp_to_oci(profile, "p.json", {"CAP_SYS_ADMIN", "CAP_SYS_PTRACE"}, seccomp_arch("aarch64"));
    CHECK_TRUE(admin.ok());
    STRCMP_EQUAL(R"(["SCMP_ARCH_AARCH64","SCMP_ARCH_ARM"])", admin.value()["architectures"].dump().c_str());
    // mount kept, arch_prctl (x86 only) and ptrace (excluded by CAP_SYS_PTRACE) gone.
    CHECK_EQUAL(3u, admin.value()["syscalls"].size());
    STRCMP_EQUAL("mount", admin.value()["syscalls"][1]["names"][0].get<std::string>().c_str());
}

TEST(Seccomp, BadProfilesAreErrorsNamingTheFile) {
    auto not_json = seccomp_to_oci("{", "/s/a.json", {}, "SCMP_ARCH_X86_64");
    CHECK_FALSE(not_json.ok());
    STRCMP_EQUAL("seccomp profile /s/a.json: not a JSON object", not_json.error().message.c_str());
    auto no_default = seccomp_to_oci("{}", "/s/a.json", {}, "SCMP_ARCH_X86_64");
    CHECK_FALSE(no_default.ok());
    STRCMP_EQUAL("seccomp profile /s/a.json: defaultAction: required", no_default.error().message.c_str());
}
