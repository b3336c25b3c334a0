// The HTTP/2 glue of the API server client (api_client_impl.h): a
// connection whose handshake chose h2 becomes its origin's shared one, each
// transfer a stream of it (h2_session.h frames them); a GOAWAY or a broken
// connection fails its streams, and retries those the server did not
// process.
#include <cstdlib>

#include "platform/http/api_client_impl.h"
#include "platform/http/nghttp2_api.h"

namespace daemonlet::platform {

// The handshake chose h2: the connection becomes the origin's shared
// one and the transfer its first stream.
void ApiHttpClient::Impl::start_h2(Transfer& t, Conn* c) {
    H2Session::Callbacks cb;
    auto stream = [c](std::int32_t id) -> Transfer* {
        auto it = c->streams.find(id);
        return it == c->streams.end() || it->second->failure ? nullptr : it->second;
    };
    cb.on_header = [stream](std::int32_t id, std::string_view name, std::string_view value) {
        Transfer* tr = stream(id);
        if (!tr) return;
        tr->got_bytes = true;
        if (count_header(*tr, name.size() + value.size()) != 0) return;
        if (name == ":status")
            tr->resp.status = std::atoi(std::string(value).c_str());
        else if (tr->resp.headers.size() < kMaxHeaders)
            tr->resp.headers.emplace_back(name, value);
    };
    cb.on_headers_end = [stream](std::int32_t id) {
        Transfer* tr = stream(id);
        if (tr && tr->resp.status >= 100 && tr->resp.status < 200) tr->resp.headers.clear();  // 1xx
    };
    cb.on_data = [this, stream](std::int32_t id, std::string_view data) {
        Transfer* tr = stream(id);
        if (!tr) return;
        tr->got_bytes = true;
        if (body_bytes(*tr, data.data(), data.size()) == 0) return;
        if (tr->dead) destroy(*tr);  // else tr->failure: h2_sweep resets and fails it
    };
    cb.on_close = [c](std::int32_t id, std::uint32_t code) {
        auto it = c->streams.find(id);
        if (it == c->streams.end()) return;
        it->second->h2_closed = true;
        it->second->h2_code = code;
    };
    cb.on_goaway = [self = this, c](std::int32_t last, std::uint32_t) {
        c->goaway = true;
        c->last_stream = last;
        self->unlive(c);
    };
    auto session = H2Session::create(std::move(cb));
    if (!session.ok() && !nghttp2_api().ok()) {
        // No libnghttp2 (loaded only when a server takes h2): once more
        // on a new connection offering http/1.1 only, and so from now on.
        no_h2 = true;
        release_waiters(t);
        Connection::close(std::exchange(t.conn, nullptr));
        if (auto s = start_connection(t, false); !s.ok()) fail(t, s.error());
        return;
    }
    if (!session.ok()) return fail(t, session.error());
    c->h2 = std::move(session).value();
    h1_origins.erase(c->key);
    c->owner = nullptr;
    h2_live[c->key] = c;
    h2_conns.insert(c);
    release_waiters(t);
    t.conn = nullptr;
    attach(t, *c, false);
}

// Sends the transfer as a stream of `c`; h2_io writes it.
void ApiHttpClient::Impl::attach(Transfer& t, Conn& c, bool reused) {
    auto id = c.h2->submit(t.method, t.url.host_header, t.url.target, t.h2_headers, t.body);
    if (!id.ok()) {  // from the loop, by the timer
        t.failure = id.error();
        uv_timer_start(t.timer, &Impl::on_timer, 0, 0);
        return;
    }
    t.stream = id.value();
    t.conn = &c;
    t.h2_reused = reused;
    t.phase = Phase::H2;
    c.streams[t.stream] = &t;
    c.kick = true;
    if (!c.busy) c.watch(UV_READABLE | UV_WRITABLE);
}

// The transfers that waited for this one's connection try again.
void ApiHttpClient::Impl::release_waiters(Transfer& t) {
    auto p = h2_pending.find(t.key);
    if (p == h2_pending.end() || p->second != t.id) return;
    h2_pending.erase(p);
    for (auto& [id, w] : transfers)
        if (w->waiting && w->key == t.key) {
            w->waiting = false;
            w->resume = true;
            uv_timer_start(w->timer, &Impl::on_timer, 0, 0);
        }
}

// The stream leaves its connection.
void ApiHttpClient::Impl::detach(Transfer& t) {
    t.conn->streams.erase(t.stream);
    t.conn = nullptr;
}

// A stream the server did not process (refused, above GOAWAY's last
// stream, or the shared connection broke before any byte of it): once
// more on another connection.
bool ApiHttpClient::Impl::retry_h2(Transfer& t, bool unprocessed) {
    if (t.got_bytes || t.retried || !unprocessed) return false;
    t.retried = true;
    detach(t);
    if (auto s = start_connection(t, true); !s.ok()) fail(t, s.error());
    return true;
}

// The connection is readable or writable: feed nghttp2, write what it
// has, then end the streams that ended.
void ApiHttpClient::Impl::h2_io(Conn* c) {
    unsigned char buf[16 * 1024];
    std::optional<std::string> broke;
    bool want_write = false;
    ++c->busy;
    for (std::size_t taken = 0; !c->dead && !c->yield_read(taken);) {
        const int n = c->recv(buf, sizeof buf);
        if (n == Conn::kWantRead) break;
        if (n == Conn::kWantWrite) {
            want_write = true;
            break;
        }
        if (n == 0) {
            broke = "the connection was closed";
            break;
        }
        if (n < 0) {
            broke = "receiving: " + c->io_error(n);
            break;
        }
        taken += static_cast<std::size_t>(n);
        if (auto s = c->h2->receive(buf, static_cast<std::size_t>(n)); !s.ok()) {
            broke = s.error().message;
            break;
        }
    }
    if (broke) unlive(c);
    h2_sweep(c, broke);
    if (!c->dead && !broke) {
        c->kick = false;
        // More frames only once the last ones are written: TLS wants a
        // send it answered kWantWrite retried with the same bytes, and
        // nghttp2 keeps what is not taken (its flood limits count it).
        if (c->h2_sent == c->h2_out.size()) {
            c->h2_out.clear();
            c->h2_sent = 0;
            if (auto s = c->h2->take_output(c->h2_out); !s.ok()) broke = s.error().message;
        }
        while (!broke && c->h2_sent < c->h2_out.size()) {
            const int n = c->send(reinterpret_cast<const unsigned char*>(c->h2_out.data()) + c->h2_sent,
                                  c->h2_out.size() - c->h2_sent);
            if (n == Conn::kWantWrite || n == Conn::kWantRead) {
                want_write = true;
                break;
            }
            if (n < 0)
                broke = "sending: " + c->io_error(n);
            else
                c->h2_sent += static_cast<std::size_t>(n);
        }
        // nghttp2 ended the session itself (the server broke the
        // protocol: its GOAWAY is sent, the input ignored): the streams
        // left would wait for their timeouts.
        if (!broke && !c->h2->alive()) broke = std::string("the HTTP/2 session ended");
        if (broke) unlive(c);
        // Taking the output can close streams too (refused, or a
        // response complete once the request's last DATA went).
        h2_sweep(c, broke);
    }
    --c->busy;
    if (c->dead || broke || (c->streams.empty() && (c->goaway || !c->h2->alive()))) return drop_h2(c);
    const bool write = want_write || c->kick || c->h2_sent < c->h2_out.size();
    c->watch(UV_READABLE | (write ? UV_WRITABLE : 0));
}

void ApiHttpClient::Impl::unlive(Conn* c) {
    if (auto it = h2_live.find(c->key); it != h2_live.end() && it->second == c) h2_live.erase(it);
}

// The streams that ended, failed, were refused or lost their connection.
void ApiHttpClient::Impl::h2_sweep(Conn* c, const std::optional<std::string>& broke) {
    std::vector<std::int32_t> ids;
    for (const auto& [id, t] : c->streams) ids.push_back(id);
    for (std::int32_t id : ids) {
        auto it = c->streams.find(id);
        if (it == c->streams.end()) continue;
        Transfer& t = *it->second;
        if (t.failure) {
            if (!t.h2_closed) c->h2->reset(t.stream, H2Session::kCancel);
            t.h2_closed = true;
            detach(t);
            fail(t, *t.failure);
        } else if (t.h2_closed && t.h2_code == 0 && t.resp.status >= 200) {
            detach(t);
            finish(t, std::move(t.resp));
        } else if (t.h2_closed) {
            const bool unprocessed =
                t.h2_code == H2Session::kRefusedStream || (c->goaway && t.stream > c->last_stream);
            if (retry_h2(t, unprocessed)) continue;
            detach(t);
            fail(t, Error{ErrorCode::Http, "HTTP/2 stream to " + t.url.host_header +
                                               " reset: " + H2Session::error_name(t.h2_code)});
        } else if (broke) {
            t.h2_closed = true;
            // On a connection that was up, the server most likely closed
            // it before it saw the stream: not sure, so not a POST/PATCH.
            const bool unprocessed =
                (t.h2_reused && idempotent(t.method)) || (c->goaway && t.stream > c->last_stream);
            if (retry_h2(t, unprocessed)) continue;
            detach(t);
            fail(t, Error{ErrorCode::Http, "HTTP/2 connection to " + t.url.host_header + ": " + *broke});
        }
    }
}

// An h2 connection goes: after h2_io when inside it.
void ApiHttpClient::Impl::drop_h2(Conn* c) {
    unlive(c);
    if (c->busy) {
        c->dead = true;
        return;
    }
    h2_conns.erase(c);
    for (auto& [id, t] : c->streams) t->conn = nullptr;  // close(): none left
    Connection::close(c);
}

}  // namespace daemonlet::platform
