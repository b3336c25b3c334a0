// The pure half of the metrics endpoint's HTTP server (http_server.h): one
// request read from the bytes as they arrive, by llhttp (Node.js's parser,
// Debian's node-llhttp sources compiled in), routed, and its response
// written out. No socket, no loop: the fuzz target fuzz/fuzz_http.cpp drives
// it with arbitrary bytes, split anywhere.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>

namespace daemonlet::platform {

struct HttpReply {
    int status = 200;
    std::string content_type = "text/plain; charset=utf-8";
    std::string body;
};
// `path` is the request target without its query string.
using HttpHandler = std::function<HttpReply(const std::string& method, const std::string& path)>;

// One request per connection. feed() takes the next bytes read and returns
// the whole response once there is one: the handler's for a complete GET or
// HEAD (HEAD without the body), 405 for another method, 400 (llhttp's error
// name) for what is not HTTP, 431 once more than max_request_bytes have come
// without a complete request. Until then, and after, it returns nothing:
// whatever follows the request is not read.
class HttpRequestReader {
  public:
    explicit HttpRequestReader(std::size_t max_request_bytes);
    HttpRequestReader(const HttpRequestReader&) = delete;
    HttpRequestReader& operator=(const HttpRequestReader&) = delete;
    ~HttpRequestReader();

    std::optional<std::string> feed(const char* data, std::size_t n, const HttpHandler& handler);
    bool done() const { return done_; }

  private:
    struct Parser;
    std::unique_ptr<Parser> parser_;
    std::size_t max_request_bytes_;
    std::size_t received_ = 0;
    bool done_ = false;
};

// "HTTP/1.1 <status> <reason>" with Content-Type, Content-Length and
// "Connection: close", then the body unless `head`.
std::string format_http_response(const HttpReply& reply, bool head);

}  // namespace daemonlet::platform
