#include "platform/clock.h"

#include "platform/system_info.h"

namespace daemonlet::platform {

namespace {

class SystemClock final : public Clock {
  public:
    std::int64_t monotonic_ms() const override { return platform::monotonic_ms(); }
    std::int64_t since_boot_ms() const override { return platform::since_boot_ms(); }
    std::int64_t wall_ms() const override { return wall_clock_ms(); }
};

}  // namespace

const Clock& system_clock() {
    static const SystemClock clock;
    return clock;
}

}  // namespace daemonlet::platform
