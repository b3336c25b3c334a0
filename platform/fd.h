// A file descriptor closed when it goes out of scope: the one owner type for
// every fd the agent and its helpers open. Open them O_CLOEXEC (and
// pipe2/socket with their CLOEXEC flags), so that no child spawned through
// the loop inherits one.
#pragma once

#include <unistd.h>

#include <utility>

namespace daemonlet::platform {

// Owns `fd` (may be -1). Move-only.
class Fd {
  public:
    explicit Fd(int fd = -1) : fd_(fd) {}
    Fd(const Fd&) = delete;
    Fd& operator=(const Fd&) = delete;
    Fd(Fd&& other) noexcept : fd_(other.release()) {}
    Fd& operator=(Fd&& other) noexcept {
        if (this != &other) reset(other.release());
        return *this;
    }
    ~Fd() { reset(); }
    int get() const { return fd_; }
    // Gives the fd up without closing it.
    int release() { return std::exchange(fd_, -1); }
    // Closes the fd held, if any, and holds `fd`.
    void reset(int fd = -1) {
        if (fd_ >= 0) ::close(fd_);
        fd_ = fd;
    }

  private:
    int fd_;
};

}  // namespace daemonlet::platform
