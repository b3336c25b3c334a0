// gRPC probes' pure part (core/grpc_health.h): the HealthCheckRequest's
// bytes, and what a Health/Check answer means as kubelet's
// pkg/probe/grpc/grpc.go reports it, including the statuses grpc-go makes
// of a broken transport. Any bytes give an outcome, never a crash.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/grpc_health.h"

// CppUTest last: its leak-detection macros redefine new.
#include <CppUTest/TestHarness.h>

using namespace daemonlet;

namespace {

using Headers = std::vector<std::pair<std::string, std::string>>;

std::string bytes(std::initializer_list<int> b) {
    std::string s;
    for (int c : b) s.push_back(static_cast<char>(c));
    return s;
}

// One length-prefixed gRPC message.
std::string frame(const std::string& message) {
    const auto n = static_cast<std::uint32_t>(message.size());
    return bytes({0, static_cast<int>(n >> 24), static_cast<int>((n >> 16) & 0xff),
                  static_cast<int>((n >> 8) & 0xff), static_cast<int>(n & 0xff)}) +
           message;
}

const Headers kOk = {{"content-type", "application/grpc"}, {"grpc-status", "0"}};
Headers trailers_only(const char* code, const char* message) {
    return {{"content-type", "application/grpc"}, {"grpc-status", code}, {"grpc-message", message}};
}

struct AnswerRow {
    const char* name;
    long http_status;
    Headers headers;
    std::string body;
    ProbeOutcome outcome;
    const char* output;
};

const std::string kServing = frame(bytes({0x08, 0x01}));

const AnswerRow kAnswerRows[] = {
    {"grpcProber.Probe: SERVING is a success", 200, kOk, kServing, ProbeOutcome::Success, "service healthy"},
    {"grpcProber.Probe: NOT_SERVING is a failure naming the status", 200, kOk, frame(bytes({0x08, 0x02})),
     ProbeOutcome::Failure, "service unhealthy (responded with \"NOT_SERVING\")"},
    {"grpcProber.Probe: SERVICE_UNKNOWN", 200, kOk, frame(bytes({0x08, 0x03})), ProbeOutcome::Failure,
     "service unhealthy (responded with \"SERVICE_UNKNOWN\")"},
    {"proto3: an empty message is status UNKNOWN (0)", 200, kOk, frame(""), ProbeOutcome::Failure,
     "service unhealthy (responded with \"UNKNOWN\")"},
    {"ServingStatus.String: a value the enum lacks prints as its number", 200, kOk,
     frame(bytes({0x08, 0x07})), ProbeOutcome::Failure, "service unhealthy (responded with \"7\")"},
    {"protobuf: unknown fields of every wire type are skipped", 200, kOk,
     frame(bytes({0x12, 0x02, 'h', 'i', 0x18, 0x96, 0x01, 0x21, 1, 2,    3,   4,
                  5,    6,    7,   8,   0x2d, 1,    2,    3,    4, 0x08, 0x01})),
     ProbeOutcome::Success, "service healthy"},
    {"protobuf: the last value of a repeated scalar wins", 200, kOk, frame(bytes({0x08, 0x01, 0x08, 0x02})),
     ProbeOutcome::Failure, "service unhealthy (responded with \"NOT_SERVING\")"},
    {"content-type application/grpc+proto is gRPC (grpc-go: the application/grpc prefix)",
     200,
     {{"content-type", "application/grpc+proto"}, {"grpc-status", "0"}},
     kServing,
     ProbeOutcome::Success,
     "service healthy"},
    {"header names in any case",
     200,
     {{"Content-Type", "application/grpc"}, {"Grpc-Status", "0"}},
     kServing,
     ProbeOutcome::Success,
     "service healthy"},
    {"grpc.go default: the health service does not know the service (NotFound)", 200,
     trailers_only("5", "unknown service"), "", ProbeOutcome::Failure,
     "error: health rpc probe failed: rpc error: code = NotFound desc = unknown service"},
    {"grpc-message is percent-decoded (grpc-go decodeGrpcMessage), a bad escape kept", 200,
     trailers_only("14", "no%20backend%zz%4"), "", ProbeOutcome::Failure,
     "error: health rpc probe failed: rpc error: code = Unavailable desc = no backend%zz%4"},
    {"grpc.go codes.Unimplemented: not a health server", 200,
     trailers_only("12", "Method not found: grpc.health.v1.Health/Check"), "", ProbeOutcome::Failure,
     "error: this server does not implement the grpc health protocol (grpc.health.v1.Health): Method not "
     "found: grpc.health.v1.Health/Check"},
    {"grpc.go codes.DeadlineExceeded: the timeout's message", 200, trailers_only("4", "Deadline Exceeded"),
     "", ProbeOutcome::Failure, "timeout: health rpc did not complete within 2s"},
    {"codes.Code.String: an unknown code", 200, trailers_only("99", "x"), "", ProbeOutcome::Failure,
     "error: health rpc probe failed: rpc error: code = Code(99) desc = x"},
    {"grpc-go HTTPStatusConvTab: 404 is Unimplemented",
     404,
     {{"content-type", "text/plain"}},
     "not found",
     ProbeOutcome::Failure,
     "error: this server does not implement the grpc health protocol (grpc.health.v1.Health): unexpected "
     "HTTP status code received from server: 404 (Not Found)"},
    {"grpc-go HTTPStatusConvTab: 503 is Unavailable",
     503,
     {},
     "",
     ProbeOutcome::Failure,
     "error: health rpc probe failed: rpc error: code = Unavailable desc = unexpected HTTP status code "
     "received from server: 503 (Service Unavailable)"},
    {"grpc-go HTTPStatusConvTab: any other status is Unknown",
     302,
     {},
     "",
     ProbeOutcome::Failure,
     "error: health rpc probe failed: rpc error: code = Unknown desc = unexpected HTTP status code received "
     "from server: 302"},
    {"grpc-go operateHeaders: not a gRPC content-type (an HTTP server on the port)",
     200,
     {{"content-type", "text/html"}},
     "<html>",
     ProbeOutcome::Failure,
     "error: health rpc probe failed: rpc error: code = Unknown desc = transport: received unexpected "
     "content-type \"text/html\""},
    {"grpc-go operateHeaders: no content-type",
     200,
     {{"grpc-status", "0"}},
     kServing,
     ProbeOutcome::Failure,
     "error: health rpc probe failed: rpc error: code = Unknown desc = malformed header: missing HTTP "
     "content-type"},
    {"grpc-go: a stream closed without trailers is Internal",
     200,
     {{"content-type", "application/grpc"}},
     kServing,
     ProbeOutcome::Failure,
     "error: health rpc probe failed: rpc error: code = Internal desc = server closed the stream without "
     "sending trailers"},
    {"grpc-go: a malformed grpc-status is Internal", 200, trailers_only("OK", ""), kServing,
     ProbeOutcome::Failure,
     "error: health rpc probe failed: rpc error: code = Internal desc = transport: malformed grpc-status: "
     "OK"},
    {"grpc-go: OK without a message", 200, kOk, "", ProbeOutcome::Failure,
     "error: health rpc probe failed: rpc error: code = Internal desc = cardinality violation: received no "
     "response message from non-server-streaming RPC"},
    {"grpc-go: two messages to a unary call", 200, kOk, kServing + kServing, ProbeOutcome::Failure,
     "error: health rpc probe failed: rpc error: code = Internal desc = cardinality violation: expected "
     "<EOF> "
     "for non server-streaming RPCs, but received another message"},
    {"grpc-go: a compressed message we did not accept", 200, kOk, bytes({1, 0, 0, 0, 2, 0x08, 0x01}),
     ProbeOutcome::Failure,
     "error: health rpc probe failed: rpc error: code = Internal desc = grpc: compressed flag set with "
     "identity or empty encoding"},
    {"a length prefix beyond the body", 200, kOk, bytes({0, 0, 0, 0, 9, 0x08, 0x01}), ProbeOutcome::Failure,
     "error: health rpc probe failed: rpc error: code = Internal desc = unexpected EOF"},
    {"a body shorter than the prefix", 200, kOk, bytes({0, 0, 0}), ProbeOutcome::Failure,
     "error: health rpc probe failed: rpc error: code = Internal desc = unexpected EOF"},
    {"protobuf: a truncated varint", 200, kOk, frame(bytes({0x08, 0x81})), ProbeOutcome::Failure,
     "error: health rpc probe failed: rpc error: code = Internal desc = grpc: failed to unmarshal the "
     "received "
     "message: proto: cannot parse invalid wire-format data"},
    {"protobuf: a group (wire type 3) is not in HealthCheckResponse", 200, kOk, frame(bytes({0x0b, 0x0c})),
     ProbeOutcome::Failure,
     "error: health rpc probe failed: rpc error: code = Internal desc = grpc: failed to unmarshal the "
     "received "
     "message: proto: cannot parse invalid wire-format data"},
    {"protobuf: a length-delimited field longer than the message", 200, kOk, frame(bytes({0x12, 0x7f, 'x'})),
     ProbeOutcome::Failure,
     "error: health rpc probe failed: rpc error: code = Internal desc = grpc: failed to unmarshal the "
     "received "
     "message: unexpected EOF"},
    {"protobuf: field number 0 is invalid", 200, kOk, frame(bytes({0x00, 0x01})), ProbeOutcome::Failure,
     "error: health rpc probe failed: rpc error: code = Internal desc = grpc: failed to unmarshal the "
     "received "
     "message: proto: cannot parse invalid wire-format data"},
};

}  // namespace

TEST_GROUP(GrpcHealth){};

TEST(GrpcHealth, RequestIsOneLengthPrefixedHealthCheckRequest) {
    // proto3: the empty service (the whole server) is left out of the message.
    CHECK(grpc_health_request("") == bytes({0, 0, 0, 0, 0}));
    CHECK(grpc_health_request("ready") == bytes({0, 0, 0, 0, 7, 0x0a, 5, 'r', 'e', 'a', 'd', 'y'}));
    // A length of 200 is a two-byte varint (0xc8 0x01); the prefix counts 203.
    const std::string long_name(200, 's');
    CHECK(grpc_health_request(long_name) == bytes({0, 0, 0, 0, 203, 0x0a, 0xc8, 0x01}) + long_name);
}

TEST(GrpcHealth, AnswersAsKubeletsGrpcProber) {
    for (const auto& row : kAnswerRows) {
        const GrpcProbeAnswer a = grpc_health_answer(row.http_status, row.headers, row.body, 2);
        LONGS_EQUAL_TEXT(static_cast<int>(row.outcome), static_cast<int>(a.outcome), row.name);
        STRCMP_EQUAL_TEXT(row.output, a.output.c_str(), row.name);
    }
}

TEST(GrpcHealth, TransportFailuresAsGrpcGo) {
    STRCMP_EQUAL("error: failed to connect service at \"127.0.0.1:9090\": connection refused",
                 grpc_connect_failed("127.0.0.1:9090", "connection refused").c_str());
    STRCMP_EQUAL("timeout: failed to connect service \"[::1]:9090\" within 1s: context deadline exceeded",
                 grpc_connect_timeout("[::1]:9090", 1).c_str());
    STRCMP_EQUAL("timeout: health rpc did not complete within 1m30s", grpc_rpc_timeout(90).c_str());
}

TEST(GrpcHealth, DurationsAsGoPrintsThem) {
    const std::pair<std::int64_t, const char*> rows[] = {
        {0, "0s"}, {1, "1s"}, {59, "59s"}, {60, "1m0s"}, {90, "1m30s"}, {3600, "1h0m0s"}, {3725, "1h2m5s"}};
    for (const auto& [s, text] : rows) STRCMP_EQUAL_TEXT(text, go_duration_seconds(s).c_str(), text);
}

// Every prefix of the rows' bodies, and pseudo-random bytes with valid
// gRPC headers: an outcome and a message, never a crash or a success that
// is not SERVING.
TEST(GrpcHealth, AnyBytesGiveAnOutcome) {
    std::vector<std::string> bodies;
    for (const auto& row : kAnswerRows)
        for (std::size_t n = 0; n <= row.body.size(); ++n) bodies.push_back(row.body.substr(0, n));
    std::uint32_t seed = 12345;
    for (int i = 0; i < 3000; ++i) {
        std::string b;
        seed = seed * 1103515245u + 12345u;
        const std::size_t len = (seed >> 16) % 40;
        for (std::size_t k = 0; k < len; ++k) {
            seed = seed * 1103515245u + 12345u;
            b.push_back(static_cast<char>(seed >> 16));
        }
        // Half of them with a plausible prefix, so the protobuf decoder sees them.
        if (i % 2 == 0) b = frame(b);
        bodies.push_back(b);
    }
    for (const auto& b : bodies) {
        const GrpcProbeAnswer a = grpc_health_answer(200, kOk, b, 1);
        CHECK(!a.output.empty());
        if (a.outcome == ProbeOutcome::Success) {
            auto m = grpc_unframe(b);
            CHECK(m.ok());
            CHECK_EQUAL(1, grpc_decode_health_response(m.value()).value());
        }
    }
}

// grpc-go's encodeTimeout (internal/transport/http_util.go): at most 8
// digits (the spec's TimeoutValue), in the finest unit that fits.
TEST(GrpcHealth, TimeoutHeaderAsGrpcGosEncodeTimeout) {
    STRCMP_EQUAL("1000m", grpc_timeout_header(1000).c_str());
    STRCMP_EQUAL("1m", grpc_timeout_header(0).c_str());
    STRCMP_EQUAL("99999999m", grpc_timeout_header(99'999'999).c_str());
    STRCMP_EQUAL("100000S", grpc_timeout_header(100'000'000).c_str());  // timeoutSeconds 100000
    STRCMP_EQUAL("2147484S", grpc_timeout_header(2'147'483'647'000 / 1000).c_str());
}
