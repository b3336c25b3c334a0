// An HTTP/2 client session (nghttp2, loaded on first use: nghttp2_api.h)
// over a byte transport the caller owns (the API server client's TLS
// connection, api_h2.cpp): submit requests as streams, feed the
// bytes received, take the bytes to send. nghttp2 keeps the framing, HPACK
// and flow control (WINDOW_UPDATE as the data is consumed); the windows
// are raised so that a 4 MiB list page needs no round trip per 64 KiB.
//
// The callbacks run inside receive(); they may call reset() and submit(),
// not receive() or take_output().
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/result.h"

namespace daemonlet::platform {

class H2Session {
  public:
    struct Callbacks {
        // A response header of `stream`; ":status" among them.
        std::function<void(std::int32_t stream, std::string_view name, std::string_view value)> on_header;
        // A header block of `stream` ended (a 1xx one: another follows).
        std::function<void(std::int32_t stream)> on_headers_end;
        // Body bytes of `stream`.
        std::function<void(std::int32_t stream, std::string_view data)> on_data;
        // `stream` is closed: error_code 0 when its response ended cleanly.
        std::function<void(std::int32_t stream, std::uint32_t error_code)> on_close;
        // The server sent GOAWAY: streams above last_stream_id were not
        // processed (nghttp2 closes them with REFUSED_STREAM).
        std::function<void(std::int32_t last_stream_id, std::uint32_t error_code)> on_goaway;
    };

    // The library's error when nghttp2 cannot be loaded.
    static Result<std::unique_ptr<H2Session>> create(Callbacks cb);
    ~H2Session();
    H2Session(const H2Session&) = delete;
    H2Session& operator=(const H2Session&) = delete;

    // A request: its stream id. `headers` with lowercase names, without
    // Host, Connection or Content-Length (added for a body).
    Result<std::int32_t> submit(const std::string& method, const std::string& authority,
                                const std::string& path,
                                const std::vector<std::pair<std::string, std::string>>& headers,
                                std::string body);
    // RST_STREAM with `error_code` (NGHTTP2_CANCEL: 8).
    void reset(std::int32_t stream, std::uint32_t error_code);
    // Received bytes; an error is a connection error (the session is done).
    Status receive(const unsigned char* data, std::size_t len);
    // Appends the bytes to send to `out`.
    Status take_output(std::string& out);
    // false: neither side wants more (after GOAWAY, no stream left).
    bool alive() const;

    // An HTTP/2 error code's name ("CANCEL", "REFUSED_STREAM").
    static std::string error_name(std::uint32_t code);

    static constexpr std::uint32_t kCancel = 8;
    static constexpr std::uint32_t kRefusedStream = 7;

    struct Impl;

  private:
    explicit H2Session(std::unique_ptr<Impl> impl);
    std::unique_ptr<Impl> impl_;
};

}  // namespace daemonlet::platform
