// The clock the agent reads, behind a narrow interface so that a test can
// drive time (tests/agent/daemon/fake_clock.h). Two clocks, as core/pod.h says:
// monotonic for durations that drive decisions (crash-loop back-off,
// minReadySeconds, probe periods), wall for timestamps people and the
// Kubernetes-shaped output read.
#pragma once

#include <cstdint>

namespace daemonlet::platform {

class Clock {
  public:
    virtual ~Clock() = default;
    // Milliseconds on a clock that never jumps (CLOCK_MONOTONIC).
    virtual std::int64_t monotonic_ms() const = 0;
    // Unix milliseconds (CLOCK_REALTIME).
    virtual std::int64_t wall_ms() const = 0;
    // Milliseconds since the boot, suspends included (CLOCK_BOOTTIME): what
    // tells a step of the wall clock from a suspend (core/wall_clock.h). The
    // monotonic clock, for a clock that never suspends.
    virtual std::int64_t since_boot_ms() const { return monotonic_ms(); }
};

// The machine's clocks (system_info.h monotonic_ms and wall_clock_ms): read
// at each call, not the loop's cached uv_now, so that a decision made late
// in a long loop turn measures the time it is made at, as before.
const Clock& system_clock();

}  // namespace daemonlet::platform
