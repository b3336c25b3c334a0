// Base64 as Go's encoding/json decodes a []byte field (base64.StdEncoding):
// the standard alphabet, padding required, '\r' and '\n' ignored. A Secret's
// `data` and a ConfigMap's `binaryData` arrive this way at the API server.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace daemonlet {

struct Base64Result {
    std::string bytes;
    // On failure: the offset Go's base64.CorruptInputError reports, and the
    // message it prints ("illegal base64 data at input byte N"). The input
    // itself is never part of it: it may be a secret.
    std::optional<std::size_t> corrupt_at;
    std::string error() const;
};

Base64Result base64_std_decode(std::string_view in);

}  // namespace daemonlet
