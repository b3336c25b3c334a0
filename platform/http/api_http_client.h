// The API server's HTTP client: HTTP/1.1 over TLS (mbed TLS 2.28, loaded on
// first use: mbedtls_api.h) or cleartext, on the agent's libuv loop, with
// llhttp parsing the responses. The cluster link (agent/daemon/cluster_link.h)
// uses it instead of HttpClient (libcurl) for memory: a connected agent then
// maps mbed TLS (about 0.6 MiB) instead of libcurl's closure (8.2 MiB, with
// libcrypto; docs/figures.md, "Memory when connected"). httpGet and grpc
// probes and registry pulls keep libcurl (HTTP/2, redirects, proxies,
// network namespaces), which is not loaded unless they run.
//
// The same request(), cancel(), close() and contract as HttpClient
// (http_client.h): request() either fails synchronously and never calls
// back, or calls back exactly once, from the loop, unless cancel() or
// close() came first. Errors: Timeout (timeout_ms, the whole exchange),
// Refused (no connection to any address), Stopped (on_data said stop),
// TooLarge (max_body_bytes without truncate_body), Http (anything else,
// with the reason; a certificate refused because the clock is wrong says
// what the clock reads).
//
// Of HttpRequest it honours method, url, headers, body, timeout_ms, tls,
// max_body_bytes, truncate_body, fresh_connection (HTTP/1.1 then),
// http2_multiplex and on_data; redirects are not followed and not resolved
// (the API server sends none), and netns, use_env_proxy and
// http2_prior_knowledge do not apply.
//
// Connections are kept alive: an idle one goes back to a small pool per
// (scheme, host, port, TLS settings) and serves the next request. A
// request that fails on a reused connection before any byte of the
// response arrived (the server closed it while it was idle) is retried
// once on a new connection, as curl does.
//
// Over TLS, HTTP/2 when the server takes h2 by ALPN (nghttp2, h2_session.h,
// loaded when a server first takes h2; if it cannot be, that connection is
// made again offering http/1.1 only, and so are the next ones). Over h2 the
// requests to an origin are streams of one connection: with
// http2_multiplex a request waits for the connection being made rather
// than opening another. A GOAWAY or a broken connection fails its streams;
// those the server did not process (refused, above GOAWAY's last stream)
// are retried once on a new connection, and so are those of an idempotent
// method (not POST or PATCH) on a connection that was already up and sent
// nothing of them. Over HTTP/1.1 likewise: a reused connection that breaks
// before any byte of the response is retried once, a POST or PATCH only
// when the break came while sending it (Go's http.Transport:
// req.isReplayable()). Connections with the same TLS settings share one
// parsed configuration (CA, client certificate). No h2c.
#pragma once

#include <uv.h>

#include <memory>

#include "platform/http/http_client.h"

namespace daemonlet::platform {

class ApiHttpClient {
  public:
    using Callback = HttpClient::Callback;
    using RequestId = HttpClient::RequestId;

    explicit ApiHttpClient(uv_loop_t* loop);
    ApiHttpClient(const ApiHttpClient&) = delete;
    ApiHttpClient& operator=(const ApiHttpClient&) = delete;
    ~ApiHttpClient();  // close() must have been called and the loop run

    Result<RequestId> request(const HttpRequest& req, Callback cb);
    void cancel(RequestId id);
    void close();

    // Connections opened so far (tests: keep-alive reuse).
    std::uint64_t connections_opened() const;
    // TLS configurations parsed (CA, client certificate): one per pool key
    // and ALPN offer, shared by its connections (tests).
    std::uint64_t tls_configs_made() const;

    struct Impl;

  private:
    std::unique_ptr<Impl> impl_;
};

}  // namespace daemonlet::platform
