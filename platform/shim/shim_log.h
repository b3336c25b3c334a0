// The container's log as daemonlet-shim writes it: the CRI log format that
// kubelet's /var/log/pods files use and that `daemonlet logs` reads,
//
//   <RFC 3339 UTC timestamp, ns> <stdout|stderr> <F|P> <text>\n
//
// one record per line of output; a line longer than kLogLineMax is written as
// partial (P) records followed by a full (F) one. Rotation is by size, as
// kubelet's containerLogMaxSize / containerLogMaxFiles: when the next record
// would take the file past max_bytes, 0.log becomes 0.log.1, 0.log.1 becomes
// 0.log.2, ... and the oldest beyond max_files in all (the current one
// included) is deleted.
#pragma once

#include <limits.h>

#include <cstddef>
#include <cstdint>

#include "platform/shim/shim_protocol.h"

namespace daemonlet::shim {

class CriLog {
  public:
    CriLog() = default;
    CriLog(const CriLog&) = delete;
    CriLog& operator=(const CriLog&) = delete;
    ~CriLog() { close(); }

    // Opens `path` for appending (its directory must exist). Returns 0 or an errno.
    int open(const char* path, std::uint64_t max_bytes, std::uint32_t max_files);
    // Writes one record, rotating first when it would not fit. Write errors
    // (a full disk) drop the record: the container is never blocked on its log.
    void write(const char* stream, char tag, const char* data, std::size_t len);
    void close();

  private:
    void rotate();
    void report(const char* what, int err);

    char path_[PATH_MAX] = {};
    int fd_ = -1;
    std::uint64_t size_ = 0;
    std::uint64_t max_bytes_ = 0;
    std::uint32_t max_files_ = 1;
    bool reported_ = false;
};

// Splits one output stream of the container into records. The pipe is read
// straight into the line buffer (space()), so no byte is copied twice.
class LineSplitter {
  public:
    LineSplitter(const char* stream, CriLog* log) : stream_(stream), log_(log) {}
    LineSplitter(const LineSplitter&) = delete;
    LineSplitter& operator=(const LineSplitter&) = delete;

    char* space() { return buf_ + len_; }
    std::size_t space_size() const { return sizeof buf_ - len_; }
    // `n` bytes were read into space(): writes every complete line, and a
    // partial record when the buffer is full without a newline.
    void commit(std::size_t n);
    // End of the stream: what is left is written as a full record.
    void finish();

  private:
    const char* stream_;
    CriLog* log_;
    char buf_[kLogLineMax];
    std::size_t len_ = 0;
};

}  // namespace daemonlet::shim
