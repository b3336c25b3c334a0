// The HTTP client on a real libuv loop against a real local server
// (http_responder.h): every request calls back exactly once, from the loop,
// with the status or an error; redirects are reported, not followed; the
// body limit holds; close() leaves nothing for uv_loop_close to complain
// about.
#include <string>

#include "platform/http/http_client.h"
#include "tests/platform/http/client_test.h"
#include "tests/platform/http/http_responder.h"
#include "tests/platform/runtime_fixture.h"

#include <CppUTest/TestHarness.h>

using namespace daemonlet;
using namespace daemonlet::testing;

// libcurl's second callback would come from its multi handle's next turn:
// the wait for it stays at 50 ms.
using HttpClientTest = ClientTest<HttpResponder, platform::HttpClient, 50>;

// clang-format does not know TEST_GROUP_BASE.
// clang-format off
TEST_GROUP_BASE(HttpClient, HttpClientTest) {
    std::string url(const std::string& path) {
        return "http://127.0.0.1:" + std::to_string(server->port()) + path;
    }
    platform::HttpRequest req(const std::string& path) {
        platform::HttpRequest r;
        r.url = url(path);
        r.timeout_ms = 2000;
        return r;
    }
};
// clang-format on

TEST(HttpClient, ReturnsStatusHeadersAndBody) {
    Outcome o = get(req("/ok"));
    CHECK(o.resp.has_value());
    LONGS_EQUAL(200, o.resp->status);
    STRCMP_EQUAL("fine", o.resp->body.c_str());
    bool has_length = false;
    for (const auto& [k, v] : o.resp->headers) has_length = has_length || (k == "Content-Length" && v == "4");
    CHECK(has_length);
}

TEST(HttpClient, AFailureStatusIsAResponseNotAnError) {
    Outcome o = get(req("/status/500"));
    CHECK(o.resp.has_value());
    LONGS_EQUAL(500, o.resp->status);
}

TEST(HttpClient, SendsTheRequestHeaders) {
    auto r = req("/headers");
    r.headers.emplace_back("X-Probe", "yes");
    Outcome o = get(r);
    CHECK(o.resp.has_value());
    CHECK(o.resp->body.find("X-Probe: yes") != std::string::npos);
}

TEST(HttpClient, RedirectsAreReportedResolvedAndNotFollowed) {
    Outcome o = get(req("/redirect"));
    CHECK(o.resp.has_value());
    LONGS_EQUAL(302, o.resp->status);
    STRCMP_EQUAL(url("/ok").c_str(), o.resp->redirect_url.c_str());
    LONGS_EQUAL(1, server->paths.size());
}

TEST(HttpClient, TimesOut) {
    auto r = req("/silent");
    r.timeout_ms = 200;
    Outcome o = get(r);
    CHECK(o.err.has_value());
    STRCMP_EQUAL("timeout", o.err->code_name());
}

TEST(HttpClient, ConnectionRefusedIsAnError) {
    // A port nobody listens on: bind one, close it, use its number.
    uv_tcp_t probe;
    uv_tcp_init(&loop, &probe);
    sockaddr_in a{};
    uv_ip4_addr("127.0.0.1", 0, &a);
    uv_tcp_bind(&probe, reinterpret_cast<const sockaddr*>(&a), 0);
    sockaddr_storage bound{};
    int len = sizeof bound;
    uv_tcp_getsockname(&probe, reinterpret_cast<sockaddr*>(&bound), &len);
    int port = ntohs(reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
    uv_close(reinterpret_cast<uv_handle_t*>(&probe), nullptr);
    uv_run(&loop, UV_RUN_NOWAIT);
    platform::HttpRequest r;
    r.url = "http://127.0.0.1:" + std::to_string(port) + "/";
    Outcome o = get(r);
    CHECK(o.err.has_value());
    CHECK_TEXT(o.err->message.find("onnect") != std::string::npos, o.err->message.c_str());
}

TEST(HttpClient, ABodyOverTheLimitFailsOrIsTruncated) {
    auto r = req("/big");
    r.max_body_bytes = 1000;
    Outcome o = get(r);
    CHECK(o.err.has_value());
    CHECK(o.err->message.find("larger than 1000") != std::string::npos);
    r.truncate_body = true;
    Outcome t = get(r);
    CHECK(t.resp.has_value());
    LONGS_EQUAL(200, t.resp->status);
    LONGS_EQUAL(1000, t.resp->body.size());
    CHECK(t.resp->body_truncated);
}

TEST(HttpClient, RefusesOtherSchemesSynchronously) {
    platform::HttpRequest r;
    r.url = "file:///etc/passwd";
    bool called = false;
    auto id = client->request(r, [&](Result<platform::HttpResponse>) { called = true; });
    CHECK_FALSE(id.ok());
    run_until(
        &loop, [] { return false; }, std::chrono::milliseconds(20));
    CHECK_FALSE(called);
}

TEST(HttpClient, CancelAndCloseNeverCallBack) {
    bool called = false;
    auto a = client->request(req("/silent"), [&](Result<platform::HttpResponse>) { called = true; });
    auto b = client->request(req("/silent"), [&](Result<platform::HttpResponse>) { called = true; });
    CHECK(a.ok() && b.ok());
    run_until(&loop, [&] { return server->paths.size() == 2; });
    client->cancel(a.value());
    client->close();
    run_until(
        &loop, [] { return false; }, std::chrono::milliseconds(50));
    CHECK_FALSE(called);
}

TEST(HttpClient, StreamsTheBodyAsItArrives) {
    // A watch's body never ends by itself: it is handed over piece by piece.
    auto r = req("/big");
    std::size_t bytes = 0;
    int pieces = 0;
    long status = 0;
    r.on_data = [&](long s, std::string_view data) {
        status = s;
        bytes += data.size();
        ++pieces;
        return true;
    };
    Outcome o = get(r);
    CHECK_TEXT(!o.err, o.err ? o.err->message.c_str() : "");
    LONGS_EQUAL(200, status);
    LONGS_EQUAL(64 * 1024, bytes);
    CHECK(pieces >= 1);
    CHECK(o.resp.has_value());
    LONGS_EQUAL(0, o.resp->body.size());  // nothing collected
}

TEST(HttpClient, TheReceiverCanStopAStream) {
    auto r = req("/big");
    std::size_t bytes = 0;
    r.on_data = [&](long, std::string_view data) {
        bytes += data.size();
        return false;  // e.g. a malformed watch event
    };
    Outcome o = get(r);
    CHECK(o.err.has_value());
    STRCMP_EQUAL("stopped", o.err->code_name());
    CHECK(bytes > 0 && bytes < 64 * 1024 + 1);
}
