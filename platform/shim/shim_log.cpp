#include "platform/shim/shim_log.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>  // rename, renameat: no stdio streams are used
#include <cstring>

#include "platform/shim/shim_text.h"

namespace daemonlet::shim {
namespace {

// "<path>.<n>" into out[PATH_MAX + 16].
void numbered(const char* path, std::uint32_t n, char* out, std::size_t cap) {
    Text t(out, cap);
    t.str(path).ch('.').unum(n);
}

int open_log(const char* path, int extra_flags) {
    return ::open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOCTTY | extra_flags, 0640);
}

}  // namespace

int CriLog::open(const char* path, std::uint64_t max_bytes, std::uint32_t max_files) {
    Text p(path_, sizeof path_);
    p.str(path);
    if (p.truncated()) return ENAMETOOLONG;
    max_bytes_ = max_bytes;
    max_files_ = max_files < 1 ? 1 : max_files;
    fd_ = open_log(path_, 0);
    if (fd_ < 0) return errno;
    struct stat st {};
    size_ = ::fstat(fd_, &st) == 0 ? static_cast<std::uint64_t>(st.st_size) : 0;
    return 0;
}

void CriLog::close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
}

void CriLog::report(const char* what, int err) {
    // Once: a full disk would otherwise fill shim.log with the same line.
    if (reported_) return;
    reported_ = true;
    char buf[PATH_MAX + 128];
    Text t(buf, sizeof buf);
    t.str("daemonlet-shim: ").str(what).str(" ").str(path_).str(": ").str(error_text(err)).ch('\n');
    write_all(2, t.c_str(), t.size());
}

void CriLog::rotate() {
    close();
    if (max_files_ <= 1) {
        fd_ = open_log(path_, O_TRUNC);
    } else {
        char from[PATH_MAX + 16], to[PATH_MAX + 16];
        numbered(path_, max_files_ - 1, to, sizeof to);
        ::unlink(to);
        for (std::uint32_t n = max_files_ - 1; n > 1; --n) {
            numbered(path_, n - 1, from, sizeof from);
            numbered(path_, n, to, sizeof to);
            if (::rename(from, to) != 0 && errno != ENOENT) report("cannot rotate", errno);
        }
        numbered(path_, 1, to, sizeof to);
        if (::rename(path_, to) != 0) report("cannot rotate", errno);
        fd_ = open_log(path_, O_TRUNC);
    }
    if (fd_ < 0) report("cannot reopen", errno);
    size_ = 0;
}

void CriLog::write(const char* stream, char tag, const char* data, std::size_t len) {
    char head[kTimestampLen + 12];
    struct timespec ts {};
    ::clock_gettime(CLOCK_REALTIME, &ts);
    format_timestamp(ts, head);
    Text h(head + kTimestampLen, sizeof head - kTimestampLen);
    h.ch(' ').str(stream).ch(' ').ch(tag).ch(' ');
    std::size_t head_len = kTimestampLen + h.size();
    std::size_t total = head_len + len + 1;
    if (max_bytes_ > 0 && size_ > 0 && size_ + total > max_bytes_) rotate();
    if (fd_ < 0) return;

    char newline = '\n';
    struct iovec iov[3] = {{head, head_len}, {const_cast<char*>(data), len}, {&newline, 1}};
    struct iovec* v = iov;
    int count = 3;
    std::size_t written = 0;
    while (count > 0) {
        ssize_t n = ::writev(fd_, v, count);
        if (n < 0) {
            if (errno == EINTR) continue;
            report("cannot write", errno);
            // A record the disk took only part of (a full file system
            // fills the last block, then refuses) is cut off again: the
            // file ends at its last whole line, so the next record, once
            // there is room, starts a line of its own (CRI log readers
            // parse line by line). Shrinking a file needs no free space.
            if (written > 0 && ::ftruncate(fd_, static_cast<off_t>(size_)) == 0) written = 0;
            break;
        }
        written += static_cast<std::size_t>(n);
        auto left = static_cast<std::size_t>(n);
        while (count > 0 && left >= v->iov_len) {
            left -= v->iov_len;
            ++v;
            --count;
        }
        if (count > 0) {
            v->iov_base = static_cast<char*>(v->iov_base) + left;
            v->iov_len -= left;
        }
    }
    size_ += written;
}

void LineSplitter::commit(std::size_t n) {
    std::size_t start = 0;
    std::size_t scan = len_;
    len_ += n;
    while (scan < len_) {
        auto* nl = static_cast<char*>(std::memchr(buf_ + scan, '\n', len_ - scan));
        if (nl == nullptr) break;
        auto end = static_cast<std::size_t>(nl - buf_);
        log_->write(stream_, 'F', buf_ + start, end - start);
        start = scan = end + 1;
    }
    if (start > 0) {
        std::memmove(buf_, buf_ + start, len_ - start);
        len_ -= start;
    }
    if (len_ == sizeof buf_) {
        log_->write(stream_, 'P', buf_, len_);
        len_ = 0;
    }
}

void LineSplitter::finish() {
    if (len_ > 0) log_->write(stream_, 'F', buf_, len_);
    len_ = 0;
}

}  // namespace daemonlet::shim
