// The HTTP/1.1 exchange of the API server client (api_client_impl.h): the
// request's bytes written, the response read and fed to llhttp until the
// message completes; the connection then goes back to the pool when both
// sides keep it alive.
#include <llhttp.h>

#include <algorithm>

#include "platform/http/api_client_impl.h"

namespace daemonlet::platform {

namespace {

using Transfer = ApiHttpClient::Impl::Transfer;

std::string reason(const llhttp_t& p) {
    const char* r = llhttp_get_error_reason(&p);
    return r ? r : "";
}

Transfer& of(llhttp_t* p) { return *static_cast<Transfer*>(p->data); }

}  // namespace

// Writes what is left of the request, then reads the response.
void ApiHttpClient::Impl::h1_exchange(Transfer& t) {
    Conn* c = t.conn;
    if (t.phase == Phase::Sending) {
        while (t.sent < t.out.size()) {
            const auto* data = reinterpret_cast<const unsigned char*>(t.out.data()) + t.sent;
            const std::size_t left = t.out.size() - t.sent;
            const int n = c->send(data, left);
            if (n == Conn::kWantWrite) return c->watch(UV_WRITABLE);
            if (n == Conn::kWantRead) return c->watch(UV_READABLE);
            if (n < 0) return broken(t, "sending to " + t.url.host_header + ": " + c->io_error(n));
            t.sent += static_cast<std::size_t>(n);
        }
        t.phase = Phase::Receiving;
        c->watch(UV_READABLE);
    }
    if (t.phase == Phase::Receiving) receive(t);
}

void ApiHttpClient::Impl::receive(Transfer& t) {
    Conn* c = t.conn;
    unsigned char buf[16 * 1024];
    for (std::size_t taken = 0;; taken += sizeof buf) {
        if (c->yield_read(taken)) return c->watch(UV_READABLE);
        const int n = c->recv(buf, sizeof buf);
        if (n == Conn::kWantRead) return c->watch(UV_READABLE);
        if (n == Conn::kWantWrite) return c->watch(UV_WRITABLE);
        if (n < 0) return broken(t, "receiving from " + t.url.host_header + ": " + c->io_error(n));
        llhttp_errno_t e;
        ++t.busy;
        if (n == 0) {
            e = llhttp_finish(&t.parser);
        } else {
            t.got_bytes = true;
            e = llhttp_execute(&t.parser, reinterpret_cast<const char*>(buf), static_cast<std::size_t>(n));
        }
        --t.busy;
        if (t.dead) return destroy(t);
        if (t.failure) return fail(t, *t.failure);
        if (t.complete) {
            // Bytes after the response: not a connection to reuse.
            const bool rest = n > 0 && e == HPE_PAUSED &&
                              llhttp_get_error_pos(&t.parser) != reinterpret_cast<const char*>(buf) + n;
            return done(t, n > 0 && t.keep_alive && !rest);
        }
        if (n == 0) {
            if (!t.got_bytes)
                return broken(t, "the connection to " + t.url.host_header + " was closed before a response");
            return fail(t, Error{ErrorCode::Http, "the connection to " + t.url.host_header +
                                                      " was closed before the response was complete"});
        }
        if (e != HPE_OK)
            return fail(t, Error{ErrorCode::Http, "bad response from " + t.url.host_header + ": " +
                                                      llhttp_errno_name(e) + " " + reason(t.parser)});
    }
}

void ApiHttpClient::Impl::init_settings(llhttp_settings_t& s) {
    llhttp_settings_init(&s);
    s.on_header_field = [](llhttp_t* p, const char* at, std::size_t len) {
        Transfer& t = of(p);
        if (t.field.size() < 1024) t.field.append(at, std::min<std::size_t>(len, 1024));
        return count_header(t, len);
    };
    s.on_header_value = [](llhttp_t* p, const char* at, std::size_t len) {
        Transfer& t = of(p);
        t.value.append(at, len);
        return count_header(t, len);
    };
    s.on_header_value_complete = [](llhttp_t* p) {
        Transfer& t = of(p);
        if (t.resp.headers.size() < kMaxHeaders) t.resp.headers.emplace_back(t.field, t.value);
        t.field.clear();
        t.value.clear();
        return 0;
    };
    s.on_headers_complete = [](llhttp_t* p) {
        Transfer& t = of(p);
        t.resp.status = p->status_code;
        return t.head ? 1 : 0;  // 1: no body follows
    };
    s.on_body = [](llhttp_t* p, const char* at, std::size_t len) { return body_bytes(of(p), at, len); };
    s.on_message_complete = [](llhttp_t* p) {
        Transfer& t = of(p);
        if (p->status_code < 200) {  // 1xx: the response follows
            t.resp.headers.clear();
            return 0;
        }
        t.complete = true;
        t.keep_alive = llhttp_should_keep_alive(p) != 0;
        return static_cast<int>(HPE_PAUSED);
    };
}

}  // namespace daemonlet::platform
