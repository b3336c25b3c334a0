// gRPC health checks as kubelet's grpcProber reports them; see
// core/grpc_health.h for the wire format and where each message comes from.
#include "core/grpc_health.h"

#include <algorithm>
#include <cstddef>
#include <iterator>
#include <optional>

#include "core/strings.h"

namespace daemonlet {

namespace {

constexpr std::int64_t kOk = 0;
constexpr std::int64_t kUnknown = 2;
constexpr std::int64_t kDeadlineExceeded = 4;
constexpr std::int64_t kUnimplemented = 12;
constexpr std::int64_t kInternal = 13;
constexpr std::int32_t kServing = 1;

// A protobuf varint; false when truncated or longer than 10 bytes.
bool read_varint(std::string_view in, std::size_t& pos, std::uint64_t& out) {
    out = 0;
    for (int shift = 0; shift < 70; shift += 7) {
        if (pos >= in.size()) return false;
        const auto byte = static_cast<unsigned char>(in[pos++]);
        out |= static_cast<std::uint64_t>(byte & 0x7f) << shift;
        if ((byte & 0x80) == 0) return true;
    }
    return false;
}

void write_varint(std::string& out, std::uint64_t v) {
    while (v >= 0x80) {
        out.push_back(static_cast<char>((v & 0x7f) | 0x80));
        v >>= 7;
    }
    out.push_back(static_cast<char>(v));
}

// net/http StatusText for the statuses grpc-go maps.
const char* http_status_text(long status) {
    switch (status) {
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 429: return "Too Many Requests";
    case 500: return "Internal Server Error";
    case 502: return "Bad Gateway";
    case 503: return "Service Unavailable";
    case 504: return "Gateway Timeout";
    }
    return nullptr;
}

// grpc-go internal/transport HTTPStatusConvTab; any other status: Unknown.
std::int64_t code_of_http_status(long status) {
    switch (status) {
    case 400: return kInternal;
    case 401: return 16;  // Unauthenticated
    case 403: return 7;   // PermissionDenied
    case 404: return kUnimplemented;
    case 429:
    case 502:
    case 503:
    case 504: return 14;  // Unavailable
    }
    return kUnknown;
}

// The last value of header `name` (case-insensitive), if any.
std::optional<std::string> header(const std::vector<std::pair<std::string, std::string>>& headers,
                                  std::string_view name) {
    std::optional<std::string> found;
    for (const auto& [k, v] : headers)
        if (to_lower(k) == name) found = v;
    return found;
}

// grpc.go's handling of an RPC error (status.FromError succeeded).
GrpcProbeAnswer rpc_error(std::int64_t code, const std::string& message, std::int32_t timeout_seconds) {
    if (code == kUnimplemented)
        return {ProbeOutcome::Failure,
                "error: this server does not implement the grpc health protocol (grpc.health.v1.Health): " +
                    message};
    if (code == kDeadlineExceeded) return {ProbeOutcome::Failure, grpc_rpc_timeout(timeout_seconds)};
    // status.Error's text: "rpc error: code = %s desc = %s".
    return {ProbeOutcome::Failure, "error: health rpc probe failed: rpc error: code = " +
                                       grpc_code_name(code) + " desc = " + message};
}

}  // namespace

std::string grpc_timeout_header(std::int64_t timeout_ms) {
    constexpr std::int64_t kMax = 99'999'999;  // 8 digits (the gRPC spec's TimeoutValue)
    std::int64_t v = std::max<std::int64_t>(1, timeout_ms);
    if (v <= kMax) return std::to_string(v) + "m";
    v = (v + 999) / 1000;  // rounded up, as encodeTimeout's div
    if (v <= kMax) return std::to_string(v) + "S";
    v = (v + 59) / 60;
    if (v <= kMax) return std::to_string(v) + "M";
    return std::to_string(std::min<std::int64_t>((v + 59) / 60, kMax)) + "H";
}

std::string grpc_health_request(std::string_view service) {
    // proto3 leaves a field with its default value (the empty string) out.
    std::string message;
    if (!service.empty()) {
        message.push_back(static_cast<char>((1 << 3) | 2));  // field 1, length-delimited
        write_varint(message, service.size());
        message.append(service);
    }
    std::string out;
    out.push_back('\0');  // not compressed
    const auto n = static_cast<std::uint32_t>(message.size());
    for (int shift = 24; shift >= 0; shift -= 8) out.push_back(static_cast<char>((n >> shift) & 0xff));
    out += message;
    return out;
}

Result<std::string_view> grpc_unframe(std::string_view body) {
    if (body.empty())
        return Error{ErrorCode::Invalid,
                     "cardinality violation: received no response message from non-server-streaming RPC"};
    if (body.size() < 5) return Error{ErrorCode::Invalid, "unexpected EOF"};
    const auto flag = static_cast<unsigned char>(body[0]);
    // We send no grpc-accept-encoding, so a server may not compress.
    if (flag == 1)
        return Error{ErrorCode::Invalid, "grpc: compressed flag set with identity or empty encoding"};
    if (flag != 0)
        return Error{ErrorCode::Invalid, "grpc: received unexpected payload format " + std::to_string(flag)};
    std::uint32_t n = 0;
    for (std::size_t i = 1; i < 5; ++i) n = (n << 8) | static_cast<unsigned char>(body[i]);
    if (n > body.size() - 5) return Error{ErrorCode::Invalid, "unexpected EOF"};
    if (body.size() - 5 > n)
        return Error{
            ErrorCode::Invalid,
            "cardinality violation: expected <EOF> for non server-streaming RPCs, but received another "
            "message"};
    return body.substr(5, n);
}

Result<std::int32_t> grpc_decode_health_response(std::string_view message) {
    std::int32_t status = 0;
    std::size_t pos = 0;
    auto bad = [](const char* why) {
        return Error{ErrorCode::Invalid,
                     std::string("grpc: failed to unmarshal the received message: ") + why};
    };
    while (pos < message.size()) {
        std::uint64_t tag = 0;
        if (!read_varint(message, pos, tag)) return bad("proto: cannot parse invalid wire-format data");
        const std::uint64_t field = tag >> 3;
        const auto wire = static_cast<unsigned>(tag & 7);
        if (field == 0 || field > 0x1fffffff) return bad("proto: cannot parse invalid wire-format data");
        std::uint64_t v = 0;
        switch (wire) {
        case 0:  // varint
            if (!read_varint(message, pos, v)) return bad("proto: cannot parse invalid wire-format data");
            // An int32 enum: the low 32 bits, as protobuf truncates.
            if (field == 1) status = static_cast<std::int32_t>(static_cast<std::uint32_t>(v & 0xffffffffu));
            break;
        case 1:  // 64-bit
            if (message.size() - pos < 8) return bad("unexpected EOF");
            pos += 8;
            break;
        case 2:  // length-delimited: an unknown field (or field 1 with the wrong type) is skipped
            if (!read_varint(message, pos, v)) return bad("proto: cannot parse invalid wire-format data");
            if (v > message.size() - pos) return bad("unexpected EOF");
            pos += static_cast<std::size_t>(v);
            break;
        case 5:  // 32-bit
            if (message.size() - pos < 4) return bad("unexpected EOF");
            pos += 4;
            break;
        default:  // groups (3, 4) and the reserved 6, 7: not in this message
            return bad("proto: cannot parse invalid wire-format data");
        }
    }
    return status;
}

std::string grpc_serving_status_name(std::int32_t status) {
    switch (status) {
    case 0: return "UNKNOWN";
    case 1: return "SERVING";
    case 2: return "NOT_SERVING";
    case 3: return "SERVICE_UNKNOWN";
    }
    return std::to_string(status);
}

std::string grpc_code_name(std::int64_t code) {
    static const char* const names[] = {
        "OK",       "Canceled",       "Unknown",          "InvalidArgument",   "DeadlineExceeded",
        "NotFound", "AlreadyExists",  "PermissionDenied", "ResourceExhausted", "FailedPrecondition",
        "Aborted",  "OutOfRange",     "Unimplemented",    "Internal",          "Unavailable",
        "DataLoss", "Unauthenticated"};
    if (code >= 0 && code < static_cast<std::int64_t>(std::size(names))) return names[code];
    return "Code(" + std::to_string(code) + ")";
}

std::string grpc_percent_decode(std::string_view v) {
    auto hex = [](char c) -> int {
        if (c >= '0' && c <= '9') return c - '0';
        if (c >= 'a' && c <= 'f') return c - 'a' + 10;
        if (c >= 'A' && c <= 'F') return c - 'A' + 10;
        return -1;
    };
    std::string out;
    out.reserve(v.size());
    for (std::size_t i = 0; i < v.size(); ++i) {
        if (v[i] == '%' && i + 2 < v.size()) {
            const int hi = hex(v[i + 1]), lo = hex(v[i + 2]);
            if (hi >= 0 && lo >= 0) {
                out.push_back(static_cast<char>(hi * 16 + lo));
                i += 2;
                continue;
            }
        }
        out.push_back(v[i]);
    }
    return out;
}

std::string go_duration_seconds(std::int64_t seconds) {
    if (seconds == 0) return "0s";
    std::string out = seconds < 0 ? "-" : "";
    std::uint64_t s =
        seconds < 0 ? 0 - static_cast<std::uint64_t>(seconds) : static_cast<std::uint64_t>(seconds);
    const std::uint64_t h = s / 3600, m = s / 60 % 60;
    s %= 60;
    if (h > 0) return out + std::to_string(h) + "h" + std::to_string(m) + "m" + std::to_string(s) + "s";
    if (m > 0) return out + std::to_string(m) + "m" + std::to_string(s) + "s";
    return out + std::to_string(s) + "s";
}

GrpcProbeAnswer grpc_health_answer(long http_status,
                                   const std::vector<std::pair<std::string, std::string>>& headers,
                                   std::string_view body, std::int32_t timeout_seconds) {
    // grpc-go operateHeaders: a status other than 200 is the transport's
    // error, whatever else came.
    if (http_status != 200) {
        const char* text = http_status_text(http_status);
        return rpc_error(code_of_http_status(http_status),
                         "unexpected HTTP status code received from server: " + std::to_string(http_status) +
                             (text ? std::string(" (") + text + ")" : std::string()),
                         timeout_seconds);
    }
    const std::optional<std::string> content_type = header(headers, "content-type");
    if (!content_type || content_type->rfind("application/grpc", 0) != 0)
        return rpc_error(kUnknown,
                         content_type
                             ? "transport: received unexpected content-type \"" + *content_type + "\""
                             : std::string("malformed header: missing HTTP content-type"),
                         timeout_seconds);
    const std::optional<std::string> status = header(headers, "grpc-status");
    if (!status)
        return rpc_error(kInternal, "server closed the stream without sending trailers", timeout_seconds);
    std::int64_t code = -1;
    if (!status->empty() && status->size() <= 10 &&
        status->find_first_not_of("0123456789") == std::string::npos)
        code = std::stoll(*status);
    if (code < 0)
        return rpc_error(kInternal, "transport: malformed grpc-status: " + *status, timeout_seconds);
    if (code != kOk)
        return rpc_error(code, grpc_percent_decode(header(headers, "grpc-message").value_or("")),
                         timeout_seconds);
    auto message = grpc_unframe(body);
    if (!message) return rpc_error(kInternal, message.error().message, timeout_seconds);
    auto serving = grpc_decode_health_response(message.value());
    if (!serving) return rpc_error(kInternal, serving.error().message, timeout_seconds);
    if (serving.value() != kServing)
        return {ProbeOutcome::Failure,
                "service unhealthy (responded with \"" + grpc_serving_status_name(serving.value()) + "\")"};
    return {ProbeOutcome::Success, "service healthy"};
}

std::string grpc_connect_failed(const std::string& addr, const std::string& reason) {
    return "error: failed to connect service at \"" + addr + "\": " + reason;
}

std::string grpc_connect_timeout(const std::string& addr, std::int32_t timeout_seconds) {
    return "timeout: failed to connect service \"" + addr + "\" within " +
           go_duration_seconds(timeout_seconds) + ": context deadline exceeded";
}

std::string grpc_rpc_timeout(std::int32_t timeout_seconds) {
    return "timeout: health rpc did not complete within " + go_duration_seconds(timeout_seconds);
}

}  // namespace daemonlet
