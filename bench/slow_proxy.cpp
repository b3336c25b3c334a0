// slow_proxy: a CRI endpoint that answers slowly (issue 12 §7), for
// bench/bench_stall_cri.sh --slow-ms. It listens on a unix socket, connects
// each client it accepts to the upstream socket (containerd's), forwards what
// the client sends at once and holds every chunk read from upstream back by
// --delay-ms before the client gets it: each gRPC answer (and HTTP/2's
// SETTINGS, PING acks and WINDOW_UPDATEs) comes that much late, as from a
// runtime whose answers are slow. Chunks are held independently, each for
// the same delay, so they arrive in their order and a burst is not
// serialised into N x delay.
//
//   slow_proxy --listen PATH --upstream PATH --delay-ms N
//
// No Debian tool does this for a unix socket: socat forwards without delay,
// and tc netem only delays packets on network interfaces. Bench-only: built
// with the bench targets, never run by the tests.
#include <uv.h>

#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace {

struct Options {
    std::string listen;
    std::string upstream;
    std::uint64_t delay_ms = 0;
};

Options g_options;

void fail(const char* what, int err) {
    std::fprintf(stderr, "slow_proxy: %s: %s\n", what, uv_strerror(err));
    std::exit(1);
}

struct Conn;

// A chunk read from upstream, held until its timer fires, then written to
// the client.
struct Held {
    uv_timer_t timer;
    uv_write_t write;
    Conn* conn;
    char* data;
    std::size_t len;
};

// One client and its upstream connection. Freed when both handles are
// closed and no chunk is held or being written.
struct Conn {
    uv_pipe_t client;
    uv_pipe_t upstream;
    uv_connect_t connect;
    int open_handles = 2;
    int held = 0;
    bool closing = false;
};

void maybe_free(Conn* c) {
    if (c->open_handles == 0 && c->held == 0) delete c;
}

void on_handle_closed(uv_handle_t* h) {
    auto* c = static_cast<Conn*>(h->data);
    --c->open_handles;
    maybe_free(c);
}

void close_conn(Conn* c) {
    if (c->closing) return;
    c->closing = true;
    uv_close(reinterpret_cast<uv_handle_t*>(&c->client), on_handle_closed);
    uv_close(reinterpret_cast<uv_handle_t*>(&c->upstream), on_handle_closed);
}

void on_alloc(uv_handle_t*, std::size_t suggested, uv_buf_t* buf) {
    buf->base = static_cast<char*>(std::malloc(suggested));
    buf->len = buf->base != nullptr ? suggested : 0;
}

void on_held_timer_closed(uv_handle_t* h) {
    auto* held = static_cast<Held*>(h->data);
    Conn* c = held->conn;
    std::free(held->data);
    delete held;
    --c->held;
    maybe_free(c);
}

void on_held_written(uv_write_t* w, int status) {
    auto* held = static_cast<Held*>(w->data);
    if (status < 0) close_conn(held->conn);
    uv_close(reinterpret_cast<uv_handle_t*>(&held->timer), on_held_timer_closed);
}

void on_held_due(uv_timer_t* t) {
    auto* held = static_cast<Held*>(t->data);
    Conn* c = held->conn;
    if (c->closing) {
        uv_close(reinterpret_cast<uv_handle_t*>(&held->timer), on_held_timer_closed);
        return;
    }
    uv_buf_t buf = uv_buf_init(held->data, static_cast<unsigned>(held->len));
    held->write.data = held;
    if (uv_write(&held->write, reinterpret_cast<uv_stream_t*>(&c->client), &buf, 1, on_held_written) < 0) {
        close_conn(c);
        uv_close(reinterpret_cast<uv_handle_t*>(&held->timer), on_held_timer_closed);
    }
}

// After the held chunks before it: upstream's end (or error) closes the
// pair once they are written.
void on_end_due(uv_timer_t* t) {
    auto* held = static_cast<Held*>(t->data);
    close_conn(held->conn);
    uv_close(reinterpret_cast<uv_handle_t*>(&held->timer), on_held_timer_closed);
}

void hold(Conn* c, char* data, std::size_t len, uv_timer_cb due) {
    auto* held = new Held{};
    held->conn = c;
    held->data = data;
    held->len = len;
    uv_timer_init(c->client.loop, &held->timer);
    held->timer.data = held;
    ++c->held;
    uv_timer_start(&held->timer, due, g_options.delay_ms, 0);
}

void on_upstream_read(uv_stream_t* s, ssize_t n, const uv_buf_t* buf) {
    auto* c = static_cast<Conn*>(s->data);
    if (n > 0) {
        hold(c, buf->base, static_cast<std::size_t>(n), on_held_due);
        return;
    }
    std::free(buf->base);
    if (n < 0) {
        uv_read_stop(s);
        hold(c, nullptr, 0, on_end_due);
    }
}

struct Forward {
    uv_write_t write;
    char* data;
};

void on_forwarded(uv_write_t* w, int status) {
    auto* f = static_cast<Forward*>(w->data);
    std::free(f->data);
    if (status < 0) close_conn(static_cast<Conn*>(w->handle->data));
    delete f;
}

void on_client_read(uv_stream_t* s, ssize_t n, const uv_buf_t* buf) {
    auto* c = static_cast<Conn*>(s->data);
    if (n > 0 && !c->closing) {
        auto* f = new Forward{};
        f->data = buf->base;
        f->write.data = f;
        uv_buf_t out = uv_buf_init(buf->base, static_cast<unsigned>(n));
        if (uv_write(&f->write, reinterpret_cast<uv_stream_t*>(&c->upstream), &out, 1, on_forwarded) < 0) {
            std::free(f->data);
            delete f;
            close_conn(c);
        }
        return;
    }
    std::free(buf->base);
    if (n < 0) close_conn(c);
}

void on_upstream_connected(uv_connect_t* req, int status) {
    auto* c = static_cast<Conn*>(req->data);
    if (status < 0) {
        std::fprintf(stderr, "slow_proxy: cannot connect to %s: %s\n", g_options.upstream.c_str(),
                     uv_strerror(status));
        close_conn(c);
        return;
    }
    if (c->closing) return;
    uv_read_start(reinterpret_cast<uv_stream_t*>(&c->client), on_alloc, on_client_read);
    uv_read_start(reinterpret_cast<uv_stream_t*>(&c->upstream), on_alloc, on_upstream_read);
}

void on_connection(uv_stream_t* server, int status) {
    if (status < 0) fail("accept", status);
    auto* c = new Conn{};
    uv_pipe_init(server->loop, &c->client, 0);
    uv_pipe_init(server->loop, &c->upstream, 0);
    c->client.data = c;
    c->upstream.data = c;
    if (int err = uv_accept(server, reinterpret_cast<uv_stream_t*>(&c->client)); err < 0) {
        std::fprintf(stderr, "slow_proxy: accept: %s\n", uv_strerror(err));
        close_conn(c);
        return;
    }
    c->connect.data = c;
    uv_pipe_connect(&c->connect, &c->upstream, g_options.upstream.c_str(), on_upstream_connected);
}

const char* const kUsage = "usage: slow_proxy --listen PATH --upstream PATH --delay-ms N\n";

}  // namespace

int main(int argc, char** argv) {
    for (int i = 1; i + 1 < argc; i += 2) {
        const std::string flag = argv[i];
        if (flag == "--listen") {
            g_options.listen = argv[i + 1];
        } else if (flag == "--upstream") {
            g_options.upstream = argv[i + 1];
        } else if (flag == "--delay-ms") {
            char* end = nullptr;
            g_options.delay_ms = std::strtoull(argv[i + 1], &end, 10);
            if (end == argv[i + 1] || *end != '\0') {
                std::fputs(kUsage, stderr);
                return 2;
            }
        } else {
            std::fputs(kUsage, stderr);
            return 2;
        }
    }
    if (argc % 2 == 0 || g_options.listen.empty() || g_options.upstream.empty()) {
        std::fputs(kUsage, stderr);
        return 2;
    }
    std::signal(SIGPIPE, SIG_IGN);
    uv_loop_t* loop = uv_default_loop();
    uv_pipe_t server;
    uv_pipe_init(loop, &server, 0);
    (void)std::remove(g_options.listen.c_str());
    if (int err = uv_pipe_bind(&server, g_options.listen.c_str()); err < 0) fail("bind", err);
    if (int err = uv_listen(reinterpret_cast<uv_stream_t*>(&server), 128, on_connection); err < 0)
        fail("listen", err);
    std::fprintf(stderr, "slow_proxy: %s -> %s, answers held %llu ms\n", g_options.listen.c_str(),
                 g_options.upstream.c_str(), static_cast<unsigned long long>(g_options.delay_ms));
    return uv_run(loop, UV_RUN_DEFAULT);
}
