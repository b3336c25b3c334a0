#include "platform/notify.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace daemonlet::platform {
namespace {

// $NOTIFY_SOCKET as sd_notify reads it: a path, or "@name" in the
// abstract namespace. False for anything else (vsock:, unset).
bool notify_address(sockaddr_un& addr, socklen_t& len) {
    const char* e = std::getenv("NOTIFY_SOCKET");
    if (!e || (e[0] != '/' && e[0] != '@')) return false;
    std::size_t n = std::strlen(e);
    if (n < 2 || n >= sizeof addr.sun_path) return false;
    std::memset(&addr, 0, sizeof addr);
    addr.sun_family = AF_UNIX;
    std::memcpy(addr.sun_path, e, n);
    if (addr.sun_path[0] == '@') addr.sun_path[0] = '\0';
    len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + n);
    return true;
}

bool is_status_only(const std::string& m) { return m.rfind("STATUS=", 0) == 0; }

}  // namespace

Notifier::Notifier(uv_loop_t* loop) : loop_(loop) {
    if (!notify_address(addr_, addr_len_)) {
        // Set but not a unix socket we know: libsystemd's own sd_notify.
        const char* e = std::getenv("NOTIFY_SOCKET");
        fallback_ = e && *e;
        return;
    }
    // Unconnected, as sd_notify's: each message is sent to the path anew.
    fd_ = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
}

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

void Notifier::on_watchdog(uv_timer_t* t) { static_cast<Notifier*>(t->data)->send("WATCHDOG=1"); }

void Notifier::ready(const std::string& s) {
    last_status_ = s;
    send("READY=1\nSTATUS=" + s);
}

void Notifier::status(const std::string& s) {
    if (s == last_status_) return;
    last_status_ = s;
    send("STATUS=" + s);
}

void Notifier::stopping() { send("STOPPING=1\nSTATUS=stopping (pods keep running)"); }

bool Notifier::send_now(const std::string& m) {
    if (fallback_) {
        sd_notify(0, m.c_str());
        return true;
    }
    if (fd_ < 0) return true;  // no socket: a no-op
    ssize_t n = ::sendto(fd_, m.data(), m.size(), MSG_DONTWAIT | MSG_NOSIGNAL,
                         reinterpret_cast<const sockaddr*>(&addr_), addr_len_);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return false;
    return true;  // sent, or refused for good (PID 1 gone): as sd_notify, not retried
}

void Notifier::send(std::string m) {
    if (!waiting_.empty()) {
        // Coalesced while the queue is full: one ping, the latest status.
        if (m == "WATCHDOG=1") {
            for (const auto& w : waiting_)
                if (w == m) return;
        } else if (is_status_only(m) && is_status_only(waiting_.back())) {
            waiting_.back() = std::move(m);
            return;
        }
        if (waiting_.size() >= kMaxWaiting) waiting_.pop_front();
        waiting_.push_back(std::move(m));
        return;
    }
    if (send_now(m)) return;
    waiting_.push_back(std::move(m));
    if (!retry_) {
        retry_ = new uv_timer_t;
        uv_timer_init(loop_, retry_);
        retry_->data = this;
    }
    uv_timer_start(
        retry_, [](uv_timer_t* t) { static_cast<Notifier*>(t->data)->flush(); }, kRetryMs, kRetryMs);
}

void Notifier::flush() {
    while (!waiting_.empty() && send_now(waiting_.front())) waiting_.pop_front();
    if (waiting_.empty() && retry_) uv_timer_stop(retry_);
}

void Notifier::close() {
    if (!waiting_.empty()) flush();  // STOPPING=1 at least, if there is room
    waiting_.clear();
    for (uv_timer_t** t : {&timer_, &retry_}) {
        if (!*t) continue;
        uv_timer_stop(*t);
        uv_close(reinterpret_cast<uv_handle_t*>(*t),
                 [](uv_handle_t* h) { delete reinterpret_cast<uv_timer_t*>(h); });
        *t = nullptr;
    }
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
}

}  // namespace daemonlet::platform
