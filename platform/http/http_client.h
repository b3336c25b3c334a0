// An HTTP(S) client on the agent's libuv loop: libcurl's multi socket
// interface (curl_multi_socket_action) driven by uv_poll for the sockets
// and one uv_timer for curl's timeouts, so requests never block the loop
// and no thread is started. Used by httpGet and grpc probes; the API server
// has its own client on mbed TLS, for memory (api_http_client.h), with the
// same request types and contract.
//
// Errors: code "timeout", "refused" (no connection), "stopped" (on_data),
// "http" (anything else, with curl's reason).
//
// Contract, as libuv's: request() either fails synchronously and never calls
// back, or calls back exactly once, from the loop, with a response or an
// error, unless cancel() or close() came first (then never).
#pragma once

#include <uv.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/result.h"

namespace daemonlet::platform {

struct HttpTls {
    bool verify = true;     // peer certificate and host name; kubelet's probes do not verify
    std::string ca_file;    // PEM bundle; empty: the system's
    std::string cert_file;  // client certificate (PEM), optional
    std::string key_file;   // its key (PEM)
    // The same as PEM bytes, for kubeconfig's -data fields (decoded); a file
    // and its bytes are not both given.
    std::string ca_pem;
    std::string cert_pem;
    std::string key_pem;
};

struct HttpRequest {
    std::string method = "GET";
    std::string url;  // http:// or https:// only
    std::vector<std::pair<std::string, std::string>> headers;
    std::string body;
    std::int64_t timeout_ms = 10'000;  // the whole exchange, connection included
    HttpTls tls;
    // Redirects are not followed here: a 3xx comes back with its Location
    // resolved in HttpResponse::redirect_url, so the caller applies its own
    // policy (kubelet's probes follow same-host redirects only).
    std::size_t max_body_bytes = 1024 * 1024;
    bool truncate_body = false;     // true: keep the first max_body_bytes and read on; false: fail
    bool fresh_connection = false;  // no connection reuse (kubelet probes: DisableKeepAlives)
    bool use_env_proxy = false;     // false: never a proxy (kubelet probes: Proxy nil)
    bool http2_multiplex = false;   // wait for a pending HTTP/2 connection rather than open another
    // HTTP/2 over cleartext without an upgrade (a gRPC channel without TLS:
    // grpc probes). Needs a libcurl built with nghttp2 (Debian's is):
    // request() fails at once, saying so, when it is not.
    bool http2_prior_knowledge = false;
    // The network namespace the connection is made in (probes of a
    // container with its own network: /proc/<pid>/ns/net); empty: the agent's.
    std::string netns;
    // Streaming (a watch): each piece of the body as it arrives, with the
    // status, instead of collecting it (max_body_bytes does not apply; the
    // response's body stays empty). Returning false stops the transfer: the
    // callback then gets an error with code "stopped". timeout_ms still
    // bounds the whole exchange.
    std::function<bool(long status, std::string_view data)> on_data;
};

struct HttpResponse {
    long status = 0;
    // Of the last response, names as sent; an HTTP/2 response's trailers
    // (gRPC's grpc-status) follow its headers here.
    std::vector<std::pair<std::string, std::string>> headers;
    std::string body;
    bool body_truncated = false;
    std::string redirect_url;  // absolute, for 3xx with a Location
};

class HttpClient {
  public:
    using Callback = std::function<void(Result<HttpResponse>)>;
    using RequestId = std::uint64_t;

    explicit HttpClient(uv_loop_t* loop);
    HttpClient(const HttpClient&) = delete;
    HttpClient& operator=(const HttpClient&) = delete;
    ~HttpClient();  // close() must have been called and the loop run

    Result<RequestId> request(const HttpRequest& req, Callback cb);

    // Abandons a request: its callback is not called.
    void cancel(RequestId id);

    // Abandons every request and closes the libuv handles; the loop can then
    // finish. Idempotent.
    void close();

    struct Impl;

  private:
    std::unique_ptr<Impl> impl_;
};

}  // namespace daemonlet::platform
