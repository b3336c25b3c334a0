// The control socket's server: newline-delimited JSON over a unix socket on
// a real libuv loop, driven by real clients (LineJsonClient and raw
// sockets). Every wait runs the loop until a predicate holds, with a deadline.
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "platform/line_server.h"

#include <CppUTest/TestHarness.h>

using namespace daemonlet;
using platform::LineJsonClient;
using platform::LineJsonServer;

namespace {

std::int64_t now_ms() {
    timespec ts{};
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return std::int64_t{ts.tv_sec} * 1000 + ts.tv_nsec / 1'000'000;
}

int raw_connect(const std::string& path) {
    int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::memcpy(addr.sun_path, path.data(), path.size());
    if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
        ::close(fd);
        return -1;
    }
    return fd;
}

}  // namespace

TEST_GROUP(LineServer) {
    uv_loop_t loop{};
    std::string dir, path;
    LineJsonServer* server = nullptr;
    std::vector<Json> requests;
    std::set<LineJsonServer::ClientId> gone;
    LineJsonServer::Limits limits;

    void setup() override {
        ::signal(SIGPIPE, SIG_IGN);  // as the agent does
        uv_loop_init(&loop);
        char tmpl[] = "/tmp/daemonlet-ls.XXXXXX";
        dir = ::mkdtemp(tmpl);
        path = dir + "/daemonlet.sock";
        limits.max_line_bytes = 1024;
        limits.max_queued_bytes = 64 * 1024;
    }
    void teardown() override {
        delete server;
        uv_run(&loop, UV_RUN_DEFAULT);  // the close callbacks
        LONGS_EQUAL(0, uv_loop_close(&loop));
        std::system(("rm -rf " + dir).c_str());
    }
    // An echo server: answers {"echo": request}; {"op": "hold"} gets no answer.
    void start() {
        server = new LineJsonServer(
            &loop, path, limits,
            [this](LineJsonServer::ClientId id, const Json& req) {
                requests.push_back(req);
                if (req.value("op", "") != "hold") server->send(id, Json{{"echo", req}});
            },
            [this](LineJsonServer::ClientId id) { gone.insert(id); });
        auto s = server->start();
        CHECK_TEXT(s.ok(), s.ok() ? "" : s.error().message.c_str());
    }
    // Runs the loop until pred() holds; false after 5 s.
    bool pump_until(const std::function<bool()>& pred) {
        const std::int64_t deadline = now_ms() + 5000;
        while (now_ms() < deadline) {
            uv_run(&loop, UV_RUN_NOWAIT);
            if (pred()) return true;
            timespec pause{0, 1'000'000};
            nanosleep(&pause, nullptr);  // pacing only; the predicate decides
        }
        return false;
    }
    // Sends through the client, pumps the loop until the server has seen
    // the request, then reads the answer.
    Result<Json> round_trip(LineJsonClient & c, const Json& req) {
        const std::size_t before = requests.size();
        CHECK(c.send(req).ok());
        CHECK(pump_until([&] { return requests.size() > before; }));
        uv_run(&loop, UV_RUN_NOWAIT);
        return c.receive(2000);
    }
};

TEST(LineServer, AnswersEachRequestLineAndTheSocketIs0600) {
    start();
    struct stat st {};
    CHECK(::stat(path.c_str(), &st) == 0);
    CHECK(S_ISSOCK(st.st_mode));
    LONGS_EQUAL(0600, st.st_mode & 0777);
    LineJsonClient c;
    CHECK(c.connect(path).ok());
    auto r = round_trip(c, Json{{"op", "ping"}, {"n", 1}});
    CHECK(r.ok());
    STRCMP_EQUAL("ping", r.value()["echo"]["op"].get<std::string>().c_str());
    r = round_trip(c, Json{{"op", "ping"}, {"n", 2}});
    CHECK(r.ok());
    LONGS_EQUAL(2, r.value()["echo"]["n"].get<int>());
}

TEST(LineServer, ManyClientsAreServedIndependently) {
    start();
    std::vector<LineJsonClient> clients(10);
    for (auto& c : clients) CHECK(c.connect(path).ok());
    for (std::size_t i = 0; i < clients.size(); ++i)
        CHECK(clients[i].send(Json{{"op", "ping"}, {"n", i}}).ok());
    CHECK(pump_until([&] { return requests.size() == clients.size(); }));
    for (std::size_t i = 0; i < clients.size(); ++i) {
        uv_run(&loop, UV_RUN_NOWAIT);
        auto r = clients[i].receive(2000);
        CHECK(r.ok());
        LONGS_EQUAL(i, r.value()["echo"]["n"].get<std::size_t>());
    }
}

TEST(LineServer, ALineThatIsNotJsonGetsAnErrorAndTheConnectionStays) {
    start();
    int fd = raw_connect(path);
    CHECK(fd >= 0);
    const std::string bad = "{not json\n";
    CHECK(::write(fd, bad.data(), bad.size()) == static_cast<ssize_t>(bad.size()));
    LineJsonClient probe;  // a second client proves the server still runs
    CHECK(probe.connect(path).ok());
    CHECK(round_trip(probe, Json{{"op", "ping"}}).ok());
    char buf[512] = {};
    CHECK(pump_until([&] { return ::recv(fd, buf, sizeof buf - 1, MSG_DONTWAIT | MSG_PEEK) > 0; }));
    CHECK(::read(fd, buf, sizeof buf - 1) > 0);
    CHECK(std::strstr(buf, "\"error\"") != nullptr);
    const std::string good = "{\"op\":\"after\"}\n";
    CHECK(::write(fd, good.data(), good.size()) == static_cast<ssize_t>(good.size()));
    CHECK(pump_until([&] { return !requests.empty() && requests.back().value("op", "") == "after"; }));
    ::close(fd);
}

TEST(LineServer, AnOversizedRequestIsRefusedAndTheClientDropped) {
    start();
    LineJsonClient c;
    CHECK(c.connect(path).ok());
    std::string big = "{\"op\":\"" + std::string(4000, 'x') + "\"}";
    CHECK(c.send(Json::parse(big)).ok());
    CHECK(pump_until([&] { return gone.size() == 1; }));
    auto r = c.receive(2000);
    CHECK(r.ok());
    CHECK(r.value()["error"].get<std::string>().find("longer than 1024 bytes") != std::string::npos);
    CHECK(!c.receive(2000).ok());  // closed
    CHECK(requests.empty());
    LONGS_EQUAL(0, server->clients());
}

TEST(LineServer, AClientThatGoesAwayIsForgottenAndSendsToItAreNoOps) {
    start();
    LineJsonServer::ClientId held = 0;
    {
        LineJsonClient c;
        CHECK(c.connect(path).ok());
        CHECK(c.send(Json{{"op", "hold"}}).ok());
        CHECK(pump_until([&] { return requests.size() == 1; }));
        LONGS_EQUAL(1, server->clients());
        held = 1;  // the first client's id
    }              // closed with its request unanswered
    CHECK(pump_until([&] { return gone.count(held) == 1; }));
    CHECK(!server->send(held, Json{{"late", true}}));
    LineJsonClient next;
    CHECK(next.connect(path).ok());
    CHECK(round_trip(next, Json{{"op", "ping"}}).ok());
}

TEST(LineServer, AClientThatDoesNotReadIsDroppedWhenItsQueueIsFull) {
    start();
    int fd = raw_connect(path);
    const std::string hold = "{\"op\":\"hold\"}\n";
    CHECK(::write(fd, hold.data(), hold.size()) > 0);
    CHECK(pump_until([&] { return requests.size() == 1; }));
    const LineJsonServer::ClientId id = 1;
    const Json chunk = Json{{"data", std::string(8 * 1024, 'y')}};
    bool refused = false;
    for (int i = 0; i < 1000 && !refused; ++i) {
        refused = !server->send(id, chunk);
        uv_run(&loop, UV_RUN_NOWAIT);
    }
    CHECK(refused);
    CHECK(gone.count(id) == 1);
    ::close(fd);
}

TEST(LineServer, AStaleSocketIsReplacedAndALiveServerIsNot) {
    // A socket file nobody listens on, as a killed agent leaves it.
    int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::memcpy(addr.sun_path, path.data(), path.size());
    CHECK(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
    ::close(fd);
    LineJsonClient before;
    auto refused = before.connect(path);
    CHECK(!refused.ok());
    STRCMP_EQUAL("not_running", refused.error().code_name());

    start();
    LineJsonClient c;
    CHECK(c.connect(path).ok());

    LineJsonServer second(
        &loop, path, limits, [](LineJsonServer::ClientId, const Json&) {}, nullptr);
    // A blocking connect to our own loop's listener succeeds from the backlog.
    auto s = second.start();
    CHECK(!s.ok());
    CHECK(s.error().message.find("another daemonlet") != std::string::npos);
    struct stat st {};
    CHECK(::stat(path.c_str(), &st) == 0);  // the live server's socket is untouched
}

TEST(LineServer, AListenerWhoseOwnerDiedIsStaleWhileAChildStillHoldsIt) {
    // A killed agent's child between fork and exec holds its listening
    // socket: connect() is still accepted from the backlog, but the process
    // that listened is gone (found by the kill -9 storm, test_storm.sh).
    // The holder lives until `hold` is closed (at the end, or when this
    // process exits after a failed check), never holding our output.
    int ready[2], hold[2];
    CHECK(::pipe(ready) == 0 && ::pipe(hold) == 0);
    const pid_t owner = ::fork();
    if (owner == 0) {
        int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
        sockaddr_un addr{};
        addr.sun_family = AF_UNIX;
        std::memcpy(addr.sun_path, path.data(), path.size());
        if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || ::listen(fd, 4) != 0)
            ::_exit(1);
        const pid_t holder = ::fork();
        if (holder == 0) {
            ::close(ready[1]);
            ::close(hold[1]);
            ::close(1);
            ::close(2);
            char b;
            while (::read(hold[0], &b, 1) < 0) {
            }
            ::_exit(0);
        }
        if (::write(ready[1], &holder, sizeof holder) != sizeof holder) ::_exit(1);
        ::_exit(0);  // the owner dies; the holder keeps the listener
    }
    ::close(ready[1]);
    ::close(hold[0]);
    pid_t holder = 0;
    CHECK(::read(ready[0], &holder, sizeof holder) == sizeof holder);
    ::close(ready[0]);
    int status = 0;
    CHECK(::waitpid(owner, &status, 0) == owner);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    LineJsonClient before;
    CHECK(before.connect(path).ok());  // accepted from the backlog: it looks alive

    start();  // replaced, not "another daemonlet"
    LineJsonClient c;
    CHECK(c.connect(path).ok());
    ::close(hold[1]);
}

TEST(LineServer, CloseRemovesTheSocketAndClientsSeeNotRunning) {
    start();
    server->close();
    uv_run(&loop, UV_RUN_DEFAULT);
    struct stat st {};
    CHECK(::stat(path.c_str(), &st) != 0);
    LineJsonClient c;
    auto r = c.connect(path);
    CHECK(!r.ok());
    STRCMP_EQUAL("not_running", r.error().code_name());
    CHECK(r.error().message.find("no " + path) != std::string::npos);
}

TEST(LineServer, ClientsBeyondTheLimitAreTurnedAway) {
    limits.max_clients = 2;
    start();
    LineJsonClient a, b, c;
    CHECK(a.connect(path).ok());
    CHECK(b.connect(path).ok());
    CHECK(pump_until([&] { return server->clients() == 2; }));
    CHECK(c.connect(path).ok());  // the kernel accepts; the server answers and closes
    CHECK(pump_until([&] { return gone.size() == 1; }));
    auto r = c.receive(2000);
    CHECK(r.ok());
    STRCMP_EQUAL("too many clients", r.value()["error"].get<std::string>().c_str());
    CHECK(round_trip(a, Json{{"op", "ping"}}).ok());  // the others are served
}

TEST(LineServer, ReceiveTimesOut) {
    start();
    LineJsonClient c;
    CHECK(c.connect(path).ok());
    CHECK(c.send(Json{{"op", "hold"}}).ok());
    auto r = c.receive(50);
    CHECK(!r.ok());
    STRCMP_EQUAL("timeout", r.error().code_name());
}
