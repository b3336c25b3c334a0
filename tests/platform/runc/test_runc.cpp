// A real container with Debian's runc: the busybox test image
// (tests/data/make_busybox_image.sh) imported into a real image store, its
// rootfs assembled, config.json built by core/oci_spec and written by
// platform/runc, and the bundle run by runc itself (`runc run --detach`,
// as a person would; the agent's way, `runc create` and `runc start` under
// daemonlet-shim, is agent.runc's). Checks what issue 5 asks of a
// container: its own PID and mount namespaces with the image's rootfs, a
// hostPath volume inside, the memory limit in its cgroup, and that
// Runc::remove cleans up.
//
// Needs root and runc; prints "SKIPPED: reason" and passes without them.

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>

#include "core/json.h"
#include "core/local_node.h"
#include "core/oci_spec.h"
#include "core/quantity.h"
#include "platform/image/image_store.h"
#include "platform/run_command.h"
#include "platform/runc/runc.h"
#include "platform/runc/runc_runtime.h"

#include <CppUTest/TestHarness.h>

using namespace daemonlet;
using namespace daemonlet::platform;
namespace fs = std::filesystem;

namespace {

std::string slurp(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    std::stringstream s;
    s << f.rdbuf();
    return s.str();
}

std::string trimmed(std::string s) {
    while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
    return s;
}

// Polls `done` until it holds or `seconds` pass: the container runs on its
// own, so the test waits on what it can observe, never a fixed sleep.
bool wait_for(const std::function<bool()>& done, int seconds = 10) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
    while (std::chrono::steady_clock::now() < deadline) {
        if (done()) return true;
        ::usleep(10 * 1000);
    }
    return done();
}

// Why runc cannot run a container here at all, or "" when it can try.
std::string skip_reason() {
    if (::geteuid() != 0) return "runc needs root (rootless containers are not supported)";
    if (std::system("runc --version >/dev/null 2>&1") != 0)
        return "runc is not installed (apt-get install runc)";
    if (::access("/bin/busybox", X_OK) != 0) return "/bin/busybox missing (apt-get install busybox-static)";
    return {};
}

// The directory of the container's memory cgroup as the host sees it,
// from /proc/<pid>/cgroup: "N:memory:/path" on cgroup v1, "0::/path" on v2.
std::string memory_limit_file(int pid) {
    std::istringstream lines(slurp("/proc/" + std::to_string(pid) + "/cgroup"));
    std::string line, unified;
    while (std::getline(lines, line)) {
        const auto a = line.find(':'), b = line.find(':', a + 1);
        const std::string controllers = line.substr(a + 1, b - a - 1);
        const std::string path = line.substr(b + 1);
        if (controllers == "memory") return "/sys/fs/cgroup/memory" + path + "/memory.limit_in_bytes";
        if (controllers.empty()) unified = path;
    }
    return "/sys/fs/cgroup" + unified + "/memory.max";
}

std::string ns_of(const std::string& pid, const char* ns) {
    std::error_code ec;
    return fs::read_symlink("/proc/" + pid + "/ns/" + ns, ec).string();
}

// `runc --root ROOT run --detach` of the bundle, stdout and stderr to the
// files: the container's pid, or 0 with runc's complaint on stderr.
int run_detached(const std::string& root, const std::string& id, const std::string& bundle,
                 const std::string& out, const std::string& err) {
    const int o = ::open(out.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0640);
    const int e = ::open(err.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0640);
    auto r = run_command({"runc", "--root", root, "run", "--detach", "--pid-file", bundle + "/container.pid",
                          "--bundle", bundle, id},
                         30000, o, e);
    ::close(o);
    ::close(e);
    if (!r || r.value().exit_code != 0) return 0;
    return std::atoi(slurp(bundle + "/container.pid").c_str());
}

// `runc state`: its status and pid, or "" when runc knows no such container.
std::pair<std::string, int> runc_state(const std::string& root, const std::string& id) {
    auto r = run_command({"runc", "--root", root, "state", id}, 30000);
    if (!r || r.value().exit_code != 0) return {"", 0};
    const Json j = Json::parse(r.value().out, nullptr, false);
    if (!j.is_object()) return {"", 0};
    return {j.value("status", std::string()), j.value("pid", 0)};
}

}  // namespace

TEST_GROUP(Runc) {
    std::string dir;
    std::string id;
    std::string skip;
    Runc runc{RuncOptions{}};
    void setup() override {
        skip = skip_reason();
        char tmpl[] = "/tmp/daemonlet-runc.XXXXXX";
        dir = ::mkdtemp(tmpl);
        id = "daemonlet-test-" + std::to_string(::getpid());
        runc = Runc(RuncOptions{"runc", dir + "/state", false});
    }
    void teardown() override {
        if (skip.empty()) (void)runc.remove(id);
        std::error_code ec;
        fs::remove_all(dir, ec);
    }
    // The busybox image imported and its rootfs assembled at <dir>/bundle/rootfs.
    ImportedImage busybox_rootfs() {
        const std::string archive = dir + "/busybox.tar";
        const std::string cmd =
            std::string("bash ") + DAEMONLET_TEST_DATA + "/make_busybox_image.sh " + archive + " >/dev/null";
        LONGS_EQUAL(0, std::system(cmd.c_str()));
        utsname u{};
        ::uname(&u);
        auto store =
            ImageStore::open(dir + "/images", host_platform(goarch_from_machine(u.machine), u.machine));
        CHECK_TEXT(store.ok(), store.ok() ? "" : store.error().message.c_str());
        auto imported = store.value().import_archive(archive);
        CHECK_TEXT(imported.ok(), imported.ok() ? "" : imported.error().message.c_str());
        auto image = store.value().find("busybox");
        CHECK(image.ok());
        auto st = store.value().assemble_rootfs(image.value(), dir + "/bundle/rootfs");
        CHECK_TEXT(st.ok(), st.ok() ? "" : st.error().message.c_str());
        return image.value();
    }
};

TEST(Runc, RunsTheImageInItsOwnNamespacesWithVolumeAndMemoryLimit) {
    if (!skip.empty()) {
        std::printf("\n  SKIPPED: %s\n", skip.c_str());
        return;
    }
    const ImportedImage image = busybox_rootfs();
    fs::create_directories(dir + "/hostvol");
    std::ofstream(dir + "/hostvol/hello.txt") << "written by the host\n";

    Container c;
    c.name = "app";
    // sh is PID 1 of its namespace, which ignores SIGTERM unless trapped; the
    // trap lets `runc kill ... TERM` end it as a graceful stop would.
    c.command = {"sh", "-c",
                 "trap 'echo terminated; exit 0' TERM; echo $$; echo /*; cat /data/hello.txt; echo ready; "
                 "sleep 30 & wait"};
    c.volume_mounts = {{"data", "/data", "", true, ""}};
    c.resources.limits["memory"] = parse_quantity("64Mi").value();
    c.resources.limits["cpu"] = parse_quantity("250m").value();
    OciSpecInput in;
    in.container = &c;
    in.image = image.config;
    in.volume_host_paths = {{"data", dir + "/hostvol"}};
    in.rootfs = "rootfs";
    in.hostname = "runc-test";
    // One level under the root of each hierarchy, so that delete removes it whole.
    in.cgroups_path = "/" + id;
    auto spec = build_oci_spec(in);
    CHECK_TEXT(spec.ok(), spec.ok() ? "" : spec.error().message.c_str());
    const std::string bundle = dir + "/bundle";
    auto written = Runc::write_bundle(bundle, spec.value());
    CHECK_TEXT(written.ok(), written.ok() ? "" : written.error().message.c_str());

    const std::string out = dir + "/stdout.log", err = dir + "/stderr.log";
    const auto start = std::chrono::steady_clock::now();
    const int pid = run_detached(dir + "/state", id, bundle, out, err);
    const double run_ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    CHECK_TEXT(pid > 0, slurp(err).c_str());
    std::printf("\n  runc run --detach: %.1f ms from bundle to running\n", run_ms);

    auto state = runc_state(dir + "/state", id);
    STRCMP_EQUAL("running", state.first.c_str());
    LONGS_EQUAL(pid, state.second);

    CHECK_TEXT(wait_for([&] { return slurp(out).find("ready\n") != std::string::npos; }),
               ("no \"ready\" on stdout: " + slurp(out) + " stderr: " + slurp(err)).c_str());
    std::istringstream lines(slurp(out));
    std::string own_pid, root_listing, volume_file;
    std::getline(lines, own_pid);
    std::getline(lines, root_listing);
    std::getline(lines, volume_file);
    // Its own PID namespace: the shell is PID 1 there, another pid here.
    STRCMP_EQUAL("1", own_pid.c_str());
    CHECK(pid != 1);
    const std::string host_pid = std::to_string(pid);
    CHECK(ns_of(host_pid, "pid") != ns_of("self", "pid"));
    // No hostNetwork: a network namespace of its own too.
    CHECK(ns_of(host_pid, "net") != ns_of("self", "net"));
    // Its own mount namespace with the image's rootfs: bin and the spec's
    // mount points, nothing of the host's (no /work, /usr, /etc).
    CHECK(ns_of(host_pid, "mnt") != ns_of("self", "mnt"));
    STRCMP_EQUAL("/bin /data /dev /proc /run /sys", root_listing.c_str());
    // The hostPath volume, read-only inside.
    STRCMP_EQUAL("written by the host", volume_file.c_str());
    // The memory limit, read from the host side of its cgroup.
    const std::string limit_file = memory_limit_file(pid);
    CHECK_TEXT(limit_file.find(id) != std::string::npos, limit_file.c_str());
    STRCMP_EQUAL_TEXT("67108864", trimmed(slurp(limit_file)).c_str(), limit_file.c_str());
    // The cpu limit as the kubelet's milliCPUToQuota makes it (cgroup v1
    // cpu controller; the same directory under cpu/).
    if (limit_file.rfind("/sys/fs/cgroup/memory/", 0) == 0) {
        const std::string cpu_dir =
            "/sys/fs/cgroup/cpu/" +
            fs::path(limit_file).parent_path().lexically_relative("/sys/fs/cgroup/memory").string();
        STRCMP_EQUAL("25000", trimmed(slurp(cpu_dir + "/cpu.cfs_quota_us")).c_str());
        STRCMP_EQUAL("100000", trimmed(slurp(cpu_dir + "/cpu.cfs_period_us")).c_str());
        STRCMP_EQUAL("256", trimmed(slurp(cpu_dir + "/cpu.shares")).c_str());
    }
    STRCMP_EQUAL("", slurp(err).c_str());

    // A graceful stop: TERM reaches the trap, the container stops.
    LONGS_EQUAL(0, ::kill(pid, SIGTERM));
    CHECK_TEXT(wait_for([&] { return runc_state(dir + "/state", id).first == "stopped"; }),
               "still running after SIGTERM");
    CHECK(slurp(out).find("terminated\n") != std::string::npos);
    // Delete removes runc's state and the cgroup.
    auto removed = runc.remove(id);
    CHECK_TEXT(removed.ok(), removed.ok() ? "" : removed.error().message.c_str());
    STRCMP_EQUAL("", runc_state(dir + "/state", id).first.c_str());
    CHECK_TEXT(!fs::exists(fs::path(limit_file).parent_path()), limit_file.c_str());
    // Deleting what is gone is no error.
    CHECK(runc.remove(id).ok());
}

// Privileged, as the kubelet asks of a node agent's DaemonSet: the agent's
// own capabilities (containerd's WithAllCurrentCapabilities; all known ones
// would fail here, where CAP_SYS_RESOURCE is outside the bounding set), no
// masked paths, /sys read-write.
TEST(Runc, RunsAPrivilegedContainerWithTheAgentsCapabilities) {
    if (!skip.empty()) {
        std::printf("\n  SKIPPED: %s\n", skip.c_str());
        return;
    }
    const ImportedImage image = busybox_rootfs();
    Container c;
    c.name = "priv";
    c.command = {"sh", "-c", "cat /proc/self/status /proc/self/mounts"};
    c.security_context.emplace();
    c.security_context->privileged = true;
    OciSpecInput in;
    in.container = &c;
    in.image = image.config;
    in.rootfs = "rootfs";
    in.hostname = "priv";
    in.cgroups_path = "/" + id;
    auto caps = current_capabilities();
    CHECK_TEXT(caps.ok(), caps.ok() ? "" : caps.error().message.c_str());
    in.current_capabilities = caps.value();
    auto spec = build_oci_spec(in);
    CHECK_TEXT(spec.ok(), spec.ok() ? "" : spec.error().message.c_str());
    const std::string bundle = dir + "/bundle";
    CHECK(Runc::write_bundle(bundle, spec.value()).ok());
    const std::string out = dir + "/stdout.log", err = dir + "/stderr.log";
    CHECK_TEXT(run_detached(dir + "/state", id, bundle, out, err) > 0, slurp(err).c_str());
    CHECK_TEXT(wait_for([&] { return runc_state(dir + "/state", id).first == "stopped"; }), "still running");
    const std::string text = slurp(out);
    const std::string host = slurp("/proc/self/status");
    auto cap_eff = [](const std::string& status) {
        const auto at = status.find("CapEff:");
        return at == std::string::npos ? std::string() : status.substr(at, status.find('\n', at) - at);
    };
    CHECK(!cap_eff(host).empty());
    STRCMP_EQUAL(cap_eff(host).c_str(), cap_eff(text).c_str());
    CHECK_TEXT(text.find("sysfs /sys sysfs rw,") != std::string::npos, text.c_str());
    CHECK(runc.remove(id).ok());
}

// container_oom_kills finds the memory cgroup as runc recorded it
// (state.json cgroup_paths) and reads its oom_kill counter; the files
// here are the shapes runc 1.1.5 and the kernel write (what
// agent.runc_oom and the cgroup2 VM step check against the real ones).
TEST_GROUP(RuncOomKills) {
    std::string dir;
    void setup() override {
        char tmpl[] = "/tmp/daemonlet-runc-oom.XXXXXX";
        dir = ::mkdtemp(tmpl);
    }
    void teardown() override {
        std::error_code ec;
        fs::remove_all(dir, ec);
    }
    void write(const std::string& path, const std::string& text) {
        fs::create_directories(fs::path(path).parent_path());
        std::ofstream(path) << text;
    }
    // runc's state.json of container `id` with these cgroup_paths (JSON).
    void runc_state(const std::string& id, const std::string& cgroup_paths) {
        write(dir + "/runc/" + id + "/state.json",
              "{\"id\":\"" + id + "\",\"init_process_pid\":0,\"cgroup_paths\":" + cgroup_paths + "}");
    }
};

TEST(RuncOomKills, CgroupV1ReadsTheMemoryHierarchysOomControlEvenBesideAUnifiedOne) {
    runc_state("a",
               "{\"\":\"" + dir + "/unified/daemonlet/a\",\"memory\":\"" + dir + "/memory/daemonlet/a\"}");
    write(dir + "/memory/daemonlet/a/memory.oom_control", "oom_kill_disable 0\nunder_oom 0\noom_kill 2\n");
    auto kills = container_oom_kills(dir + "/runc", "a");
    CHECK_TEXT(kills.ok(), kills.ok() ? "" : kills.error().message.c_str());
    CHECK_EQUAL(2u, kills.value());
}

TEST(RuncOomKills, CgroupV2ReadsMemoryEvents) {
    runc_state("b", "{\"\":\"" + dir + "/v2/daemonlet/b\"}");
    write(dir + "/v2/daemonlet/b/memory.events",
          "low 0\nhigh 0\nmax 9\noom 1\noom_kill 1\noom_group_kill 0\n");
    auto kills = container_oom_kills(dir + "/runc", "b");
    CHECK_TEXT(kills.ok(), kills.ok() ? "" : kills.error().message.c_str());
    CHECK_EQUAL(1u, kills.value());
}

TEST(RuncOomKills, NoContainerNoCgroupOrNoCounterIsAnErrorNamingTheFile) {
    auto none = container_oom_kills(dir + "/runc", "missing");
    CHECK_FALSE(none.ok());
    CHECK(none.error().message.find("missing/state.json") != std::string::npos);

    runc_state("gone", "{\"memory\":\"" + dir + "/memory/daemonlet/gone\"}");
    auto gone = container_oom_kills(dir + "/runc", "gone");
    CHECK_FALSE(gone.ok());
    CHECK(gone.error().message.find("gone/memory.oom_control") != std::string::npos);

    runc_state("old", "{\"memory\":\"" + dir + "/memory/daemonlet/old\"}");
    write(dir + "/memory/daemonlet/old/memory.oom_control", "oom_kill_disable 0\nunder_oom 0\n");
    auto old = container_oom_kills(dir + "/runc", "old");
    CHECK_FALSE(old.ok());
    STRCMP_EQUAL("unsupported", old.error().code_name());

    runc_state("nopaths", "{}");
    auto nopaths = container_oom_kills(dir + "/runc", "nopaths");
    CHECK_FALSE(nopaths.ok());
    CHECK(nopaths.error().message.find("cgroup_paths") != std::string::npos);
}

// nodeInfo.containerRuntimeVersion "<runtime>://<version>", as the CRI's
// Version answers it (kubelet's node status setter VersionInfo): runc's
// from `runc --version`'s first line.
TEST_GROUP(RuncVersion){};

TEST(RuncVersion, TheFirstLineOfRuncVersionIsTheRuntimeVersion) {
    STRCMP_EQUAL("runc://1.1.5+ds1",
                 runc_version_string("runc version 1.1.5+ds1\ncommit: 1.1.5+ds1-1+deb12u1\nspec: 1.0.2-dev\n")
                     .c_str());
    STRCMP_EQUAL("runc://1.2.0", runc_version_string("runc version 1.2.0").c_str());
    STRCMP_EQUAL("", runc_version_string("crun version 1.8.1\n").c_str());
    STRCMP_EQUAL("", runc_version_string("runc version \n").c_str());
    STRCMP_EQUAL("", runc_version_string("").c_str());
}
