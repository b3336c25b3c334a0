// What the platform layer links against, for `daemonlet version`.
#pragma once
#include <string>

namespace daemonlet::platform {
std::string libuv_version();
std::string systemd_version();
std::string curl_version();
}  // namespace daemonlet::platform
