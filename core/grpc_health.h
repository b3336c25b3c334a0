// gRPC probes (GA in Kubernetes 1.27) as pure logic: the bytes of a
// grpc.health.v1.Health/Check call and what its answer means, as kubelet's
// pkg/probe/grpc/grpc.go (grpcProber.Probe) reports it. The agent sends the
// request over HTTP/2 with libcurl (platform/probe/probe_net.cpp) rather than
// linking gRPC: the call is one unary request, and a board without
// containerd must not pull gRPC in.
//
// The wire format (the gRPC over HTTP/2 protocol, doc/PROTOCOL-HTTP2.md in
// grpc/grpc, and grpc/health/v1/health.proto):
//
//   request   POST /grpc.health.v1.Health/Check, content-type
//             application/grpc, te: trailers; the body one length-prefixed
//             message: a flag byte (0: not compressed), the length as 4 bytes
//             big-endian, then HealthCheckRequest{string service = 1}
//   response  HTTP 200, content-type application/grpc, one length-prefixed
//             HealthCheckResponse{ServingStatus status = 1} (UNKNOWN 0,
//             SERVING 1, NOT_SERVING 2, SERVICE_UNKNOWN 3), then the
//             trailers grpc-status (0: OK) and grpc-message (percent-encoded);
//             an error may come as trailers only (grpc-status in the headers)
//
// Outcomes and messages (grpc.go): SERVING is a success ("service healthy");
// any other status is a failure `service unhealthy (responded with
// "NOT_SERVING")`; an RPC error is a failure "error: health rpc probe failed:
// rpc error: code = NotFound desc = unknown service", except Unimplemented
// ("error: this server does not implement the grpc health protocol
// (grpc.health.v1.Health): <message>") and DeadlineExceeded ("timeout:
// health rpc did not complete within 1s"). Errors of the transport are
// grpc-go's statuses for them (a non-200 HTTP status: HTTPStatusConvTab;
// no grpc-status: Internal). Nothing here reads a clock or does I/O; any
// bytes decode to an outcome, never a crash.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/probe.h"
#include "core/result.h"

namespace daemonlet {

// The request body: HealthCheckRequest{service} as one gRPC message.
std::string grpc_health_request(std::string_view service);

// The grpc-timeout header's value for a deadline in milliseconds, as
// grpc-go's encodeTimeout writes it: at most 8 digits, in the finest unit
// that fits (m, S, M, H); at least 1m.
std::string grpc_timeout_header(std::int64_t timeout_ms);

// The path of the call (the method's full name).
inline constexpr const char* kGrpcHealthCheckPath = "/grpc.health.v1.Health/Check";

// The one message of a unary response body (the length prefix removed), or
// why there is none or more than one.
Result<std::string_view> grpc_unframe(std::string_view body);

// HealthCheckResponse.status of a protobuf-encoded message (0, UNKNOWN,
// when absent, as proto3 decodes a missing field), or why the bytes are not
// a message.
Result<std::int32_t> grpc_decode_health_response(std::string_view message);

// ServingStatus.String(): "SERVING", ... or the number for a value the enum
// does not have.
std::string grpc_serving_status_name(std::int32_t status);

// codes.Code.String(): "NotFound", ... or "Code(42)".
std::string grpc_code_name(std::int64_t code);

// grpc-message's percent-decoding (grpc-go decodeGrpcMessage): a malformed
// escape is kept as written.
std::string grpc_percent_decode(std::string_view v);

// A Go time.Duration of whole seconds as %v prints it: "1s", "1m30s".
std::string go_duration_seconds(std::int64_t seconds);

struct GrpcProbeAnswer {
    ProbeOutcome outcome = ProbeOutcome::Failure;
    std::string output;  // kubelet's message
};

// What a completed exchange says: the HTTP status, the response headers and
// trailers together (names in any case; the last grpc-status wins) and the
// body. `timeout_seconds` is the probe's, for the DeadlineExceeded message.
GrpcProbeAnswer grpc_health_answer(long http_status,
                                   const std::vector<std::pair<std::string, std::string>>& headers,
                                   std::string_view body, std::int32_t timeout_seconds);

// The messages of a call that got no answer (grpc.go's dial errors and the
// RPC's deadline): `addr` is host:port as net.JoinHostPort writes it.
std::string grpc_connect_failed(const std::string& addr, const std::string& reason);
std::string grpc_connect_timeout(const std::string& addr, std::int32_t timeout_seconds);
std::string grpc_rpc_timeout(std::int32_t timeout_seconds);

}  // namespace daemonlet
