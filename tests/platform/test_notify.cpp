// Notifier: sd_notify's messages without ever blocking the loop. A notify
// socket whose queue is full (PID 1 busy) holds the messages back, they are
// coalesced, and they go out in order once there is room.
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>
#include <uv.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "platform/notify.h"
#include "tests/platform/runtime_fixture.h"

#include <CppUTest/TestHarness.h>

using daemonlet::platform::Notifier;

TEST_GROUP(Notifier) {
    uv_loop_t loop;
    std::string dir;
    int listener = -1;
    void setup() override {
        uv_loop_init(&loop);
        char tmpl[] = "/tmp/daemonlet-notify-XXXXXX";
        CHECK(::mkdtemp(tmpl) != nullptr);
        dir = tmpl;
        listener = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        sockaddr_un addr{};
        addr.sun_family = AF_UNIX;
        std::snprintf(addr.sun_path, sizeof addr.sun_path, "%s/notify.sock", dir.c_str());
        CHECK(::bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
        ::setenv("NOTIFY_SOCKET", addr.sun_path, 1);
    }
    void teardown() override {
        ::unsetenv("NOTIFY_SOCKET");
        ::close(listener);
        uv_run(&loop, UV_RUN_DEFAULT);
        LONGS_EQUAL(0, uv_loop_close(&loop));
        std::filesystem::remove_all(dir);
    }
    std::vector<std::string> receive_all() {
        std::vector<std::string> out;
        char buf[512];
        for (ssize_t n; (n = ::recv(listener, buf, sizeof buf, 0)) > 0;)
            out.emplace_back(buf, static_cast<std::size_t>(n));
        return out;
    }
};

TEST(Notifier, AFullNotifySocketHoldsMessagesBackInOrderWithoutBlocking) {
    Notifier n(&loop);
    // Nobody reads: the socket's queue fills, and a send would block.
    auto before = std::chrono::steady_clock::now();
    int sent = 0;
    while (n.waiting() == 0 && sent < 100000) n.status("status " + std::to_string(sent++));
    CHECK(n.waiting() > 0);
    for (int i = 0; i < 100; ++i) n.status("coalesced " + std::to_string(i));
    n.ready("ready");
    n.status("after ready");
    CHECK(std::chrono::steady_clock::now() - before < std::chrono::seconds(2));
    LONGS_EQUAL(3, n.waiting());  // one STATUS, READY, the latest STATUS

    auto first = receive_all();
    LONGS_EQUAL(sent - 1, first.size());  // the last one found the queue full
    CHECK(daemonlet::testing::run_until(&loop, [&] { return n.waiting() == 0; }));
    auto rest = receive_all();
    LONGS_EQUAL(3, rest.size());
    STRCMP_EQUAL("STATUS=coalesced 99", rest[0].c_str());
    STRCMP_EQUAL("READY=1\nSTATUS=ready", rest[1].c_str());
    STRCMP_EQUAL("STATUS=after ready", rest[2].c_str());
    n.close();
}

TEST(Notifier, WithoutNotifySocketEveryCallIsANoOp) {
    ::unsetenv("NOTIFY_SOCKET");
    Notifier n(&loop);
    n.start();
    n.ready("x");
    n.status("y");
    n.stopping();
    LONGS_EQUAL(0, n.waiting());
    LONGS_EQUAL(0, n.watchdog_interval_ms());
    n.close();
}
