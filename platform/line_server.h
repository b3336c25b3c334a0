// A request/response server of newline-delimited JSON over a unix stream
// socket, on a libuv loop (uv_pipe). Generic: it knows lines and JSON, not
// what the requests mean; the owner's handler answers them, at once or
// later (a request may stay open and receive several responses, as a watch
// does).
//
// - The socket file is created mode 0600; a stale one (nobody accepting) is
//   replaced on start; another live server on the same path is an error.
//   close() removes the file.
// - close() writes what was sent before it to each client (an answer given
//   just before the agent stops), for at most kCloseWriteMs, on the loop:
//   the connections are closed then, the owner told at once (on_gone).
// - Many clients at once; each is an id. A client that goes away, sends a
//   line longer than the limit, or stops reading while responses pile up
//   (more than max_queued_bytes unsent) is dropped, and the owner is told
//   (on_gone) so that it forgets the id. A send to a dropped id is a no-op.
//   on_gone runs synchronously, also from within send() and finish(): an
//   owner iterating its clients must not send while it iterates.
// - A line that is not JSON gets {"error": ...} and the connection stays.
// - The process must ignore SIGPIPE (libuv writes with write(2)).
#pragma once

#include <uv.h>

#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <string>

#include "core/json.h"
#include "core/result.h"

namespace daemonlet::platform {

class LineJsonServer {
  public:
    using ClientId = std::uint64_t;
    using Handler = std::function<void(ClientId, const Json& request)>;
    using Gone = std::function<void(ClientId)>;

    struct Limits {
        std::size_t max_line_bytes = 64 * 1024;
        std::size_t max_queued_bytes = 1024 * 1024;
        std::size_t max_clients = 64;
    };

    LineJsonServer(uv_loop_t* loop, std::string path, Limits limits, Handler on_request, Gone on_gone);
    LineJsonServer(const LineJsonServer&) = delete;
    LineJsonServer& operator=(const LineJsonServer&) = delete;
    ~LineJsonServer();

    // Binds and listens. Fails synchronously, naming the path.
    Status start();
    // One JSON value as one line. False when the client is gone.
    bool send(ClientId client, const Json& response);
    // Drops a client (after what was sent to it has been written).
    void finish(ClientId client);
    static constexpr std::uint64_t kCloseWriteMs = 1000;

    // Closes every connection (each once what was sent to it is written)
    // and the listener, and removes the socket file.
    void close();

    std::size_t clients() const { return conns_.size(); }
    const std::string& path() const { return path_; }

  private:
    struct Conn;
    static void on_connection(uv_stream_t* server, int status);
    static void on_alloc(uv_handle_t* h, std::size_t suggested, uv_buf_t* buf);
    static void on_read(uv_stream_t* s, ssize_t n, const uv_buf_t* buf);
    void drop(Conn* c);
    void handle_line(Conn* c, const std::string& line);
    bool write(Conn* c, std::string data);

    uv_loop_t* loop_;
    std::string path_;
    Limits limits_;
    Handler on_request_;
    Gone on_gone_;
    uv_pipe_t* listener_ = nullptr;
    bool bound_ = false;
    ClientId next_id_ = 1;
    std::map<ClientId, Conn*> conns_;
    // After close(): connections still writing what was sent, and the timer
    // that closes them after kCloseWriteMs.
    std::set<Conn*> closing_;
    uv_timer_t* closing_timer_ = nullptr;
    void close_all_closing();
};

// The client side, for the CLI: plain blocking POSIX calls with a deadline.
class LineJsonClient {
  public:
    LineJsonClient() = default;
    LineJsonClient(const LineJsonClient&) = delete;
    LineJsonClient& operator=(const LineJsonClient&) = delete;
    ~LineJsonClient();

    // Connects. The error's code is "not_running" when nothing listens at
    // `path` (no file, or a stale one).
    Status connect(const std::string& path);
    Status send(const Json& request);
    // The next response line, waiting at most timeout_ms (negative: no limit).
    Result<Json> receive(std::int64_t timeout_ms);

  private:
    int fd_ = -1;
    std::string path_;
    std::string buffer_;
};

}  // namespace daemonlet::platform
