// One exchange: resolve (uv_getaddrinfo, on libuv's thread pool) or take an
// idle connection from the pool; connect a non-blocking socket watched by a
// uv_poll; the TLS handshake (mbed TLS over the socket, its WANT_READ /
// WANT_WRITE telling what to wait for); write the request; read and feed
// llhttp until the message completes; the connection then goes back to the
// pool when both sides keep it alive. One uv_timer per request bounds it.
#include "platform/http/api_http_client.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <llhttp.h>
#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <set>

#include "core/wall_clock.h"
#include "platform/http/h2_session.h"
#include "platform/http/mbedtls_api.h"
#include "platform/http/nghttp2_api.h"
#include "platform/system_info.h"

namespace daemonlet::platform {

namespace {

const MbedTlsApi* tls = nullptr;  // once loaded (mbedtls_api())

constexpr std::size_t kMaxHeaders = 200;
constexpr std::size_t kMaxHeaderBytes = 256 * 1024;  // the whole header block
constexpr std::size_t kIdlePerKey = 4;
// What one readable event reads from a socket before the loop runs again
// (its timers: the request's timeout, probes, the Lease); libuv's poll is
// level-triggered, so the rest is read on the next turn.
constexpr std::size_t kReadPerEvent = 256 * 1024;
constexpr const char* kSystemCa = "/etc/ssl/certs/ca-certificates.crt";

struct Url {
    bool https = false;
    std::string host;  // without brackets
    std::string port;
    std::string target;  // path and query, "/" at least
    std::string host_header;
};

Result<Url> parse_url(const std::string& url) {
    Url u;
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

// What connections with the same TLS settings share: the configuration,
// the CA chain, the client certificate and key (parsed once: the system
// bundle alone is ~150 certificates). mbed TLS keeps pointers into them, so
// they live as long as the client.
struct TlsConfig {
    mbedtls_ssl_config conf;
    mbedtls_x509_crt ca;
    mbedtls_x509_crt cert;
    mbedtls_pk_context key;
    TlsConfig() {
        tls->ssl_config_init(&conf);
        tls->x509_crt_init(&ca);
        tls->x509_crt_init(&cert);
        tls->pk_init(&key);
    }
    ~TlsConfig() {
        tls->ssl_config_free(&conf);
        tls->x509_crt_free(&ca);
        tls->x509_crt_free(&cert);
        tls->pk_free(&key);
    }
    TlsConfig(const TlsConfig&) = delete;
    TlsConfig& operator=(const TlsConfig&) = delete;
};

// The TLS state of one connection, over a shared TlsConfig.
struct Tls {
    mbedtls_ssl_context ssl;
    Tls() { tls->ssl_init(&ssl); }
    ~Tls() { tls->ssl_free(&ssl); }
    Tls(const Tls&) = delete;
    Tls& operator=(const Tls&) = delete;
};

// Does the certificate name this IP address (its iPAddress subject
// alternative names)? mbed TLS 2.28 matches DNS names only, and API servers
// are often addressed by IP (k3s: https://127.0.0.1:6443). Read from the
// certificate's raw extensions.
bool cert_names_ip(const mbedtls_x509_crt& crt, const std::string& ip) {
    unsigned char want[16];
    std::size_t want_len = 0;
    if (::inet_pton(AF_INET, ip.c_str(), want) == 1)
        want_len = 4;
    else if (::inet_pton(AF_INET6, ip.c_str(), want) == 1)
        want_len = 16;
    else
        return false;
    // v3_ext: [3] { SEQUENCE OF Extension { OID, BOOLEAN?, OCTET STRING } }
    unsigned char* p = crt.v3_ext.p;
    const unsigned char* end = p + crt.v3_ext.len;
    std::size_t len = 0;
    if (!p) return false;
    if (tls->asn1_get_tag(&p, end, &len, MBEDTLS_ASN1_CONTEXT_SPECIFIC | MBEDTLS_ASN1_CONSTRUCTED | 3) == 0)
        end = p + len;
    if (tls->asn1_get_tag(&p, end, &len, MBEDTLS_ASN1_CONSTRUCTED | MBEDTLS_ASN1_SEQUENCE) != 0) return false;
    while (p < end) {
        if (tls->asn1_get_tag(&p, end, &len, MBEDTLS_ASN1_CONSTRUCTED | MBEDTLS_ASN1_SEQUENCE) != 0)
            return false;
        const unsigned char* ext_end = p + len;
        std::size_t oid_len = 0;
        if (tls->asn1_get_tag(&p, ext_end, &oid_len, MBEDTLS_ASN1_OID) != 0) return false;
        static const unsigned char kSan[] = {0x55, 0x1d, 0x11};  // 2.5.29.17
        const bool san = oid_len == 3 && std::memcmp(p, kSan, 3) == 0;
        p += oid_len;
        if (!san) {
            p = const_cast<unsigned char*>(ext_end);
            continue;
        }
        if (tls->asn1_get_tag(&p, ext_end, &len, MBEDTLS_ASN1_BOOLEAN) == 0) p += len;
        if (tls->asn1_get_tag(&p, ext_end, &len, MBEDTLS_ASN1_OCTET_STRING) != 0) return false;
        if (tls->asn1_get_tag(&p, ext_end, &len, MBEDTLS_ASN1_CONSTRUCTED | MBEDTLS_ASN1_SEQUENCE) != 0)
            return false;
        const unsigned char* names_end = p + len;
        while (p < names_end && names_end - p >= 2) {
            const unsigned char tag = *p++;
            // Short or long form length.
            std::size_t n = *p++;
            if (n & 0x80) {
                const int bytes = n & 0x7f;
                if (bytes > 2 || names_end - p < bytes) return false;
                n = 0;
                for (int i = 0; i < bytes; ++i) n = (n << 8) | *p++;
            }
            if (static_cast<std::size_t>(names_end - p) < n) return false;
            if (tag == (MBEDTLS_ASN1_CONTEXT_SPECIFIC | MBEDTLS_X509_SAN_IP_ADDRESS) && n == want_len &&
                std::memcmp(p, want, n) == 0)
                return true;
            p += n;
        }
        return false;
    }
    return false;
}

bool is_ip_literal(const std::string& host) {
    unsigned char buf[16];
    return ::inet_pton(AF_INET, host.c_str(), buf) == 1 || ::inet_pton(AF_INET6, host.c_str(), buf) == 1;
}

// What mbed TLS's verification flags say, in the words OpenSSL (and so
// curl) uses for the two a wrong clock causes, which tls_clock_hint reads.
std::string verify_failure(std::uint32_t flags) {
    std::string why;
    if (flags & MBEDTLS_X509_BADCERT_FUTURE) why = "certificate is not yet valid";
    if (flags & MBEDTLS_X509_BADCERT_EXPIRED) why = "certificate has expired";
    char info[512];
    const int n = tls->x509_crt_verify_info(info, sizeof info, "", flags);
    std::string text = n > 0 ? std::string(info, static_cast<std::size_t>(n)) : std::string();
    for (char& c : text)
        if (c == '\n') c = ';';
    while (!text.empty() && (text.back() == ';' || text.back() == ' ')) text.pop_back();
    if (why.empty()) return text;
    return text.empty() ? why : why + " (" + text + ")";
}

}  // namespace

struct ApiHttpClient::Impl {
    struct Transfer;

    // A socket, its poll and, over https, its TLS state.
    struct Conn {
        Impl* impl = nullptr;
        std::string key;
        int fd = -1;
        uv_poll_t* poll = nullptr;
        std::unique_ptr<Tls> tls;
        Transfer* owner = nullptr;  // null: idle in the pool
        bool reused = false;
        int sys_errno = 0;  // the socket's, when bio_send/bio_recv failed
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
    };

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
        Url url;
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
    std::map<std::string, std::unique_ptr<TlsConfig>> tls_configs;
    std::uint64_t tls_configs_made = 0;
    bool rng_ready = false;
    mbedtls_entropy_context entropy{};
    mbedtls_ctr_drbg_context drbg{};

    std::shared_ptr<bool> alive = std::make_shared<bool>(true);

    explicit Impl(uv_loop_t* l) : loop(l) {}
    ~Impl() { *alive = false; }

    // --- connections ----------------------------------------------------

    static bool idempotent(const std::string& method) {
        return method == "GET" || method == "HEAD" || method == "PUT" || method == "DELETE" ||
               method == "OPTIONS";
    }

    static void close_conn(Conn* c) {
        if (!c) return;
        c->tls.reset();
        if (c->poll) {
            // The socket is closed once libuv has let go of it.
            c->poll->data = reinterpret_cast<void*>(static_cast<std::intptr_t>(c->fd));
            uv_close(reinterpret_cast<uv_handle_t*>(c->poll), [](uv_handle_t* h) {
                ::close(static_cast<int>(reinterpret_cast<std::intptr_t>(h->data)));
                delete reinterpret_cast<uv_poll_t*>(h);
            });
        } else if (c->fd >= 0) {
            ::close(c->fd);
        }
        delete c;
    }

    // Enough read for this turn of the loop? Not while mbed TLS holds
    // decrypted bytes (at most one record): the poll would not wake for them.
    static bool yield_read(const Conn& c, std::size_t taken) {
        return taken >= kReadPerEvent && !(c.tls && tls->ssl_get_bytes_avail(&c.tls->ssl) > 0);
    }

    static void watch(Conn* c, int events) {
        uv_poll_start(c->poll, events, [](uv_poll_t* h, int, int) {
            auto* conn = static_cast<Conn*>(h->data);
            conn->impl->on_event(conn);
        });
    }

    void drop_idle(Conn* c) {
        auto it = idle.find(c->key);
        if (it != idle.end()) {
            std::erase(it->second, c);
            if (it->second.empty()) idle.erase(it);
        }
        close_conn(c);
    }

    void on_event(Conn* c) {
        if (c->h2) return h2_io(c);
        // Idle: the server closed it, or sent what nobody asked for.
        if (!c->owner) return drop_idle(c);
        advance(*c->owner);
    }

    // mbed TLS's transport, over the non-blocking socket.
    static int bio_send(void* ctx, const unsigned char* buf, std::size_t len) {
        const ssize_t n = ::send(static_cast<Conn*>(ctx)->fd, buf, len, MSG_NOSIGNAL);
        if (n >= 0) return static_cast<int>(n);
        if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return MBEDTLS_ERR_SSL_WANT_WRITE;
        static_cast<Conn*>(ctx)->sys_errno = errno;
        return errno == EPIPE || errno == ECONNRESET ? MBEDTLS_ERR_NET_CONN_RESET
                                                     : MBEDTLS_ERR_NET_SEND_FAILED;
    }
    static int bio_recv(void* ctx, unsigned char* buf, std::size_t len) {
        const ssize_t n = ::recv(static_cast<Conn*>(ctx)->fd, buf, len, 0);
        if (n >= 0) return static_cast<int>(n);
        if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return MBEDTLS_ERR_SSL_WANT_READ;
        static_cast<Conn*>(ctx)->sys_errno = errno;
        return errno == ECONNRESET ? MBEDTLS_ERR_NET_CONN_RESET : MBEDTLS_ERR_NET_RECV_FAILED;
    }

    // Why sending or receiving failed: mbed TLS's words over TLS (the
    // library is not even loaded for http://), else the socket's errno.
    static std::string io_error(const Conn& c, int n) {
        if (c.tls) return mbedtls_error(*tls, n);
        return std::strerror(c.sys_errno ? c.sys_errno : EIO);
    }

    Status rng() {
        if (rng_ready) return Ok{};
        tls->entropy_init(&entropy);
        tls->ctr_drbg_init(&drbg);
        static const unsigned char kPers[] = "daemonlet";
        if (int r = tls->ctr_drbg_seed(&drbg, tls->entropy_func, &entropy, kPers, sizeof kPers - 1); r != 0)
            return Error{ErrorCode::Http, "TLS: seeding the random generator: " + mbedtls_error(*tls, r)};
        rng_ready = true;
        return Ok{};
    }

    // The shared configuration for the transfer's TLS settings: the CA, the
    // client certificate, ALPN; made on first use.
    Result<TlsConfig*> tls_config(const Transfer& t) {
        const bool alpn = !t.fresh && !no_h2;
        const std::string key = t.key + (alpn ? "|h2" : "|h1");
        if (auto it = tls_configs.find(key); it != tls_configs.end()) return it->second.get();
        if (auto s = rng(); !s.ok()) return s.error();
        auto made = std::make_unique<TlsConfig>();
        TlsConfig& s = *made;
        const HttpTls& o = t.tls_opts;
        auto err = [&](const std::string& what, int r) {
            return Error{ErrorCode::Http, "TLS: " + what + ": " + mbedtls_error(*tls, r)};
        };
        int r = tls->ssl_config_defaults(&s.conf, MBEDTLS_SSL_IS_CLIENT, MBEDTLS_SSL_TRANSPORT_STREAM,
                                         MBEDTLS_SSL_PRESET_DEFAULT);
        if (r != 0) return err("configuration", r);
        tls->ssl_conf_min_version(&s.conf, MBEDTLS_SSL_MAJOR_VERSION_3, MBEDTLS_SSL_MINOR_VERSION_3);
        tls->ssl_conf_rng(&s.conf, tls->ctr_drbg_random, &drbg);
        tls->ssl_conf_authmode(&s.conf, o.verify ? MBEDTLS_SSL_VERIFY_REQUIRED : MBEDTLS_SSL_VERIFY_NONE);
        if (o.verify) {
            // PEM bytes are parsed with their terminating NUL.
            const std::string ca_file = o.ca_file.empty() ? kSystemCa : o.ca_file;
            r = !o.ca_pem.empty()
                    ? tls->x509_crt_parse(&s.ca, reinterpret_cast<const unsigned char*>(o.ca_pem.c_str()),
                                          o.ca_pem.size() + 1)
                    : tls->x509_crt_parse_file(&s.ca, ca_file.c_str());
            if (r < 0) return err(o.ca_pem.empty() ? "CA " + ca_file : "CA (certificate-authority-data)", r);
            tls->ssl_conf_ca_chain(&s.conf, &s.ca, nullptr);
        }
        if (!o.cert_file.empty() || !o.cert_pem.empty()) {
            r = !o.cert_pem.empty()
                    ? tls->x509_crt_parse(&s.cert, reinterpret_cast<const unsigned char*>(o.cert_pem.c_str()),
                                          o.cert_pem.size() + 1)
                    : tls->x509_crt_parse_file(&s.cert, o.cert_file.c_str());
            if (r != 0) return err("client certificate " + o.cert_file, r);
            r = !o.key_pem.empty()
                    ? tls->pk_parse_key(&s.key, reinterpret_cast<const unsigned char*>(o.key_pem.c_str()),
                                        o.key_pem.size() + 1, nullptr, 0)
                    : tls->pk_parse_keyfile(&s.key, o.key_file.c_str(), nullptr);
            if (r != 0) return err("client key " + o.key_file, r);
            if ((r = tls->ssl_conf_own_cert(&s.conf, &s.cert, &s.key)) != 0)
                return err("client certificate", r);
        }
        // HTTP/2 when the server offers it (and nghttp2 is installed).
        static const char* kAlpn[] = {"h2", "http/1.1", nullptr};
        if (alpn && (r = tls->ssl_conf_alpn_protocols(&s.conf, kAlpn)) != 0) return err("ALPN", r);
        ++tls_configs_made;
        return tls_configs.emplace(key, std::move(made)).first->second.get();
    }

    // The TLS state of a new connection: the shared configuration, the
    // server's name.
    Status setup_tls(Transfer& t, Conn& c) {
        auto conf = tls_config(t);
        if (!conf.ok()) return conf.error();
        c.tls = std::make_unique<Tls>();
        auto err = [&](const std::string& what, int r) {
            return Error{ErrorCode::Http, "TLS: " + what + ": " + mbedtls_error(*tls, r)};
        };
        int r = tls->ssl_setup(&c.tls->ssl, &conf.value()->conf);
        if (r != 0) return err("setup", r);
        // SNI and the name check; an IP address is checked after the
        // handshake (cert_names_ip). For an address, no name said so: mbed
        // TLS 2.28.10+ refuses a handshake that never set one (the fix of
        // CVE-2025-27809).
        const bool ip = is_ip_literal(t.url.host);
        if ((r = tls->ssl_set_hostname(&c.tls->ssl, ip ? nullptr : t.url.host.c_str())) != 0)
            return err("host name", r);
        tls->ssl_set_bio(&c.tls->ssl, &c, &Impl::bio_send, &Impl::bio_recv, nullptr);
        return Ok{};
    }

    // --- the steps of a transfer --------------------------------------------

    // Takes an idle connection (its first event sends the request) or
    // starts resolving; fails only when the resolver cannot start.
    Status start_connection(Transfer& t, bool pooled) {
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
                char b;
                const ssize_t n = ::recv(c->fd, &b, 1, MSG_PEEK | MSG_DONTWAIT);
                if (!(n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))) {
                    close_conn(c);
                    continue;
                }
                c->owner = &t;
                c->reused = true;
                t.conn = c;
                t.phase = Phase::Sending;
                watch(c, UV_WRITABLE);
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
        if (int r =
                uv_getaddrinfo(loop, req, &Impl::on_resolved, t.url.host.c_str(), t.url.port.c_str(), &hints);
            r != 0) {
            delete t.resolving;
            t.resolving = nullptr;
            delete req;
            return Error{ErrorCode::Http, "resolving " + t.url.host + ": " + uv_strerror(r)};
        }
        return Ok{};
    }

    static void on_resolved(uv_getaddrinfo_t* req, int status, addrinfo* res) {
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

    void connect_next(Transfer& t) {
        while (t.next_addr) {
            addrinfo* a = t.next_addr;
            t.next_addr = a->ai_next;
            const int fd = ::socket(a->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
            if (fd < 0) {
                t.connect_errno = errno;
                continue;
            }
            if (::connect(fd, a->ai_addr, a->ai_addrlen) != 0 && errno != EINPROGRESS) {
                t.connect_errno = errno;
                ::close(fd);
                continue;
            }
            auto* c = new Conn;
            c->impl = this;
            c->key = t.key;
            c->fd = fd;
            c->poll = new uv_poll_t;
            c->owner = &t;
            if (uv_poll_init_socket(loop, c->poll, fd) != 0) {
                delete c->poll;
                c->poll = nullptr;
                close_conn(c);
                t.connect_errno = EBADF;
                continue;
            }
            c->poll->data = c;
            ++opened;
            t.conn = c;
            t.phase = Phase::Connecting;
            watch(c, UV_WRITABLE);
            return;
        }
        Error e{ErrorCode::Refused, "cannot connect to " + t.url.host_header + ": " +
                                        std::strerror(t.connect_errno ? t.connect_errno : ECONNREFUSED)};
        if (!t.in_request) return fail(t, std::move(e));
        // Never from inside request(): from the loop, by the timer.
        t.failure = std::move(e);
        uv_timer_start(t.timer, &Impl::on_timer, 0, 0);
    }

    static void on_timer(uv_timer_t* timer) {
        auto& t = *static_cast<Transfer*>(timer->data);
        if (t.failure) return t.impl->fail(t, *t.failure);
        if (t.resume) {  // the connection it waited for is there, or is not h2
            t.resume = false;
            const std::uint64_t now = uv_now(t.impl->loop);
            uv_timer_start(timer, &Impl::on_timer, t.deadline > now ? t.deadline - now : 1, 0);
            if (auto s = t.impl->start_connection(t, true); !s.ok()) t.impl->fail(t, s.error());
            return;
        }
        t.impl->fail(t, Error{ErrorCode::Timeout, "timed out after " + std::to_string(t.timeout_ms) +
                                                      " ms (" + t.url.host_header + ")"});
    }

    // A connection broke: on a reused one, before any byte of the response,
    // the server most likely closed it while it was idle; once more on a
    // new one.
    //
    // Not a POST or PATCH the server had whole: it may have acted on it (Go's
    // http.Transport retries only when req.isReplayable(), or when nothing
    // was written). PUT and DELETE are idempotent (RFC 9110 9.2.2): sent again
    // (Go retries only GET, HEAD, OPTIONS and TRACE).
    void broken(Transfer& t, const std::string& why) {
        if (t.conn && t.conn->reused && !t.got_bytes && !t.retried &&
            (idempotent(t.method) || t.sent < t.out.size())) {
            t.retried = true;
            close_conn(std::exchange(t.conn, nullptr));
            if (auto s = start_connection(t, false); !s.ok()) fail(t, s.error());
            return;
        }
        fail(t, Error{ErrorCode::Http, why});
    }

    void advance(Transfer& t) {
        Conn* c = t.conn;
        if (t.phase == Phase::Connecting) {
            int err = 0;
            socklen_t len = sizeof err;
            if (::getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0) err = errno;
            if (err == EINPROGRESS) return;
            if (err != 0) {
                t.connect_errno = err;
                close_conn(std::exchange(t.conn, nullptr));
                return connect_next(t);
            }
            if (t.addrs) uv_freeaddrinfo(std::exchange(t.addrs, nullptr));
            if (t.numeric) ::freeaddrinfo(std::exchange(t.numeric, nullptr));
            t.next_addr = nullptr;
            if (t.url.https) {
                if (auto s = setup_tls(t, *c); !s.ok()) return fail(t, s.error());
                t.phase = Phase::Handshake;
            } else {
                t.phase = Phase::Sending;
            }
        }
        if (t.phase == Phase::Handshake) {
            const int r = tls->ssl_handshake(&c->tls->ssl);
            if (r == MBEDTLS_ERR_SSL_WANT_READ) return watch(c, UV_READABLE);
            if (r == MBEDTLS_ERR_SSL_WANT_WRITE) return watch(c, UV_WRITABLE);
            if (r == MBEDTLS_ERR_X509_CERT_VERIFY_FAILED) {
                std::string why = "TLS: the certificate of " + t.url.host_header +
                                  " is refused: " + verify_failure(tls->ssl_get_verify_result(&c->tls->ssl));
                // A board whose clock is not set yet fails every certificate.
                why += tls_clock_hint(why, wall_clock_ms());
                return fail(t, Error{ErrorCode::Http, why});
            }
            if (r != 0)
                return fail(t, Error{ErrorCode::Http, "TLS handshake with " + t.url.host_header + ": " +
                                                          mbedtls_error(*tls, r)});
            if (t.tls_opts.verify && is_ip_literal(t.url.host)) {
                const mbedtls_x509_crt* peer = tls->ssl_get_peer_cert(&c->tls->ssl);
                if (!peer || !cert_names_ip(*peer, t.url.host))
                    return fail(t, Error{ErrorCode::Http,
                                         "TLS: the certificate of " + t.url.host_header +
                                             " is refused: it does not name " + t.url.host +
                                             " (no such IP address in its subject alternative names)"});
            }
            const char* alpn = tls->ssl_get_alpn_protocol(&c->tls->ssl);
            if (alpn && std::strcmp(alpn, "h2") == 0) return start_h2(t, c);
            if (h2_pending.contains(t.key)) h1_origins.insert(t.key);
            release_waiters(t);
            t.phase = Phase::Sending;
        }
        if (t.phase == Phase::Sending) {
            while (t.sent < t.out.size()) {
                const auto* data = reinterpret_cast<const unsigned char*>(t.out.data()) + t.sent;
                const std::size_t left = t.out.size() - t.sent;
                const int n = c->tls ? tls->ssl_write(&c->tls->ssl, data, left) : bio_send(c, data, left);
                if (n == MBEDTLS_ERR_SSL_WANT_WRITE) return watch(c, UV_WRITABLE);
                if (n == MBEDTLS_ERR_SSL_WANT_READ) return watch(c, UV_READABLE);
                if (n < 0) return broken(t, "sending to " + t.url.host_header + ": " + io_error(*c, n));
                t.sent += static_cast<std::size_t>(n);
            }
            t.phase = Phase::Receiving;
            watch(c, UV_READABLE);
        }
        if (t.phase == Phase::Receiving) receive(t);
    }

    void receive(Transfer& t) {
        Conn* c = t.conn;
        unsigned char buf[16 * 1024];
        for (std::size_t taken = 0;; taken += sizeof buf) {
            if (yield_read(*c, taken)) return watch(c, UV_READABLE);
            int n = c->tls ? tls->ssl_read(&c->tls->ssl, buf, sizeof buf) : bio_recv(c, buf, sizeof buf);
            if (n == MBEDTLS_ERR_SSL_WANT_READ) return watch(c, UV_READABLE);
            if (n == MBEDTLS_ERR_SSL_WANT_WRITE) return watch(c, UV_WRITABLE);
            if (n == MBEDTLS_ERR_SSL_PEER_CLOSE_NOTIFY) n = 0;
            if (n < 0) return broken(t, "receiving from " + t.url.host_header + ": " + io_error(*c, n));
            llhttp_errno_t e;
            ++t.busy;
            if (n == 0) {
                e = llhttp_finish(&t.parser);
            } else {
                t.got_bytes = true;
                e = llhttp_execute(&t.parser, reinterpret_cast<const char*>(buf),
                                   static_cast<std::size_t>(n));
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
                    return broken(t,
                                  "the connection to " + t.url.host_header + " was closed before a response");
                return fail(t, Error{ErrorCode::Http, "the connection to " + t.url.host_header +
                                                          " was closed before the response was complete"});
            }
            if (e != HPE_OK)
                return fail(t, Error{ErrorCode::Http, "bad response from " + t.url.host_header + ": " +
                                                          llhttp_errno_name(e) + " " + reason(t.parser)});
        }
    }

    // --- llhttp's callbacks ---------------------------------------------

    static std::string reason(const llhttp_t& p) {
        const char* r = llhttp_get_error_reason(&p);
        return r ? r : "";
    }

    static Transfer& of(llhttp_t* p) { return *static_cast<Transfer*>(p->data); }

    static int count_header(Transfer& t, std::size_t len) {
        t.header_bytes += len;
        if (t.header_bytes <= kMaxHeaderBytes) return 0;
        t.failure = Error{ErrorCode::Http, "response headers from " + t.url.host_header + " larger than " +
                                               std::to_string(kMaxHeaderBytes) + " bytes"};
        return -1;
    }

    // Response body bytes (HTTP/1.1 or a stream's): -1 to stop, with
    // t.failure, or with t.dead when on_data cancelled it.
    static int body_bytes(Transfer& t, const char* at, std::size_t len) {
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

    static void init_settings(llhttp_settings_t& s) {
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

    // --- HTTP/2 -----------------------------------------------------------

    // The handshake chose h2: the connection becomes the origin's shared
    // one and the transfer its first stream.
    void start_h2(Transfer& t, Conn* c) {
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
            close_conn(std::exchange(t.conn, nullptr));
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
    void attach(Transfer& t, Conn& c, bool reused) {
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
        if (!c.busy) watch(&c, UV_READABLE | UV_WRITABLE);
    }

    // The transfers that waited for this one's connection try again.
    void release_waiters(Transfer& t) {
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
    static void detach(Transfer& t) {
        t.conn->streams.erase(t.stream);
        t.conn = nullptr;
    }

    // A stream the server did not process (refused, above GOAWAY's last
    // stream, or the shared connection broke before any byte of it): once
    // more on another connection.
    bool retry_h2(Transfer& t, bool unprocessed) {
        if (t.got_bytes || t.retried || !unprocessed) return false;
        t.retried = true;
        detach(t);
        if (auto s = start_connection(t, true); !s.ok()) fail(t, s.error());
        return true;
    }

    // The connection is readable or writable: feed nghttp2, write what it
    // has, then end the streams that ended.
    void h2_io(Conn* c) {
        unsigned char buf[16 * 1024];
        std::optional<std::string> broke;
        bool want_write = false;
        ++c->busy;
        for (std::size_t taken = 0; !c->dead && !yield_read(*c, taken);) {
            int n = tls->ssl_read(&c->tls->ssl, buf, sizeof buf);
            if (n == MBEDTLS_ERR_SSL_WANT_READ) break;
            if (n == MBEDTLS_ERR_SSL_WANT_WRITE) {
                want_write = true;
                break;
            }
            if (n == MBEDTLS_ERR_SSL_PEER_CLOSE_NOTIFY || n == 0) {
                broke = "the connection was closed";
                break;
            }
            if (n < 0) {
                broke = "receiving: " + mbedtls_error(*tls, n);
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
            // More frames only once the last ones are written: mbed TLS wants
            // a write it answered WANT_WRITE retried with the same bytes, and
            // nghttp2 keeps what is not taken (its flood limits count it).
            if (c->h2_sent == c->h2_out.size()) {
                c->h2_out.clear();
                c->h2_sent = 0;
                if (auto s = c->h2->take_output(c->h2_out); !s.ok()) broke = s.error().message;
            }
            while (!broke && c->h2_sent < c->h2_out.size()) {
                const int n = tls->ssl_write(
                    &c->tls->ssl, reinterpret_cast<const unsigned char*>(c->h2_out.data()) + c->h2_sent,
                    c->h2_out.size() - c->h2_sent);
                if (n == MBEDTLS_ERR_SSL_WANT_WRITE || n == MBEDTLS_ERR_SSL_WANT_READ) {
                    want_write = true;
                    break;
                }
                if (n < 0)
                    broke = "sending: " + mbedtls_error(*tls, n);
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
        watch(c, UV_READABLE | (write ? UV_WRITABLE : 0));
    }

    void unlive(Conn* c) {
        if (auto it = h2_live.find(c->key); it != h2_live.end() && it->second == c) h2_live.erase(it);
    }

    // The streams that ended, failed, were refused or lost their connection.
    void h2_sweep(Conn* c, const std::optional<std::string>& broke) {
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
    void drop_h2(Conn* c) {
        unlive(c);
        if (c->busy) {
            c->dead = true;
            return;
        }
        h2_conns.erase(c);
        for (auto& [id, t] : c->streams) t->conn = nullptr;  // close(): none left
        close_conn(c);
    }

    // --- ends -----------------------------------------------------------

    void done(Transfer& t, bool keep) {
        Conn* c = std::exchange(t.conn, nullptr);
        if (keep && !closed && !t.fresh) {
            c->owner = nullptr;
            auto& q = idle[c->key];
            if (q.size() >= kIdlePerKey) {
                close_conn(q.front());
                q.pop_front();
            }
            q.push_back(c);
            watch(c, UV_READABLE);
        } else {
            close_conn(c);
        }
        finish(t, std::move(t.resp));
    }

    void fail(Transfer& t, Error e) { finish(t, std::move(e)); }

    void finish(Transfer& t, Result<HttpResponse> r) {
        Callback cb = std::move(t.cb);
        destroy(t);
        if (cb) cb(std::move(r));
    }

    void destroy(Transfer& t) {
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
            if (!c->busy && !c->dead) watch(c, UV_READABLE | UV_WRITABLE);
        }
        if (t.addrs) uv_freeaddrinfo(t.addrs);
        if (t.numeric) ::freeaddrinfo(t.numeric);
        close_conn(t.conn);
        transfers.erase(t.id);
    }
};

ApiHttpClient::ApiHttpClient(uv_loop_t* loop) : impl_(std::make_unique<Impl>(loop)) {}

ApiHttpClient::~ApiHttpClient() { close(); }

std::uint64_t ApiHttpClient::connections_opened() const { return impl_->opened; }

std::uint64_t ApiHttpClient::tls_configs_made() const { return impl_->tls_configs_made; }

Result<ApiHttpClient::RequestId> ApiHttpClient::request(const HttpRequest& req, Callback cb) {
    Impl& m = *impl_;
    if (m.closed) return Error{ErrorCode::Closed, "HTTP client is closed"};
    auto url = parse_url(req.url);
    if (!url.ok()) return url.error();
    if (url.value().https) {
        auto api = mbedtls_api();
        if (!api.ok()) return api.error();
        tls = api.value();
    }
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
        for (auto* c : q) Impl::close_conn(c);
    m.idle.clear();
    const std::set<Impl::Conn*> h2 = m.h2_conns;
    for (auto* c : h2) m.drop_h2(c);
}

}  // namespace daemonlet::platform
