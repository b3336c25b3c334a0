#include "tests/platform/http/http_responder.h"

#include <algorithm>
#include <cstring>

#include <CppUTest/TestHarness.h>

namespace daemonlet::testing {

struct HttpResponder::Conn {
    uv_tcp_t tcp{};
    HttpResponder* owner = nullptr;
    std::string in;
    std::string out;
    uv_write_t write{};
    char buf[4096];
    bool closing = false;

    void close() {
        if (closing) return;
        closing = true;
        auto& v = owner->conns_;
        v.erase(std::remove(v.begin(), v.end(), this), v.end());
        uv_close(reinterpret_cast<uv_handle_t*>(&tcp),
                 [](uv_handle_t* h) { delete static_cast<Conn*>(h->data); });
    }

    void respond(int status, const std::string& extra_headers, const std::string& body) {
        out = "HTTP/1.1 " + std::to_string(status) + " X\r\nContent-Length: " + std::to_string(body.size()) +
              "\r\nConnection: close\r\n" + extra_headers + "\r\n" + body;
        uv_buf_t b = uv_buf_init(out.data(), static_cast<unsigned>(out.size()));
        write.data = this;
        uv_write(&write, reinterpret_cast<uv_stream_t*>(&tcp), &b, 1, [](uv_write_t* w, int) {
            auto* c = static_cast<Conn*>(w->data);
            c->close();
        });
    }

    void handle() {
        auto end = in.find("\r\n\r\n");
        if (end == std::string::npos) return;
        uv_read_stop(reinterpret_cast<uv_stream_t*>(&tcp));
        std::string line = in.substr(0, in.find("\r\n"));
        auto sp1 = line.find(' ');
        auto sp2 = line.find(' ', sp1 + 1);
        std::string path = line.substr(sp1 + 1, sp2 - sp1 - 1);
        owner->paths.push_back(path);
        const std::string port = std::to_string(owner->port_);
        if (path == "/ok") return respond(200, "", "fine");
        if (path.rfind("/status/", 0) == 0) return respond(std::stoi(path.substr(8)), "", "status body");
        if (path == "/redirect") return respond(302, "Location: /ok\r\n", "");
        if (path == "/elsewhere") return respond(302, "Location: http://127.0.0.2:" + port + "/ok\r\n", "");
        if (path == "/loop") return respond(302, "Location: /loop\r\n", "");
        if (path == "/big") return respond(200, "", std::string(64 * 1024, 'x'));
        if (path == "/headers") return respond(200, "", in.substr(0, end));
        if (path == "/silent") return;
        respond(404, "", "not found");
    }
};

HttpResponder::HttpResponder(uv_loop_t* loop) : loop_(loop), server_(new uv_tcp_t) {
    uv_tcp_init(loop_, server_);
    server_->data = this;
    sockaddr_in addr{};
    uv_ip4_addr("127.0.0.1", 0, &addr);
    CHECK_EQUAL(0, uv_tcp_bind(server_, reinterpret_cast<const sockaddr*>(&addr), 0));
    CHECK_EQUAL(0, uv_listen(reinterpret_cast<uv_stream_t*>(server_), 16, [](uv_stream_t* s, int status) {
                    if (status != 0) return;
                    auto* self = static_cast<HttpResponder*>(s->data);
                    auto* c = new Conn;
                    c->owner = self;
                    uv_tcp_init(self->loop_, &c->tcp);
                    c->tcp.data = c;
                    self->conns_.push_back(c);
                    if (uv_accept(s, reinterpret_cast<uv_stream_t*>(&c->tcp)) != 0) return c->close();
                    uv_read_start(
                        reinterpret_cast<uv_stream_t*>(&c->tcp),
                        [](uv_handle_t* h, std::size_t, uv_buf_t* b) {
                            auto* cc = static_cast<Conn*>(h->data);
                            *b = uv_buf_init(cc->buf, sizeof cc->buf);
                        },
                        [](uv_stream_t* st, ssize_t n, const uv_buf_t* b) {
                            auto* cc = static_cast<Conn*>(st->data);
                            if (n < 0) return cc->close();
                            cc->in.append(b->base, static_cast<std::size_t>(n));
                            cc->handle();
                        });
                }));
    sockaddr_storage bound{};
    int len = sizeof bound;
    uv_tcp_getsockname(server_, reinterpret_cast<sockaddr*>(&bound), &len);
    port_ = ntohs(reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
}

HttpResponder::~HttpResponder() { close(); }

void HttpResponder::close() {
    if (!server_) return;
    while (!conns_.empty()) conns_.back()->close();
    uv_close(reinterpret_cast<uv_handle_t*>(server_),
             [](uv_handle_t* h) { delete reinterpret_cast<uv_tcp_t*>(h); });
    server_ = nullptr;
}

}  // namespace daemonlet::testing
