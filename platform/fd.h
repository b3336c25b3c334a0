// A file descriptor closed when it goes out of scope.
#pragma once

#include <unistd.h>

namespace daemonlet::platform {

// Owns `fd` (may be -1). Not copyable.
class Fd {
  public:
    explicit Fd(int fd) : fd_(fd) {}
    Fd(const Fd&) = delete;
    Fd& operator=(const Fd&) = delete;
    ~Fd() {
        if (fd_ >= 0) ::close(fd_);
    }
    int get() const { return fd_; }

  private:
    int fd_;
};

}  // namespace daemonlet::platform
