#include <cstdio>

#include "agent/cli/cli.h"
#include "agent/daemon/version.h"
#include "platform/platform_info.h"
#include "store/sqlite_info.h"

namespace daemonlet::agent {

int cmd_version(const std::vector<std::string>& args) {
    if (wants_help(args)) {
        std::fputs(
            "Usage: daemonlet version\n\nPrints daemonlet's version and the versions of the libraries it "
            "uses.\n",
            stdout);
        return kExitOk;
    }
    std::printf("daemonlet %s\n", daemonlet_version());
    std::printf("libraries: libuv %s, SQLite %s, libsystemd %s, libcurl %s, %s\n",
                platform::libuv_version().c_str(), store::sqlite_version().c_str(),
                platform::systemd_version().c_str(), platform::curl_version().c_str(),
                parser_versions().c_str());
    return kExitOk;
}

}  // namespace daemonlet::agent
