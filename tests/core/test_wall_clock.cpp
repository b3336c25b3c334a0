// A board's wall clock stepping at boot (core/wall_clock.h): a step is
// noticed once, NTP's slewing never is, and the times recorded before a
// step move with it.
#include "core/wall_clock.h"

#include <CppUTest/TestHarness.h>

using namespace daemonlet;

TEST_GROUP(WallClock){};

namespace {
constexpr std::int64_t kYear = 365LL * 86400 * 1000;
constexpr std::int64_t k2026 = 1'767'225'600'000;  // 2026-01-01T00:00:00Z
}  // namespace

TEST(WallClock, AStepForwardFromNineteenSeventyIsNoticedOnceWithItsWindow) {
    // Booted at 1970 + 5 s (monotonic 5 s); NTP answers at monotonic 65 s.
    WallClockSteps w(5'000, 5'000);
    CHECK_FALSE(w.observe(35'000, 35'000).has_value());
    auto step = w.observe(k2026, 65'000);
    CHECK(step.has_value());
    LONGS_EQUAL(k2026 - 65'000, step->delta_ms);
    LONGS_EQUAL(5'000, step->from_ms);  // the agent's start on the old clock
    LONGS_EQUAL(65'000, step->to_ms);   // now on the old clock
    // A pod created at 1970 + 20 s is 45 s old, before and after.
    LONGS_EQUAL(k2026 - 45'000, rebase(20'000, *step));
    // A time from before the start (an earlier agent's) is not this one's to move.
    LONGS_EQUAL(1'000, rebase(1'000, *step));
    CHECK_FALSE(w.observe(k2026 + 10'000, 75'000).has_value());
}

TEST(WallClock, NoTimeStaysNoTimeWhenTheBoardBootedAtNineteenSeventy) {
    // The clock read 1970 + 10 s a minute after boot: the boot is at 1969
    // on it, and 0 (a container that never finished) is after that.
    WallClockSteps w(10'000 - 60'000, 0);
    auto step = w.observe(k2026, 70'000);
    CHECK(step.has_value());
    LONGS_EQUAL(1, step->from_ms);
    LONGS_EQUAL(0, rebase(0, *step));
    LONGS_EQUAL(k2026 - 10'000, rebase(10'000, *step));  // 10 s before the step
}

TEST(WallClock, AStepBackIsAStepToo) {
    WallClockSteps w(k2026, 0);
    auto step = w.observe(k2026 + 10'000 - 2 * kYear, 10'000);
    CHECK(step.has_value());
    LONGS_EQUAL(-2 * kYear, step->delta_ms);
    LONGS_EQUAL(k2026 + 5'000 - 2 * kYear, rebase(k2026 + 5'000, *step));
}

TEST(WallClock, SlewingAndSmallCorrectionsAreNotSteps) {
    // NTP slews at most 0.5 ms a second: three days of it, observed every
    // 2 s, add up to two minutes and are never one step.
    WallClockSteps w(k2026, 0);
    std::int64_t drift = 0;
    for (std::int64_t mono = 2'000; mono <= 3 * 86'400'000LL; mono += 2'000) {
        drift += 1;
        CHECK_FALSE(w.observe(k2026 + mono + drift, mono).has_value());
    }
    // A 59 s correction is below the threshold.
    CHECK_FALSE(
        w.observe(k2026 + 3 * 86'400'000LL + drift + 59'000 + 2'000, 3 * 86'400'000LL + 2'000).has_value());
}

TEST(WallClock, TimesBeforeTheFloorAreUnknown) {
    CHECK_FALSE(wall_time_known(0));
    CHECK_FALSE(wall_time_known(86'400'000));  // 1970-01-02: the clock was not set
    CHECK(wall_time_known(k2026));
}

TEST(WallClock, ATlsErrorOfTheClockSaysWhatTheClockReads) {
    // libcurl (OpenSSL) for X509_V_ERR_CERT_NOT_YET_VALID and _HAS_EXPIRED.
    STRCMP_EQUAL(" (the system clock reads 1970-01-01T00:01:05Z: it is not set; NTP has not answered yet?)",
                 tls_clock_hint("SSL certificate problem: certificate is not yet valid", 65'000).c_str());
    STRCMP_EQUAL(" (the system clock reads 2026-01-01T00:00:00Z: if that is late, set the clock)",
                 tls_clock_hint("SSL certificate problem: certificate has expired", k2026).c_str());
    STRCMP_EQUAL("", tls_clock_hint("SSL certificate problem: self-signed certificate", 65'000).c_str());
    STRCMP_EQUAL("", tls_clock_hint("Could not resolve host: api", 65'000).c_str());
}

TEST(WallClock, StepTextSaysTheTwoLargestUnits) {
    STRCMP_EQUAL("+56y 1d", step_text(56 * kYear + 86'400'000 + 5'000).c_str());
    STRCMP_EQUAL("-3h 4m", step_text(-(3 * 3'600'000 + 4 * 60'000)).c_str());
    STRCMP_EQUAL("+0s", step_text(0).c_str());
    STRCMP_EQUAL("+1m 30s", step_text(90'000).c_str());
}
