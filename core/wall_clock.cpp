#include "core/wall_clock.h"

#include <algorithm>
#include <cstdlib>

#include "core/cluster_report.h"

namespace daemonlet {

std::int64_t rebase(std::int64_t t, const WallStep& step) {
    return t >= step.from_ms && t <= step.to_ms ? t + step.delta_ms : t;
}

std::string step_text(std::int64_t delta_ms) {
    const std::int64_t s = std::llabs(delta_ms) / 1000;
    struct Unit {
        std::int64_t seconds;
        const char* suffix;
    };
    static const Unit units[] = {{365 * 86400, "y"}, {86400, "d"}, {3600, "h"}, {60, "m"}, {1, "s"}};
    std::string out = delta_ms < 0 ? "-" : "+";
    std::int64_t left = s;
    int parts = 0;
    for (const Unit& u : units) {
        if (left < u.seconds && !(u.seconds == 1 && parts == 0)) continue;
        out += (parts ? " " : "") + std::to_string(left / u.seconds) + u.suffix;
        left %= u.seconds;
        if (++parts == 2) break;
    }
    return out;
}

std::string tls_clock_hint(const std::string& error, std::int64_t now_ms) {
    const bool not_yet = error.find("not yet valid") != std::string::npos;
    const bool expired = error.find("expired") != std::string::npos;
    if (!not_yet && !expired) return {};
    const std::string reads = "the system clock reads " + rfc3339(now_ms);
    if (!wall_time_known(now_ms)) return " (" + reads + ": it is not set; NTP has not answered yet?)";
    return " (" + reads +
           (not_yet ? ": if that is early, set the clock)" : ": if that is late, set the clock)");
}

WallClockSteps::WallClockSteps(std::int64_t wall_ms, std::int64_t mono_ms)
    : start_mono_ms_(mono_ms), offset_ms_(wall_ms - mono_ms) {}

std::optional<WallStep> WallClockSteps::observe(std::int64_t wall_ms, std::int64_t mono_ms) {
    const std::int64_t offset = wall_ms - mono_ms;
    const std::int64_t before = offset_ms_;
    // Followed at every observation, so that NTP's slewing (a few seconds
    // a day) never adds up to a step.
    offset_ms_ = offset;
    if (std::llabs(offset - before) < kMinStepMs) return std::nullopt;
    // Everything recorded since the start, on the clock as it was.
    // From 1 ms: 0 stands for "no time" (a container that never finished),
    // and a board at 1970 booted before it.
    return WallStep{offset - before, std::max<std::int64_t>(1, before + start_mono_ms_), before + mono_ms};
}

}  // namespace daemonlet
