#include "platform/platform_info.h"

#include <systemd/sd-daemon.h>
#include <uv.h>

namespace daemonlet::platform {
std::string libuv_version() { return uv_version_string(); }
// libsystemd has no run-time version call; its pkg-config version is baked in.
std::string systemd_version() { return DAEMONLET_SYSTEMD_VERSION; }
}  // namespace daemonlet::platform
