// The socket and TLS half of the API server client: connect, the handshake
// (mbed TLS over the non-blocking socket, its WANT_READ / WANT_WRITE telling
// what to wait for), and the bytes each way.
#include "platform/http/api_connection.h"

#include <arpa/inet.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/wall_clock.h"
#include "platform/http/mbedtls_api.h"
#include "platform/system_info.h"

namespace daemonlet::platform {

namespace {

const MbedTlsApi* tls = nullptr;  // once loaded (mbedtls_api())

// What one readable event reads from a socket before the loop runs again
// (its timers: the request's timeout, probes, the Lease); libuv's poll is
// level-triggered, so the rest is read on the next turn.
constexpr std::size_t kReadPerEvent = 256 * 1024;
constexpr const char* kSystemCa = "/etc/ssl/certs/ca-certificates.crt";

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

Status load_connection_tls() {
    auto api = mbedtls_api();
    if (!api.ok()) return api.error();
    tls = api.value();
    return Ok{};
}

bool is_ip_literal(const std::string& host) {
    unsigned char buf[16];
    return ::inet_pton(AF_INET, host.c_str(), buf) == 1 || ::inet_pton(AF_INET6, host.c_str(), buf) == 1;
}

int connect_socket(const addrinfo& a) {
    const int fd = ::socket(a.ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) return -errno;
    if (::connect(fd, a.ai_addr, a.ai_addrlen) != 0 && errno != EINPROGRESS) {
        const int e = errno;
        ::close(fd);
        return -e;
    }
    return fd;
}

// --- TLS configurations ---------------------------------------------------

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

// As long as the client's TlsConfigs (the configurations point at drbg).
// Not handed to mbed TLS's free functions, as before: neither holds heap
// memory.
struct TlsConfigs::Rng {
    mbedtls_entropy_context entropy{};
    mbedtls_ctr_drbg_context drbg{};
};

TlsConfigs::TlsConfigs() = default;
TlsConfigs::~TlsConfigs() = default;

Status TlsConfigs::seed() {
    if (rng_) return Ok{};
    auto rng = std::make_unique<Rng>();
    tls->entropy_init(&rng->entropy);
    tls->ctr_drbg_init(&rng->drbg);
    static const unsigned char kPers[] = "daemonlet";
    if (int r = tls->ctr_drbg_seed(&rng->drbg, tls->entropy_func, &rng->entropy, kPers, sizeof kPers - 1);
        r != 0)
        return Error{ErrorCode::Http, "TLS: seeding the random generator: " + mbedtls_error(*tls, r)};
    rng_ = std::move(rng);
    return Ok{};
}

Result<TlsConfig*> TlsConfigs::get(const std::string& pool_key, const HttpTls& o, bool offer_h2) {
    const std::string key = pool_key + (offer_h2 ? "|h2" : "|h1");
    if (auto it = configs_.find(key); it != configs_.end()) return it->second.get();
    if (auto s = seed(); !s.ok()) return s.error();
    auto made = std::make_unique<TlsConfig>();
    TlsConfig& s = *made;
    auto err = [&](const std::string& what, int r) {
        return Error{ErrorCode::Http, "TLS: " + what + ": " + mbedtls_error(*tls, r)};
    };
    int r = tls->ssl_config_defaults(&s.conf, MBEDTLS_SSL_IS_CLIENT, MBEDTLS_SSL_TRANSPORT_STREAM,
                                     MBEDTLS_SSL_PRESET_DEFAULT);
    if (r != 0) return err("configuration", r);
    tls->ssl_conf_min_version(&s.conf, MBEDTLS_SSL_MAJOR_VERSION_3, MBEDTLS_SSL_MINOR_VERSION_3);
    tls->ssl_conf_rng(&s.conf, tls->ctr_drbg_random, &rng_->drbg);
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
        if ((r = tls->ssl_conf_own_cert(&s.conf, &s.cert, &s.key)) != 0) return err("client certificate", r);
    }
    // HTTP/2 when the server offers it (and nghttp2 is installed).
    static const char* kAlpn[] = {"h2", "http/1.1", nullptr};
    if (offer_h2 && (r = tls->ssl_conf_alpn_protocols(&s.conf, kAlpn)) != 0) return err("ALPN", r);
    ++made_;
    return configs_.emplace(key, std::move(made)).first->second.get();
}

// --- a connection ---------------------------------------------------------

// The TLS state of one connection, over a shared TlsConfig.
struct Connection::Tls {
    mbedtls_ssl_context ssl;
    Tls() { tls->ssl_init(&ssl); }
    ~Tls() { tls->ssl_free(&ssl); }
    Tls(const Tls&) = delete;
    Tls& operator=(const Tls&) = delete;
};

Connection::Connection() = default;
Connection::~Connection() = default;

void Connection::close(Connection* c) {
    if (!c) return;
    c->tls_.reset();
    if (c->poll_) {
        // The socket is closed once libuv has let go of it.
        c->poll_->data = reinterpret_cast<void*>(static_cast<std::intptr_t>(c->fd_));
        uv_close(reinterpret_cast<uv_handle_t*>(c->poll_), [](uv_handle_t* h) {
            ::close(static_cast<int>(reinterpret_cast<std::intptr_t>(h->data)));
            delete reinterpret_cast<uv_poll_t*>(h);
        });
    } else if (c->fd_ >= 0) {
        ::close(c->fd_);
    }
    delete c;
}

bool Connection::open(uv_loop_t* loop, int fd) {
    fd_ = fd;
    poll_ = new uv_poll_t;
    if (uv_poll_init_socket(loop, poll_, fd) != 0) {
        delete poll_;
        poll_ = nullptr;
        return false;
    }
    poll_->data = this;
    return true;
}

void Connection::watch(int events) {
    uv_poll_start(poll_, events,
                  [](uv_poll_t* h, int, int) { static_cast<Connection*>(h->data)->on_event(); });
}

int Connection::connect_result() const {
    int err = 0;
    socklen_t len = sizeof err;
    if (::getsockopt(fd_, SOL_SOCKET, SO_ERROR, &err, &len) != 0) err = errno;
    return err;
}

bool Connection::idle_and_open() const {
    char b;
    const ssize_t n = ::recv(fd_, &b, 1, MSG_PEEK | MSG_DONTWAIT);
    return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
}

Status Connection::start_tls(TlsConfig& conf, const std::string& host) {
    tls_ = std::make_unique<Tls>();
    auto err = [&](const std::string& what, int r) {
        return Error{ErrorCode::Http, "TLS: " + what + ": " + mbedtls_error(*tls, r)};
    };
    int r = tls->ssl_setup(&tls_->ssl, &conf.conf);
    if (r != 0) return err("setup", r);
    // SNI and the name check; an IP address is checked after the
    // handshake (cert_names_ip). For an address, no name said so: mbed
    // TLS 2.28.10+ refuses a handshake that never set one (the fix of
    // CVE-2025-27809).
    const bool ip = is_ip_literal(host);
    if ((r = tls->ssl_set_hostname(&tls_->ssl, ip ? nullptr : host.c_str())) != 0) return err("host name", r);
    tls->ssl_set_bio(&tls_->ssl, this, &Connection::bio_send, &Connection::bio_recv, nullptr);
    return Ok{};
}

Result<Connection::Step> Connection::handshake(const std::string& host, const std::string& shown,
                                               bool verify) {
    const int r = tls->ssl_handshake(&tls_->ssl);
    if (r == MBEDTLS_ERR_SSL_WANT_READ) return Step::WantRead;
    if (r == MBEDTLS_ERR_SSL_WANT_WRITE) return Step::WantWrite;
    if (r == MBEDTLS_ERR_X509_CERT_VERIFY_FAILED) {
        std::string why = "TLS: the certificate of " + shown +
                          " is refused: " + verify_failure(tls->ssl_get_verify_result(&tls_->ssl));
        // A board whose clock is not set yet fails every certificate.
        why += tls_clock_hint(why, wall_clock_ms());
        return Error{ErrorCode::Http, why};
    }
    if (r != 0) return Error{ErrorCode::Http, "TLS handshake with " + shown + ": " + mbedtls_error(*tls, r)};
    if (verify && is_ip_literal(host)) {
        const mbedtls_x509_crt* peer = tls->ssl_get_peer_cert(&tls_->ssl);
        if (!peer || !cert_names_ip(*peer, host))
            return Error{ErrorCode::Http, "TLS: the certificate of " + shown +
                                              " is refused: it does not name " + host +
                                              " (no such IP address in its subject alternative names)"};
    }
    return Step::Done;
}

bool Connection::took_h2() const {
    const char* alpn = tls->ssl_get_alpn_protocol(&tls_->ssl);
    return alpn && std::strcmp(alpn, "h2") == 0;
}

// mbed TLS's transport, over the non-blocking socket; the same answers
// without TLS.
int Connection::bio_send(void* ctx, const unsigned char* buf, std::size_t len) {
    auto* c = static_cast<Connection*>(ctx);
    const ssize_t n = ::send(c->fd_, buf, len, MSG_NOSIGNAL);
    if (n >= 0) return static_cast<int>(n);
    if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return MBEDTLS_ERR_SSL_WANT_WRITE;
    c->sys_errno_ = errno;
    return errno == EPIPE || errno == ECONNRESET ? MBEDTLS_ERR_NET_CONN_RESET : MBEDTLS_ERR_NET_SEND_FAILED;
}

int Connection::bio_recv(void* ctx, unsigned char* buf, std::size_t len) {
    auto* c = static_cast<Connection*>(ctx);
    const ssize_t n = ::recv(c->fd_, buf, len, 0);
    if (n >= 0) return static_cast<int>(n);
    if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return MBEDTLS_ERR_SSL_WANT_READ;
    c->sys_errno_ = errno;
    return errno == ECONNRESET ? MBEDTLS_ERR_NET_CONN_RESET : MBEDTLS_ERR_NET_RECV_FAILED;
}

namespace {

// mbed TLS's answer (or the transport's, without TLS) in the connection's
// codes (api_connection.h); its other errors pass as they are, for
// io_error().
int connection_code(int n) {
    if (n == MBEDTLS_ERR_SSL_WANT_READ) return Connection::kWantRead;
    if (n == MBEDTLS_ERR_SSL_WANT_WRITE) return Connection::kWantWrite;
    return n;
}

}  // namespace

int Connection::send(const unsigned char* data, std::size_t len) {
    return connection_code(tls_ ? tls->ssl_write(&tls_->ssl, data, len) : bio_send(this, data, len));
}

int Connection::recv(unsigned char* buf, std::size_t len) {
    const int n = tls_ ? tls->ssl_read(&tls_->ssl, buf, len) : bio_recv(this, buf, len);
    // The server's close_notify: the end of its bytes, as 0 is without TLS.
    return n == MBEDTLS_ERR_SSL_PEER_CLOSE_NOTIFY ? 0 : connection_code(n);
}

std::string Connection::io_error(int n) const {
    if (tls_) return mbedtls_error(*tls, n);
    return std::strerror(sys_errno_ ? sys_errno_ : EIO);
}

bool Connection::yield_read(std::size_t taken) const {
    return taken >= kReadPerEvent && !(tls_ && tls->ssl_get_bytes_avail(&tls_->ssl) > 0);
}

}  // namespace daemonlet::platform
