// libFuzzer target: what a registry and an auth file bring in, untrusted:
// WWW-Authenticate headers, token server answers and Docker config.json
// documents. None may crash; a Bearer challenge the parser accepts gives a
// token URL or an error, never anything else.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "core/registry_auth.h"

using namespace daemonlet;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    std::string_view in(reinterpret_cast<const char*>(data), size);
    for (const AuthChallenge& c : parse_www_authenticate(in))
        if (c.scheme == "bearer") (void)bearer_token_url(c, "repository:x:pull");
    (void)parse_token_response(in);
    (void)find_registry_auth(in, "127.0.0.1:5000", "fuzz");
    (void)find_registry_auth(in, "registry-1.docker.io", "fuzz");
    (void)split_basic_auth(in);
    return 0;
}
