// The metrics endpoint's HTTP server (platform/http_server.h) on a real
// libuv loop, driven by raw TCP clients: what it answers, and that a slow
// or hostile client costs a bounded amount (request size, connections,
// lifetime). Every wait runs the loop until a predicate holds, with a
// deadline.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "platform/http_server.h"
#include "tests/platform/runtime_fixture.h"

#include <CppUTest/TestHarness.h>

using namespace daemonlet;
using platform::HttpServer;

namespace {

// A non-blocking client connected to 127.0.0.1:port.
int tcp_connect(int port) {
    int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<std::uint16_t>(port));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
        ::close(fd);
        return -1;
    }
    ::fcntl(fd, F_SETFL, O_NONBLOCK);
    return fd;
}

// What a client has read so far, and whether the server closed it.
struct Client {
    explicit Client(int f = -1) : fd(f) {}
    int fd = -1;
    std::string got;
    bool closed = false;
    void poll() {
        char buf[4096];
        for (;;) {
            ssize_t n = ::read(fd, buf, sizeof buf);
            if (n > 0) {
                got.append(buf, static_cast<std::size_t>(n));
                continue;
            }
            if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK)) closed = true;
            return;
        }
    }
};

}  // namespace

TEST_GROUP(HttpServer) {
    uv_loop_t loop{};
    HttpServer* server = nullptr;
    HttpServer::Limits limits;
    int port = 0;
    std::vector<std::string> paths;

    void setup() override {
        ::signal(SIGPIPE, SIG_IGN);  // as the agent does
        uv_loop_init(&loop);
        limits.max_request_bytes = 1024;
        limits.max_clients = 4;
        limits.request_timeout_ms = 300;
    }
    void teardown() override {
        delete server;
        uv_run(&loop, UV_RUN_DEFAULT);  // the close callbacks
        LONGS_EQUAL(0, uv_loop_close(&loop));
    }
    void start() {
        server = new HttpServer(&loop, limits, [this](const std::string&, const std::string& path) {
            paths.push_back(path);
            return HttpServer::Reply{path == "/ok" ? 200 : 404, "text/plain", "body of " + path};
        });
        auto s = server->start("127.0.0.1:0");
        CHECK_TEXT(s.ok(), s.ok() ? "" : s.error().message.c_str());
        port = std::stoi(server->address().substr(server->address().rfind(':') + 1));
        CHECK(port > 0);
    }
    bool pump_until(const std::function<bool()>& pred) { return testing::run_until(&loop, pred); }
    Client request(const std::string& raw) {
        Client c(tcp_connect(port));
        CHECK(c.fd >= 0);
        CHECK(::write(c.fd, raw.data(), raw.size()) == static_cast<ssize_t>(raw.size()));
        CHECK(pump_until([&] {
            c.poll();
            return c.closed;
        }));
        ::close(c.fd);
        return c;
    }
};

TEST(HttpServer, AnswersAGetWithStatusLengthAndConnectionClose) {
    start();
    Client c = request("GET /ok?x=1 HTTP/1.1\r\nHost: a\r\n\r\n");
    STRCMP_EQUAL(
        "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 11\r\nConnection: close\r\n\r\n"
        "body of /ok",
        c.got.c_str());
    LONGS_EQUAL(1, paths.size());
    STRCMP_EQUAL("/ok", paths[0].c_str());  // the query string is not the path
}

TEST(HttpServer, HeadGetsTheHeadersWithoutTheBody) {
    start();
    Client c = request("HEAD /ok HTTP/1.1\r\n\r\n");
    CHECK(c.got.find("Content-Length: 11\r\n") != std::string::npos);
    CHECK(c.got.size() >= 4 && c.got.compare(c.got.size() - 4, 4, "\r\n\r\n") == 0);
}

TEST(HttpServer, RefusesOtherMethodsMalformedAndOversizedRequests) {
    start();
    CHECK(request("POST /ok HTTP/1.1\r\nContent-Length: 0\r\n\r\n").got.rfind("HTTP/1.1 405 ", 0) == 0);
    CHECK(request("NOT HTTP AT ALL\r\n\r\n").got.rfind("HTTP/1.1 400 ", 0) == 0);
    const std::string big = "GET /ok HTTP/1.1\r\nX-Big: " + std::string(2000, 'a') + "\r\n\r\n";
    CHECK(request(big).got.rfind("HTTP/1.1 431 ", 0) == 0);
    LONGS_EQUAL(0, paths.size());  // none reached the handler
}

TEST(HttpServer, ConnectionsOverTheLimitAreClosedAtOnceAndIdleOnesAfterTheTimeout) {
    start();
    // max_clients idle clients that send nothing.
    std::vector<Client> idle(limits.max_clients);
    for (auto& c : idle) c.fd = tcp_connect(port);
    CHECK(pump_until([&] { return server->clients() == limits.max_clients; }));
    // One more is accepted and closed without an answer.
    Client extra(tcp_connect(port));
    CHECK(pump_until([&] {
        extra.poll();
        return extra.closed;
    }));
    STRCMP_EQUAL("", extra.got.c_str());
    ::close(extra.fd);
    // The idle ones are closed after request_timeout_ms, and a new client
    // is served again.
    const auto t0 = std::chrono::steady_clock::now();
    CHECK(pump_until([&] {
        for (auto& c : idle) c.poll();
        for (auto& c : idle)
            if (!c.closed) return false;
        return true;
    }));
    CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(5));
    for (auto& c : idle) ::close(c.fd);
    CHECK(pump_until([&] { return server->clients() == 0; }));
    CHECK(request("GET /ok HTTP/1.1\r\n\r\n").got.rfind("HTTP/1.1 200 ", 0) == 0);
}

TEST(HttpServer, AnAddressInUseIsBusyAndNamed) {
    start();
    HttpServer second(&loop, limits,
                      [](const std::string&, const std::string&) { return HttpServer::Reply{}; });
    auto s = second.start(server->address());
    CHECK(!s.ok());
    CHECK(s.error().code == ErrorCode::Busy);
    CHECK(s.error().message.find(server->address()) != std::string::npos);
}
