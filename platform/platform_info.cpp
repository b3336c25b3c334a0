#include "platform/platform_info.h"

#include <curl/curl.h>
#include <systemd/sd-daemon.h>
#include <uv.h>

namespace daemonlet::platform {
std::string libuv_version() { return uv_version_string(); }
// libsystemd has no run-time version call; its pkg-config version is baked in.
std::string systemd_version() { return DAEMONLET_SYSTEMD_VERSION; }
// The libcurl actually loaded, and its TLS backend ("7.88.1 (OpenSSL/3.0.x)").
std::string curl_version() {
    const curl_version_info_data* v = curl_version_info(CURLVERSION_NOW);
    std::string s = v->version;
    if (v->ssl_version) s += std::string(" (") + v->ssl_version + ")";
    return s;
}
}  // namespace daemonlet::platform
