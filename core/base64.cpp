// A transcription of Go's encoding/base64 (*Encoding).Decode for
// StdEncoding, so that a bad value is reported at the byte Go reports.
#include "core/base64.h"

namespace daemonlet {
namespace {

int value_of(char c) {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
}

}  // namespace

std::string Base64Result::error() const {
    return corrupt_at ? "illegal base64 data at input byte " + std::to_string(*corrupt_at) : std::string();
}

// decodeQuantum, looped: four symbols make three bytes; '=' pads the last
// quantum (two or three symbols); newlines are skipped wherever they are.
Base64Result base64_std_decode(std::string_view src) {
    Base64Result out;
    out.bytes.reserve(src.size() / 4 * 3);
    std::size_t si = 0;
    for (;;) {
        int dbuf[4] = {0, 0, 0, 0};
        std::size_t dlen = 4;
        std::size_t j = 0;
        bool done = false;
        for (; j < 4; ++j) {
            while (si < src.size() && (src[si] == '\n' || src[si] == '\r')) ++si;
            if (si == src.size()) {
                if (j == 0) return out;
                out.corrupt_at = si - j;
                return out;
            }
            char in = src[si++];
            int v = value_of(in);
            if (v >= 0) {
                dbuf[j] = v;
                continue;
            }
            if (in != '=') {
                out.corrupt_at = si - 1;
                return out;
            }
            // Padding: only in the third or fourth place.
            if (j == 0 || j == 1) {
                out.corrupt_at = si - 1;
                return out;
            }
            while (si < src.size() && (src[si] == '\n' || src[si] == '\r')) ++si;
            if (j == 2) {
                // "==" is required after two symbols.
                if (si == src.size()) {
                    out.corrupt_at = src.size();
                    return out;
                }
                if (src[si] != '=') {
                    out.corrupt_at = si - 1;
                    return out;
                }
                ++si;
                while (si < src.size() && (src[si] == '\n' || src[si] == '\r')) ++si;
            }
            if (si < src.size()) {
                out.corrupt_at = si;  // trailing garbage after the padding
                return out;
            }
            dlen = j;
            done = true;
            break;
        }
        unsigned val = static_cast<unsigned>(dbuf[0]) << 18 | static_cast<unsigned>(dbuf[1]) << 12 |
                       static_cast<unsigned>(dbuf[2]) << 6 | static_cast<unsigned>(dbuf[3]);
        out.bytes.push_back(static_cast<char>((val >> 16) & 0xff));
        if (dlen >= 3) out.bytes.push_back(static_cast<char>((val >> 8) & 0xff));
        if (dlen >= 4) out.bytes.push_back(static_cast<char>(val & 0xff));
        if (done) return out;
    }
}

}  // namespace daemonlet
