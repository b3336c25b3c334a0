#include "platform/platform_info.h"

#include "platform/http/curl_api.h"

#include <systemd/sd-daemon.h>
#include <uv.h>

namespace daemonlet::platform {
std::string libuv_version() { return uv_version_string(); }
// libsystemd has no run-time version call; its pkg-config version is baked in.
std::string systemd_version() { return DAEMONLET_SYSTEMD_VERSION; }
// The libcurl actually loaded, and its TLS backend ("7.88.1 (OpenSSL/3.0.x)").
// "not installed (why)" when it cannot be loaded.
std::string curl_version() {
    auto api = curl_api();
    if (!api.ok()) return "not installed (" + api.error().message + ")";
    const curl_version_info_data* v = api.value()->version_info(CURLVERSION_NOW);
    std::string s = v->version;
    if (v->ssl_version) s += std::string(" (") + v->ssl_version + ")";
    return s;
}
}  // namespace daemonlet::platform
