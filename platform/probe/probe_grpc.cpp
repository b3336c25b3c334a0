// The grpc probe (pkg/probe/grpc): grpc.health.v1.Health/Check as one HTTP/2
// request through HttpClient, with prior knowledge over cleartext as gRPC's
// insecure channel speaks it. What the bytes are and what an answer means
// is core's (core/grpc_health.h); here only the exchange and its transport
// errors.
#include <algorithm>

#include "core/grpc_health.h"
#include "platform/probe/prober_op.h"

namespace daemonlet::platform {

namespace {

// A HealthCheckResponse is a few bytes; anything much larger is not one.
constexpr std::size_t kMaxResponseBytes = 64 * 1024;

// What kubelet says when the call got no answer.
std::string transport_failure(const Error& e, const std::string& addr, std::int32_t timeout_s) {
    if (e.code == ErrorCode::Timeout) {
        // curl names the phase: "Connection timed out after N milliseconds"
        // while connecting, "Operation timed out after ..." once connected
        // (lib/multi.c multi_handle_timeout).
        if (e.message.rfind("Operation timed out", 0) == 0) return grpc_rpc_timeout(timeout_s);
        return grpc_connect_timeout(addr, timeout_s);
    }
    if (e.code == ErrorCode::Refused) return grpc_connect_failed(addr, e.message);
    // A connection that broke, or a server that does not speak HTTP/2:
    // grpc-go's transport reports Unavailable.
    return "error: health rpc probe failed: rpc error: code = Unavailable desc = " + e.message;
}

}  // namespace

Result<Prober::Id> Prober::run_grpc(Id id, const ProbeAction& a, Callback cb) {
    auto* op = new HttpOp;
    op->attach(this, id, std::move(cb));
    op->http = &http_;
    ops_[id] = op;
    const std::string host = a.host.empty() ? "127.0.0.1" : a.host;
    const std::string addr = join_host_port(host, a.port);
    const auto timeout_s = static_cast<std::int32_t>(std::max<std::int64_t>(1, a.timeout_ms / 1000));
    HttpRequest req;
    req.method = "POST";
    req.url = "http://" + addr + kGrpcHealthCheckPath;
    req.http2_prior_knowledge = true;
    req.body = grpc_health_request(a.service);
    // kubelet's context.WithTimeout bounds the dial and the call together.
    req.timeout_ms = a.timeout_ms;
    req.max_body_bytes = kMaxResponseBytes;
    req.fresh_connection = true;  // kubelet dials a new connection per probe
    req.netns = a.netns;
    req.headers = {{"Content-Type", "application/grpc"},
                   {"TE", "trailers"},
                   {"User-Agent", kUserAgent},
                   // grpc-go sends the context's deadline.
                   {"grpc-timeout", grpc_timeout_header(a.timeout_ms)}};
    auto rid = http_.request(req, [this, id, addr, timeout_s](Result<HttpResponse> r) {
        auto oit = ops_.find(id);
        if (oit == ops_.end()) return;
        auto* o = static_cast<HttpOp*>(oit->second);
        o->in_flight = false;
        if (!r) {
            o->deliver({ProbeOutcome::Failure, transport_failure(r.error(), addr, timeout_s)});
        } else {
            const HttpResponse& resp = r.value();
            GrpcProbeAnswer ans = grpc_health_answer(resp.status, resp.headers, resp.body, timeout_s);
            o->deliver({ans.outcome, std::move(ans.output)});
        }
        delete o;
    });
    if (!rid) {
        // No libcurl, or one built without HTTP/2: every run fails, saying so.
        op->deliver({ProbeOutcome::Failure, grpc_connect_failed(addr, rid.error().message)});
        delete op;
        return id;
    }
    op->req = rid.value();
    op->in_flight = true;
    return id;
}

}  // namespace daemonlet::platform
