#include "platform/http_request.h"

#include <llhttp.h>

namespace daemonlet::platform {

namespace {

const char* reason_phrase(int status) {
    switch (status) {
    case 200: return "OK";
    case 400: return "Bad Request";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 431: return "Request Header Fields Too Large";
    case 500: return "Internal Server Error";
    case 503: return "Service Unavailable";
    default: return "Unknown";
    }
}

int on_url(llhttp_t* p, const char* at, std::size_t n) {
    static_cast<std::string*>(p->data)->append(at, n);
    return 0;
}

int on_message_complete(llhttp_t* p) {
    // One request per connection: stop here, whatever follows.
    (void)p;
    return HPE_PAUSED;
}

}  // namespace

struct HttpRequestReader::Parser {
    llhttp_t parser{};
    llhttp_settings_t settings{};
    std::string url;
};

HttpRequestReader::HttpRequestReader(std::size_t max_request_bytes)
    : parser_(std::make_unique<Parser>()), max_request_bytes_(max_request_bytes) {
    llhttp_settings_init(&parser_->settings);
    parser_->settings.on_url = on_url;
    parser_->settings.on_message_complete = on_message_complete;
    llhttp_init(&parser_->parser, HTTP_REQUEST, &parser_->settings);
    parser_->parser.data = &parser_->url;
}

HttpRequestReader::~HttpRequestReader() = default;

std::optional<std::string> HttpRequestReader::feed(const char* data, std::size_t n,
                                                   const HttpHandler& handler) {
    if (done_ || n == 0) return std::nullopt;
    received_ += n;
    if (received_ > max_request_bytes_) {
        done_ = true;
        return format_http_response({431, "text/plain; charset=utf-8", "request too large\n"}, false);
    }
    const llhttp_errno_t err = llhttp_execute(&parser_->parser, data, n);
    if (err == HPE_PAUSED) {
        done_ = true;
        const std::string method = llhttp_method_name(static_cast<llhttp_method_t>(parser_->parser.method));
        if (method != "GET" && method != "HEAD")
            return format_http_response({405, "text/plain; charset=utf-8", "only GET\n"}, false);
        const std::string path = parser_->url.substr(0, parser_->url.find('?'));
        return format_http_response(handler(method, path), method == "HEAD");
    }
    if (err != HPE_OK) {
        done_ = true;
        return format_http_response(
            {400, "text/plain; charset=utf-8", std::string(llhttp_errno_name(err)) + "\n"}, false);
    }
    return std::nullopt;
}

std::string format_http_response(const HttpReply& reply, bool head) {
    std::string out = "HTTP/1.1 " + std::to_string(reply.status) + " " + reason_phrase(reply.status) +
                      "\r\nContent-Type: " + reply.content_type +
                      "\r\nContent-Length: " + std::to_string(reply.body.size()) +
                      "\r\nConnection: close\r\n\r\n";
    if (!head) out += reply.body;
    return out;
}

}  // namespace daemonlet::platform
