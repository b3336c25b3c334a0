// libcurl's multi socket interface on libuv, the shape of curl's
// docs/examples/multi-uv.c: curl says which sockets to watch
// (CURLMOPT_SOCKETFUNCTION) and when to time out (CURLMOPT_TIMERFUNCTION);
// libuv tells curl when a socket is ready or the timer fires
// (curl_multi_socket_action); finished transfers are read from
// curl_multi_info_read and called back.
#include "platform/http/http_client.h"

#include "core/strings.h"
#include "core/wall_clock.h"
#include "platform/http/curl_api.h"
#include "platform/netns.h"
#include "platform/system_info.h"

#include <algorithm>
#include <cctype>

namespace daemonlet::platform {

namespace {

// libcurl, once loaded (curl_api.h): the first request loads it.
const CurlApi* curl = nullptr;

struct Poll {
    uv_poll_t handle;
    curl_socket_t fd;
    HttpClient::Impl* impl;
};

void close_poll(Poll* p) {
    uv_close(reinterpret_cast<uv_handle_t*>(&p->handle),
             [](uv_handle_t* h) { delete static_cast<Poll*>(h->data); });
}

}  // namespace

struct HttpClient::Impl {
    struct Transfer {
        RequestId id = 0;
        CURL* easy = nullptr;
        curl_slist* headers = nullptr;
        Callback cb;
        HttpResponse resp;
        std::size_t max_body = 0;
        bool truncate = false;
        bool overflow = false;
        bool stopped = false;  // on_data said stop
        std::function<bool(long, std::string_view)> on_data;
        std::string body_in;  // kept alive for CURLOPT_POSTFIELDS
        std::string netns;
        std::string netns_error;  // why no socket could be made in netns
        char error[CURL_ERROR_SIZE] = {};
    };

    uv_loop_t* loop;
    CURLM* multi = nullptr;
    uv_timer_t* timer = nullptr;
    bool closed = false;
    RequestId next_id = 1;
    std::map<RequestId, std::unique_ptr<Transfer>> transfers;

    explicit Impl(uv_loop_t* l) : loop(l) {}

    // libcurl (and the TLS library under it) is initialised on the first
    // request, not before: an agent whose pods have no httpGet probe never
    // pays for it (OpenSSL's initialisation alone is megabytes of RSS).
    Status start() {
        if (multi) return Ok{};
        auto api = curl_api();
        if (!api.ok()) return api.error();
        curl = api.value();
        multi = curl->multi_init();
        if (!multi) return Error{ErrorCode::Http, "curl_multi_init failed"};
        timer = new uv_timer_t;
        uv_timer_init(loop, timer);
        timer->data = this;
        curl->multi_setopt(multi, CURLMOPT_SOCKETFUNCTION, &Impl::on_socket);
        curl->multi_setopt(multi, CURLMOPT_SOCKETDATA, this);
        curl->multi_setopt(multi, CURLMOPT_TIMERFUNCTION, &Impl::on_timer_request);
        curl->multi_setopt(multi, CURLMOPT_TIMERDATA, this);
        return Ok{};
    }

    // curl: watch (or stop watching) this socket.
    static int on_socket(CURL*, curl_socket_t fd, int what, void* userp, void* socketp) {
        auto* self = static_cast<Impl*>(userp);
        auto* p = static_cast<Poll*>(socketp);
        if (what == CURL_POLL_REMOVE) {
            if (p) {
                if (!self->closed) curl->multi_assign(self->multi, fd, nullptr);
                close_poll(p);
            }
            return 0;
        }
        if (self->closed) return 0;
        if (!p) {
            p = new Poll{{}, fd, self};
            if (uv_poll_init_socket(self->loop, &p->handle, fd) != 0) {
                delete p;
                return -1;
            }
            p->handle.data = p;
            curl->multi_assign(self->multi, fd, p);
        }
        int events = 0;
        if (what == CURL_POLL_IN || what == CURL_POLL_INOUT) events |= UV_READABLE;
        if (what == CURL_POLL_OUT || what == CURL_POLL_INOUT) events |= UV_WRITABLE;
        uv_poll_start(&p->handle, events, [](uv_poll_t* h, int status, int ev) {
            auto* poll = static_cast<Poll*>(h->data);
            int flags = 0;
            if (status < 0) flags = CURL_CSELECT_ERR;
            if (ev & UV_READABLE) flags |= CURL_CSELECT_IN;
            if (ev & UV_WRITABLE) flags |= CURL_CSELECT_OUT;
            poll->impl->action(poll->fd, flags);
        });
        return 0;
    }

    // curl: call me back in timeout_ms (-1: never).
    static int on_timer_request(CURLM*, long timeout_ms, void* userp) {
        auto* self = static_cast<Impl*>(userp);
        if (self->closed) return 0;
        if (timeout_ms < 0) {
            uv_timer_stop(self->timer);
            return 0;
        }
        uv_timer_start(
            self->timer, [](uv_timer_t* t) { static_cast<Impl*>(t->data)->action(CURL_SOCKET_TIMEOUT, 0); },
            static_cast<std::uint64_t>(timeout_ms), 0);
        return 0;
    }

    void action(curl_socket_t fd, int flags) {
        int running = 0;
        curl->multi_socket_action(multi, fd, flags, &running);
        finish_done();
    }

    void finish_done() {
        int pending = 0;
        while (CURLMsg* msg = curl->multi_info_read(multi, &pending)) {
            if (msg->msg != CURLMSG_DONE) continue;
            Transfer* t = nullptr;
            curl->easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, &t);
            const CURLcode code = msg->data.result;
            Result<HttpResponse> out = Error{ErrorCode::Http, ""};
            if (t->stopped) {
                out = Error{ErrorCode::Stopped, "stopped by the receiver"};
            } else if (t->overflow) {
                out = Error{ErrorCode::TooLarge,
                            "response body larger than " + std::to_string(t->max_body) + " bytes"};
            } else if (code != CURLE_OK) {
                std::string why = !t->netns_error.empty() ? t->netns_error
                                  : t->error[0]           ? t->error
                                                          : curl->easy_strerror(code);
                // A board whose clock is not set yet fails every certificate.
                if (code == CURLE_PEER_FAILED_VERIFICATION || code == CURLE_SSL_CERTPROBLEM)
                    why += tls_clock_hint(why, wall_clock_ms());
                out = Error{code == CURLE_OPERATION_TIMEDOUT ? ErrorCode::Timeout
                            : code == CURLE_COULDNT_CONNECT  ? ErrorCode::Refused
                                                             : ErrorCode::Http,
                            why};
            } else {
                curl->easy_getinfo(t->easy, CURLINFO_RESPONSE_CODE, &t->resp.status);
                char* redirect = nullptr;
                if (curl->easy_getinfo(t->easy, CURLINFO_REDIRECT_URL, &redirect) == CURLE_OK && redirect)
                    t->resp.redirect_url = redirect;
                out = std::move(t->resp);
            }
            Callback cb = std::move(t->cb);
            remove(t->id);
            cb(std::move(out));
            if (closed) return;
        }
    }

    void remove(RequestId id) {
        auto it = transfers.find(id);
        if (it == transfers.end()) return;
        Transfer* t = it->second.get();
        curl->multi_remove_handle(multi, t->easy);
        curl->easy_cleanup(t->easy);
        curl->slist_free_all(t->headers);
        transfers.erase(it);
    }

    // CURLOPT_OPENSOCKETFUNCTION of a request with a netns.
    static curl_socket_t open_socket(void* clientp, curlsocktype, curl_sockaddr* address) {
        auto* t = static_cast<Transfer*>(clientp);
        auto fd = socket_in_netns(t->netns, address->family, address->socktype, address->protocol);
        if (fd) return fd.value();
        t->netns_error = fd.error().message;
        return CURL_SOCKET_BAD;
    }

    static std::size_t on_body(char* data, std::size_t size, std::size_t n, void* userp) {
        auto* t = static_cast<Transfer*>(userp);
        const std::size_t len = size * n;
        if (t->on_data) {
            long status = 0;
            curl->easy_getinfo(t->easy, CURLINFO_RESPONSE_CODE, &status);
            if (t->on_data(status, std::string_view(data, len))) return len;
            t->stopped = true;
            return 0;  // aborts the transfer (CURLE_WRITE_ERROR)
        }
        const std::size_t room = t->max_body - std::min(t->max_body, t->resp.body.size());
        if (len > room) {
            if (!t->truncate) {
                t->overflow = true;
                return 0;  // aborts the transfer (CURLE_WRITE_ERROR)
            }
            t->resp.body.append(data, room);
            t->resp.body_truncated = true;
            return len;
        }
        t->resp.body.append(data, len);
        return len;
    }

    static std::size_t on_header(char* data, std::size_t size, std::size_t n, void* userp) {
        auto* t = static_cast<Transfer*>(userp);
        const std::size_t len = size * n;
        std::string line(data, len);
        if (line.rfind("HTTP/", 0) == 0) {
            t->resp.headers.clear();  // a new response (after 100 Continue)
        } else if (auto colon = line.find(':'); colon != std::string::npos) {
            if (t->resp.headers.size() < 200)
                t->resp.headers.emplace_back(trim(line.substr(0, colon)), trim(line.substr(colon + 1)));
        }
        return len;
    }
};

HttpClient::HttpClient(uv_loop_t* loop) : impl_(std::make_unique<Impl>(loop)) {}

HttpClient::~HttpClient() { close(); }

Result<HttpClient::RequestId> HttpClient::request(const HttpRequest& req, Callback cb) {
    Impl& m = *impl_;
    if (m.closed) return Error{ErrorCode::Closed, "HTTP client is closed"};
    if (req.url.rfind("http://", 0) != 0 && req.url.rfind("https://", 0) != 0)
        return Error{ErrorCode::Invalid, "URL " + req.url + ": only http:// and https:// are supported"};
    if (auto s = m.start(); !s.ok()) return s.error();
    if (req.http2_prior_knowledge) {
        const curl_version_info_data* v = curl->version_info(CURLVERSION_NOW);
        if (!v || (v->features & CURL_VERSION_HTTP2) == 0)
            return Error{
                ErrorCode::Unsupported,
                std::string("libcurl ") + (v && v->version ? v->version : "") +
                    " is built without HTTP/2 (nghttp2): install a libcurl4 with HTTP/2 for grpc probes"};
    }
    auto t = std::make_unique<Impl::Transfer>();
    t->id = m.next_id++;
    t->cb = std::move(cb);
    t->max_body = req.max_body_bytes;
    t->truncate = req.truncate_body;
    t->body_in = req.body;
    t->on_data = req.on_data;
    CURL* e = curl->easy_init();
    if (!e) return Error{ErrorCode::Http, "curl_easy_init failed"};
    t->easy = e;
    curl->easy_setopt(e, CURLOPT_URL, req.url.c_str());
    curl->easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
    curl->easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl->easy_setopt(e, CURLOPT_PRIVATE, t.get());
    curl->easy_setopt(e, CURLOPT_ERRORBUFFER, t->error);
    curl->easy_setopt(e, CURLOPT_WRITEFUNCTION, &Impl::on_body);
    curl->easy_setopt(e, CURLOPT_WRITEDATA, t.get());
    curl->easy_setopt(e, CURLOPT_HEADERFUNCTION, &Impl::on_header);
    curl->easy_setopt(e, CURLOPT_HEADERDATA, t.get());
    curl->easy_setopt(e, CURLOPT_TIMEOUT_MS, static_cast<long>(std::max<std::int64_t>(1, req.timeout_ms)));
    curl->easy_setopt(e, CURLOPT_FOLLOWLOCATION, 0L);
    // HTTP/2 when the server offers it over TLS (ALPN), HTTP/1.1 otherwise:
    // a board's watches then share one connection.
    curl->easy_setopt(e, CURLOPT_HTTP_VERSION,
                      static_cast<long>(req.http2_prior_knowledge ? CURL_HTTP_VERSION_2_PRIOR_KNOWLEDGE
                                                                  : CURL_HTTP_VERSION_2TLS));
    if (req.http2_multiplex) curl->easy_setopt(e, CURLOPT_PIPEWAIT, 1L);
    if (!req.use_env_proxy) curl->easy_setopt(e, CURLOPT_NOPROXY, "*");
    if (!req.netns.empty()) {
        t->netns = req.netns;
        curl->easy_setopt(e, CURLOPT_OPENSOCKETFUNCTION, &Impl::open_socket);
        curl->easy_setopt(e, CURLOPT_OPENSOCKETDATA, t.get());
    }
    if (req.fresh_connection) {
        curl->easy_setopt(e, CURLOPT_FRESH_CONNECT, 1L);
        curl->easy_setopt(e, CURLOPT_FORBID_REUSE, 1L);
    }
    if (req.method == "HEAD") {
        curl->easy_setopt(e, CURLOPT_NOBODY, 1L);
    } else if (req.method != "GET") {
        curl->easy_setopt(e, CURLOPT_CUSTOMREQUEST, req.method.c_str());
    }
    if (!req.body.empty() || req.method == "POST" || req.method == "PUT" || req.method == "PATCH") {
        curl->easy_setopt(e, CURLOPT_POSTFIELDS, t->body_in.data());
        curl->easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(t->body_in.size()));
    }
    for (const auto& [name, value] : req.headers) {
        // "Name:" with nothing after it removes a header curl would add;
        // "Name;" sends it empty.
        std::string line = value.empty() ? name + ";" : name + ": " + value;
        t->headers = curl->slist_append(t->headers, line.c_str());
    }
    if (t->headers) curl->easy_setopt(e, CURLOPT_HTTPHEADER, t->headers);
    curl->easy_setopt(e, CURLOPT_SSL_VERIFYPEER, req.tls.verify ? 1L : 0L);
    curl->easy_setopt(e, CURLOPT_SSL_VERIFYHOST, req.tls.verify ? 2L : 0L);
    if (!req.tls.ca_file.empty()) curl->easy_setopt(e, CURLOPT_CAINFO, req.tls.ca_file.c_str());
    if (!req.tls.cert_file.empty()) curl->easy_setopt(e, CURLOPT_SSLCERT, req.tls.cert_file.c_str());
    if (!req.tls.key_file.empty()) curl->easy_setopt(e, CURLOPT_SSLKEY, req.tls.key_file.c_str());
    // PEM bytes: curl copies a blob when CURL_BLOB_COPY is set.
    auto blob = [&](CURLoption opt, const std::string& pem) {
        if (pem.empty()) return;
        curl_blob b{const_cast<char*>(pem.data()), pem.size(), CURL_BLOB_COPY};
        curl->easy_setopt(e, opt, &b);
    };
    blob(CURLOPT_CAINFO_BLOB, req.tls.ca_pem);
    blob(CURLOPT_SSLCERT_BLOB, req.tls.cert_pem);
    blob(CURLOPT_SSLKEY_BLOB, req.tls.key_pem);
    if (!req.tls.cert_pem.empty()) curl->easy_setopt(e, CURLOPT_SSLCERTTYPE, "PEM");
    if (!req.tls.key_pem.empty()) curl->easy_setopt(e, CURLOPT_SSLKEYTYPE, "PEM");

    const RequestId id = t->id;
    Impl::Transfer* raw = t.get();
    m.transfers.emplace(id, std::move(t));
    if (CURLMcode mc = curl->multi_add_handle(m.multi, raw->easy); mc != CURLM_OK) {
        std::string why = curl->multi_strerror(mc);
        raw->cb = nullptr;
        m.remove(id);
        return Error{ErrorCode::Http, "cannot start request to " + req.url + ": " + why};
    }
    return id;
}

void HttpClient::cancel(RequestId id) {
    if (!impl_->closed) impl_->remove(id);
}

void HttpClient::close() {
    Impl& m = *impl_;
    if (m.closed) return;
    // Removing the transfers makes curl report their sockets as removed,
    // which closes the polls; then nothing of curl's is left to watch.
    std::vector<RequestId> ids;
    for (const auto& [id, t] : m.transfers) ids.push_back(id);
    for (RequestId id : ids) m.remove(id);
    m.closed = true;
    if (!m.multi) return;  // never started
    curl->multi_cleanup(m.multi);
    m.multi = nullptr;
    uv_close(reinterpret_cast<uv_handle_t*>(m.timer),
             [](uv_handle_t* h) { delete reinterpret_cast<uv_timer_t*>(h); });
    m.timer = nullptr;
}

}  // namespace daemonlet::platform
