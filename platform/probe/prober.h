// The probe actions of the exec runtime, each a libuv operation with its
// timeout (pkg/probe/exec, pkg/probe/tcp, pkg/probe/http as kubelet runs
// them). The exec runtime runs containers on the host, in the host's
// network, so:
//
//   exec       the command runs on the host with the container's env and
//              workingDir; exit 0 is success; killed (its process group) on
//              timeout, which is a failure ("command timed out", kubelet's
//              ExecProbeTimeout); output kept to 10 KiB (kubelet's
//              maxReadLength).
//   tcpSocket  a TCP connect to host:port; host defaults to 127.0.0.1 (the
//              pod IP of a host-network pod is the host's).
//   httpGet    GET scheme://host:port/path with the probe's headers, through
//              HttpClient; 200 <= status < 400 is success (3xx: kubelet's
//              Warning, which counts as success); HTTPS is not verified;
//              redirects are followed to the same host only, at most 10
//              (kubelet's RedirectChecker), a redirect elsewhere ends the
//              probe with that 3xx; body kept to 10 KiB; User-Agent
//              kube-probe/1.30 and Accept */* unless the probe sets them.
//   grpc       grpc.health.v1.Health/Check of the probe's service at
//              host:port (pkg/probe/grpc): an HTTP/2 POST with prior
//              knowledge over cleartext through HttpClient (libcurl with
//              nghttp2; no gRPC library), the bytes and the verdict pure
//              logic in core/grpc_health.h; SERVING is success, any other
//              status, error or the timeout (the whole call) a failure with
//              kubelet's message. A connection that cannot be made fails at
//              once ("error: failed to connect service at ..."), where
//              grpc-go's blocking dial would retry until the timeout.
//
// Contract: run() either fails synchronously (never calls back) or calls
// back exactly once, from the loop, unless cancel() or close() came first.
#pragma once

#include <uv.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/probe.h"
#include "core/result.h"
#include "platform/http/http_client.h"

namespace daemonlet::platform {

struct ProbeResult {
    ProbeOutcome outcome = ProbeOutcome::Unknown;
    std::string output;  // what kubelet puts in the event: the command's output, the error, the status
    // exec: the command's exit status when it exited by itself (-1: killed,
    // timed out, not started), for the lifecycle hooks' "exited with N".
    int exit_code = -1;
    // exec: what the command itself wrote (output says why it failed when
    // it wrote nothing), for the lifecycle hooks' message.
    std::string command_output = {};
};

// A probe's action resolved against its container: named ports looked up,
// $(VAR) in the command left as written (kubelet does not expand probe
// commands).
struct ProbeAction {
    enum class Type { Exec, TcpSocket, HttpGet, Grpc };
    Type type = Type::Exec;
    // exec
    std::vector<std::string> command;
    std::vector<std::pair<std::string, std::string>> env;
    std::string working_dir;
    // tcpSocket, httpGet, grpc
    std::string host;  // empty: 127.0.0.1
    int port = 0;
    // The network namespace to connect from (/proc/<pid>/ns/net of a
    // container with a network of its own); empty: the agent's.
    std::string netns;
    // httpGet
    std::string scheme = "HTTP";
    std::string path;
    std::vector<std::pair<std::string, std::string>> headers;
    // grpc: the service asked about ("": the whole server)
    std::string service;
    // Any HTTP response is a success, whatever its status: a lifecycle
    // hook's httpGet (kubelet's runHTTPHandler returns only the transport's
    // error), where a probe wants 200-399.
    bool any_status = false;
    std::int64_t timeout_ms = 1000;
};

// Turns a Handler of container `c` into an action, or says why it cannot run
// (a named port the container does not declare).
Result<ProbeAction> resolve_probe_action(const Handler& h, const Container& c,
                                         const std::vector<std::pair<std::string, std::string>>& env,
                                         std::int32_t timeout_seconds);

class Prober {
  public:
    using Callback = std::function<void(ProbeResult)>;
    using Id = std::uint64_t;

    explicit Prober(uv_loop_t* loop);
    Prober(const Prober&) = delete;
    Prober& operator=(const Prober&) = delete;
    ~Prober();

    Result<Id> run(const ProbeAction& action, Callback cb);
    void cancel(Id id);  // the callback is not called; a probe process is killed
    void close();        // cancels everything and closes every handle

    struct Op;

  private:
    uv_loop_t* loop_;
    HttpClient http_;
    Id next_ = 1;
    std::map<Id, Op*> ops_;
    bool closed_ = false;
    bool in_run_ = false;
    uv_timer_t* deferred_timer_;
    std::map<Id, std::pair<Callback, ProbeResult>> deferred_;

    Result<Id> run_exec(Id id, const ProbeAction& a, Callback cb);
    Result<Id> run_tcp(Id id, const ProbeAction& a, Callback cb);
    Result<Id> run_http(Id id, const ProbeAction& a, Callback cb);
    Result<Id> run_grpc(Id id, const ProbeAction& a, Callback cb);
    void http_attempt(Id id, std::string url, const ProbeAction& a, int redirects, std::string first_host);
    void finish(Id id, ProbeResult r);
};

}  // namespace daemonlet::platform
