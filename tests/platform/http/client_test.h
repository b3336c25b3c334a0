// What the two HTTP clients' tests share (test_http_client.cpp: libcurl's
// HttpClient; test_api_http_client.cpp: the API server's ApiHttpClient): a
// real libuv loop with a test server and the client on it, torn down so that
// uv_loop_close finds nothing left, and one request run to its single
// callback.
#pragma once

#include <uv.h>

#include <chrono>
#include <optional>

#include "platform/http/http_client.h"
#include "tests/platform/runtime_fixture.h"

#include <CppUTest/TestHarness.h>

namespace daemonlet::testing {

// What a request called back with, and how often.
struct Outcome {
    int calls = 0;
    std::optional<platform::HttpResponse> resp;
    std::optional<Error> err;
};

// The base of a TEST_GROUP_BASE: `Server` and `Client` are built on the loop
// (each from a uv_loop_t*), both have close().
template <class Server, class Client, int QuietMs = 20>
class ClientTest : public Utest {
  public:
    uv_loop_t loop{};
    Server* server = nullptr;
    Client* client = nullptr;

    void setup() override {
        uv_loop_init(&loop);
        server = new Server(&loop);
        client = new Client(&loop);
    }
    void teardown() override {
        client->close();
        server->close();
        uv_run(&loop, UV_RUN_DEFAULT);
        delete client;
        delete server;
        LONGS_EQUAL(0, uv_loop_close(&loop));
    }

    // `r` on the client, the loop run until it calls back: never from
    // inside request(), and once (nothing more within a short while).
    Outcome get(const platform::HttpRequest& r) {
        Outcome o;
        auto id = client->request(r, [&o](Result<platform::HttpResponse> res) {
            ++o.calls;
            if (res)
                o.resp = res.value();
            else
                o.err = res.error();
        });
        CHECK_TEXT(id.ok(), id.ok() ? "" : id.error().message.c_str());
        LONGS_EQUAL_TEXT(0, o.calls, "called back from inside request()");
        CHECK(run_until(&loop, [&] { return o.calls > 0; }));
        run_until(
            &loop, [] { return false; }, std::chrono::milliseconds(QuietMs));
        LONGS_EQUAL(1, o.calls);
        return o;
    }
};

}  // namespace daemonlet::testing
