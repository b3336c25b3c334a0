#include "platform/shim/shim_text.h"

#include <fcntl.h>
#include <unistd.h>
#include <uv.h>

#include <cerrno>
#include <cstdio>  // rename, renameat: no stdio streams are used
#include <cstring>

namespace daemonlet::shim {

Text& Text::mem(const char* s, std::size_t n) {
    std::size_t room = cap_ - 1 - len_;
    if (n > room) {
        n = room;
        truncated_ = true;
    }
    std::memcpy(data_ + len_, s, n);
    len_ += n;
    data_[len_] = '\0';
    return *this;
}

Text& Text::str(const char* s) { return mem(s, std::strlen(s)); }

Text& Text::unum(std::uint64_t v) {
    char tmp[20];
    std::size_t n = 0;
    do {
        tmp[sizeof tmp - 1 - n++] = static_cast<char>('0' + v % 10);
        v /= 10;
    } while (v != 0);
    return mem(tmp + sizeof tmp - n, n);
}

Text& Text::num(std::int64_t v) {
    if (v >= 0) return unum(static_cast<std::uint64_t>(v));
    ch('-');
    return unum(~static_cast<std::uint64_t>(v) + 1);
}

Text& Text::json(const char* s) {
    static const char hex[] = "0123456789abcdef";
    ch('"');
    for (; *s != '\0'; ++s) {
        auto c = static_cast<unsigned char>(*s);
        switch (c) {
        case '"': str("\\\""); break;
        case '\\': str("\\\\"); break;
        case '\n': str("\\n"); break;
        case '\r': str("\\r"); break;
        case '\t': str("\\t"); break;
        default:
            if (c < 0x20) {
                char esc[6] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 15]};
                mem(esc, sizeof esc);
            } else {
                ch(static_cast<char>(c));
            }
        }
    }
    return ch('"');
}

namespace {

void put_digits(char* out, std::uint64_t v, int width) {
    for (int i = width - 1; i >= 0; --i) {
        out[i] = static_cast<char>('0' + v % 10);
        v /= 10;
    }
}

}  // namespace

void format_timestamp(const struct timespec& ts, char* out) {
    // Civil date from days since the epoch (Howard Hinnant's algorithm), so
    // that no time zone machinery is linked or read.
    std::int64_t secs = ts.tv_sec;
    std::int64_t days = secs / 86400;
    std::int64_t rem = secs % 86400;
    if (rem < 0) {
        rem += 86400;
        --days;
    }
    days += 719468;
    std::int64_t era = (days >= 0 ? days : days - 146096) / 146097;
    std::int64_t doe = days - era * 146097;
    std::int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    std::int64_t year = yoe + era * 400;
    std::int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    std::int64_t mp = (5 * doy + 2) / 153;
    std::int64_t day = doy - (153 * mp + 2) / 5 + 1;
    std::int64_t month = mp < 10 ? mp + 3 : mp - 9;
    if (month <= 2) ++year;
    put_digits(out, static_cast<std::uint64_t>(year), 4);
    out[4] = '-';
    put_digits(out + 5, static_cast<std::uint64_t>(month), 2);
    out[7] = '-';
    put_digits(out + 8, static_cast<std::uint64_t>(day), 2);
    out[10] = 'T';
    put_digits(out + 11, static_cast<std::uint64_t>(rem / 3600), 2);
    out[13] = ':';
    put_digits(out + 14, static_cast<std::uint64_t>(rem / 60 % 60), 2);
    out[16] = ':';
    put_digits(out + 17, static_cast<std::uint64_t>(rem % 60), 2);
    out[19] = '.';
    put_digits(out + 20, static_cast<std::uint64_t>(ts.tv_nsec), 9);
    out[29] = 'Z';
}

const char* error_text(int err) { return uv_strerror(uv_translate_sys_error(err)); }

std::int64_t now_ms() {
    struct timespec ts {};
    ::clock_gettime(CLOCK_REALTIME, &ts);
    return static_cast<std::int64_t>(ts.tv_sec) * 1000 + ts.tv_nsec / 1000000;
}

int write_all(int fd, const char* data, std::size_t len) {
    while (len > 0) {
        ssize_t n = ::write(fd, data, len);
        if (n < 0) {
            if (errno == EINTR) continue;
            return errno;
        }
        data += n;
        len -= static_cast<std::size_t>(n);
    }
    return 0;
}

int write_file_atomic(int dir_fd, const char* name, const char* data, std::size_t len) {
    char tmp[64];
    Text tmp_name(tmp, sizeof tmp);
    tmp_name.ch('.').str(name).str(".tmp");
    if (tmp_name.truncated()) return ENAMETOOLONG;
    int fd = ::openat(dir_fd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) return errno;
    int err = write_all(fd, data, len);
    if (::close(fd) != 0 && err == 0) err = errno;
    if (err == 0 && ::renameat(dir_fd, tmp, dir_fd, name) != 0) err = errno;
    if (err != 0) {
        ::unlinkat(dir_fd, tmp, 0);
        return err;
    }
    return 0;
}

}  // namespace daemonlet::shim
