// The kubelet's crash-loop backoff for one container: kuberuntime doBackOff
// over flowcontrol.Backoff(10 s, 300 s) (Kubernetes 1.25 to 1.30). Rows are
// sequences of exits, each with how long the container ran and the restart
// delay expected; they pin the rules of client-go util/flowcontrol/backoff.go
// (Next, IsInBackOffSince, hasExpired) as its backoff_test.go does, and the
// kubelet's use of them.
#include <cstdint>
#include <string>
#include <vector>

#include "core/reconcile.h"

// CppUTest last: its leak-detection macros redefine new.
#include <CppUTest/TestHarness.h>

using namespace daemonlet;

namespace {

struct Exit {
    std::int64_t ran_for_ms;
    std::int64_t expected_delay_ms;
};

struct BackoffRow {
    const char* name;
    BackoffPolicy policy;
    std::vector<Exit> exits;
};

constexpr std::int64_t kSec = 1000;
constexpr std::int64_t kMin = 60 * kSec;

const BackoffRow kBackoffRows[] = {
    {"doBackOff: the first exit restarts at once (no backoff entry yet; Next starts it at 10 s)",
     {},
     {{1 * kSec, 0}}},
    {"TestSlowBackoff-like sequence: 0, then 10, 20, 40, 80, 160, capped at 300, 300",
     {},
     {{kSec, 0},
      {kSec, 10 * kSec},
      {kSec, 20 * kSec},
      {kSec, 40 * kSec},
      {kSec, 80 * kSec},
      {kSec, 160 * kSec},
      {kSec, 300 * kSec},
      {kSec, 300 * kSec}}},
    {"hasExpired: a run longer than 2 x max (10 min) forgets the backoff: restart at once, then 10 s",
     {},
     {{kSec, 0},
      {kSec, 10 * kSec},
      {kSec, 20 * kSec},
      {kSec, 40 * kSec},
      {10 * kMin + 1, 0},
      {kSec, 10 * kSec},
      {kSec, 20 * kSec}}},
    {"hasExpired is strict: a run of exactly 10 min keeps the backoff",
     {},
     {{kSec, 0}, {kSec, 10 * kSec}, {10 * kMin, 20 * kSec}}},
    {"IsInBackOffSince: a long run under 10 min still waits the capped backoff",
     {},
     {{kSec, 0},
      {kSec, 10 * kSec},
      {kSec, 20 * kSec},
      {kSec, 40 * kSec},
      {kSec, 80 * kSec},
      {kSec, 160 * kSec},
      {9 * kMin, 300 * kSec},
      {9 * kMin, 300 * kSec}}},
    {"daemonlet: a policy's own initial, max and reset are honoured",
     {1 * kSec, 5 * kSec, 20 * kSec},
     {{kSec, 0}, {kSec, 1 * kSec}, {kSec, 2 * kSec}, {kSec, 4 * kSec}, {kSec, 5 * kSec}, {21 * kSec, 0}}},
    {"flowcontrol Next: an initial above max is used once, then max",
     {500 * kSec, 300 * kSec, 600 * kSec},
     {{kSec, 0}, {kSec, 500 * kSec}, {kSec, 300 * kSec}}},
    {"daemonlet: doubling near INT64_MAX saturates at max",
     {INT64_MAX / 2 + 1, INT64_MAX, INT64_MAX},
     {{kSec, 0}, {kSec, INT64_MAX / 2 + 1}, {kSec, INT64_MAX}, {kSec, INT64_MAX}}},
};

}  // namespace

TEST_GROUP(CrashLoopBackoff){};

TEST(CrashLoopBackoff, DelaysMatchTheKubelet) {
    for (const auto& row : kBackoffRows) {
        BackoffState state;
        for (std::size_t i = 0; i < row.exits.size(); ++i) {
            const std::string name = std::string(row.name) + ": exit " + std::to_string(i + 1);
            const std::int64_t delay = next_restart_delay(state, row.exits[i].ran_for_ms, row.policy);
            LONGLONGS_EQUAL_TEXT(row.exits[i].expected_delay_ms, delay, name.c_str());
            LONGLONGS_EQUAL_TEXT(delay, state.delay_ms, (name + ": state.delay_ms").c_str());
        }
    }
}

TEST(CrashLoopBackoff, StateCarriesTheNextWait) {
    BackoffState state;
    const BackoffPolicy policy;
    next_restart_delay(state, kSec, policy);
    LONGLONGS_EQUAL(10 * kSec, state.backoff_ms);  // what the next exit waits (kubelet's backOff.Get)
    next_restart_delay(state, kSec, policy);
    LONGLONGS_EQUAL(10 * kSec, state.delay_ms);
    LONGLONGS_EQUAL(20 * kSec, state.backoff_ms);
}

// kubelet.go syncLoop while runtimeErrors() is set: "Skipping pod
// synchronization", sleeping 100 ms, doubled each time, at most 5 s.
TEST(CrashLoopBackoff, RuntimeDownRetriesLikeTheSyncLoop) {
    const std::int64_t expected[] = {100, 200, 400, 800, 1600, 3200, 5000, 5000};
    std::int64_t previous = 0;
    for (std::int64_t want : expected) {
        previous = next_runtime_down_delay(previous);
        LONGLONGS_EQUAL(want, previous);
    }
}
