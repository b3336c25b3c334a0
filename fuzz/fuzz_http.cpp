// libFuzzer target: the metrics endpoint's request reader
// (platform/http_request.h), as the server drives it: the bytes of one
// connection, arriving in pieces split at points the input chooses, routed
// to a handler with the agent's paths. Checks what the server relies on:
// one response at most, a well-formed status line with a Content-Length
// that is the body's, the handler called only for a complete GET or HEAD
// with a path without its query, nothing more once answered.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string>

#include "platform/http_request.h"

namespace {
void check(bool ok) {
    if (!ok) std::abort();
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace daemonlet::platform;
    if (size == 0) return 0;
    // The first byte: the piece size (1..32 bytes, as reads arrive); the
    // second: a small request limit or the server's 8 KiB.
    const std::size_t piece = 1 + data[0] % 32;
    const std::size_t limit = size > 1 && data[1] % 2 ? 64 + data[1] : 8 * 1024;
    const char* in = reinterpret_cast<const char*>(data) + 1;
    std::size_t left = size - 1;

    int calls = 0;
    std::string head_method;
    const HttpHandler handler = [&](const std::string& method, const std::string& path) -> HttpReply {
        ++calls;
        check(method == "GET" || method == "HEAD");
        check(path.find('?') == std::string::npos);
        head_method = method;
        if (path == "/healthz") return {200, "text/plain; charset=utf-8", "ok"};
        if (path == "/metrics") return {200, "text/plain; version=0.0.4; charset=utf-8", "up 1\n"};
        return {404, "text/plain; charset=utf-8", "not found\n"};
    };
    HttpRequestReader reader(limit);
    std::optional<std::string> response;
    std::size_t fed = 0;
    while (left > 0) {
        const std::size_t n = left < piece ? left : piece;
        auto r = reader.feed(in, n, handler);
        fed += n;
        in += n;
        left -= n;
        if (r) {
            check(!response);  // one response per connection
            response = std::move(r);
            check(reader.done());
        } else if (response) {
            continue;  // after the answer nothing is read
        }
    }
    check(calls <= 1);
    if (!response) {
        check(!reader.done() && fed <= limit);
        return 0;
    }
    const std::string& out = *response;
    check(out.rfind("HTTP/1.1 ", 0) == 0 && out.size() > 12);
    const int status = std::atoi(out.c_str() + 9);
    check(status == 200 || status == 400 || status == 404 || status == 405 || status == 431);
    check((calls == 1) == (status == 200 || status == 404));
    const std::size_t end = out.find("\r\n\r\n");
    check(end != std::string::npos);
    const std::size_t cl = out.find("\r\nContent-Length: ");
    check(cl != std::string::npos && cl < end);
    const std::size_t length = std::strtoul(out.c_str() + cl + 18, nullptr, 10);
    const std::size_t body = out.size() - end - 4;
    check(head_method == "HEAD" ? body == 0 : body == length);
    return 0;
}
