// systemd's notification protocol (sd_notify): READY=1, STATUS=, STOPPING=1,
// and WATCHDOG=1 pinged from the event loop at half of WatchdogSec, so a loop
// that is stuck stops pinging and systemd restarts the agent. Without
// $NOTIFY_SOCKET every call is a no-op.
//
// Never blocks the loop: libsystemd's sd_notify() waits while the notify
// socket's queue is full (PID 1 busy, in a daemon-reload say). The messages
// go out on a socket of our own with MSG_DONTWAIT; one that finds the queue
// full waits in a short queue, sent again every kRetryMs, in order. Waiting
// messages are coalesced: one WATCHDOG=1, the latest STATUS=.
#pragma once

#include <sys/socket.h>
#include <sys/un.h>
#include <uv.h>

#include <cstdint>
#include <deque>
#include <string>

namespace daemonlet::platform {

class Notifier {
  public:
    static constexpr std::uint64_t kRetryMs = 100;
    static constexpr std::size_t kMaxWaiting = 16;

    explicit Notifier(uv_loop_t* loop);
    Notifier(const Notifier&) = delete;
    Notifier& operator=(const Notifier&) = delete;
    ~Notifier();

    // Starts the watchdog timer when systemd asked for one.
    void start();
    void ready(const std::string& status);
    void status(const std::string& status);  // sent only when it changed
    void stopping();
    // Closes the timers and the socket; the loop can then finish. A message
    // still waiting is tried once more, without waiting.
    void close();

    std::uint64_t watchdog_interval_ms() const { return watchdog_ms_; }
    // Messages waiting for room in the notify socket's queue (tests).
    std::size_t waiting() const { return waiting_.size(); }

  private:
    static void on_watchdog(uv_timer_t* t);
    void send(std::string message);
    // Sends what waits, in order, until the queue is full again.
    void flush();
    bool send_now(const std::string& message);  // false: try again later
    uv_loop_t* loop_;
    uv_timer_t* timer_ = nullptr;  // freed in its close callback
    uv_timer_t* retry_ = nullptr;  // runs while messages wait
    int fd_ = -1;                  // our datagram socket to $NOTIFY_SOCKET; -1: none
    sockaddr_un addr_{};
    socklen_t addr_len_ = 0;
    bool fallback_ = false;  // an address we cannot speak to (vsock:...): sd_notify
    std::deque<std::string> waiting_;
    std::uint64_t watchdog_ms_ = 0;
    std::string last_status_;
};

}  // namespace daemonlet::platform
