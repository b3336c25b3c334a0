// The API server client's transfers (api_client_impl.h): the public calls,
// the pool of kept-alive connections, resolving and connecting, the
// handshake's outcome (HTTP/1.1 or HTTP/2), and the ends of a transfer.
#include "platform/http/api_http_client.h"

#include <netdb.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "platform/http/api_client_impl.h"

namespace daemonlet::platform {

namespace {

constexpr std::size_t kMaxHeaderBytes = 256 * 1024;  // the whole header block
constexpr std::size_t kIdlePerKey = 4;

Result<ApiUrl> parse_url(const std::string& url) {
    ApiUrl u;
    std::string rest;
    if (url.rfind("https://", 0) == 0) {
        u.https = true;
        rest = url.substr(8);
    } else if (url.rfind("http://", 0) == 0) {
        rest = url.substr(7);
    } else {
        return Error{ErrorCode::Invalid, "URL " + url + ": only http:// and https:// are supported"};
    }
    const std::size_t slash = rest.find_first_of("/?");
    std::string authority = rest.substr(0, slash);
    u.target = slash == std::string::npos ? "/" : rest.substr(slash);
    if (u.target[0] == '?') u.target = "/" + u.target;
    if (const std::size_t at = authority.rfind('@'); at != std::string::npos) {
        // Without the user information (a password would reach a log).
        const std::string shown = url.substr(0, url.size() - rest.size()) + rest.substr(at + 1);
        return Error{ErrorCode::Invalid, "URL " + shown + ": user information is not supported"};
    }
    u.host_header = authority;
    if (!authority.empty() && authority[0] == '[') {
        const std::size_t close = authority.find(']');
        if (close == std::string::npos) return Error{ErrorCode::Invalid, "URL " + url + ": unclosed ["};
        u.host = authority.substr(1, close - 1);
        if (close + 1 < authority.size() && authority[close + 1] == ':') u.port = authority.substr(close + 2);
    } else {
        const std::size_t colon = authority.rfind(':');
        u.host = authority.substr(0, colon);
        if (colon != std::string::npos) u.port = authority.substr(colon + 1);
    }
    if (u.host.empty()) return Error{ErrorCode::Invalid, "URL " + url + ": no host"};
    if (u.port.empty()) u.port = u.https ? "443" : "80";
    if (u.port.find_first_not_of("0123456789") != std::string::npos || u.port.size() > 5)
        return Error{ErrorCode::Invalid, "URL " + url + ": bad port"};
    return u;
}

}  // namespace

bool ApiHttpClient::Impl::idempotent(const std::string& method) {
    return method == "GET" || method == "HEAD" || method == "PUT" || method == "DELETE" ||
           method == "OPTIONS";
}

void ApiHttpClient::Impl::drop_idle(Conn* c) {
    auto it = idle.find(c->key);
    if (it != idle.end()) {
        std::erase(it->second, c);
        if (it->second.empty()) idle.erase(it);
    }
    Connection::close(c);
}

void ApiHttpClient::Impl::on_event(Conn* c) {
    if (c->h2) return h2_io(c);
    // Idle: the server closed it, or sent what nobody asked for.
    if (!c->owner) return drop_idle(c);
    advance(*c->owner);
}

// Takes an idle connection (its first event sends the request) or
// starts resolving; fails only when the resolver cannot start.
Status ApiHttpClient::Impl::start_connection(Transfer& t, bool pooled) {
    t.got_bytes = false;
    t.h2_closed = false;
    t.h2_code = 0;
    t.sent = 0;
    t.complete = false;
    t.keep_alive = false;
    t.failure.reset();
    t.resp = HttpResponse{};
    t.field.clear();
    t.value.clear();
    t.header_bytes = 0;
    llhttp_init(&t.parser, HTTP_RESPONSE, &t.settings);
    t.parser.data = &t;
    if (pooled && !t.fresh) {
        if (auto h = h2_live.find(t.key); h != h2_live.end()) {
            attach(t, *h->second, true);
            return Ok{};
        }
        if (auto p = h2_pending.find(t.key); t.multiplex && p != h2_pending.end() && p->second != t.id) {
            t.waiting = true;  // release_waiters() resumes it
            t.phase = Phase::Resolving;
            return Ok{};
        }
        // The most recently used first; one the server has closed (or
        // sent anything on) since is dropped, as curl checks a
        // connection before it reuses it: the loop may not have seen
        // its EOF yet.
        for (auto it = idle.find(t.key); it != idle.end(); it = idle.find(t.key)) {
            Conn* c = it->second.back();
            it->second.pop_back();
            if (it->second.empty()) idle.erase(it);
            if (!c->idle_and_open()) {
                Connection::close(c);
                continue;
            }
            c->owner = &t;
            c->reused = true;
            t.conn = c;
            t.phase = Phase::Sending;
            c->watch(UV_WRITABLE);
            return Ok{};
        }
    }
    t.phase = Phase::Resolving;
    if (t.url.https && !t.fresh && !h2_pending.contains(t.key) && !h1_origins.contains(t.key) && !no_h2)
        h2_pending[t.key] = t.id;
    // An address (the usual API server URL) needs no resolver, and so
    // no thread of libuv's pool.
    if (is_ip_literal(t.url.host)) {
        addrinfo hints{};
        hints.ai_socktype = SOCK_STREAM;
        hints.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV;
        if (int r = ::getaddrinfo(t.url.host.c_str(), t.url.port.c_str(), &hints, &t.numeric); r != 0)
            return Error{ErrorCode::Http, "address " + t.url.host + ": " + gai_strerror(r)};
        t.next_addr = t.numeric;
        connect_next(t);
        return Ok{};
    }
    auto* req = new uv_getaddrinfo_t;
    t.resolving = new Resolve{this, t.id, alive, req};
    req->data = t.resolving;
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    if (int r = uv_getaddrinfo(loop, req, &Impl::on_resolved, t.url.host.c_str(), t.url.port.c_str(), &hints);
        r != 0) {
        delete t.resolving;
        t.resolving = nullptr;
        delete req;
        return Error{ErrorCode::Http, "resolving " + t.url.host + ": " + uv_strerror(r)};
    }
    return Ok{};
}

void ApiHttpClient::Impl::on_resolved(uv_getaddrinfo_t* req, int status, addrinfo* res) {
    auto* r = static_cast<Resolve*>(req->data);
    Impl* self = *r->alive ? r->impl : nullptr;
    const RequestId id = r->id;
    delete r;
    delete req;
    if (!self || id == 0) {
        if (res) uv_freeaddrinfo(res);
        return;
    }
    auto it = self->transfers.find(id);
    if (it == self->transfers.end()) {
        if (res) uv_freeaddrinfo(res);
        return;
    }
    Transfer& t = *it->second;
    t.resolving = nullptr;
    if (status != 0) {
        if (res) uv_freeaddrinfo(res);
        return self->fail(
            t, Error{ErrorCode::Http, "cannot resolve " + t.url.host + ": " + uv_strerror(status)});
    }
    t.addrs = res;
    t.next_addr = res;
    self->connect_next(t);
}

void ApiHttpClient::Impl::connect_next(Transfer& t) {
    while (t.next_addr) {
        addrinfo* a = t.next_addr;
        t.next_addr = a->ai_next;
        const int fd = connect_socket(*a);
        if (fd < 0) {
            t.connect_errno = -fd;
            continue;
        }
        auto* c = new Conn;
        c->impl = this;
        c->key = t.key;
        c->owner = &t;
        if (!c->open(loop, fd)) {
            Connection::close(c);
            t.connect_errno = EBADF;
            continue;
        }
        ++opened;
        t.conn = c;
        t.phase = Phase::Connecting;
        c->watch(UV_WRITABLE);
        return;
    }
    Error e{ErrorCode::Refused, "cannot connect to " + t.url.host_header + ": " +
                                    std::strerror(t.connect_errno ? t.connect_errno : ECONNREFUSED)};
    if (!t.in_request) return fail(t, std::move(e));
    // Never from inside request(): from the loop, by the timer.
    t.failure = std::move(e);
    uv_timer_start(t.timer, &Impl::on_timer, 0, 0);
}

void ApiHttpClient::Impl::on_timer(uv_timer_t* timer) {
    auto& t = *static_cast<Transfer*>(timer->data);
    if (t.failure) return t.impl->fail(t, *t.failure);
    if (t.resume) {  // the connection it waited for is there, or is not h2
        t.resume = false;
        const std::uint64_t now = uv_now(t.impl->loop);
        uv_timer_start(timer, &Impl::on_timer, t.deadline > now ? t.deadline - now : 1, 0);
        if (auto s = t.impl->start_connection(t, true); !s.ok()) t.impl->fail(t, s.error());
        return;
    }
    t.impl->fail(t, Error{ErrorCode::Timeout, "timed out after " + std::to_string(t.timeout_ms) + " ms (" +
                                                  t.url.host_header + ")"});
}

// A connection broke: on a reused one, before any byte of the response,
// the server most likely closed it while it was idle; once more on a
// new one.
//
// Not a POST or PATCH the server had whole: it may have acted on it (Go's
// http.Transport retries only when req.isReplayable(), or when nothing
// was written). PUT and DELETE are idempotent (RFC 9110 9.2.2): sent again
// (Go retries only GET, HEAD, OPTIONS and TRACE).
void ApiHttpClient::Impl::broken(Transfer& t, const std::string& why) {
    if (t.conn && t.conn->reused && !t.got_bytes && !t.retried &&
        (idempotent(t.method) || t.sent < t.out.size())) {
        t.retried = true;
        Connection::close(std::exchange(t.conn, nullptr));
        if (auto s = start_connection(t, false); !s.ok()) fail(t, s.error());
        return;
    }
    fail(t, Error{ErrorCode::Http, why});
}

void ApiHttpClient::Impl::advance(Transfer& t) {
    Conn* c = t.conn;
    if (t.phase == Phase::Connecting) {
        const int err = c->connect_result();
        if (err == EINPROGRESS) return;
        if (err != 0) {
            t.connect_errno = err;
            Connection::close(std::exchange(t.conn, nullptr));
            return connect_next(t);
        }
        if (t.addrs) uv_freeaddrinfo(std::exchange(t.addrs, nullptr));
        if (t.numeric) ::freeaddrinfo(std::exchange(t.numeric, nullptr));
        t.next_addr = nullptr;
        if (t.url.https) {
            // The shared configuration for the transfer's TLS settings: the
            // CA, the client certificate, ALPN h2 unless on a connection of
            // its own or without nghttp2.
            auto conf = tls_configs.get(t.key, t.tls_opts, !t.fresh && !no_h2);
            if (!conf.ok()) return fail(t, conf.error());
            if (auto s = c->start_tls(*conf.value(), t.url.host); !s.ok()) return fail(t, s.error());
            t.phase = Phase::Handshake;
        } else {
            t.phase = Phase::Sending;
        }
    }
    if (t.phase == Phase::Handshake) {
        auto step = c->handshake(t.url.host, t.url.host_header, t.tls_opts.verify);
        if (!step.ok()) return fail(t, step.error());
        if (step.value() == Connection::Step::WantRead) return c->watch(UV_READABLE);
        if (step.value() == Connection::Step::WantWrite) return c->watch(UV_WRITABLE);
        if (c->took_h2()) return start_h2(t, c);
        if (h2_pending.contains(t.key)) h1_origins.insert(t.key);
        release_waiters(t);
        t.phase = Phase::Sending;
    }
    h1_exchange(t);
}

int ApiHttpClient::Impl::count_header(Transfer& t, std::size_t len) {
    t.header_bytes += len;
    if (t.header_bytes <= kMaxHeaderBytes) return 0;
    t.failure = Error{ErrorCode::Http, "response headers from " + t.url.host_header + " larger than " +
                                           std::to_string(kMaxHeaderBytes) + " bytes"};
    return -1;
}

// Response body bytes (HTTP/1.1 or a stream's): -1 to stop, with
// t.failure, or with t.dead when on_data cancelled it.
int ApiHttpClient::Impl::body_bytes(Transfer& t, const char* at, std::size_t len) {
    if (t.on_data) {
        ++t.busy;
        const bool more = t.on_data(t.resp.status, std::string_view(at, len));
        --t.busy;
        if (more) return t.dead ? -1 : 0;
        t.failure = Error{ErrorCode::Stopped, "stopped by the receiver"};
        return -1;
    }
    const std::size_t room = t.max_body - std::min(t.max_body, t.resp.body.size());
    if (len > room) {
        if (!t.truncate) {
            t.failure = Error{ErrorCode::TooLarge,
                              "response body larger than " + std::to_string(t.max_body) + " bytes"};
            return -1;
        }
        t.resp.body.append(at, room);
        t.resp.body_truncated = true;
        return 0;
    }
    t.resp.body.append(at, len);
    return 0;
}

void ApiHttpClient::Impl::done(Transfer& t, bool keep) {
    Conn* c = std::exchange(t.conn, nullptr);
    if (keep && !closed && !t.fresh) {
        c->owner = nullptr;
        auto& q = idle[c->key];
        if (q.size() >= kIdlePerKey) {
            Connection::close(q.front());
            q.pop_front();
        }
        q.push_back(c);
        c->watch(UV_READABLE);
    } else {
        Connection::close(c);
    }
    finish(t, std::move(t.resp));
}

void ApiHttpClient::Impl::finish(Transfer& t, Result<HttpResponse> r) {
    Callback cb = std::move(t.cb);
    destroy(t);
    if (cb) cb(std::move(r));
}

void ApiHttpClient::Impl::destroy(Transfer& t) {
    if (t.busy) {  // inside llhttp: receive() finishes it
        t.dead = true;
        t.cb = nullptr;
        return;
    }
    if (t.timer)
        uv_close(reinterpret_cast<uv_handle_t*>(t.timer),
                 [](uv_handle_t* h) { delete reinterpret_cast<uv_timer_t*>(h); });
    if (t.resolving) {  // its callback frees it (UV_ECANCELED unless running)
        t.resolving->id = 0;
        uv_cancel(reinterpret_cast<uv_req_t*>(t.resolving->req));
    }
    release_waiters(t);
    if (t.conn && t.conn->h2) {  // the stream ends, not its connection
        Conn* c = t.conn;
        if (!t.h2_closed) c->h2->reset(t.stream, H2Session::kCancel);
        detach(t);
        c->kick = true;
        if (!c->busy && !c->dead) c->watch(UV_READABLE | UV_WRITABLE);
    }
    if (t.addrs) uv_freeaddrinfo(t.addrs);
    if (t.numeric) ::freeaddrinfo(t.numeric);
    Connection::close(t.conn);
    transfers.erase(t.id);
}
ApiHttpClient::ApiHttpClient(uv_loop_t* loop) : impl_(std::make_unique<Impl>(loop)) {}

ApiHttpClient::~ApiHttpClient() { close(); }

std::uint64_t ApiHttpClient::connections_opened() const { return impl_->opened; }

std::uint64_t ApiHttpClient::tls_configs_made() const { return impl_->tls_configs.made(); }

Result<ApiHttpClient::RequestId> ApiHttpClient::request(const HttpRequest& req, Callback cb) {
    Impl& m = *impl_;
    if (m.closed) return Error{ErrorCode::Closed, "HTTP client is closed"};
    auto url = parse_url(req.url);
    if (!url.ok()) return url.error();
    if (url.value().https)
        if (auto s = load_connection_tls(); !s.ok()) return s.error();
    auto t = std::make_unique<Impl::Transfer>();
    t->impl = &m;
    t->id = m.next_id++;
    t->cb = std::move(cb);
    t->url = std::move(url).value();
    t->head = req.method == "HEAD";
    t->tls_opts = req.tls;
    t->fresh = req.fresh_connection;
    t->max_body = req.max_body_bytes;
    t->truncate = req.truncate_body;
    t->on_data = req.on_data;
    t->method = req.method;
    t->body = req.body;
    t->multiplex = req.http2_multiplex;
    for (const auto& [name, value] : req.headers) {
        std::string lower = name;
        for (char& ch : lower) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
        if (lower != "host" && lower != "connection" && lower != "content-length" &&
            lower != "transfer-encoding")
            t->h2_headers.emplace_back(std::move(lower), value);
    }
    t->timeout_ms = std::max<std::int64_t>(1, req.timeout_ms);
    const HttpTls& o = req.tls;
    const std::hash<std::string> h;
    t->key = (t->url.https ? "https|" : "http|") + t->url.host + "|" + t->url.port;
    if (t->url.https)
        t->key += "|" + std::to_string(o.verify) + "|" + o.ca_file + "|" + o.cert_file + "|" + o.key_file +
                  "|" + std::to_string(h(o.ca_pem) ^ (h(o.cert_pem) * 31) ^ (h(o.key_pem) * 131));
    std::string& out = t->out;
    out = req.method + " " + t->url.target + " HTTP/1.1\r\nHost: " + t->url.host_header + "\r\n";
    auto clean = [](const std::string& s) { return s.find_first_of("\r\n") == std::string::npos; };
    if (!clean(req.method) || req.method.find(' ') != std::string::npos || !clean(t->url.target))
        return Error{ErrorCode::Invalid, "request line with a space or a line break: " + req.url};
    for (const auto& [name, value] : req.headers) {
        if (!clean(name) || !clean(value) || name.find(':') != std::string::npos)
            return Error{ErrorCode::Invalid, "header " + name + ": a line break or a colon in it"};
        out += name + ": " + value + "\r\n";
    }
    if (!req.body.empty() || req.method == "POST" || req.method == "PUT" || req.method == "PATCH")
        out += "Content-Length: " + std::to_string(req.body.size()) + "\r\n";
    if (req.fresh_connection) out += "Connection: close\r\n";
    out += "\r\n";
    out += req.body;
    Impl::init_settings(t->settings);

    Impl::Transfer& tr = *t;
    m.transfers.emplace(tr.id, std::move(t));
    tr.timer = new uv_timer_t;
    uv_timer_init(m.loop, tr.timer);
    tr.timer->data = &tr;
    tr.deadline = uv_now(m.loop) + static_cast<std::uint64_t>(tr.timeout_ms);
    uv_timer_start(tr.timer, &Impl::on_timer, static_cast<std::uint64_t>(tr.timeout_ms), 0);
    const RequestId id = tr.id;
    // Never calls back from here: the pool's connection, the resolver or
    // the timer answers from the loop.
    tr.in_request = true;
    auto s = m.start_connection(tr, true);
    tr.in_request = false;
    if (!s.ok()) {
        tr.cb = nullptr;
        m.destroy(tr);
        return s.error();
    }
    return id;
}

void ApiHttpClient::cancel(RequestId id) {
    auto it = impl_->transfers.find(id);
    if (it != impl_->transfers.end()) impl_->destroy(*it->second);
}

void ApiHttpClient::close() {
    Impl& m = *impl_;
    if (m.closed) return;
    m.closed = true;
    std::vector<Impl::Transfer*> all;
    for (auto& [id, t] : m.transfers) all.push_back(t.get());
    for (auto* t : all) m.destroy(*t);
    for (auto& [key, q] : m.idle)
        for (auto* c : q) Connection::close(c);
    m.idle.clear();
    const std::set<Impl::Conn*> h2 = m.h2_conns;
    for (auto* c : h2) m.drop_h2(c);
}

}  // namespace daemonlet::platform
