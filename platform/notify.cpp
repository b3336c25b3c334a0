#include "platform/notify.h"

#include <systemd/sd-daemon.h>

namespace daemonlet::platform {

Notifier::Notifier(uv_loop_t* loop) : loop_(loop) {}

Notifier::~Notifier() { close(); }

void Notifier::start() {
    std::uint64_t usec = 0;
    // sd_watchdog_enabled checks $WATCHDOG_PID against our pid, so a child
    // that inherited the environment does not ping for us.
    if (sd_watchdog_enabled(0, &usec) <= 0 || usec == 0) return;
    watchdog_ms_ = usec / 2000;  // half of WatchdogSec, in ms
    if (watchdog_ms_ == 0) watchdog_ms_ = 1;
    timer_ = new uv_timer_t;
    uv_timer_init(loop_, timer_);
    timer_->data = this;
    uv_timer_start(timer_, on_watchdog, watchdog_ms_, watchdog_ms_);
}

void Notifier::on_watchdog(uv_timer_t*) { sd_notify(0, "WATCHDOG=1"); }

void Notifier::ready(const std::string& s) {
    last_status_ = s;
    sd_notify(0, ("READY=1\nSTATUS=" + s).c_str());
}

void Notifier::status(const std::string& s) {
    if (s == last_status_) return;
    last_status_ = s;
    sd_notify(0, ("STATUS=" + s).c_str());
}

void Notifier::stopping() { sd_notify(0, "STOPPING=1\nSTATUS=stopping (pods keep running)"); }

void Notifier::close() {
    if (!timer_) return;
    uv_timer_stop(timer_);
    uv_close(reinterpret_cast<uv_handle_t*>(timer_),
             [](uv_handle_t* h) { delete reinterpret_cast<uv_timer_t*>(h); });
    timer_ = nullptr;
}

}  // namespace daemonlet::platform
