// The inside of the API server client (api_http_client.h), shared by its
// three parts: the transfers, their pool and their connections
// (api_http_client.cpp, over api_connection.h's socket and TLS), the
// HTTP/1.1 exchange (api_h1.cpp, llhttp) and the HTTP/2 glue (api_h2.cpp,
// over h2_session.h). Not for other users.
//
// One exchange: resolve (uv_getaddrinfo, on libuv's thread pool) or take an
// idle connection from the pool; connect; the TLS handshake; then HTTP/1.1
// (write the request, read and feed llhttp until the message completes; the
// connection then goes back to the pool when both sides keep it alive) or
// a stream of the origin's HTTP/2 connection. One uv_timer per request
// bounds it.
#pragma once

#include <llhttp.h>
#include <netdb.h>
#include <uv.h>

#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "platform/http/api_connection.h"
#include "platform/http/api_http_client.h"
#include "platform/http/h2_session.h"

namespace daemonlet::platform {

struct ApiUrl {
    bool https = false;
    std::string host;  // without brackets
    std::string port;
    std::string target;  // path and query, "/" at least
    std::string host_header;
};

struct ApiHttpClient::Impl {
    struct Transfer;

    // A connection of the pool or an origin's HTTP/2 one.
    struct Conn : Connection {
        Impl* impl = nullptr;
        std::string key;
        Transfer* owner = nullptr;  // null: idle in the pool
        bool reused = false;
        // HTTP/2 (ALPN h2): the session, its streams (requests in flight),
        // the bytes to send.
        std::unique_ptr<H2Session> h2;
        std::map<std::int32_t, Transfer*> streams;
        std::string h2_out;
        std::size_t h2_sent = 0;
        int busy = 0;       // inside h2_io: closed after it
        bool dead = false;  // closed while busy
        bool kick = false;  // a stream came or went while busy: write
        bool goaway = false;
        std::int32_t last_stream = 0;  // GOAWAY's

        void on_event() override { impl->on_event(this); }
    };

    static constexpr std::size_t kMaxHeaders = 200;

    enum class Phase { Resolving, Connecting, Handshake, Sending, Receiving, H2 };

    // A resolution in flight; id 0 once its transfer is gone. It may end
    // after the client: `alive` says whether impl still is.
    struct Resolve {
        Impl* impl;
        RequestId id;
        std::shared_ptr<bool> alive;
        uv_getaddrinfo_t* req;
    };

    struct Transfer {
        Impl* impl = nullptr;
        RequestId id = 0;
        Callback cb;
        ApiUrl url;
        bool head = false;
        std::string out;  // the request's bytes
        std::size_t sent = 0;
        HttpTls tls_opts;
        std::string key;
        bool fresh = false;
        std::size_t max_body = 0;
        bool truncate = false;
        std::function<bool(long, std::string_view)> on_data;
        std::int64_t timeout_ms = 0;
        uv_timer_t* timer = nullptr;
        Resolve* resolving = nullptr;
        addrinfo* addrs = nullptr;    // uv_getaddrinfo's
        addrinfo* numeric = nullptr;  // getaddrinfo's, for an address
        bool in_request = false;
        addrinfo* next_addr = nullptr;
        int connect_errno = 0;
        Phase phase = Phase::Resolving;
        Conn* conn = nullptr;
        bool retried = false;
        bool got_bytes = false;  // of the response, on this connection
        llhttp_t parser{};
        llhttp_settings_t settings{};
        HttpResponse resp;
        std::string field;
        std::string value;
        std::size_t header_bytes = 0;
        bool complete = false;
        bool keep_alive = false;
        std::optional<Error> failure;  // set from llhttp's callbacks
        int busy = 0;                  // inside llhttp (and so on_data), which may cancel it
        bool dead = false;             // cancelled while busy
        // HTTP/2: the request's parts, its stream once submitted.
        std::string method;
        std::vector<std::pair<std::string, std::string>> h2_headers;
        std::string body;
        bool multiplex = false;  // wait for a pending h2 connection
        bool waiting = false;    // for it
        bool resume = false;     // its timer restarts the connection
        std::uint64_t deadline = 0;
        std::int32_t stream = 0;
        bool h2_reused = false;  // the stream went on an established connection
        bool h2_closed = false;
        std::uint32_t h2_code = 0;
    };

    uv_loop_t* loop;
    bool closed = false;
    RequestId next_id = 1;
    std::uint64_t opened = 0;
    std::map<RequestId, std::unique_ptr<Transfer>> transfers;
    std::map<std::string, std::deque<Conn*>> idle;
    std::map<std::string, Conn*> h2_live;         // the h2 connection new requests take
    std::set<Conn*> h2_conns;                     // every h2 connection
    std::map<std::string, RequestId> h2_pending;  // a connection offering h2 being made
    bool no_h2 = false;                           // nghttp2 is missing: offer http/1.1 only
    std::set<std::string> h1_origins;             // took http/1.1 when offered h2: no waiting
    // By the pool key and whether h2 is offered; freed with the client.
    TlsConfigs tls_configs;

    std::shared_ptr<bool> alive = std::make_shared<bool>(true);

    explicit Impl(uv_loop_t* l) : loop(l) {}
    ~Impl() { *alive = false; }

    // api_http_client.cpp: connections and the steps of a transfer.
    static bool idempotent(const std::string& method);
    void drop_idle(Conn* c);
    void on_event(Conn* c);
    Status start_connection(Transfer& t, bool pooled);
    static void on_resolved(uv_getaddrinfo_t* req, int status, addrinfo* res);
    void connect_next(Transfer& t);
    static void on_timer(uv_timer_t* timer);
    void broken(Transfer& t, const std::string& why);
    void advance(Transfer& t);
    // The response, either protocol: a header's bytes counted against the
    // limit; body bytes (-1 to stop, with t.failure, or with t.dead when
    // on_data cancelled it).
    static int count_header(Transfer& t, std::size_t len);
    static int body_bytes(Transfer& t, const char* at, std::size_t len);
    void done(Transfer& t, bool keep);
    void fail(Transfer& t, Error e) { finish(t, std::move(e)); }
    void finish(Transfer& t, Result<HttpResponse> r);
    void destroy(Transfer& t);

    // api_h1.cpp: the request written, the response read.
    void h1_exchange(Transfer& t);
    void receive(Transfer& t);
    static void init_settings(llhttp_settings_t& s);

    // api_h2.cpp: the origin's HTTP/2 connection and its streams.
    void start_h2(Transfer& t, Conn* c);
    void attach(Transfer& t, Conn& c, bool reused);
    void release_waiters(Transfer& t);
    static void detach(Transfer& t);
    bool retry_h2(Transfer& t, bool unprocessed);
    void h2_io(Conn* c);
    void unlive(Conn* c);
    void h2_sweep(Conn* c, const std::optional<std::string>& broke);
    void drop_h2(Conn* c);
};

}  // namespace daemonlet::platform
