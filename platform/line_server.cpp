#include "platform/line_server.h"
#include "platform/system_info.h"

#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

namespace daemonlet::platform {

struct LineJsonServer::Conn {
    uv_pipe_t pipe{};  // first: the handle's address is the Conn's
    LineJsonServer* server = nullptr;
    ClientId id = 0;
    std::string pending;  // an incomplete line
    std::vector<char> read_buf = std::vector<char>(16 * 1024);
    bool finishing = false;  // close once the write queue is empty
};

namespace {

struct WriteReq {
    uv_write_t req{};
    std::string data;
};

Status socket_path_fits(const std::string& path) {
    sockaddr_un addr{};
    if (path.size() >= sizeof addr.sun_path)
        return Error{ErrorCode::Invalid, path + ": the control socket's path is longer than " +
                                             std::to_string(sizeof addr.sun_path - 1) + " bytes"};
    return Ok{};
}

// Connects a blocking unix stream socket to `path`; -1 and errno set on failure.
bool listener_is_dead(int fd) {
    ucred cred{};
    socklen_t len = sizeof cred;
    if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0 || cred.pid <= 0) return false;
    return ::kill(cred.pid, 0) != 0 && errno == ESRCH;
}

int connect_unix(const std::string& path) {
    int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return -1;
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::memcpy(addr.sun_path, path.data(), path.size());
    if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
        int e = errno;
        ::close(fd);
        errno = e;
        return -1;
    }
    return fd;
}

}  // namespace

LineJsonServer::LineJsonServer(uv_loop_t* loop, std::string path, Limits limits, Handler on_request,
                               Gone on_gone)
    : loop_(loop),
      path_(std::move(path)),
      limits_(limits),
      on_request_(std::move(on_request)),
      on_gone_(std::move(on_gone)) {}

LineJsonServer::~LineJsonServer() {
    close();
    close_all_closing();
}

Status LineJsonServer::start() {
    if (auto s = socket_path_fits(path_); !s.ok()) return s;
    struct stat st {};
    if (::lstat(path_.c_str(), &st) == 0) {
        if (!S_ISSOCK(st.st_mode))
            return Error{ErrorCode::Invalid, path_ + ": exists and is not a socket; not replacing it"};
        int fd = connect_unix(path_);
        // The listener's owner: for a listening socket, SO_PEERCRED gives
        // the process that called listen(). Dead, the socket is still
        // accepted from the backlog while a child it forked holds the fd
        // between fork and exec (a killed agent's shim on a loaded board:
        // the kill -9 storm met it): stale all the same.
        if (fd >= 0 && listener_is_dead(fd)) {
            ::close(fd);
            fd = -1;
        }
        if (fd >= 0) {
            ::close(fd);
            return Error{ErrorCode::Busy,
                         path_ +
                             ": another daemonlet is serving this socket (is a second agent running "
                             "with the same stateDir?)"};
        }
        // Nobody accepts: a socket left by an agent that did not stop cleanly.
        if (::unlink(path_.c_str()) != 0 && errno != ENOENT)
            return Error{ErrorCode::Io, path_ + ": cannot remove the stale socket: " + std::strerror(errno)};
    }
    listener_ = new uv_pipe_t;
    uv_pipe_init(loop_, listener_, 0);
    listener_->data = this;
    int rc = uv_pipe_bind(listener_, path_.c_str());
    if (rc == 0) {
        bound_ = true;
        // The state directory is 0700 already; the socket itself is root's too.
        if (::chmod(path_.c_str(), 0600) != 0) rc = uv_translate_sys_error(errno);
    }
    if (rc == 0) rc = uv_listen(reinterpret_cast<uv_stream_t*>(listener_), 16, on_connection);
    if (rc != 0) {
        std::string why = uv_strerror(rc);
        close();
        return Error{ErrorCode::Io, path_ + ": cannot serve the control socket: " + why};
    }
    return Ok{};
}

void LineJsonServer::on_connection(uv_stream_t* server, int status) {
    auto* self = static_cast<LineJsonServer*>(server->data);
    if (status < 0) return;
    auto* c = new Conn;
    c->server = self;
    uv_pipe_init(self->loop_, &c->pipe, 0);
    c->pipe.data = c;
    if (uv_accept(server, reinterpret_cast<uv_stream_t*>(&c->pipe)) != 0) {
        uv_close(reinterpret_cast<uv_handle_t*>(&c->pipe),
                 [](uv_handle_t* h) { delete static_cast<Conn*>(h->data); });
        return;
    }
    c->id = self->next_id_++;
    self->conns_[c->id] = c;
    if (self->conns_.size() > self->limits_.max_clients) {
        self->write(c, Json{{"error", "too many clients"}}.dump() + "\n");
        self->finish(c->id);
        return;
    }
    uv_read_start(reinterpret_cast<uv_stream_t*>(&c->pipe), on_alloc, on_read);
}

void LineJsonServer::on_alloc(uv_handle_t* h, std::size_t, uv_buf_t* buf) {
    auto* c = static_cast<Conn*>(h->data);
    *buf = uv_buf_init(c->read_buf.data(), static_cast<unsigned>(c->read_buf.size()));
}

void LineJsonServer::on_read(uv_stream_t* s, ssize_t n, const uv_buf_t* buf) {
    auto* c = static_cast<Conn*>(s->data);
    LineJsonServer* self = c->server;
    if (n < 0) {  // EOF or an error: the client is gone
        self->drop(c);
        return;
    }
    auto too_long = [&] {
        c->pending.clear();
        self->write(c, Json{{"error", "request longer than " + std::to_string(self->limits_.max_line_bytes) +
                                          " bytes"}}
                               .dump() +
                           "\n");
        self->finish(c->id);
    };
    std::size_t start = 0;
    const auto len = static_cast<std::size_t>(n);
    for (std::size_t i = 0; i < len; ++i) {
        if (buf->base[i] != '\n') continue;
        if (c->pending.size() + (i - start) > self->limits_.max_line_bytes) return too_long();
        c->pending.append(buf->base + start, i - start);
        start = i + 1;
        std::string line = std::move(c->pending);
        c->pending.clear();
        if (!line.empty() && line.back() == '\r') line.pop_back();
        if (!line.empty()) self->handle_line(c, line);
        // The handler may have finished or dropped this client.
        if (c->finishing || uv_is_closing(reinterpret_cast<uv_handle_t*>(&c->pipe))) return;
    }
    c->pending.append(buf->base + start, len - start);
    if (c->pending.size() > self->limits_.max_line_bytes) too_long();
}

void LineJsonServer::handle_line(Conn* c, const std::string& line) {
    Json req = Json::parse(line, nullptr, false);
    if (req.is_discarded() || !req.is_object()) {
        write(c, Json{{"error", "invalid request: not a JSON object on one line"}}.dump() + "\n");
        return;
    }
    on_request_(c->id, req);
}

bool LineJsonServer::write(Conn* c, std::string data) {
    auto* stream = reinterpret_cast<uv_stream_t*>(&c->pipe);
    if (uv_is_closing(reinterpret_cast<uv_handle_t*>(stream))) return false;
    if (uv_stream_get_write_queue_size(stream) + data.size() > limits_.max_queued_bytes) {
        drop(c);  // it does not read what it asked for
        return false;
    }
    auto* w = new WriteReq;
    w->data = std::move(data);
    uv_buf_t b = uv_buf_init(w->data.data(), static_cast<unsigned>(w->data.size()));
    w->req.data = c;
    int rc = uv_write(&w->req, stream, &b, 1, [](uv_write_t* req, int status) {
        auto* wr = reinterpret_cast<WriteReq*>(req);
        auto* conn = static_cast<Conn*>(req->data);
        delete wr;
        if (status == UV_ECANCELED) return;  // closing: the Conn goes in its close callback
        auto* h = reinterpret_cast<uv_handle_t*>(&conn->pipe);
        if (uv_is_closing(h)) return;
        const bool drained = uv_stream_get_write_queue_size(reinterpret_cast<uv_stream_t*>(h)) == 0;
        if (status < 0 || (conn->finishing && drained)) conn->server->drop(conn);
    });
    if (rc != 0) {
        delete w;
        drop(c);
        return false;
    }
    return true;
}

bool LineJsonServer::send(ClientId client, const Json& response) {
    auto it = conns_.find(client);
    if (it == conns_.end() || it->second->finishing) return false;
    return write(it->second, response.dump(-1, ' ', false, Json::error_handler_t::replace) + "\n");
}

void LineJsonServer::finish(ClientId client) {
    auto it = conns_.find(client);
    if (it == conns_.end()) return;
    Conn* c = it->second;
    c->finishing = true;
    uv_read_stop(reinterpret_cast<uv_stream_t*>(&c->pipe));
    if (uv_stream_get_write_queue_size(reinterpret_cast<uv_stream_t*>(&c->pipe)) == 0) drop(c);
}

void LineJsonServer::drop(Conn* c) {
    auto* h = reinterpret_cast<uv_handle_t*>(&c->pipe);
    if (uv_is_closing(h)) return;
    const ClientId id = c->id;
    conns_.erase(id);
    uv_close(h, [](uv_handle_t* p) { delete static_cast<Conn*>(p->data); });
    if (id != 0 && on_gone_) on_gone_(id);
    if (closing_.erase(c) && closing_.empty()) close_all_closing();  // the last one: the timer goes
}

void LineJsonServer::close_all_closing() {
    while (!closing_.empty()) drop(*closing_.begin());
    if (closing_timer_) {
        uv_close(reinterpret_cast<uv_handle_t*>(closing_timer_),
                 [](uv_handle_t* h) { delete reinterpret_cast<uv_timer_t*>(h); });
        closing_timer_ = nullptr;
    }
}

void LineJsonServer::close() {
    while (!conns_.empty()) {
        Conn* c = conns_.begin()->second;
        c->finishing = true;
        auto* stream = reinterpret_cast<uv_stream_t*>(&c->pipe);
        if (uv_stream_get_write_queue_size(stream) == 0) {
            drop(c);
            continue;
        }
        // What was sent is not all written (the client reads slowly): a
        // uv_close now would cancel it. The write callback closes it once
        // written (finishing), the timer at the latest. The owner forgets it
        // now: nothing more is sent to it.
        const ClientId id = c->id;
        conns_.erase(id);
        c->id = 0;
        uv_read_stop(stream);
        closing_.insert(c);
        if (on_gone_) on_gone_(id);
    }
    if (!closing_.empty() && !closing_timer_) {
        closing_timer_ = new uv_timer_t;
        uv_timer_init(loop_, closing_timer_);
        closing_timer_->data = this;
        uv_timer_start(
            closing_timer_, [](uv_timer_t* t) { static_cast<LineJsonServer*>(t->data)->close_all_closing(); },
            kCloseWriteMs, 0);
    }
    if (listener_) {
        uv_close(reinterpret_cast<uv_handle_t*>(listener_),
                 [](uv_handle_t* h) { delete reinterpret_cast<uv_pipe_t*>(h); });
        listener_ = nullptr;
    }
    if (bound_) {
        ::unlink(path_.c_str());
        bound_ = false;
    }
}

// ---------------------------------------------------------------------------
// The client.

LineJsonClient::~LineJsonClient() {
    if (fd_ >= 0) ::close(fd_);
}

Status LineJsonClient::connect(const std::string& path) {
    if (auto s = socket_path_fits(path); !s.ok()) return s;
    path_ = path;
    fd_ = connect_unix(path);
    if (fd_ >= 0) return Ok{};
    if (errno == ENOENT) return Error{ErrorCode::NotRunning, "no " + path};
    if (errno == ECONNREFUSED)
        return Error{ErrorCode::NotRunning, path + " refuses connections (a stale socket)"};
    return Error{ErrorCode::Io, path + ": cannot connect: " + std::strerror(errno)};
}

Status LineJsonClient::send(const Json& request) {
    const std::string line = request.dump() + "\n";
    std::size_t off = 0;
    while (off < line.size()) {
        ssize_t n = ::send(fd_, line.data() + off, line.size() - off, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) return Error{ErrorCode::Io, path_ + ": cannot send the request: " + std::strerror(errno)};
        off += static_cast<std::size_t>(n);
    }
    return Ok{};
}

Result<Json> LineJsonClient::receive(std::int64_t timeout_ms) {
    const std::int64_t deadline = timeout_ms < 0 ? -1 : monotonic_ms() + timeout_ms;
    for (;;) {
        if (auto nl = buffer_.find('\n'); nl != std::string::npos) {
            Json v = Json::parse(buffer_.substr(0, nl), nullptr, false);
            buffer_.erase(0, nl + 1);
            if (v.is_discarded())
                return Error{ErrorCode::Io, path_ + ": the agent sent a line that is not JSON"};
            return v;
        }
        int wait = -1;
        if (deadline >= 0)
            wait = static_cast<int>(std::clamp<std::int64_t>(deadline - monotonic_ms(), 0, 1'000'000));
        pollfd p{fd_, POLLIN, 0};
        int rc = ::poll(&p, 1, wait);
        if (rc < 0 && errno == EINTR) continue;
        if (rc < 0) return Error{ErrorCode::Io, path_ + ": poll: " + std::strerror(errno)};
        if (rc == 0) {
            if (deadline >= 0 && monotonic_ms() >= deadline)
                return Error{ErrorCode::Timeout, "timed out waiting for the agent"};
            continue;
        }
        char buf[4096];
        ssize_t n = ::read(fd_, buf, sizeof buf);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) return Error{ErrorCode::Io, path_ + ": read: " + std::strerror(errno)};
        if (n == 0) return Error{ErrorCode::Closed, "the agent closed the connection"};
        buffer_.append(buf, static_cast<std::size_t>(n));
    }
}

}  // namespace daemonlet::platform
