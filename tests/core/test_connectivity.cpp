// The connectivity state's hysteresis: a flapping link does not flap the
// state; a link healthy (or failing) long enough does change it.
#include "core/connectivity.h"

#include <CppUTest/TestHarness.h>

using namespace daemonlet;

TEST_GROUP(Connectivity){};

TEST(Connectivity, StartsDisconnectedAndConnectsAfterAHealthyWhile) {
    Connectivity c({3000, 15000});
    CHECK(c.state() == LinkState::Disconnected);
    CHECK_FALSE(c.report(true, 1000));
    LONGS_EQUAL(4000, *c.next_change_ms());
    CHECK_FALSE(c.tick(3999));
    CHECK(c.tick(4000));
    CHECK(c.state() == LinkState::Connected);
    LONGS_EQUAL(4000, c.since_ms());
    CHECK_FALSE(c.next_change_ms().has_value());
}

TEST(Connectivity, ShortOutagesAndShortRecoveriesChangeNothing) {
    Connectivity c({3000, 15000});
    c.report(true, 0);
    c.tick(3000);
    // Failing for 14.9 s, then healthy again: still connected, no transition.
    c.report(false, 10'000, "watch: connection reset");
    CHECK_FALSE(c.tick(24'999));
    CHECK_FALSE(c.report(true, 24'999));
    CHECK(c.state() == LinkState::Connected);
    LONGS_EQUAL(1, c.transitions());
    // A long outage disconnects, and keeps the reason.
    c.report(false, 30'000, "list: 503");
    c.report(false, 40'000);  // still failing: the outage started at 30 s
    CHECK(c.tick(45'000));
    CHECK(c.state() == LinkState::Disconnected);
    STRCMP_EQUAL("list: 503", c.last_error().c_str());
    // A flapping link (healthy 1 s, failing 1 s) never reconnects.
    for (std::int64_t t = 50'000; t < 60'000; t += 2000) {
        CHECK_FALSE(c.report(true, t));
        CHECK_FALSE(c.report(false, t + 1000));
    }
    CHECK(c.state() == LinkState::Disconnected);
    LONGS_EQUAL(2, c.transitions());
}

// A new link is not judged: Disconnected then means "not proven yet" (a
// rollout the cluster paces waits, issue 14 §3), until the link connects or
// has failed for down_after_ms since it was made.
TEST(Connectivity, ANewLinkIsJudgedWhenItConnectsOrAfterTheDownThreshold) {
    Connectivity never({3000, 15000});
    never.begin(1000);
    CHECK_FALSE(never.judged());
    LONGS_EQUAL(16'000, *never.next_change_ms());
    CHECK_FALSE(never.report(false, 5000, "dial: connection refused"));  // counted from begin
    CHECK_FALSE(never.tick(15'999));
    CHECK_FALSE(never.judged());
    CHECK(never.tick(16'000));  // the verdict is news, the state is the same
    CHECK(never.judged());
    CHECK(never.state() == LinkState::Disconnected);
    LONGS_EQUAL(0, never.transitions());
    CHECK_FALSE(never.next_change_ms().has_value());
    CHECK_FALSE(never.tick(30'000));

    Connectivity soon({3000, 15000});
    soon.begin(0);
    soon.report(true, 2000);
    CHECK_FALSE(soon.judged());
    CHECK(soon.tick(5000));
    CHECK(soon.judged());
    CHECK(soon.state() == LinkState::Connected);
}
