// One connection of the API server's HTTP client (api_http_client.h): a
// non-blocking socket watched by a uv_poll and, over https, its TLS state
// over a configuration shared by the connections with the same TLS settings
// (TlsConfigs). It knows bytes, not HTTP: the exchange over it is HTTP/1.1
// (api_h1.cpp) or HTTP/2 (api_h2.cpp).
//
// The TLS is mbed TLS (loaded on first use, by the loader beside this
// file), and only api_connection.cpp sees it: its contexts are opaque here
// (TlsConfig, TlsConfigs::Rng, Connection::Tls) and send() / recv() answer
// in the connection's own codes (Connection::kWantRead ...), so the
// protocols and the pool never name an mbed TLS type or code
// (tests/layering.sh holds it).
#pragma once

#include <netdb.h>
#include <uv.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "core/result.h"
#include "platform/http/http_client.h"

namespace daemonlet::platform {

// Loads mbed TLS for the connections' TLS (an https URL); fails with the
// library's error.
Status load_connection_tls();

// An IPv4 or IPv6 address rather than a name.
bool is_ip_literal(const std::string& host);

// A non-blocking socket connecting to `a`: its descriptor, or -errno.
int connect_socket(const addrinfo& a);

struct TlsConfig;

// The parsed TLS configurations of one client (the CA, the client
// certificate, ALPN), by the caller's key; made on first use, freed with it.
class TlsConfigs {
  public:
    TlsConfigs();
    ~TlsConfigs();
    TlsConfigs(const TlsConfigs&) = delete;
    TlsConfigs& operator=(const TlsConfigs&) = delete;

    // `offer_h2`: ALPN offers h2 and http/1.1; else none.
    Result<TlsConfig*> get(const std::string& key, const HttpTls& o, bool offer_h2);
    std::uint64_t made() const { return made_; }

  private:
    // The random generator the configurations share, seeded on first use.
    struct Rng;
    Status seed();
    std::unique_ptr<Rng> rng_;
    std::map<std::string, std::unique_ptr<TlsConfig>> configs_;
    std::uint64_t made_ = 0;
};

class Connection {
  public:
    enum class Step { Done, WantRead, WantWrite };

    virtual ~Connection();
    Connection(const Connection&) = delete;
    Connection& operator=(const Connection&) = delete;

    // Closes the socket once libuv has let go of it and deletes `c`.
    static void close(Connection* c);

    // Takes `fd` (connecting) and watches it on `loop`; false when libuv
    // cannot (the descriptor is then closed with the connection).
    bool open(uv_loop_t* loop, int fd);
    // on_event() when the socket is readable or writable, as asked.
    void watch(int events);
    // The connect's outcome: 0, EINPROGRESS or the socket's error.
    int connect_result() const;
    // An idle connection the server has not closed (nor sent anything on),
    // as curl checks one before it reuses it.
    bool idle_and_open() const;

    // TLS over the connected socket with `conf`, for `host` (its name for
    // SNI and the certificate check; an address is checked in handshake()).
    Status start_tls(TlsConfig& conf, const std::string& host);
    bool has_tls() const { return tls_ != nullptr; }
    // One step of the handshake; an error says why, with the clock's part
    // when a certificate is refused. `shown` names the server in errors.
    Result<Step> handshake(const std::string& host, const std::string& shown, bool verify);
    // The server took h2 by ALPN.
    bool took_h2() const;

    // What send() and recv() answer besides the bytes taken or given (0 from
    // recv(): the server closed the connection, over TLS with close_notify or
    // not) and an error (any other negative code, which io_error() words).
    // The socket would block: wait until it is readable (kWantRead) or
    // writable (kWantWrite), then call again; a send() then wants the same
    // bytes again (TLS has taken part of them into a record). Over TLS
    // either call can want either (a record half read or half written).
    // Outside the TLS library's codes (-0x0001 to -0x7fff).
    static constexpr int kWantRead = -0x10001;
    static constexpr int kWantWrite = -0x10002;

    int send(const unsigned char* data, std::size_t len);
    int recv(unsigned char* buf, std::size_t len);
    // Why send() or recv() failed: the TLS library's words over TLS (it is
    // not even loaded for http://), else the socket's errno.
    std::string io_error(int n) const;
    // Enough read for this turn of the loop (`taken` so far)? Not while the
    // TLS state holds decrypted bytes (at most one record): the poll would
    // not wake for them.
    bool yield_read(std::size_t taken) const;

  protected:
    Connection();
    virtual void on_event() = 0;

  private:
    struct Tls;
    static int bio_send(void* ctx, const unsigned char* buf, std::size_t len);
    static int bio_recv(void* ctx, unsigned char* buf, std::size_t len);

    int fd_ = -1;
    uv_poll_t* poll_ = nullptr;
    std::unique_ptr<Tls> tls_;
    int sys_errno_ = 0;  // the socket's, when bio_send/bio_recv failed
};

}  // namespace daemonlet::platform
