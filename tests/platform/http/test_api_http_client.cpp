// The API server's HTTP client (HTTP/1.1 or 2, mbed TLS) on a real libuv loop
// against a keep-alive HTTP/1.1 server on the same loop (below): bodies with
// a Content-Length or chunked, a watch stopped by its receiver, the body
// limit, the timeout, a refused port, keep-alive reuse, and a kept-alive
// connection the server closed (as Go's net/http does after its idle
// timeout): the next request still succeeds, as curl's retry on a dead
// reused connection. TLS against an mbed TLS server on a thread: the CA
// accepted or refused, the host name or IP address checked (the clock's
// part: test_clock.sh). HTTP/2 through nghttpx in front of the keep-alive
// server, when nghttpx is installed, and through a relay that stops reading
// (the client's writes wait: WANT_WRITE); against the TLS server speaking
// just enough h2 to break the protocol under a watch (no nghttpx needed).
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstring>

#include <algorithm>
#include <atomic>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "platform/http/api_http_client.h"
#include "platform/http/mbedtls_api.h"
#include "tests/platform/http/client_test.h"
#include "tests/platform/http/test_certs.h"
#include "tests/platform/runtime_fixture.h"

#include <CppUTest/TestHarness.h>

using namespace daemonlet;
using namespace daemonlet::testing;

namespace {

// One request at a time per connection, kept alive unless the script says.
//   /plain        200 "fine" (Content-Length)
//   /chunked      200 "abcdefg" in two chunks
//   /stream       200, one chunk "{"n":1}\n", then nothing (a watch)
//   /big          200 with 64 KiB
//   /silent       nothing
//   /echo         200 "METHOD BODY X-Test" (the request's body read by its
//                 Content-Length)
//   /bye          200 "fine", then the server closes the connection
//   /drop-next    200 "fine"; the next request on this connection gets no
//                 answer: the server closes it (a connection closed while
//                 the request was on its way)
class KeepAliveServer {
  public:
    explicit KeepAliveServer(uv_loop_t* loop) {
        server_.data = this;
        uv_tcp_init(loop, &server_);
        sockaddr_in addr{};
        uv_ip4_addr("127.0.0.1", 0, &addr);
        uv_tcp_bind(&server_, reinterpret_cast<const sockaddr*>(&addr), 0);
        uv_listen(reinterpret_cast<uv_stream_t*>(&server_), 8, [](uv_stream_t* s, int) {
            auto* self = static_cast<KeepAliveServer*>(s->data);
            auto* c = new Conn{{}, self, {}, false};
            uv_tcp_init(s->loop, &c->tcp);
            c->tcp.data = c;
            if (uv_accept(s, reinterpret_cast<uv_stream_t*>(&c->tcp)) != 0) return self->drop(c);
            ++self->accepted;
            self->conns_.push_back(c);
            uv_read_start(
                reinterpret_cast<uv_stream_t*>(&c->tcp),
                [](uv_handle_t*, std::size_t, uv_buf_t* b) {
                    static char buf[65536];
                    *b = uv_buf_init(buf, sizeof buf);
                },
                [](uv_stream_t* st, ssize_t n, const uv_buf_t* b) {
                    auto* conn = static_cast<Conn*>(st->data);
                    if (n < 0) return conn->self->drop(conn);
                    conn->in.append(b->base, static_cast<std::size_t>(n));
                    conn->self->serve(conn);
                });
        });
        sockaddr_storage bound{};
        int len = sizeof bound;
        uv_tcp_getsockname(&server_, reinterpret_cast<sockaddr*>(&bound), &len);
        port = ntohs(reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
    }
    void close() {
        uv_close(reinterpret_cast<uv_handle_t*>(&server_), nullptr);
        for (auto* c : std::vector<Conn*>(conns_)) drop(c);
    }
    int port = 0;
    int accepted = 0;
    std::vector<std::string> paths;

  private:
    struct Conn {
        uv_tcp_t tcp;
        KeepAliveServer* self;
        std::string in;
        bool drop_next;
    };
    void drop(Conn* c) {
        std::erase(conns_, c);
        uv_close(reinterpret_cast<uv_handle_t*>(&c->tcp),
                 [](uv_handle_t* h) { delete static_cast<Conn*>(h->data); });
    }
    void send(Conn* c, const std::string& bytes) {
        auto* req = new uv_write_t;
        auto* copy = new std::string(bytes);
        req->data = copy;
        uv_buf_t b = uv_buf_init(copy->data(), static_cast<unsigned>(copy->size()));
        uv_write(req, reinterpret_cast<uv_stream_t*>(&c->tcp), &b, 1, [](uv_write_t* r, int) {
            delete static_cast<std::string*>(r->data);
            delete r;
        });
    }
    static std::string ok(const std::string& body) {
        return "HTTP/1.1 200 OK\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
    }
    static std::string header(const std::string& head, const std::string& name) {
        const std::size_t at = head.find("\r\n" + name + ": ");
        if (at == std::string::npos) return "";
        const std::size_t from = at + name.size() + 4;
        return head.substr(from, head.find("\r\n", from) - from);
    }
    void serve(Conn* c) {
        const std::size_t end = c->in.find("\r\n\r\n");
        if (end == std::string::npos) return;
        const std::string head = c->in.substr(0, end);
        const std::string length = header(head, "Content-Length");
        const std::size_t body_len = length.empty() ? 0 : std::stoul(length);
        if (c->in.size() < end + 4 + body_len) return;
        const std::string body = c->in.substr(end + 4, body_len);
        c->in.erase(0, end + 4 + body_len);
        const std::string method = head.substr(0, head.find(' '));
        const std::string path =
            head.substr(method.size() + 1, head.find(' ', method.size() + 1) - method.size() - 1);
        paths.push_back(path);
        if (std::exchange(c->drop_next, false)) return drop(c);
        if (path == "/plain") {
            send(c, ok("fine"));
        } else if (path == "/chunked") {
            send(c,
                 "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n4\r\ndefg\r\n0\r\n\r\n");
        } else if (path == "/stream") {
            send(c, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n8\r\n{\"n\":1}\n\r\n");
        } else if (path == "/big") {
            send(c, ok(std::string(64 * 1024, 'x')));
        } else if (path == "/echo") {
            send(c, ok(method + " " + body + " " + header(head, "X-Test")));
        } else if (path == "/bye") {
            send(c, ok("fine"));
            drop(c);
        } else if (path == "/drop-next") {
            c->drop_next = true;
            send(c, ok("fine"));
        }  // /silent: nothing
        if (!c->in.empty()) serve(c);
    }
    uv_tcp_t server_{};
    std::vector<Conn*> conns_;
};

using ApiClientTest = ClientTest<KeepAliveServer, platform::ApiHttpClient>;

}  // namespace

// clang-format does not know TEST_GROUP_BASE.
// clang-format off
TEST_GROUP_BASE(ApiHttpClient, ApiClientTest) {
    platform::HttpRequest req(const std::string& path) {
        platform::HttpRequest r;
        r.url = "http://127.0.0.1:" + std::to_string(server->port) + path;
        r.timeout_ms = 2000;
        return r;
    }
    // `path` over TLS (the test certificate) at 127.0.0.1:`port`, HTTP/2
    // offered (an nghttpx, or the relay before it).
    platform::HttpRequest h2_req(int port, const std::string& path, std::int64_t timeout_ms = 2000) {
        auto r = req(path);
        r.tls.ca_pem = kGoodCert;
        r.url = "https://127.0.0.1:" + std::to_string(port) + path;
        r.http2_multiplex = true;
        r.timeout_ms = timeout_ms;
        return r;
    }
    std::string body_of(const Outcome& o) {
        CHECK_TEXT(o.resp.has_value(), o.err ? o.err->message.c_str() : "");
        return o.resp ? o.resp->body : "";
    }
};
// clang-format on

TEST(ApiHttpClient, BodiesByContentLengthOrChunked) {
    Outcome plain = get(req("/plain"));
    STRCMP_EQUAL("fine", body_of(plain).c_str());
    LONGS_EQUAL(200, plain.resp->status);
    CHECK(std::find(plain.resp->headers.begin(), plain.resp->headers.end(),
                    std::pair<std::string, std::string>("Content-Length", "4")) != plain.resp->headers.end());
    STRCMP_EQUAL("abcdefg", body_of(get(req("/chunked"))).c_str());
}

TEST(ApiHttpClient, SendsMethodHeadersAndBody) {
    auto r = req("/echo");
    r.method = "PUT";
    r.body = "{\"a\":1}";
    r.headers.emplace_back("X-Test", "yes");
    STRCMP_EQUAL("PUT {\"a\":1} yes", body_of(get(r)).c_str());
    r.headers.emplace_back("X-Evil", "a\r\nInjected: 1");
    CHECK_FALSE(client->request(r, [](Result<platform::HttpResponse>) { FAIL("called back"); }).ok());
}

TEST(ApiHttpClient, KeepsTheConnectionAliveForTheNextRequest) {
    STRCMP_EQUAL("fine", body_of(get(req("/plain"))).c_str());
    STRCMP_EQUAL("abcdefg", body_of(get(req("/chunked"))).c_str());
    LONGS_EQUAL(1, server->accepted);
    LONGS_EQUAL(1, client->connections_opened());
    auto fresh = req("/plain");
    fresh.fresh_connection = true;
    STRCMP_EQUAL("fine", body_of(get(fresh)).c_str());
    LONGS_EQUAL(2, client->connections_opened());
}

// The server closed the idle connection: seen while idle, or only when the
// next request is on its way (then retried once on a new connection).
TEST(ApiHttpClient, AConnectionTheServerClosedIsNotAFailure) {
    STRCMP_EQUAL("fine", body_of(get(req("/bye"))).c_str());
    STRCMP_EQUAL("fine", body_of(get(req("/plain"))).c_str());
    LONGS_EQUAL(2, server->accepted);
    STRCMP_EQUAL("fine", body_of(get(req("/drop-next"))).c_str());
    STRCMP_EQUAL("abcdefg", body_of(get(req("/chunked"))).c_str());
    LONGS_EQUAL(3, server->accepted);
    CHECK((std::vector<std::string>{"/bye", "/plain", "/drop-next", "/chunked", "/chunked"}) ==
          server->paths);
}

TEST(ApiHttpClient, TheReceiverStopsAWatch) {
    auto r = req("/stream");
    std::string seen;
    long status = 0;
    r.on_data = [&](long s, std::string_view data) {
        status = s;
        seen.append(data);
        return false;
    };
    Outcome o = get(r);
    CHECK(o.err.has_value());
    STRCMP_EQUAL("stopped", o.err->code_name());
    STRCMP_EQUAL("{\"n\":1}\n", seen.c_str());
    LONGS_EQUAL(200, status);
    // The stopped connection is not reused.
    STRCMP_EQUAL("fine", body_of(get(req("/plain"))).c_str());
    LONGS_EQUAL(2, server->accepted);
}

TEST(ApiHttpClient, ABodyOverTheLimitFailsOrIsTruncated) {
    auto r = req("/big");
    r.max_body_bytes = 1000;
    Outcome o = get(r);
    CHECK(o.err.has_value());
    STRCMP_EQUAL("too_large", o.err->code_name());
    r.truncate_body = true;
    Outcome t = get(r);
    LONGS_EQUAL(1000, body_of(t).size());
    CHECK(t.resp->body_truncated);
}

TEST(ApiHttpClient, TimesOutRefusesAndCancels) {
    auto r = req("/silent");
    r.timeout_ms = 100;
    Outcome o = get(r);
    CHECK(o.err.has_value());
    STRCMP_EQUAL("timeout", o.err->code_name());
    // A port nobody listens on: the server's, once closed.
    auto refused = req("/plain");
    KeepAliveServer other(&loop);
    refused.url = "http://127.0.0.1:" + std::to_string(other.port) + "/plain";
    other.close();
    run_until(
        &loop, [] { return false; }, std::chrono::milliseconds(10));
    Outcome x = get(refused);
    CHECK(x.err.has_value());
    STRCMP_EQUAL("refused", x.err->code_name());
    auto id = client->request(req("/plain"), [](Result<platform::HttpResponse>) { FAIL("called back"); });
    CHECK(id.ok());
    client->cancel(id.value());
    run_until(
        &loop, [] { return false; }, std::chrono::milliseconds(50));
    auto bad = req("/plain");
    bad.url = "ftp://127.0.0.1/x";
    CHECK_FALSE(client->request(bad, [](Result<platform::HttpResponse>) { FAIL("called back"); }).ok());
}

namespace {

// An HTTPS server on a thread (blocking sockets, mbed TLS from the agent's
// loaded table): every request on a connection gets 200 "secure", kept
// alive until the client closes it. With `h2_breaks_first`, h2 by ALPN
// instead (serve_h2), and its first connection breaks the protocol.
class TlsServer {
  public:
    TlsServer(const char* cert, const char* key, bool h2_breaks_first = false)
        : api_(*platform::mbedtls_api().value()), h2_(h2_breaks_first) {
        api_.x509_crt_init(&cert_);
        api_.pk_init(&key_);
        api_.ssl_config_init(&conf_);
        api_.entropy_init(&entropy_);
        api_.ctr_drbg_init(&drbg_);
        CHECK(api_.ctr_drbg_seed(&drbg_, api_.entropy_func, &entropy_, nullptr, 0) == 0);
        CHECK(api_.x509_crt_parse(&cert_, reinterpret_cast<const unsigned char*>(cert), strlen(cert) + 1) ==
              0);
        CHECK(api_.pk_parse_key(&key_, reinterpret_cast<const unsigned char*>(key), strlen(key) + 1, nullptr,
                                0) == 0);
        CHECK(api_.ssl_config_defaults(&conf_, MBEDTLS_SSL_IS_SERVER, MBEDTLS_SSL_TRANSPORT_STREAM,
                                       MBEDTLS_SSL_PRESET_DEFAULT) == 0);
        api_.ssl_conf_rng(&conf_, api_.ctr_drbg_random, &drbg_);
        CHECK(api_.ssl_conf_own_cert(&conf_, &cert_, &key_) == 0);
        static const char* h2[] = {"h2", nullptr};
        if (h2_) CHECK(api_.ssl_conf_alpn_protocols(&conf_, h2) == 0);
        fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        sockaddr_in addr{};
        addr.sin_family = AF_INET;
        addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        CHECK(::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
        socklen_t len = sizeof addr;
        ::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len);
        port = ntohs(addr.sin_port);
        ::listen(fd_, 8);
        thread_ = std::thread([this] { run(); });
    }
    ~TlsServer() {
        stop_ = true;
        ::shutdown(fd_, SHUT_RDWR);
        thread_.join();
        for (int c : conns_) ::shutdown(c, SHUT_RDWR);  // the kept-alive ones
        for (auto& t : served_) t.join();
        for (int c : conns_) ::close(c);
        ::close(fd_);
        api_.ssl_config_free(&conf_);
        api_.x509_crt_free(&cert_);
        api_.pk_free(&key_);
    }
    int port = 0;
    std::atomic<int> accepted{0};

  private:
    static int send_cb(void* ctx, const unsigned char* b, std::size_t n) {
        const ssize_t r = ::send(*static_cast<int*>(ctx), b, n, MSG_NOSIGNAL);
        return r < 0 ? MBEDTLS_ERR_NET_SEND_FAILED : static_cast<int>(r);
    }
    static int recv_cb(void* ctx, unsigned char* b, std::size_t n) {
        const ssize_t r = ::recv(*static_cast<int*>(ctx), b, n, 0);
        return r < 0 ? MBEDTLS_ERR_NET_RECV_FAILED : static_cast<int>(r);
    }
    // Accepts on this thread, serves each connection on one of its own.
    void run() {
        while (!stop_) {
            int c = ::accept(fd_, nullptr, nullptr);
            if (c < 0) return;
            const bool first = ++accepted == 1;
            conns_.push_back(c);
            served_.emplace_back([this, c, first] { serve(c, first); });
        }
    }
    void serve(int c, bool first) {
        mbedtls_ssl_context ssl;
        api_.ssl_init(&ssl);
        api_.ssl_setup(&ssl, &conf_);
        api_.ssl_set_bio(&ssl, &c, send_cb, recv_cb, nullptr);
        std::string in;
        unsigned char buf[4096];
        int n = api_.ssl_handshake(&ssl);
        if (n == 0 && h2_) serve_h2(ssl, first);
        while (!h2_ && n == 0 && (n = api_.ssl_read(&ssl, buf, sizeof buf)) > 0) {
            in.append(reinterpret_cast<char*>(buf), static_cast<std::size_t>(n));
            for (std::size_t end; (end = in.find("\r\n\r\n")) != std::string::npos;) {
                in.erase(0, end + 4);
                static const char kOk[] = "HTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\nsecure";
                api_.ssl_write(&ssl, reinterpret_cast<const unsigned char*>(kOk), sizeof kOk - 1);
            }
            n = 0;
        }
        api_.ssl_free(&ssl);
    }
    // h2, just enough for one GET: reads the client's preface and frames up
    // to its first HEADERS (the request, stream 1), then answers with its
    // SETTINGS, the ACK of the client's and a 200 (HPACK 0x88) on stream 1;
    // then the body "secure", or, on a breaking connection, a SETTINGS
    // frame of 5 bytes: a connection error (FRAME_SIZE_ERROR, RFC 9113
    // §6.5). Then reads until the client closes.
    void serve_h2(mbedtls_ssl_context& ssl, bool breaks) {
        std::string in;
        unsigned char buf[4096];
        auto got_headers = [&in] {
            for (std::size_t at = 24; at + 9 <= in.size();) {
                const auto byte = [&](std::size_t i) { return static_cast<unsigned char>(in[at + i]); };
                const std::size_t len = std::size_t{byte(0)} << 16 | std::size_t{byte(1)} << 8 | byte(2);
                if (byte(3) == 0x1 && at + 9 + len <= in.size()) return true;
                at += 9 + len;
            }
            return false;
        };
        for (int n; !got_headers() && (n = api_.ssl_read(&ssl, buf, sizeof buf)) > 0;)
            in.append(reinterpret_cast<char*>(buf), static_cast<std::size_t>(n));
        if (!got_headers()) return;
        using namespace std::string_literals;
        std::string out =
            "\0\0\0\x04\0\0\0\0\0"s                          // SETTINGS
            "\0\0\0\x04\x01\0\0\0\0"s                        // SETTINGS ACK
            "\0\0\x01\x01\x04\0\0\0\x01\x88"s;               // HEADERS, END_HEADERS
        out += breaks ? "\0\0\x05\x04\0\0\0\0\0\0\0\0\0\0"s  // SETTINGS, 5 bytes
                      : "\0\0\x06\0\x01\0\0\0\x01secure"s;   // DATA, END_STREAM
        for (std::size_t sent = 0; sent < out.size();) {
            const int n = api_.ssl_write(&ssl, reinterpret_cast<const unsigned char*>(out.data()) + sent,
                                         out.size() - sent);
            if (n <= 0) return;
            sent += static_cast<std::size_t>(n);
        }
        while (api_.ssl_read(&ssl, buf, sizeof buf) > 0) {
        }
    }
    const platform::MbedTlsApi& api_;
    const bool h2_;
    mbedtls_x509_crt cert_;
    mbedtls_pk_context key_;
    mbedtls_ssl_config conf_;
    mbedtls_entropy_context entropy_;
    mbedtls_ctr_drbg_context drbg_;
    int fd_ = -1;
    std::atomic<bool> stop_{false};
    std::vector<int> conns_;  // the accepting thread's, then the destructor's
    std::vector<std::thread> served_;
    std::thread thread_;
};

}  // namespace

TEST(ApiHttpClient, TlsChecksTheCaAndTheServersName) {
    TlsServer tls(kGoodCert, kGoodKey);
    auto r = req("/");
    r.tls.ca_pem = kGoodCert;
    r.url = "https://127.0.0.1:" + std::to_string(tls.port) + "/";
    STRCMP_EQUAL("secure", body_of(get(r)).c_str());
    STRCMP_EQUAL("secure", body_of(get(r)).c_str());
    LONGS_EQUAL(1, client->connections_opened());  // kept alive over TLS too
    r.url = "https://localhost:" + std::to_string(tls.port) + "/";
    STRCMP_EQUAL("secure", body_of(get(r)).c_str());
    // Another CA: refused, saying why.
    r.tls.ca_pem = kOtherCert;
    Outcome wrong = get(r);
    CHECK(wrong.err.has_value());
    STRCMP_EQUAL("http", wrong.err->code_name());
    CHECK_TEXT(wrong.err->message.find("is refused: ") != std::string::npos &&
                   wrong.err->message.find("not correctly signed by the trusted CA") != std::string::npos,
               wrong.err->message.c_str());
    r.tls.verify = false;
    STRCMP_EQUAL("secure", body_of(get(r)).c_str());
}

TEST(ApiHttpClient, TlsToAnIpAddressNeedsItInTheCertificate) {
    TlsServer tls(kDnsCert, kDnsKey);
    auto r = req("/");
    r.tls.ca_pem = kDnsCert;
    r.url = "https://localhost:" + std::to_string(tls.port) + "/";
    STRCMP_EQUAL("secure", body_of(get(r)).c_str());
    r.url = "https://127.0.0.1:" + std::to_string(tls.port) + "/";
    Outcome o = get(r);
    CHECK(o.err.has_value());
    CHECK_TEXT(o.err->message.find("it does not name 127.0.0.1") != std::string::npos,
               o.err->message.c_str());
}

namespace {

// nghttpx (Debian's nghttp2-proxy) in front of the keep-alive server: h2
// over TLS (ALPN) to the client, HTTP/1.1 to the server.
class H2Proxy {
  public:
    H2Proxy(uv_loop_t* loop, int backend_port) {
        if (::access("/usr/sbin/nghttpx", X_OK) != 0) return;
        char tmpl[] = "/tmp/api-h2-XXXXXX";
        if (!::mkdtemp(tmpl)) return;
        dir_ = tmpl;
        write(dir_ + "/cert.pem", kGoodCert);
        write(dir_ + "/key.pem", kGoodKey);
        port = free_port();
        const std::string front = "--frontend=127.0.0.1," + std::to_string(port);
        const std::string back = "--backend=127.0.0.1," + std::to_string(backend_port);
        const std::string key = dir_ + "/key.pem", cert = dir_ + "/cert.pem";
        pid_ = ::fork();
        if (pid_ == 0) {
            ::dup2(::open("/dev/null", O_WRONLY), 2);
            ::execl("/usr/sbin/nghttpx", "nghttpx", "--conf=/dev/null", front.c_str(), back.c_str(),
                    "--workers=1", "--no-ocsp", "--errorlog-file=/dev/null", key.c_str(), cert.c_str(),
                    static_cast<char*>(nullptr));
            ::_exit(127);
        }
        // Listening: a connection is accepted (within 5 s).
        const bool up = run_until(
            loop,
            [&] {
                const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
                sockaddr_in a{};
                a.sin_family = AF_INET;
                a.sin_port = htons(static_cast<std::uint16_t>(port));
                a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
                const bool ok = ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
                ::close(fd);
                return ok;
            },
            std::chrono::milliseconds(5000));
        if (!up) port = 0;
    }
    ~H2Proxy() {
        if (pid_ > 0) {
            ::kill(pid_, SIGTERM);
            ::waitpid(pid_, nullptr, 0);
        }
        if (!dir_.empty()) {
            ::unlink((dir_ + "/cert.pem").c_str());
            ::unlink((dir_ + "/key.pem").c_str());
            ::rmdir(dir_.c_str());
        }
    }
    int port = 0;  // 0: no nghttpx

  private:
    static void write(const std::string& path, const char* text) {
        FILE* f = std::fopen(path.c_str(), "w");
        std::fputs(text, f);
        std::fclose(f);
    }
    static int free_port() {
        const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
        socklen_t len = sizeof a;
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
        ::close(fd);
        return ntohs(a.sin_port);
    }
    std::string dir_;
    pid_t pid_ = -1;
};

}  // namespace

// HTTP/2 when the server offers it (ALPN h2): the requests are streams of
// one connection, a watch open beside them; the receiver's stop and the
// timeout reset their stream (RST_STREAM), not the connection.
TEST(ApiHttpClient, Http2StreamsShareOneConnection) {
    H2Proxy proxy(&loop, server->port);
    if (proxy.port == 0) return;  // nghttpx not installed
    auto h2 = [&](const std::string& path) { return h2_req(proxy.port, path); };
    // A watch stays open while other requests come and go.
    auto watch = h2("/stream");
    watch.timeout_ms = 5000;
    std::string seen;
    bool stop = false;
    Outcome w;
    watch.on_data = [&](long, std::string_view data) {
        seen.append(data);
        return !stop;
    };
    auto id = client->request(watch, [&w](Result<platform::HttpResponse> res) {
        ++w.calls;
        if (!res) w.err = res.error();
    });
    CHECK(id.ok());
    CHECK(run_until(&loop, [&] { return !seen.empty(); }));
    STRCMP_EQUAL("fine", body_of(get(h2("/plain"))).c_str());
    STRCMP_EQUAL("abcdefg", body_of(get(h2("/chunked"))).c_str());
    auto put = h2("/echo");
    put.method = "PUT";
    put.body = "{\"a\":1}";
    put.headers.emplace_back("X-Test", "yes");
    STRCMP_EQUAL("PUT {\"a\":1} yes", body_of(get(put)).c_str());
    auto big = h2("/big");
    big.max_body_bytes = 1000;
    Outcome too = get(big);
    CHECK(too.err.has_value());
    STRCMP_EQUAL("too_large", too.err->code_name());
    big.truncate_body = true;
    LONGS_EQUAL(1000, body_of(get(big)).size());
    auto silent = h2("/silent");
    silent.timeout_ms = 200;
    Outcome late = get(silent);
    CHECK(late.err.has_value());
    STRCMP_EQUAL("timeout", late.err->code_name());
    LONGS_EQUAL(0, w.calls);
    // HTTP/1.1 would have needed a connection per request in flight.
    LONGS_EQUAL(1, client->connections_opened());
    // The watch's receiver stops it when the next bytes come: none will on
    // /stream, so cancel() ends it without a callback instead, and the
    // connection serves on.
    client->cancel(id.value());
    STRCMP_EQUAL("fine", body_of(get(h2("/plain"))).c_str());
    LONGS_EQUAL(0, w.calls);
    // A watch stopped by its receiver: Stopped, and the connection stays.
    stop = true;
    Outcome stopped = get(watch);
    CHECK(stopped.err.has_value());
    STRCMP_EQUAL("stopped", stopped.err->code_name());
    STRCMP_EQUAL("fine", body_of(get(h2("/plain"))).c_str());
    LONGS_EQUAL(1, client->connections_opened());
}

namespace {

// A TCP relay on the loop between the client and the h2 proxy that can stop
// reading what the client sends (stall()) and start again (resume()), with a
// small receive buffer and segment size so that the client's socket fills
// (its send buffer is sized from the segment size): its writes then return
// EAGAIN, and mbed TLS's WANT_WRITE. Reading again, it takes the usual
// buffer (the small one would cost the test a second). Its handles do not
// keep the loop running: a failed test's teardown ends (and says the loop is
// not empty).
class StallRelay {
  public:
    StallRelay(uv_loop_t* loop, int upstream_port) : loop_(loop), upstream_(upstream_port) {
        listener_->data = this;
        uv_tcp_init(loop, listener_);
        uv_unref(reinterpret_cast<uv_handle_t*>(listener_));
        sockaddr_in addr{};
        uv_ip4_addr("127.0.0.1", 0, &addr);
        uv_tcp_bind(listener_, reinterpret_cast<const sockaddr*>(&addr), 0);
        uv_os_fd_t fd;
        uv_fileno(reinterpret_cast<uv_handle_t*>(listener_), &fd);
        const int small = 4096, mss = 1024;
        ::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &small, sizeof small);
        ::setsockopt(fd, IPPROTO_TCP, TCP_MAXSEG, &mss, sizeof mss);
        uv_listen(reinterpret_cast<uv_stream_t*>(listener_), 4,
                  [](uv_stream_t* s, int) { static_cast<StallRelay*>(s->data)->accept(s); });
        sockaddr_storage bound{};
        int len = sizeof bound;
        uv_tcp_getsockname(listener_, reinterpret_cast<sockaddr*>(&bound), &len);
        port = ntohs(reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
    }
    void stall() {
        stalled_ = true;
        for (auto* p : pairs_) uv_read_stop(reinterpret_cast<uv_stream_t*>(&p->down));
    }
    void resume() {
        stalled_ = false;
        for (auto* p : pairs_) {
            uv_os_fd_t fd;
            uv_fileno(reinterpret_cast<uv_handle_t*>(&p->down), &fd);
            const int usual = 1 << 20;
            ::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &usual, sizeof usual);
            if (p->up_connected) relay(&p->down);
        }
    }
    // The client's end of the first relayed connection, found among the
    // process's sockets by its address; -1 when there is none.
    int client_fd() const {
        if (pairs_.empty()) return -1;
        sockaddr_in peer{};
        int len = sizeof peer;
        uv_tcp_getpeername(&pairs_.front()->down, reinterpret_cast<sockaddr*>(&peer), &len);
        for (int fd = 3; fd < 1024; ++fd) {
            sockaddr_in a{}, b{};
            socklen_t la = sizeof a, lb = sizeof b;
            if (::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &la) == 0 && a.sin_family == AF_INET &&
                a.sin_port == peer.sin_port && ::getpeername(fd, reinterpret_cast<sockaddr*>(&b), &lb) == 0 &&
                ntohs(b.sin_port) == port)
                return fd;
        }
        return -1;
    }
    ~StallRelay() {
        if (!closed_) close();  // a failed check's: no handle left pointing here
    }
    void close() {
        closed_ = true;
        uv_close(reinterpret_cast<uv_handle_t*>(listener_),
                 [](uv_handle_t* h) { delete reinterpret_cast<uv_tcp_t*>(h); });
        // The pair goes with the last of its two handles.
        for (auto* p : pairs_)
            for (uv_tcp_t* t : {&p->down, &p->up})
                uv_close(reinterpret_cast<uv_handle_t*>(t), [](uv_handle_t* h) {
                    auto* pair = static_cast<Pair*>(h->data);
                    if (++pair->closed == 2) delete pair;
                });
        pairs_.clear();
    }
    int port = 0;

  private:
    bool closed_ = false;
    struct Pair {
        uv_tcp_t down;  // the client's
        uv_tcp_t up;    // to the proxy
        uv_connect_t connect;
        StallRelay* self;
        bool up_connected;
        int closed;
    };
    void accept(uv_stream_t* s) {
        auto* p = new Pair{{}, {}, {}, this, false, 0};
        for (uv_tcp_t* t : {&p->down, &p->up}) {
            uv_tcp_init(loop_, t);
            uv_unref(reinterpret_cast<uv_handle_t*>(t));
            t->data = p;
        }
        p->connect.data = p;
        pairs_.push_back(p);
        uv_accept(s, reinterpret_cast<uv_stream_t*>(&p->down));
        sockaddr_in addr{};
        uv_ip4_addr("127.0.0.1", upstream_, &addr);
        uv_tcp_connect(&p->connect, &p->up, reinterpret_cast<const sockaddr*>(&addr),
                       [](uv_connect_t* c, int status) {
                           auto* pair = static_cast<Pair*>(c->data);
                           if (status != 0) return;
                           pair->up_connected = true;
                           relay(&pair->up);
                           if (!pair->self->stalled_) relay(&pair->down);
                       });
    }
    // What `from` receives is written to the other end; an end or an error
    // stops it.
    static void relay(uv_tcp_t* from) {
        uv_read_start(
            reinterpret_cast<uv_stream_t*>(from),
            [](uv_handle_t*, std::size_t size, uv_buf_t* b) {
                *b = uv_buf_init(new char[size], static_cast<unsigned>(size));
            },
            [](uv_stream_t* st, ssize_t n, const uv_buf_t* b) {
                if (n <= 0) {
                    delete[] b->base;
                    if (n < 0) uv_read_stop(st);
                    return;
                }
                auto* pair = static_cast<Pair*>(st->data);
                uv_tcp_t* to = reinterpret_cast<uv_tcp_t*>(st) == &pair->down ? &pair->up : &pair->down;
                auto* w = new uv_write_t;
                w->data = b->base;
                uv_buf_t out = uv_buf_init(b->base, static_cast<unsigned>(n));
                uv_write(w, reinterpret_cast<uv_stream_t*>(to), &out, 1, [](uv_write_t* req, int) {
                    delete[] static_cast<char*>(req->data);
                    delete req;
                });
            });
    }
    uv_loop_t* loop_;
    int upstream_;
    uv_tcp_t* listener_ = new uv_tcp_t;
    std::vector<Pair*> pairs_;
    bool stalled_ = false;
};

}  // namespace

// HTTP/2 through a server that stops reading: the client has more frames to
// write than its socket and the relay hold, so its write waits (WANT_WRITE)
// and is retried, as mbed TLS wants, with the same bytes (3fca308: no new
// frames join them before). Once the server reads again every request is
// answered, each with its own body: a frame lost or cut would break the
// session or a body. 3fca308's loss needs the waiting write to be the
// buffer's last, short record: the next row arranges that.
TEST(ApiHttpClient, Http2RequestsSurviveAServerThatStopsReading) {
    H2Proxy proxy(&loop, server->port);
    if (proxy.port == 0) return;  // nghttpx not installed
    StallRelay relay(&loop, proxy.port);
    auto h2 = [&](const std::string& path) { return h2_req(relay.port, path, 10'000); };
    STRCMP_EQUAL("fine", body_of(get(h2("/plain"))).c_str());
    // A send buffer that what waits exceeds, whatever the host's tcp_wmem.
    const int fd = relay.client_fd();
    CHECK(fd >= 0);
    const int small = 16384;
    ::setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &small, sizeof small);
    relay.stall();
    // Fewer than the keep-alive server's backlog: nghttpx opens a connection
    // to it per request in flight.
    constexpr int kRequests = 6;
    std::vector<Outcome> outs(kRequests);
    std::vector<std::string> want(kRequests);
    for (int i = 0; i < kRequests; ++i) {
        auto r = h2("/echo");
        r.method = "PUT";
        r.body = std::string(160 * 1024 + static_cast<std::size_t>(i), static_cast<char>('a' + i));
        r.headers.emplace_back("X-Test", std::to_string(i));
        // HEADERS frames are not flow-controlled: with these, more than the
        // connection's window waits to be written.
        r.headers.emplace_back("X-Pad",
                               std::string(16 * 1024, static_cast<char>('a' + i)) + std::to_string(i));
        want[static_cast<std::size_t>(i)] = "PUT " + r.body + " " + std::to_string(i);
        Outcome& o = outs[static_cast<std::size_t>(i)];
        CHECK(client
                  ->request(r,
                            [&o](Result<platform::HttpResponse> res) {
                                ++o.calls;
                                if (res)
                                    o.resp = res.value();
                                else
                                    o.err = res.error();
                            })
                  .ok());
    }
    // The client's socket is full (it has more to write than the relay's
    // buffer and its own hold): its last write returned EAGAIN.
    CHECK(run_until(&loop, [&] {
        pollfd p{fd, POLLOUT, 0};
        return ::poll(&p, 1, 0) == 0;
    }));
    relay.resume();
    CHECK(run_until(&loop, [&] {
        return std::all_of(outs.begin(), outs.end(), [](const Outcome& o) { return o.calls > 0; });
    }));
    for (int i = 0; i < kRequests; ++i) {
        const Outcome& o = outs[static_cast<std::size_t>(i)];
        LONGS_EQUAL(1, o.calls);
        CHECK_TEXT(o.resp.has_value(), o.err ? o.err->message.c_str() : "");
        const std::string& w = want[static_cast<std::size_t>(i)];
        CHECK_TEXT(o.resp->body == w,
                   ("request " + std::to_string(i) + ": status " + std::to_string(o.resp->status) + ", " +
                    std::to_string(o.resp->body.size()) + " bytes of " + std::to_string(w.size()))
                       .c_str());
    }
    LONGS_EQUAL(1, client->connections_opened());
    relay.close();
}

// The write that waits is the buffer's last, short record (one request's
// frames, under mbed TLS's 16 KiB record, more than the client's socket
// holds), and another request comes while it waits: its frames are taken
// only once the waiting record is out. Taken before the retry (3fca308's
// bug), mbed TLS counts them as sent with the record: the second request is
// never sent, and times out.
TEST(ApiHttpClient, Http2ARequestMadeWhileAWriteWaitsIsSent) {
    H2Proxy proxy(&loop, server->port);
    if (proxy.port == 0) return;  // nghttpx not installed
    StallRelay relay(&loop, proxy.port);
    auto h2 = [&](const std::string& path) { return h2_req(relay.port, path, 3000); };
    STRCMP_EQUAL("fine", body_of(get(h2("/plain"))).c_str());
    const int fd = relay.client_fd();
    CHECK(fd >= 0);
    const int least = 1;  // the kernel's least, about 4.5 KiB
    ::setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &least, sizeof least);
    relay.stall();
    auto record = [](Outcome& o) {
        return [&o](Result<platform::HttpResponse> res) {
            ++o.calls;
            if (res)
                o.resp = res.value();
            else
                o.err = res.error();
        };
    };
    auto put = h2("/echo");
    put.method = "PUT";
    put.body = std::string(15'900, 'p');
    Outcome first, second;
    CHECK(client->request(put, record(first)).ok());
    CHECK(run_until(&loop, [&] {
        pollfd p{fd, POLLOUT, 0};
        return ::poll(&p, 1, 0) == 0;
    }));
    CHECK(client->request(h2("/plain"), record(second)).ok());
    relay.resume();
    CHECK(run_until(&loop, [&] { return first.calls > 0 && second.calls > 0; }));
    STRCMP_EQUAL(("PUT " + put.body + " ").c_str(), body_of(first).c_str());
    STRCMP_EQUAL("fine", body_of(second).c_str());
    relay.close();
}

// A server that breaks HTTP/2 under a watch that has its headers (a
// SETTINGS frame of 5 bytes): nghttp2 ends the session itself, sends its
// GOAWAY, ignores the rest and closes none of the client's streams. The
// client fails them at once, not at their timeouts, and drops the
// connection: the next request opens a new one. So does Go's http2
// Transport (golang.org/x/net/http2/transport.go): a connection error ends
// readLoop, which writes the GOAWAY, and clientConnReadLoop.cleanup marks
// the connection dead in the pool and aborts every stream.
TEST(ApiHttpClient, Http2AServerThatBreaksTheProtocolEndsItsStreamsAtOnce) {
    TlsServer tls(kGoodCert, kGoodKey, true);
    uv_update_time(&loop);
    const std::uint64_t start = uv_now(&loop);
    Outcome watch = get(h2_req(tls.port, "/watch", 10'000));
    const std::uint64_t took = uv_now(&loop) - start;
    CHECK(watch.err.has_value());
    STRCMP_EQUAL("http", watch.err->code_name());
    STRCMP_CONTAINS("the HTTP/2 session ended", watch.err->message.c_str());
    CHECK_TEXT(took < 2000, ("failed after " + std::to_string(took) + " ms").c_str());
    STRCMP_EQUAL("secure", body_of(get(h2_req(tls.port, "/plain"))).c_str());
    LONGS_EQUAL(2, client->connections_opened());
    LONGS_EQUAL(2, tls.accepted.load());
}

namespace {

// A cleartext server on a thread: accepts one connection, reads the
// request's head, then resets it (SO_LINGER 0, close), or, with `stream`,
// answers 200 with a chunked body that never ends, as fast as the socket
// takes it, for at most 5 s (a watchdog: the test cannot hang).
class RawServer {
  public:
    explicit RawServer(bool stream) {
        fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        CHECK(::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
        CHECK(::listen(fd_, 4) == 0);
        socklen_t len = sizeof a;
        ::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len);
        port = ntohs(a.sin_port);
        thread_ = std::thread([this, stream] {
            const int c = ::accept(fd_, nullptr, nullptr);
            if (c < 0) return;
            std::string in;
            char b[4096];
            while (in.find("\r\n\r\n") == std::string::npos) {
                const ssize_t n = ::recv(c, b, sizeof b, 0);
                if (n <= 0) break;
                in.append(b, static_cast<std::size_t>(n));
            }
            if (stream) {
                const std::string head = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n";
                const std::string chunk = "4000\r\n" + std::string(0x4000, 'x') + "\r\n";
                ::send(c, head.data(), head.size(), MSG_NOSIGNAL);
                const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
                while (!stop_ && std::chrono::steady_clock::now() < until)
                    if (::send(c, chunk.data(), chunk.size(), MSG_NOSIGNAL) < 0) break;
            }
            linger l{1, 0};
            ::setsockopt(c, SOL_SOCKET, SO_LINGER, &l, sizeof l);
            ::close(c);
        });
    }
    ~RawServer() {
        stop_ = true;
        ::shutdown(fd_, SHUT_RDWR);  // wakes accept()
        thread_.join();
        ::close(fd_);
    }
    int port = 0;

  private:
    int fd_ = -1;
    std::atomic<bool> stop_{false};
    std::thread thread_;
};

}  // namespace

// Over http:// (kubectl proxy) mbed TLS is not loaded: a reset connection
// is an error naming the host and the socket's reason, not a crash.
TEST(ApiHttpClient, AResetOverCleartextIsAnError) {
    RawServer reset(false);
    auto r = req("/plain");
    r.url = "http://127.0.0.1:" + std::to_string(reset.port) + "/plain";
    r.fresh_connection = true;
    Outcome o = get(r);
    CHECK(o.err.has_value());
    STRCMP_EQUAL("http", o.err->code_name());
    STRCMP_CONTAINS("127.0.0.1:", o.err->message.c_str());
    STRCMP_CONTAINS(std::strerror(ECONNRESET), o.err->message.c_str());
}

// The user information of a URL (a password) is not repeated in the error.
TEST(ApiHttpClient, UserInformationIsRefusedWithoutRepeatingIt) {
    auto r = req("/plain");
    r.url = "https://admin:s3cret@127.0.0.1:6443/api";
    auto id = client->request(r, [](Result<platform::HttpResponse>) { FAIL("called back"); });
    CHECK_FALSE(id.ok());
    STRCMP_CONTAINS("user information", id.error().message.c_str());
    CHECK(id.error().message.find("s3cret") == std::string::npos);
    STRCMP_CONTAINS("https://127.0.0.1:6443/api", id.error().message.c_str());
}

// A server whose body never ends keeps the socket readable: each readable
// event reads a bounded amount, so the loop's timers (here the request's own
// timeout) still run. Without the bound the loop stays in the read until
// the server gives up after 5 s: an Http error, not a timeout.
TEST(ApiHttpClient, AnEndlessBodyDoesNotStarveTheLoop) {
    RawServer endless(true);
    auto r = req("/stream");
    r.url = "http://127.0.0.1:" + std::to_string(endless.port) + "/stream";
    r.timeout_ms = 200;
    // A receiver slower than the server: the socket never drains.
    r.on_data = [](long, std::string_view) {
        std::this_thread::sleep_for(std::chrono::microseconds(200));
        return true;
    };
    const auto start = std::chrono::steady_clock::now();
    Outcome o = get(r);
    CHECK(o.err.has_value());
    STRCMP_EQUAL("timeout", o.err->code_name());
    CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(3));
}

// A reused connection the server closes after reading the whole request:
// a POST may have been acted on and is not sent again (Go's
// http.Transport: only a replayable request); a PUT is idempotent and is.
TEST(ApiHttpClient, APostTheServerReadIsNotSentAgain) {
    STRCMP_EQUAL("fine", body_of(get(req("/drop-next"))).c_str());
    auto r = req("/echo");
    r.method = "POST";
    r.body = "{}";
    Outcome o = get(r);
    CHECK(o.err.has_value());
    STRCMP_EQUAL("http", o.err->code_name());
    CHECK((std::vector<std::string>{"/drop-next", "/echo"}) == server->paths);
    STRCMP_EQUAL("fine", body_of(get(req("/drop-next"))).c_str());
    r.method = "PUT";
    STRCMP_CONTAINS("PUT {}", body_of(get(r)).c_str());
    CHECK((std::vector<std::string>{"/drop-next", "/echo", "/drop-next", "/echo", "/echo"}) == server->paths);
}

// Connections with the same TLS settings share one parsed configuration;
// other settings make their own, which verify by their own CA.
TEST(ApiHttpClient, TlsConnectionsShareTheirConfiguration) {
    TlsServer tls(kGoodCert, kGoodKey);
    auto r = req("/");
    r.tls.ca_pem = kGoodCert;
    r.url = "https://127.0.0.1:" + std::to_string(tls.port) + "/";
    r.fresh_connection = true;
    STRCMP_EQUAL("secure", body_of(get(r)).c_str());
    STRCMP_EQUAL("secure", body_of(get(r)).c_str());
    LONGS_EQUAL(2, client->connections_opened());
    LONGS_EQUAL(1, client->tls_configs_made());
    r.tls.ca_pem = kOtherCert;
    Outcome wrong = get(r);
    CHECK(wrong.err.has_value());
    STRCMP_CONTAINS("is refused", wrong.err->message.c_str());
    LONGS_EQUAL(2, client->tls_configs_made());
}

// A client closed and deleted while a name is being resolved: the
// resolution is cancelled and its callback does not touch the client.
TEST(ApiHttpClient, AResolutionMayOutliveItsClient) {
    auto* other = new platform::ApiHttpClient(&loop);
    auto r = req("/plain");
    r.url = "http://localhost:" + std::to_string(server->port) + "/plain";
    CHECK(other->request(r, [](Result<platform::HttpResponse>) { FAIL("called back"); }).ok());
    other->close();
    delete other;
    CHECK(run_until(&loop, [&] { return loop.active_reqs.count == 0; }));
}
