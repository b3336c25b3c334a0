// A tiny HTTP/1.1 responder on the test's own libuv loop, on 127.0.0.1 and
// an ephemeral port: reads one request per connection (up to the blank
// line), answers by path, and closes. Enough to drive the HTTP client and
// the httpGet probe against a real socket:
//
//   /ok           200 "fine"
//   /status/N     N (e.g. 500, 404, 301 without Location)
//   /redirect     302 to /ok on the same host
//   /elsewhere    302 to http://127.0.0.2:PORT/ok (another host name)
//   /loop         302 to /loop, for ever
//   /big          200 with a 64 KiB body
//   /silent       never answers (timeouts)
//   /headers      200 with the request's header lines as the body
#pragma once

#include <uv.h>

#include <string>
#include <vector>

namespace daemonlet::testing {

class HttpResponder {
  public:
    explicit HttpResponder(uv_loop_t* loop);
    ~HttpResponder();  // close() must have been called and the loop run
    int port() const { return port_; }
    void close();                    // the listener and every open connection
    std::vector<std::string> paths;  // requested, in order

    struct Conn;

  private:
    uv_loop_t* loop_;
    uv_tcp_t* server_;
    int port_ = 0;
    std::vector<Conn*> conns_;
    friend struct Conn;
};

}  // namespace daemonlet::testing
