#include "platform/file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "platform/fd.h"

namespace daemonlet::platform {
namespace {

Error io_error(const std::string& path, const std::string& what) { return Error{"io", path + ": " + what}; }

}  // namespace

Result<std::string> read_file(const std::string& path, std::size_t max_bytes) {
    Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY));
    if (fd.get() < 0) return io_error(path, std::strerror(errno));
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0) return io_error(path, std::strerror(errno));
    if (!S_ISREG(st.st_mode)) return io_error(path, "not a regular file");
    if (static_cast<std::size_t>(st.st_size) > max_bytes)
        return io_error(path, "file is " + std::to_string(st.st_size) + " bytes, over the limit of " +
                                  std::to_string(max_bytes) + " bytes");
    std::string data;
    data.resize(static_cast<std::size_t>(st.st_size));
    std::size_t got = 0;
    // The file may grow while we read it: read to EOF, but never past the limit.
    for (;;) {
        if (got == data.size()) {
            if (data.size() >= max_bytes + 1) break;
            data.resize(std::min(max_bytes + 1, data.size() + 4096));
        }
        ssize_t n = ::read(fd.get(), data.data() + got, data.size() - got);
        if (n < 0) {
            if (errno == EINTR) continue;
            return io_error(path, std::strerror(errno));
        }
        if (n == 0) break;
        got += static_cast<std::size_t>(n);
    }
    if (got > max_bytes)
        return io_error(path, "file is over the limit of " + std::to_string(max_bytes) + " bytes");
    data.resize(got);
    return data;
}

}  // namespace daemonlet::platform
