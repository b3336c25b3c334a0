// The exec runtime's probe actions on a real loop: real processes for exec,
// real sockets for tcpSocket and httpGet (http_responder.h). Each row is an
// action and the outcome kubelet's prober gives for it (pkg/probe/exec,
// pkg/probe/tcp, pkg/probe/http: DoHTTPProbe, RedirectChecker); every run
// calls back exactly once, from the loop.
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "platform/probe/prober.h"
#include "tests/platform/http/http_responder.h"
#include "tests/platform/runtime_fixture.h"

#include <CppUTest/TestHarness.h>

using namespace daemonlet;
using namespace daemonlet::testing;
using platform::ProbeAction;

namespace {

ProbeAction exec_action(std::vector<std::string> cmd, std::int64_t timeout_ms = 2000) {
    ProbeAction a;
    a.type = ProbeAction::Type::Exec;
    a.command = std::move(cmd);
    a.timeout_ms = timeout_ms;
    return a;
}
ProbeAction tcp_action(int port, std::int64_t timeout_ms = 2000) {
    ProbeAction a;
    a.type = ProbeAction::Type::TcpSocket;
    a.port = port;
    a.timeout_ms = timeout_ms;
    return a;
}
ProbeAction http_action(int port, std::string path, std::int64_t timeout_ms = 2000) {
    ProbeAction a;
    a.type = ProbeAction::Type::HttpGet;
    a.port = port;
    a.path = std::move(path);
    a.timeout_ms = timeout_ms;
    return a;
}

ProbeAction grpc_action(int port, std::int64_t timeout_ms = 2000) {
    ProbeAction a;
    a.type = ProbeAction::Type::Grpc;
    a.port = port;
    a.service = "ready";
    a.timeout_ms = timeout_ms;
    return a;
}

// A port nothing listens on.
int closed_port(uv_loop_t* loop) {
    uv_tcp_t t;
    uv_tcp_init(loop, &t);
    sockaddr_in a{};
    uv_ip4_addr("127.0.0.1", 0, &a);
    uv_tcp_bind(&t, reinterpret_cast<const sockaddr*>(&a), 0);
    sockaddr_storage bound{};
    int len = sizeof bound;
    uv_tcp_getsockname(&t, reinterpret_cast<sockaddr*>(&bound), &len);
    uv_close(reinterpret_cast<uv_handle_t*>(&t), nullptr);
    uv_run(loop, UV_RUN_NOWAIT);
    return ntohs(reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
}

}  // namespace

TEST_GROUP(Prober) {
    uv_loop_t loop{};
    HttpResponder* server = nullptr;
    platform::Prober* prober = nullptr;

    void setup() override {
        uv_loop_init(&loop);
        server = new HttpResponder(&loop);
        prober = new platform::Prober(&loop);
    }
    void teardown() override {
        prober->close();
        server->close();
        uv_run(&loop, UV_RUN_DEFAULT);
        delete prober;
        delete server;
        LONGS_EQUAL(0, uv_loop_close(&loop));
    }
    platform::ProbeResult run(const ProbeAction& a, const std::string& name) {
        int calls = 0;
        platform::ProbeResult got;
        auto id = prober->run(a, [&](platform::ProbeResult r) {
            ++calls;
            got = std::move(r);
        });
        CHECK_TEXT(id.ok(), name.c_str());
        LONGS_EQUAL_TEXT(0, calls, (name + ": called back inside run()").c_str());
        CHECK_TEXT(run_until(&loop, [&] { return calls > 0; }), (name + ": no callback").c_str());
        run_until(
            &loop, [] { return false; }, std::chrono::milliseconds(30));
        LONGS_EQUAL_TEXT(1, calls, (name + ": called back more than once").c_str());
        return got;
    }
};

TEST(Prober, ActionsGiveKubeletsOutcomes) {
    const int port = server->port();
    const int refused = closed_port(&loop);
    struct Row {
        const char* name;
        ProbeAction action;
        ProbeOutcome expected;
        const char* output_has;
    };
    // A listener that never accepts: the kernel completes the handshake,
    // nothing ever answers.
    uv_tcp_t mute;
    uv_tcp_init(&loop, &mute);
    sockaddr_in any{};
    uv_ip4_addr("127.0.0.1", 0, &any);
    uv_tcp_bind(&mute, reinterpret_cast<const sockaddr*>(&any), 0);
    uv_listen(reinterpret_cast<uv_stream_t*>(&mute), 4, [](uv_stream_t*, int) {});
    sockaddr_storage mute_addr{};
    int mute_len = sizeof mute_addr;
    uv_tcp_getsockname(&mute, reinterpret_cast<sockaddr*>(&mute_addr), &mute_len);
    const int mute_port = ntohs(reinterpret_cast<sockaddr_in*>(&mute_addr)->sin_port);
    const Row rows[] = {
        {"exec: exit 0 is Success (pkg/probe/exec)", exec_action({"/bin/true"}), ProbeOutcome::Success, ""},
        {"exec: a non-zero exit is Failure, with the command's output",
         exec_action({"/bin/sh", "-c", "echo not ready; exit 3"}), ProbeOutcome::Failure, "not ready"},
        {"exec: ExecProbeTimeout: a command over timeoutSeconds is killed and Failure",
         exec_action({"/bin/sleep", "30"}, 200), ProbeOutcome::Failure, "timed out"},
        {"exec: a command that cannot start fails (as a runtime's exit 127)",
         exec_action({"/nonexistent/probe"}), ProbeOutcome::Failure, "no such file"},
        {"tcp: a listening port is Success (pkg/probe/tcp DoTCPProbe)", tcp_action(port),
         ProbeOutcome::Success, ""},
        {"tcp: connection refused is Failure", tcp_action(refused), ProbeOutcome::Failure, "refused"},
        {"http: 200 is Success (DoHTTPProbe: 200 <= code < 400)", http_action(port, "/ok"),
         ProbeOutcome::Success, "fine"},
        {"http: 500 is Failure", http_action(port, "/status/500"), ProbeOutcome::Failure, "statuscode: 500"},
        {"http: 399 is still Success", http_action(port, "/status/399"), ProbeOutcome::Success, ""},
        {"http: 400 is Failure", http_action(port, "/status/400"), ProbeOutcome::Failure, "statuscode: 400"},
        {"http: RedirectChecker follows a same-host redirect", http_action(port, "/redirect"),
         ProbeOutcome::Success, "fine"},
        {"http: a redirect to another host ends the probe with the 3xx: Warning, counted as Success",
         http_action(port, "/elsewhere"), ProbeOutcome::Success, "Probe terminated redirects"},
        {"http: RedirectChecker stops after 10 redirects: Failure", http_action(port, "/loop"),
         ProbeOutcome::Failure, "stopped after 10 redirects"},
        {"http: no answer within timeoutSeconds is Failure", http_action(port, "/silent", 200),
         ProbeOutcome::Failure, "imed out"},
        {"http: connection refused is Failure", http_action(refused, "/ok"), ProbeOutcome::Failure, "onnect"},
        {"grpc: nothing listening is grpc.go's dial error (at once, where grpc-go retries to the timeout)",
         grpc_action(refused), ProbeOutcome::Failure, "error: failed to connect service at \"127.0.0.1:"},
        {"grpc: an HTTP/1.1 server on the port: the HTTP/2 call fails (grpc-go: Unavailable)",
         grpc_action(port), ProbeOutcome::Failure,
         "error: health rpc probe failed: rpc error: code = Unavailable desc = "},
        {"grpc: no answer within timeoutSeconds is grpc.go's DeadlineExceeded message",
         grpc_action(mute_port, 1000), ProbeOutcome::Failure,
         "timeout: health rpc did not complete within 1s"},
    };
    for (const auto& row : rows) {
        platform::ProbeResult r = run(row.action, row.name);
        CHECK_EQUAL_TEXT(static_cast<int>(row.expected), static_cast<int>(r.outcome), row.name);
        CHECK_TEXT(r.output.find(row.output_has) != std::string::npos,
                   (std::string(row.name) + ": " + r.output).c_str());
    }
    uv_close(reinterpret_cast<uv_handle_t*>(&mute), nullptr);
}

// A container with a network of its own is probed from inside it: the
// socket is made in the namespace given (the kubelet's probes dial the
// pod's IP, which only the pod's namespace reaches here: tcp, http and
// grpc alike). The agent's own namespace stands in
// for a container's here (entering it needs root, as runc does); agent.runc
// probes a real container's.
TEST(Prober, NetworkProbesConnectFromTheNamespaceGiven) {
    const int port = server->port();
    auto in = [](ProbeAction a, const char* netns) {
        a.netns = netns;
        return a;
    };
    struct Row {
        const char* name;
        ProbeAction action;
        ProbeOutcome expected;
        const char* output_has;
        bool needs_root;
    };
    const Row rows[] = {
        {"tcp in a namespace", in(tcp_action(port), "/proc/self/ns/net"), ProbeOutcome::Success, "", true},
        {"http in a namespace", in(http_action(port, "/ok"), "/proc/self/ns/net"), ProbeOutcome::Success,
         "fine", true},
        {"tcp: a namespace that is gone is Failure, named", in(tcp_action(port), "/proc/999999999/ns/net"),
         ProbeOutcome::Failure, "network namespace /proc/999999999/ns/net", false},
        {"http: a namespace that is gone is Failure, named",
         in(http_action(port, "/ok"), "/proc/999999999/ns/net"), ProbeOutcome::Failure,
         "network namespace /proc/999999999/ns/net", false},
        // grpc: the call reaches the server from inside the namespace (its
        // HTTP/1.1 answer fails the HTTP/2 call, as outside it), and a gone
        // namespace is named, as for tcp and http.
        {"grpc in a namespace", in(grpc_action(port), "/proc/self/ns/net"), ProbeOutcome::Failure,
         "error: health rpc probe failed: rpc error: code = Unavailable desc = ", true},
        {"grpc: a namespace that is gone is Failure, named", in(grpc_action(port), "/proc/999999999/ns/net"),
         ProbeOutcome::Failure, "network namespace /proc/999999999/ns/net", false},
    };
    for (const auto& row : rows) {
        if (row.needs_root && ::geteuid() != 0) continue;
        platform::ProbeResult r = run(row.action, row.name);
        CHECK_EQUAL_TEXT(static_cast<int>(row.expected), static_cast<int>(r.outcome),
                         (std::string(row.name) + ": " + r.output).c_str());
        CHECK_TEXT(r.output.find(row.output_has) != std::string::npos,
                   (std::string(row.name) + ": " + r.output).c_str());
    }
}

TEST(Prober, HttpSendsProbeHeadersAndKubeletsDefaults) {
    ProbeAction a = http_action(server->port(), "/headers");
    a.headers.emplace_back("X-Probe", "yes");
    platform::ProbeResult r = run(a, "headers");
    CHECK(r.outcome == ProbeOutcome::Success);
    CHECK_TEXT(r.output.find("X-Probe: yes") != std::string::npos, r.output.c_str());
    CHECK_TEXT(r.output.find("User-Agent: kube-probe/") != std::string::npos, r.output.c_str());
    CHECK_TEXT(r.output.find("Accept: */*") != std::string::npos, r.output.c_str());
}

TEST(Prober, RedirectsFollowedAtMostTenTimes) {
    run(http_action(server->port(), "/loop"), "loop");
    // RedirectChecker errs when via already holds 10 requests: the first and 9 redirects are sent.
    LONGS_EQUAL(10, server->paths.size());
}

TEST(Prober, ExecRunsWithTheContainersEnvAndWorkingDir) {
    char tmpl[] = "/tmp/daemonlet-probe-XXXXXX";
    std::string dir = ::mkdtemp(tmpl);
    ProbeAction a =
        exec_action({"/bin/sh", "-c", "test \"$MARK\" = here && test \"$(pwd)\" = \"$DIR\" && echo ok"});
    a.env = {{"MARK", "here"}, {"DIR", dir}};
    a.working_dir = dir;
    platform::ProbeResult r = run(a, "env");
    CHECK_TEXT(r.outcome == ProbeOutcome::Success, r.output.c_str());
    ::rmdir(dir.c_str());
}

TEST(Prober, ExecOutputIsBoundedAndATimeoutKillsTheProcessGroup) {
    platform::ProbeResult big = run(exec_action({"/bin/sh", "-c", "yes | head -c 100000; exit 1"}), "big");
    CHECK(big.outcome == ProbeOutcome::Failure);
    LONGS_EQUAL(10 * 1024, big.output.size());
    // A child of the probe that holds the output open is killed with it.
    platform::ProbeResult slow =
        run(exec_action({"/bin/sh", "-c", "sleep 30 & sleep 30; wait"}, 200), "group");
    CHECK(slow.outcome == ProbeOutcome::Failure);
}

TEST(Prober, ExecEndsAtTheTimeoutWhenADaemonKeepsItsOutputOpen) {
    // The daemon is in its own session, out of reach of the group kill (the
    // fifo says when it is); the probe's exit status decides, and the wait
    // for more output ends at the timeout rather than when the daemon exits.
    char tmpl[] = "/tmp/daemonlet-probe-XXXXXX";
    const std::string dir = ::mkdtemp(tmpl);
    const std::string fifo = dir + "/up";
    const std::string script = "mkfifo " + fifo + "; setsid sh -c 'echo > " + fifo +
                               "; exec sleep 5' & read x < " + fifo + "; echo started; exit 0";
    auto start = std::chrono::steady_clock::now();
    platform::ProbeResult r = run(exec_action({"/bin/sh", "-c", script}, 300), "daemon");
    auto took = std::chrono::steady_clock::now() - start;
    CHECK_TEXT(r.outcome == ProbeOutcome::Success, r.output.c_str());
    STRCMP_EQUAL("started\n", r.output.c_str());
    CHECK(took >= std::chrono::milliseconds(300));
    CHECK(took < std::chrono::seconds(3));
    ::unlink(fifo.c_str());
    ::rmdir(dir.c_str());
}

TEST(Prober, CancelNeverCallsBackAndKillsTheProcess) {
    char tmpl[] = "/tmp/daemonlet-probe-XXXXXX";
    const std::string dir = ::mkdtemp(tmpl);
    const std::string pidfile = dir + "/pid";
    bool called = false;
    auto id = prober->run(exec_action({"/bin/sh", "-c", "echo $$ > " + pidfile + "; exec sleep 30"}, 60'000),
                          [&](platform::ProbeResult) { called = true; });
    CHECK(id.ok());
    auto tcp = prober->run(tcp_action(server->port()), [&](platform::ProbeResult) { called = true; });
    auto http = prober->run(http_action(server->port(), "/silent", 60'000),
                            [&](platform::ProbeResult) { called = true; });
    CHECK(tcp.ok() && http.ok());
    prober->cancel(tcp.value());  // before the loop runs: a loopback connect succeeds at once
    pid_t pid = 0;
    CHECK(run_until(&loop, [&] {
        pid = static_cast<pid_t>(std::atoi(read_text(pidfile).c_str()));
        return pid > 0;
    }));
    prober->cancel(id.value());
    prober->cancel(http.value());
    // The probe process is killed and reaped through the loop.
    CHECK(run_until(&loop, [&] { return ::kill(pid, 0) != 0; }));
    CHECK_FALSE(called);
    ::unlink(pidfile.c_str());
    ::rmdir(dir.c_str());
}

TEST(Prober, ResolvesNamedPortsAsKubelet) {
    Container c;
    c.name = "web";
    c.ports.push_back({"http", 8080, 0, "TCP", ""});
    Handler h;
    h.tcp_socket = TCPSocketAction{IntOrString::from_string("http"), ""};
    auto a = platform::resolve_probe_action(h, c, {}, 1);
    CHECK(a.ok());
    LONGS_EQUAL(8080, a.value().port);
    h.tcp_socket = TCPSocketAction{IntOrString::from_string("metrics"), ""};
    auto missing = platform::resolve_probe_action(h, c, {}, 1);
    CHECK_FALSE(missing.ok());
    CHECK(missing.error().message.find("couldn't find port: metrics") != std::string::npos);
    h.tcp_socket = TCPSocketAction{IntOrString::from_int(70000), ""};
    CHECK_FALSE(platform::resolve_probe_action(h, c, {}, 1).ok());
    // GRPCAction: a number and the service, the timeout bounding the call.
    Handler g;
    g.grpc = GRPCAction{9090, "ready"};
    auto ga = platform::resolve_probe_action(g, c, {}, 3);
    CHECK(ga.ok());
    CHECK(ga.value().type == ProbeAction::Type::Grpc);
    LONGS_EQUAL(9090, ga.value().port);
    STRCMP_EQUAL("ready", ga.value().service.c_str());
    LONGS_EQUAL(3000, ga.value().timeout_ms);
    g.grpc = GRPCAction{0, ""};
    CHECK_FALSE(platform::resolve_probe_action(g, c, {}, 1).ok());
}
