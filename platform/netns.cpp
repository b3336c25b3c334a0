#include "platform/netns.h"

#include <fcntl.h>
#include <sched.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <thread>

namespace daemonlet::platform {

Result<int> socket_in_netns(const std::string& netns, int domain, int type, int protocol) {
    const int ns = ::open(netns.c_str(), O_RDONLY | O_CLOEXEC);
    if (ns < 0) return Error{ErrorCode::Io, "network namespace " + netns + ": " + std::strerror(errno)};
    int fd = -1;
    int err = 0;
    const char* step = "setns";
    std::thread([&] {
        if (::setns(ns, CLONE_NEWNET) != 0) {
            err = errno;
            return;
        }
        step = "socket";
        fd = ::socket(domain, type | SOCK_CLOEXEC, protocol);
        if (fd < 0) err = errno;
    }).join();
    ::close(ns);
    if (fd < 0)
        return Error{ErrorCode::Io, "network namespace " + netns + ": " + step + ": " + std::strerror(err)};
    return fd;
}

}  // namespace daemonlet::platform
