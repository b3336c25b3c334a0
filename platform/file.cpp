#include "platform/file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/io_error.h"
#include "platform/fd.h"

namespace daemonlet::platform {
Result<std::string> read_file(const std::string& path, std::size_t max_bytes) {
    Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY));
    if (fd.get() < 0) return io_error(path, {});
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0) return io_error(path, {});
    if (!S_ISREG(st.st_mode)) return Error{ErrorCode::Io, path + ": not a regular file"};
    if (static_cast<std::size_t>(st.st_size) > max_bytes)
        return Error{ErrorCode::Io, path + ": file is " + std::to_string(st.st_size) +
                                        " bytes, over the limit of " + std::to_string(max_bytes) + " bytes"};
    // One byte more than the file's size, so that EOF is read without
    // growing the string: growing it by the 4096 below doubles its capacity
    // (a 3 MiB manifest took a 6 MiB buffer, and the 3 MiB copy beside it).
    // A file that says it is empty (/proc, /sys) is read with 4 KiB at once:
    // a sysctl's file answers one read only (a 1-byte read of pid_max gave
    // "3" and then EOF).
    const std::size_t first = st.st_size > 0 ? static_cast<std::size_t>(st.st_size) + 1 : 4096;
    std::string data;
    data.resize(std::min(max_bytes + 1, first));
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
            return io_error(path, {});
        }
        if (n == 0) break;
        got += static_cast<std::size_t>(n);
    }
    if (got > max_bytes)
        return Error{ErrorCode::Io,
                     path + ": file is over the limit of " + std::to_string(max_bytes) + " bytes"};
    data.resize(got);
    return data;
}

Status make_dirs(const std::string& path, mode_t mode) {
    std::string cur;
    std::size_t pos = 0;
    while (pos != std::string::npos) {
        pos = path.find('/', pos + 1);
        cur = path.substr(0, pos);
        if (cur.empty()) continue;
        if (::mkdir(cur.c_str(), mode) != 0 && errno != EEXIST)
            return io_error(cur, "cannot create directory");
    }
    return Ok{};
}

Status replace_file(const std::string& path, const std::string& text, const std::string& tag, mode_t mode) {
    const std::string tmp = path + ".tmp-" + tag;
    Fd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, mode));
    if (fd.get() < 0) return io_error(tmp, "cannot create");
    std::size_t done = 0;
    int err = 0;
    while (done < text.size() && err == 0) {
        const ssize_t n = ::write(fd.get(), text.data() + done, text.size() - done);
        if (n < 0 && errno != EINTR) err = errno;
        if (n > 0) done += static_cast<std::size_t>(n);
    }
    if (err == 0 && ::fchmod(fd.get(), mode) != 0) err = errno;
    if (err == 0 && ::close(fd.release()) != 0) err = errno;
    if (err == 0 && ::rename(tmp.c_str(), path.c_str()) != 0) err = errno;
    if (err != 0) {
        ::unlink(tmp.c_str());
        return io_error(path, "cannot write", err);
    }
    return Ok{};
}

}  // namespace daemonlet::platform
