// Text building for daemonlet-shim without stdio or iostreams: a bounded
// buffer with appenders for numbers, JSON strings and RFC 3339 timestamps,
// and the atomic file write the state files need. The shim is paid for once
// per container, so it avoids the parts of the C and C++ libraries that would
// page in (printf's locale machinery, iostreams).
#pragma once

#include <time.h>

#include <cstddef>
#include <cstdint>

namespace daemonlet::shim {

// Appends into caller-provided storage, always NUL-terminated; what does not
// fit is dropped and remembered (truncated()).
class Text {
  public:
    Text(char* storage, std::size_t capacity) : data_(storage), cap_(capacity) { data_[0] = '\0'; }

    Text& mem(const char* s, std::size_t n);
    Text& str(const char* s);
    Text& ch(char c) { return mem(&c, 1); }
    Text& num(std::int64_t v);
    Text& unum(std::uint64_t v);
    // A JSON string literal, quotes included; bytes >= 0x80 are copied as is.
    Text& json(const char* s);
    // `"key":` as a JSON object member name.
    Text& key(const char* k) { return json(k).ch(':'); }

    const char* c_str() const { return data_; }
    std::size_t size() const { return len_; }
    bool truncated() const { return truncated_; }
    void clear() {
        len_ = 0;
        data_[0] = '\0';
        truncated_ = false;
    }

  private:
    char* data_;
    std::size_t cap_;
    std::size_t len_ = 0;
    bool truncated_ = false;
};

// Length of an RFC 3339 timestamp with nanoseconds in UTC, as CRI logs carry
// them: "2006-01-02T15:04:05.123456789Z".
inline constexpr std::size_t kTimestampLen = 30;

// Formats `ts` (CLOCK_REALTIME) into out[kTimestampLen] (not NUL-terminated).
void format_timestamp(const struct timespec& ts, char* out);

// The text of an errno value, lower case as Go's and libuv's are ("no such
// file or directory"): libuv's table, not strerror's locale machinery.
const char* error_text(int err);

// Milliseconds since the epoch, wall clock.
std::int64_t now_ms();

// Writes `name` in the directory `dir_fd` atomically: a temporary file,
// then rename over `name`; not synced to disk (see shim_protocol.h).
// Returns 0 or an errno.
int write_file_atomic(int dir_fd, const char* name, const char* data, std::size_t len);

// Writes all of `data` to `fd`, retrying on EINTR and short writes.
// Returns 0 or an errno.
int write_all(int fd, const char* data, std::size_t len);

}  // namespace daemonlet::shim
