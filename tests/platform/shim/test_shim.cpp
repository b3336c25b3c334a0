// The daemonlet-shim process itself: detached from the agent (own session,
// none of the agent's fds) and small (its resident set, paid per container).
#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <string>

#include "platform/shim/shim_protocol.h"
#include "tests/platform/runtime_fixture.h"

#include <CppUTest/TestHarness.h>

using namespace daemonlet;
using namespace daemonlet::testing;

namespace {

// Where each open fd of `pid` points.
std::vector<std::string> fd_targets(pid_t pid) {
    std::vector<std::string> out;
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/fd", ec))
        out.push_back(std::filesystem::read_symlink(e.path(), ec).string());
    return out;
}

// A "Vm...:" or "Rss...:" figure of /proc/<pid>/status, in kB.
long status_kb(pid_t pid, const std::string& key) {
    std::string status = read_text("/proc/" + std::to_string(pid) + "/status");
    auto at = status.find("\n" + key + ":");
    return at == std::string::npos ? -1 : std::stol(status.substr(at + key.size() + 2));
}

}  // namespace

TEST_GROUP(ShimProcess) {
    RuntimeFixture f;
    void setup() override { f.setup(); }
    void teardown() override { f.teardown(); }
};

TEST(ShimProcess, ShimAndContainerAreDetachedFromTheAgent) {
    // An fd the agent forgot to mark close-on-exec must not reach them.
    std::string marker = f.dir + "/agent-only-file";
    int leaky = ::open(marker.c_str(), O_WRONLY | O_CREAT, 0600);
    CHECK(leaky >= 0);
    std::string id = f.start(launch({"/bin/sleep", "1000"}));
    ::close(leaky);
    auto shim_pid = static_cast<pid_t>(f.state_field(id, shim::kShimPid));
    auto pid = static_cast<pid_t>(f.state_field(id, shim::kPid));

    // Sessions of their own: the agent's group signals and its terminal do not reach them.
    LONGS_EQUAL(shim_pid, ::getsid(shim_pid));
    LONGS_EQUAL(pid, ::getsid(pid));
    LONGS_EQUAL(pid, ::getpgid(pid));
    CHECK(::getsid(0) != ::getsid(shim_pid));

    for (pid_t p : {shim_pid, pid}) {
        auto fds = fd_targets(p);
        CHECK(!fds.empty());
        for (const auto& target : fds)
            CHECK_TEXT(target != marker, ("fd of pid " + std::to_string(p) + " on " + target).c_str());
    }
    // The shim's stdin and stdout are /dev/null, its stderr shim.log.
    auto shim_fd = [&](int fd) {
        return std::filesystem::read_symlink("/proc/" + std::to_string(shim_pid) + "/fd/" +
                                             std::to_string(fd))
            .string();
    };
    STRCMP_EQUAL("/dev/null", shim_fd(0).c_str());
    STRCMP_EQUAL("/dev/null", shim_fd(1).c_str());
    STRCMP_EQUAL((f.dir + "/containers/" + id + "/shim.log").c_str(), shim_fd(2).c_str());

    CHECK(f.runtime->stop(id).ok());
    f.wait_exit(id);
    // Nothing went wrong in the shim (sanitizer reports would be there).
    STRCMP_EQUAL("", read_text(f.dir + "/containers/" + id + "/shim.log").c_str());
}

TEST(ShimProcess, ShimResidentSetIsAtMostOneMebibyte) {
    std::string id = f.start(launch({"/bin/sh", "-c", "echo started; exec sleep 1000"}));
    auto shim_pid = static_cast<pid_t>(f.state_field(id, shim::kShimPid));
    std::string log = f.dir + "/logs/ns_pod_uid-1/c/0.log";
    // Measured once it has done its work: started the container, logged a line.
    CHECK(f.run_until([&] { return read_text(log).find("started") != std::string::npos; }));
    long rss = status_kb(shim_pid, "VmRSS");
    long anon = status_kb(shim_pid, "RssAnon");
    long file = status_kb(shim_pid, "RssFile");
    char figures[160];
    std::snprintf(figures, sizeof figures,
                  "\ndaemonlet-shim resident set: VmRSS %ld kB (RssAnon %ld kB, RssFile %ld kB)\n", rss, anon,
                  file);
    UT_PRINT(figures);
    CHECK(rss > 0);
#if !defined(DAEMONLET_SANITIZE)
    // Under the sanitizers the figure measures them, not the shim.
    CHECK_TEXT(rss <= 1024, figures);
#endif
    CHECK(f.runtime->stop(id).ok());
    f.wait_exit(id);
}
