// A clock a test drives (platform/clock.h): time moves only when the test
// says, so back-off figures and minReadySeconds are checked to the
// millisecond and without sleeping.
#pragma once

#include <cstdint>

#include "platform/clock.h"

namespace daemonlet::testing {

class FakeClock final : public platform::Clock {
  public:
    // An arbitrary start: monotonic time is not zero on a real machine
    // either, and wall time is a plausible date (2026-01-01T00:00:00Z).
    explicit FakeClock(std::int64_t monotonic_ms = 1'000'000, std::int64_t wall_ms = 1'767'225'600'000)
        : mono_(monotonic_ms), wall_(wall_ms) {}

    std::int64_t monotonic_ms() const override { return mono_; }
    std::int64_t wall_ms() const override { return wall_; }

    // Both clocks move on by `ms`.
    void advance(std::int64_t ms) {
        mono_ += ms;
        wall_ += ms;
    }
    // The wall clock alone jumps (NTP at boot); monotonic time does not.
    void set_wall(std::int64_t wall_ms) { wall_ = wall_ms; }

  private:
    std::int64_t mono_;
    std::int64_t wall_;
};

}  // namespace daemonlet::testing
