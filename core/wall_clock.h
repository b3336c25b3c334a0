// The wall clock of a board without a real-time clock: it boots at 1970
// (or at systemd's build date) and steps when NTP answers, by decades
// forward and sometimes back. Durations never read it (platform/clock.h:
// back-offs, probes, minReadySeconds and the connectivity hysteresis run on
// the monotonic clock); the times recorded for people (a pod's creation, a
// container's start, an Event, a revision) do, and a step would make them
// nonsense. The rules, pure, for the agent and the CLI:
// - WallClockSteps notices a step: the wall clock's offset from the
//   clock since boot moves (NTP's slewing moves it by at most 0.5 ms/s).
//   The agent passes CLOCK_BOOTTIME, which counts a suspend as the wall
//   clock does (CLOCK_MONOTONIC stops: a long suspend would look a step).
//   The agent then re-bases the times recorded since the board booted by
//   the step, so that every age stays what the monotonic clock measured.
// - A time before kClockSetFloorMs was recorded by a clock that was not set
//   (in an earlier boot, or by an agent that did not live to see the step): kubectl shows a zero
//   creationTimestamp as "<unknown>"; so does daemonlet, and its JSON
//   says null, as Kubernetes marshals a zero time.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace daemonlet {

// 2025-01-01T00:00:00Z: no board running this agent has a clock that is
// set and earlier (systemd's TIME_EPOCH, the build date, plays that part at
// boot; this one is fixed so that a build is reproducible).
inline constexpr std::int64_t kClockSetFloorMs = 1'735'689'600'000;

// Whether a wall time (Unix ms) was read from a clock that was set.
inline bool wall_time_known(std::int64_t wall_ms) { return wall_ms >= kClockSetFloorMs; }

// A step of the wall clock: the times in [from_ms, to_ms] (wall ms before
// the step) were recorded before it and move by delta_ms. from_ms is at
// least 1: 0 is no time.
struct WallStep {
    std::int64_t delta_ms = 0;
    std::int64_t from_ms = 0;
    std::int64_t to_ms = 0;
    bool operator==(const WallStep&) const = default;
};

// The time `t` after the step: moved when the step's window holds it.
std::int64_t rebase(std::int64_t t, const WallStep& step);

// "+56y 2d" or "-3h 4m": a step's size, for the log line.
std::string step_text(std::int64_t delta_ms);

// A TLS error that may be the clock's fault (libcurl's "certificate is not
// yet valid" or "certificate has expired") gets a hint saying what the clock
// reads, and that a clock before kClockSetFloorMs is not set; other errors
// get "".
std::string tls_clock_hint(const std::string& error, std::int64_t now_ms);

class WallClockSteps {
  public:
    // Smaller steps are NTP's corrections of a clock that was roughly set;
    // the ages they would change by are within what AGE rounds away.
    static constexpr std::int64_t kMinStepMs = 60'000;

    // The clocks at the first time a step would move: the agent passes the
    // boot (its wall time, monotonic 0).
    WallClockSteps(std::int64_t wall_ms, std::int64_t mono_ms);

    // The clocks now; a step since the last observation, if there was one.
    std::optional<WallStep> observe(std::int64_t wall_ms, std::int64_t mono_ms);

  private:
    std::int64_t start_mono_ms_;
    std::int64_t offset_ms_;  // wall - monotonic, as last observed
};

}  // namespace daemonlet
