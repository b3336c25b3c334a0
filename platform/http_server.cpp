#include "platform/http_server.h"

#include <netinet/in.h>
#include <sys/socket.h>

#include <array>
#include <cstring>
#include <memory>

#include "core/metrics.h"

namespace daemonlet::platform {

struct HttpServer::Conn {
    uv_tcp_t tcp{};
    uv_timer_t deadline{};
    HttpServer* server = nullptr;
    std::uint64_t id = 0;
    int open_handles = 2;  // tcp and deadline: freed when both have closed
    std::unique_ptr<HttpRequestReader> reader;
    bool answered = false;
    std::array<char, 4096> read_buf{};
};

namespace {

struct HttpWriteReq {
    uv_write_t req{};
    std::string data;
};

}  // namespace

HttpServer::HttpServer(uv_loop_t* loop, Limits limits, Handler handler)
    : loop_(loop), limits_(limits), handler_(std::move(handler)) {}

HttpServer::~HttpServer() { close(); }

Status HttpServer::start(const std::string& address) {
    auto hp = parse_bind_address(address);
    if (!hp.ok()) return Error{ErrorCode::Invalid, "metricsBindAddress " + hp.error().message};
    sockaddr_storage addr{};
    const bool v6 = hp.value().host.find(':') != std::string::npos;
    int rc =
        v6 ? uv_ip6_addr(hp.value().host.c_str(), hp.value().port, reinterpret_cast<sockaddr_in6*>(&addr))
           : uv_ip4_addr(hp.value().host.c_str(), hp.value().port, reinterpret_cast<sockaddr_in*>(&addr));
    if (rc != 0) return Error{ErrorCode::Invalid, "metricsBindAddress " + address + ": " + uv_strerror(rc)};
    listener_ = new uv_tcp_t;
    uv_tcp_init(loop_, listener_);
    listener_->data = this;
    rc = uv_tcp_bind(listener_, reinterpret_cast<const sockaddr*>(&addr), 0);
    if (rc == 0) rc = uv_listen(reinterpret_cast<uv_stream_t*>(listener_), 16, on_connection);
    if (rc != 0) {
        close();
        return Error{rc == UV_EADDRINUSE ? ErrorCode::Busy : ErrorCode::Io,
                     "metrics endpoint " + address + ": " + uv_strerror(rc)};
    }
    sockaddr_storage bound{};
    int len = sizeof bound;
    uv_tcp_getsockname(listener_, reinterpret_cast<sockaddr*>(&bound), &len);
    char host[64] = {};
    int port = 0;
    if (bound.ss_family == AF_INET6) {
        auto* a6 = reinterpret_cast<sockaddr_in6*>(&bound);
        uv_ip6_name(a6, host, sizeof host);
        port = ntohs(a6->sin6_port);
        bound_ = "[" + std::string(host) + "]:" + std::to_string(port);
    } else {
        auto* a4 = reinterpret_cast<sockaddr_in*>(&bound);
        uv_ip4_name(a4, host, sizeof host);
        port = ntohs(a4->sin_port);
        bound_ = std::string(host) + ":" + std::to_string(port);
    }
    return Ok{};
}

void HttpServer::close() {
    while (!conns_.empty()) drop(conns_.begin()->second);
    if (listener_) {
        uv_close(reinterpret_cast<uv_handle_t*>(listener_),
                 [](uv_handle_t* h) { delete reinterpret_cast<uv_tcp_t*>(h); });
        listener_ = nullptr;
    }
}

void HttpServer::drop(Conn* c) {
    if (conns_.erase(c->id) == 0) return;  // already closing
    auto closed = [](uv_handle_t* h) {
        auto* conn = static_cast<Conn*>(h->data);
        if (--conn->open_handles == 0) delete conn;
    };
    uv_close(reinterpret_cast<uv_handle_t*>(&c->tcp), closed);
    uv_close(reinterpret_cast<uv_handle_t*>(&c->deadline), closed);
}

void HttpServer::on_connection(uv_stream_t* listener, int status) {
    auto* self = static_cast<HttpServer*>(listener->data);
    if (status < 0) return;
    auto* c = new Conn;
    c->server = self;
    c->id = self->next_id_++;
    uv_tcp_init(self->loop_, &c->tcp);
    uv_timer_init(self->loop_, &c->deadline);
    c->tcp.data = c;
    c->deadline.data = c;
    self->conns_[c->id] = c;
    if (uv_accept(listener, reinterpret_cast<uv_stream_t*>(&c->tcp)) != 0 ||
        self->conns_.size() > self->limits_.max_clients) {
        self->drop(c);
        return;
    }
    c->reader = std::make_unique<HttpRequestReader>(self->limits_.max_request_bytes);
    uv_timer_start(
        &c->deadline,
        [](uv_timer_t* t) {
            auto* conn = static_cast<Conn*>(t->data);
            conn->server->drop(conn);
        },
        self->limits_.request_timeout_ms, 0);
    uv_read_start(
        reinterpret_cast<uv_stream_t*>(&c->tcp),
        [](uv_handle_t* h, std::size_t, uv_buf_t* buf) {
            auto* conn = static_cast<Conn*>(h->data);
            *buf = uv_buf_init(conn->read_buf.data(), static_cast<unsigned>(conn->read_buf.size()));
        },
        [](uv_stream_t* s, ssize_t n, const uv_buf_t* buf) {
            auto* conn = static_cast<Conn*>(s->data);
            HttpServer* server = conn->server;
            if (n < 0) return server->drop(conn);  // EOF or error: nothing to answer
            if (n == 0 || conn->reader->done()) return;
            auto response = conn->reader->feed(buf->base, static_cast<std::size_t>(n), server->handler_);
            if (!response) return;
            uv_read_stop(s);  // the request is in (or refused): no more reading
            server->respond(conn, std::move(*response));
        });
}

void HttpServer::respond(Conn* c, std::string response) {
    if (c->answered) return;
    c->answered = true;
    auto* w = new HttpWriteReq;
    w->data = std::move(response);
    w->req.data = c;
    uv_buf_t buf = uv_buf_init(w->data.data(), static_cast<unsigned>(w->data.size()));
    const std::uint64_t id = c->id;
    const int rc =
        uv_write(&w->req, reinterpret_cast<uv_stream_t*>(&c->tcp), &buf, 1, [](uv_write_t* req, int) {
            auto* wr = reinterpret_cast<HttpWriteReq*>(req);
            auto* conn = static_cast<Conn*>(req->data);
            // Written (or failed, or cancelled by a close): the connection ends.
            if (conn->server) conn->server->drop(conn);
            delete wr;
        });
    if (rc != 0) {
        delete w;
        if (conns_.count(id)) drop(c);
    }
}

}  // namespace daemonlet::platform
