#include "core/connectivity.h"

namespace daemonlet {

const char* to_string(LinkState s) { return s == LinkState::Connected ? "connected" : "disconnected"; }

bool Connectivity::report(bool healthy, std::int64_t now_ms, const std::string& why) {
    if (healthy && !healthy_) {
        healthy_since_ = now_ms;
        unhealthy_since_.reset();
    } else if (!healthy && (healthy_ || !unhealthy_since_)) {
        unhealthy_since_ = now_ms;
        healthy_since_.reset();
    }
    healthy_ = healthy;
    if (!healthy && !why.empty()) why_ = why;
    return tick(now_ms);
}

void Connectivity::begin(std::int64_t now_ms) {
    if (!healthy_ && !unhealthy_since_) unhealthy_since_ = now_ms;
}

bool Connectivity::tick(std::int64_t now_ms) {
    if (!judged_ && state_ == LinkState::Disconnected && unhealthy_since_ &&
        now_ms - *unhealthy_since_ >= policy_.down_after_ms) {
        judged_ = true;  // never connected: the outage is a verdict now
        return true;
    }
    LinkState next = state_;
    if (state_ == LinkState::Disconnected && healthy_since_ &&
        now_ms - *healthy_since_ >= policy_.up_after_ms)
        next = LinkState::Connected;
    if (state_ == LinkState::Connected && unhealthy_since_ &&
        now_ms - *unhealthy_since_ >= policy_.down_after_ms)
        next = LinkState::Disconnected;
    if (next == state_) return false;
    state_ = next;
    judged_ = true;
    since_ms_ = now_ms;
    ++transitions_;
    return true;
}

std::optional<std::int64_t> Connectivity::next_change_ms() const {
    if (state_ == LinkState::Disconnected && healthy_since_) return *healthy_since_ + policy_.up_after_ms;
    if (state_ == LinkState::Disconnected && !judged_ && unhealthy_since_)
        return *unhealthy_since_ + policy_.down_after_ms;
    if (state_ == LinkState::Connected && unhealthy_since_) return *unhealthy_since_ + policy_.down_after_ms;
    return std::nullopt;
}

}  // namespace daemonlet
