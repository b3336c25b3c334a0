// Whether the agent is connected to the API server, with hysteresis so that
// a flaky uplink does not flap the state (and the logs, the STATUS= line and
// the events that follow it). Level-triggered and pure: the agent reports
// whether its link is healthy right now (a synced list and an open watch, a
// renewed Lease) and the time; the state changes only when the link has
// been healthy, or unhealthy, for long enough.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace daemonlet {

enum class LinkState { Disconnected, Connected };
const char* to_string(LinkState s);

struct ConnectivityPolicy {
    std::int64_t up_after_ms = 3'000;     // healthy this long: connected
    std::int64_t down_after_ms = 15'000;  // unhealthy this long: disconnected
};

class Connectivity {
  public:
    explicit Connectivity(ConnectivityPolicy policy = {}) : policy_(policy) {}

    // Reports the link's health now; returns true when the state changed.
    // `why` (for an unhealthy link) is kept for status lines.
    bool report(bool healthy, std::int64_t now_ms, const std::string& why = {});
    // The link is made at `now`: not healthy yet, so that a link that never
    // becomes healthy is judged (judged()) down_after_ms later.
    void begin(std::int64_t now_ms);
    // Re-evaluates at `now` without new information (a timer); true on a
    // change of state or of judged().
    bool tick(std::int64_t now_ms);
    // When tick() could next change the state, if it could.
    std::optional<std::int64_t> next_change_ms() const;

    LinkState state() const { return state_; }
    // Whether the state is a verdict: it was Connected once, or the link
    // has been unhealthy for down_after_ms. Before, Disconnected only
    // means "not proven yet" (an agent that just started or made a new
    // link), which is no outage.
    bool judged() const { return judged_; }
    std::int64_t since_ms() const { return since_ms_; }  // of the current state
    const std::string& last_error() const { return why_; }
    int transitions() const { return transitions_; }

  private:
    ConnectivityPolicy policy_;
    LinkState state_ = LinkState::Disconnected;  // until proven otherwise, as at boot
    std::int64_t since_ms_ = 0;
    bool healthy_ = false;
    std::optional<std::int64_t> healthy_since_;    // current healthy run
    std::optional<std::int64_t> unhealthy_since_;  // current unhealthy run
    std::string why_;
    int transitions_ = 0;
    bool judged_ = false;
};

}  // namespace daemonlet
