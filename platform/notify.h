// systemd's notification protocol (sd_notify): READY=1, STATUS=, STOPPING=1,
// and WATCHDOG=1 pinged from the event loop at half of WatchdogSec, so a loop
// that is stuck stops pinging and systemd restarts the agent. Without
// $NOTIFY_SOCKET every call is a no-op.
#pragma once

#include <uv.h>

#include <cstdint>
#include <string>

namespace daemonlet::platform {

class Notifier {
  public:
    explicit Notifier(uv_loop_t* loop);
    Notifier(const Notifier&) = delete;
    Notifier& operator=(const Notifier&) = delete;
    ~Notifier();

    // Starts the watchdog timer when systemd asked for one.
    void start();
    void ready(const std::string& status);
    void status(const std::string& status);  // sent only when it changed
    void stopping();
    // Closes the timer; the loop can then finish.
    void close();

    std::uint64_t watchdog_interval_ms() const { return watchdog_ms_; }

  private:
    static void on_watchdog(uv_timer_t* t);
    uv_loop_t* loop_;
    uv_timer_t* timer_ = nullptr;  // freed in its close callback
    std::uint64_t watchdog_ms_ = 0;
    std::string last_status_;
};

}  // namespace daemonlet::platform
