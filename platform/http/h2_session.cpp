#include "platform/http/h2_session.h"

#include <algorithm>
#include <cctype>
#include <cstring>

#include "platform/http/nghttp2_api.h"

namespace daemonlet::platform {

namespace {

const Nghttp2Api* ng = nullptr;  // once loaded

// The stream window: a list page (4 MiB at most, cluster_link's limit) in
// one go; the connection's holds a few.
constexpr std::int32_t kStreamWindow = 4 * 1024 * 1024;
constexpr std::int32_t kConnectionWindow = 16 * 1024 * 1024;

}  // namespace

struct H2Session::Impl {
    Callbacks cb;
    nghttp2_session* session = nullptr;
    // Request bodies, until sent.
    struct Body {
        std::string bytes;
        std::size_t sent = 0;
    };
    std::map<std::int32_t, Body> bodies;

    static Impl& of(void* p) { return *static_cast<Impl*>(p); }

    static ssize_t read_body(nghttp2_session*, std::int32_t stream, std::uint8_t* buf, std::size_t len,
                             std::uint32_t* flags, nghttp2_data_source*, void* user) {
        Impl& m = of(user);
        auto it = m.bodies.find(stream);
        if (it == m.bodies.end()) {
            *flags |= NGHTTP2_DATA_FLAG_EOF;
            return 0;
        }
        Body& b = it->second;
        const std::size_t n = std::min(len, b.bytes.size() - b.sent);
        std::memcpy(buf, b.bytes.data() + b.sent, n);
        b.sent += n;
        if (b.sent == b.bytes.size()) {
            *flags |= NGHTTP2_DATA_FLAG_EOF;
            m.bodies.erase(it);
        }
        return static_cast<ssize_t>(n);
    }
};

H2Session::H2Session(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

H2Session::~H2Session() {
    if (impl_->session) ng->session_del(impl_->session);
}

Result<std::unique_ptr<H2Session>> H2Session::create(Callbacks cb) {
    auto api = nghttp2_api();
    if (!api.ok()) return api.error();
    ng = api.value();
    auto impl = std::make_unique<Impl>();
    impl->cb = std::move(cb);
    nghttp2_session_callbacks* cbs = nullptr;
    if (int r = ng->session_callbacks_new(&cbs); r != 0)
        return Error{ErrorCode::Http, std::string("HTTP/2: ") + ng->strerror(r)};
    ng->session_callbacks_set_on_header_callback(
        cbs, [](nghttp2_session*, const nghttp2_frame* f, const std::uint8_t* name, std::size_t namelen,
                const std::uint8_t* value, std::size_t valuelen, std::uint8_t, void* user) {
            Impl& m = Impl::of(user);
            if (f->hd.type == NGHTTP2_HEADERS && m.cb.on_header)
                m.cb.on_header(f->hd.stream_id, {reinterpret_cast<const char*>(name), namelen},
                               {reinterpret_cast<const char*>(value), valuelen});
            return 0;
        });
    ng->session_callbacks_set_on_frame_recv_callback(
        cbs, [](nghttp2_session*, const nghttp2_frame* f, void* user) {
            Impl& m = Impl::of(user);
            if (f->hd.type == NGHTTP2_HEADERS && m.cb.on_headers_end) m.cb.on_headers_end(f->hd.stream_id);
            if (f->hd.type == NGHTTP2_GOAWAY && m.cb.on_goaway)
                m.cb.on_goaway(f->goaway.last_stream_id, f->goaway.error_code);
            return 0;
        });
    ng->session_callbacks_set_on_data_chunk_recv_callback(
        cbs, [](nghttp2_session*, std::uint8_t, std::int32_t stream, const std::uint8_t* data,
                std::size_t len, void* user) {
            Impl& m = Impl::of(user);
            if (m.cb.on_data) m.cb.on_data(stream, {reinterpret_cast<const char*>(data), len});
            return 0;
        });
    ng->session_callbacks_set_on_stream_close_callback(
        cbs, [](nghttp2_session*, std::int32_t stream, std::uint32_t code, void* user) {
            Impl& m = Impl::of(user);
            m.bodies.erase(stream);
            if (m.cb.on_close) m.cb.on_close(stream, code);
            return 0;
        });
    const int r = ng->session_client_new(&impl->session, cbs, impl.get());
    ng->session_callbacks_del(cbs);
    if (r != 0) return Error{ErrorCode::Http, std::string("HTTP/2: ") + ng->strerror(r)};
    std::unique_ptr<H2Session> s(new H2Session(std::move(impl)));
    const nghttp2_settings_entry settings[] = {
        {NGHTTP2_SETTINGS_ENABLE_PUSH, 0},
        {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, static_cast<std::uint32_t>(kStreamWindow)},
    };
    nghttp2_session* ses = s->impl_->session;
    if (int e = ng->submit_settings(ses, NGHTTP2_FLAG_NONE, settings, std::size(settings)); e != 0)
        return Error{ErrorCode::Http, std::string("HTTP/2 settings: ") + ng->strerror(e)};
    if (int e = ng->session_set_local_window_size(ses, NGHTTP2_FLAG_NONE, 0, kConnectionWindow); e != 0)
        return Error{ErrorCode::Http, std::string("HTTP/2 window: ") + ng->strerror(e)};
    return s;
}

Result<std::int32_t> H2Session::submit(const std::string& method, const std::string& authority,
                                       const std::string& path,
                                       const std::vector<std::pair<std::string, std::string>>& headers,
                                       std::string body) {
    std::vector<std::pair<std::string, std::string>> all = {
        {":method", method}, {":scheme", "https"}, {":authority", authority}, {":path", path}};
    for (const auto& [name, value] : headers) {
        std::string lower = name;
        std::transform(lower.begin(), lower.end(), lower.begin(),
                       [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
        all.emplace_back(std::move(lower), value);
    }
    const bool has_body = !body.empty() || method == "POST" || method == "PUT" || method == "PATCH";
    if (has_body) all.emplace_back("content-length", std::to_string(body.size()));
    std::vector<nghttp2_nv> nva;
    nva.reserve(all.size());
    for (auto& [name, value] : all)
        nva.push_back({reinterpret_cast<std::uint8_t*>(name.data()),
                       reinterpret_cast<std::uint8_t*>(value.data()), name.size(), value.size(),
                       NGHTTP2_NV_FLAG_NONE});
    nghttp2_data_provider provider{};
    provider.read_callback = &Impl::read_body;
    const std::int32_t id = ng->submit_request(impl_->session, nullptr, nva.data(), nva.size(),
                                               body.empty() ? nullptr : &provider, nullptr);
    if (id < 0) return Error{ErrorCode::Http, std::string("HTTP/2 request: ") + ng->strerror(id)};
    if (!body.empty()) impl_->bodies[id] = Impl::Body{std::move(body), 0};
    return id;
}

void H2Session::reset(std::int32_t stream, std::uint32_t error_code) {
    impl_->bodies.erase(stream);
    ng->submit_rst_stream(impl_->session, NGHTTP2_FLAG_NONE, stream, error_code);
}

Status H2Session::receive(const unsigned char* data, std::size_t len) {
    const ssize_t n = ng->session_mem_recv(impl_->session, data, len);
    if (n < 0) return Error{ErrorCode::Http, std::string("HTTP/2: ") + ng->strerror(static_cast<int>(n))};
    return Ok{};
}

Status H2Session::take_output(std::string& out) {
    for (;;) {
        const std::uint8_t* data = nullptr;
        const ssize_t n = ng->session_mem_send(impl_->session, &data);
        if (n < 0) return Error{ErrorCode::Http, std::string("HTTP/2: ") + ng->strerror(static_cast<int>(n))};
        if (n == 0) return Ok{};
        out.append(reinterpret_cast<const char*>(data), static_cast<std::size_t>(n));
    }
}

bool H2Session::alive() const {
    return ng->session_want_read(impl_->session) != 0 || ng->session_want_write(impl_->session) != 0;
}

std::string H2Session::error_name(std::uint32_t code) {
    return ng ? ng->http2_strerror(code) : std::to_string(code);
}

}  // namespace daemonlet::platform
