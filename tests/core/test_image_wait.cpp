// The image-wait machine (core/image_wait.h): the waiting reasons of
// kubelet's image manager (pkg/kubelet/images image_manager.go
// EnsureImageExists, types.go ErrImagePull, ErrImagePullBackOff,
// ErrImageNeverPull) and its per-image back-off (kubelet.go imageBackOff,
// flowcontrol.Backoff.Next).
#include <cstdint>
#include <string>
#include <vector>

#include "core/image_wait.h"

// CppUTest last: its leak-detection macros redefine new.
#include <CppUTest/TestHarness.h>

using namespace daemonlet;

namespace {

struct ReasonRow {
    const char* name;
    bool never_pull;
    bool waited_before;
    const char* reason;
};

const ReasonRow kReasonRows[] = {
    {"EnsureImageExists: imagePullPolicy Never and absent is ErrImageNeverPull", true, false,
     "ErrImageNeverPull"},
    {"EnsureImageExists: Never stays ErrImageNeverPull on every retry", true, true, "ErrImageNeverPull"},
    {"EnsureImageExists: the first failed pull is ErrImagePull", false, false, "ErrImagePull"},
    {"EnsureImageExists: backing off after it is ImagePullBackOff", false, true, "ImagePullBackOff"},
};

struct PullBackoffRow {
    const char* name;
    BackoffPolicy policy;
    std::vector<std::int64_t> expected;  // after each failure in turn
};

constexpr std::int64_t kSec = 1000;

const PullBackoffRow kPullBackoffRows[] = {
    {"imageBackOff NewBackOff(10 s, 300 s): 10, 20, 40, 80, 160, then 300 s",
     {},
     {10 * kSec, 20 * kSec, 40 * kSec, 80 * kSec, 160 * kSec, 300 * kSec, 300 * kSec}},
    {"flowcontrol Next: the configuration's own initial and max",
     {1 * kSec, 5 * kSec, kCrashLoopResetAfterMs},
     {1 * kSec, 2 * kSec, 4 * kSec, 5 * kSec, 5 * kSec}},
    {"daemonlet: doubling near INT64_MAX saturates at max",
     {INT64_MAX / 2 + 1, INT64_MAX, INT64_MAX},
     {INT64_MAX / 2 + 1, INT64_MAX, INT64_MAX}},
};

struct StepRow {
    const char* name;
    bool running;
    std::int64_t retry_at;
    std::int64_t now;
    ImagePullStep expected;
};

const StepRow kStepRows[] = {
    {"EnsureImageExists: no failure yet, pull", false, 0, 100, ImagePullStep::Pull},
    {"imageBackOff IsInBackOffSince: before retry_at, back off", false, 200, 100, ImagePullStep::BackOff},
    {"imageBackOff: at retry_at the back-off is over, pull", false, 200, 200, ImagePullStep::Pull},
    {"daemonlet: one pull per image, a second container joins it", true, 0, 100, ImagePullStep::Join},
    {"daemonlet: a running pull is joined even inside a back-off window", true, 200, 100,
     ImagePullStep::Join},
};

}  // namespace

TEST_GROUP(ImageWait){};

TEST(ImageWait, WaitingReasonsAreKubeletsImageManagers) {
    for (const auto& row : kReasonRows)
        STRCMP_EQUAL_TEXT(row.reason, image_wait_reason(row.never_pull, row.waited_before), row.name);
    for (const char* r : {"ErrImagePull", "ImagePullBackOff", "ErrImageNeverPull"})
        CHECK_TEXT(is_image_wait(r), r);
    for (const char* r : {"", "ContainerCreating", "CrashLoopBackOff", "RunContainerError"})
        CHECK_FALSE_TEXT(is_image_wait(r), r);
}

TEST(ImageWait, PullBackoffDoublesPerImageUpToMax) {
    for (const auto& row : kPullBackoffRows) {
        std::int64_t b = 0;
        for (std::size_t i = 0; i < row.expected.size(); ++i) {
            b = next_image_pull_backoff(b, row.policy);
            const std::string what = std::string(row.name) + ", failure " + std::to_string(i + 1);
            CHECK_EQUAL_TEXT(row.expected[i], b, what.c_str());
        }
    }
}

TEST(ImageWait, PullStepBacksOffJoinsOrPulls) {
    for (const auto& row : kStepRows)
        CHECK_TEXT(image_pull_step(row.running, row.retry_at, row.now) == row.expected, row.name);
}

TEST(ImageWait, OnlyAnUnreachableRegistryLetsTheLocalImageRun) {
    CHECK_TEXT(may_run_local_image(ErrorCode::Unreachable), "daemonlet: offline board runs what it has");
    CHECK_FALSE_TEXT(may_run_local_image(ErrorCode::NotFound),
                     "EnsureImageExists: a missing image fails the start");
    CHECK_FALSE_TEXT(may_run_local_image(ErrorCode::Unauthorized),
                     "EnsureImageExists: refused credentials fail");
}
