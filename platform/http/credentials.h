// Credentials for the API server: token, client key and certificate, CA
// files, read with their permissions checked, and the base64 that kubeconfig
// -data fields carry. What is read here never goes to a log.
#pragma once

#include <string>
#include <string_view>

#include "core/result.h"

namespace daemonlet::platform {

struct Credential {
    std::string data;
    std::string warning;  // set when the file is readable by others (worth fixing, not fatal)
};

// Reads a credential file (at most 1 MiB). Refused, naming the file and the
// reason: not a regular file, writable by group or others (anyone could
// swap the agent's identity), or owned by neither root nor the agent's own
// user. A `secret` (token, key) readable by group or others is read, with a
// warning.
Result<Credential> read_credential(const std::string& path, bool secret);

// Standard base64 (RFC 4648, padding required, whitespace ignored), as
// kubeconfig's -data fields. The decoder is mbed TLS's mbedtls_base64_decode,
// from the table the API server client loads on first use (mbedtls_api.h:
// an agent that never reads a kubeconfig does not pay for it, and a
// connected one maps no libcrypto); without it, every call fails with
// "base64: libmbedtls.so.14 not available: <reason>".
Result<std::string> base64_decode(std::string_view in);

// Loads `library` as base64_decode loads libmbedtls.so.14, uncached, and says
// why it cannot serve: the error base64_decode gives, for tests.
Result<Ok> probe_base64_library(const char* library);

}  // namespace daemonlet::platform
