// A small HTTP/1.1 server on a libuv loop (uv_tcp), for the agent's
// /metrics and /healthz. Requests are parsed by llhttp (Node.js's parser,
// Debian's node-llhttp sources compiled in: docs/dependencies.md) in
// http_request.h, the pure half; what they mean is the owner's Handler,
// which answers at once on the loop.
//
// A slow or hostile client costs a bounded amount and never blocks the loop:
// - at most Limits::max_clients connections; one more is accepted and closed
//   at once (so that the kernel's backlog does not fill);
// - a request (line and headers) longer than max_request_bytes gets 431 and
//   the connection is closed; a body is not read (only GET and HEAD are
//   served, anything else gets 405);
// - every connection is closed request_timeout_ms after it was accepted,
//   answered or not, written or not (a client that does not read its
//   response holds at most one response's bytes until then);
// - one request per connection: the response says "Connection: close".
// The process must ignore SIGPIPE (libuv writes with write(2)).
#pragma once

#include <uv.h>

#include <cstdint>
#include <functional>
#include <map>
#include <string>

#include "core/result.h"
#include "platform/http_request.h"

namespace daemonlet::platform {

class HttpServer {
  public:
    struct Limits {
        std::size_t max_request_bytes = 8 * 1024;
        std::size_t max_clients = 16;
        std::uint64_t request_timeout_ms = 10'000;
    };
    using Reply = HttpReply;
    // `path` is the request target without its query string.
    using Handler = HttpHandler;

    HttpServer(uv_loop_t* loop, Limits limits, Handler handler);
    HttpServer(const HttpServer&) = delete;
    HttpServer& operator=(const HttpServer&) = delete;
    ~HttpServer();

    // Binds and listens on `address`, "host:port" with an IPv4 literal or a
    // bracketed IPv6 one ("[::1]:10255"); port 0 picks a free one. Fails
    // synchronously, naming the address and the reason.
    Status start(const std::string& address);
    // Closes every connection and the listener.
    void close();

    // "host:port" as bound (the port chosen for 0); "" before start.
    const std::string& address() const { return bound_; }
    std::size_t clients() const { return conns_.size(); }

  private:
    struct Conn;
    static void on_connection(uv_stream_t* server, int status);
    void drop(Conn* c);
    void respond(Conn* c, std::string response);

    uv_loop_t* loop_;
    Limits limits_;
    Handler handler_;
    uv_tcp_t* listener_ = nullptr;
    std::string bound_;
    std::uint64_t next_id_ = 1;
    std::map<std::uint64_t, Conn*> conns_;
};

}  // namespace daemonlet::platform
