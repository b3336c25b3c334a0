// Image GC's victim selection and policy checks (core/image_gc.h), rows
// from kubelet's pkg/kubelet/images/image_gc_manager_test.go, each naming
// the upstream test it follows, plus the edge rows (DaemonSet images kept).

#include <string>
#include <vector>

#include "core/image_gc.h"

#include <CppUTest/TestHarness.h>

using namespace daemonlet;

namespace {

const std::int64_t kNow = 1'000'000;

GcImage image(const char* digest, std::int64_t size, std::int64_t imported, std::int64_t last_used,
              std::vector<std::string> names = {}) {
    return GcImage{digest, std::move(names), size, imported, last_used};
}

struct Row {
    const char* name;
    std::vector<GcImage> images;
    std::set<std::string> in_use;
    FsUsage usage;
    ImageGcPolicy policy;
    std::vector<std::string> victims;  // digests, in order
};

const ImageGcPolicy kPolicy{90, 80, 0};
const ImageGcPolicy kDefaults{};
const FsUsage kFull{1000, 50};  // 95 % used: 150 bytes to free down to 80 %

const Row kRows[] = {
    // TestGarbageCollectBelowLowThreshold: 40 % used, under the high threshold.
    {"TestGarbageCollectBelowLowThreshold: nothing",
     {image("sha256:a", 450, 0, 0)},
     {},
     {1000, 600},
     kPolicy,
     {}},
    // TestGarbageCollectBelowSuccess: 95 % used; amountToFree 150; the 450-byte image goes.
    {"TestGarbageCollectBelowSuccess: one image frees enough",
     {image("sha256:a", 450, 0, 0)},
     {},
     kFull,
     kPolicy,
     {"sha256:a"}},
    // TestGarbageCollectNotEnoughFreed: removed even though it is not enough.
    {"TestGarbageCollectNotEnoughFreed: removed anyway",
     {image("sha256:a", 50, 0, 0)},
     {},
     kFull,
     kPolicy,
     {"sha256:a"}},
    // TestGarbageCollectCadvisorFailure's sibling: an unknown capacity frees nothing.
    {"unknown capacity: nothing", {image("sha256:a", 50, 0, 0)}, {}, {0, 0}, kPolicy, {}},
    // GarbageCollect: usagePercent >= HighThresholdPercent triggers (exactly 90 %).
    {"GarbageCollect: usage equal to high triggers",
     {image("sha256:a", 500, 0, 0)},
     {},
     {1000, 100},
     kPolicy,
     {"sha256:a"}},
    {"GarbageCollect: usage 89 % under high 90",
     {image("sha256:a", 500, 0, 0)},
     {},
     {1000, 110},
     kPolicy,
     {}},
    // TestFreeSpaceImagesInUseContainersAreIgnored: the image a container uses stays.
    {"TestFreeSpaceImagesInUseContainersAreIgnored",
     {image("sha256:a", 1024, 0, 0, {"docker.io/library/a:1"}), image("sha256:b", 2048, 0, 0)},
     {"docker.io/library/a:1"},
     {100000, 0},
     kPolicy,
     {"sha256:b"}},
    {"in use by digest",
     {image("sha256:a", 1024, 0, 0), image("sha256:b", 2048, 0, 0)},
     {"sha256:b"},
     {100000, 0},
     kPolicy,
     {"sha256:a"}},
    // TestFreeSpaceRemoveByLeastRecentlyUsed: the least recently used first; stops once enough.
    {"TestFreeSpaceRemoveByLeastRecentlyUsed",
     {image("sha256:new", 200, 0, 500), image("sha256:old", 200, 0, 200)},
     {},
     kFull,
     kPolicy,
     {"sha256:old"}},
    // TestFreeSpaceTiesBrokenByDetectedTime: same last use, the earlier detected first.
    {"TestFreeSpaceTiesBrokenByDetectedTime",
     {image("sha256:late", 200, 300, 500), image("sha256:early", 200, 100, 500)},
     {},
     kFull,
     kPolicy,
     {"sha256:early"}},
    // freeSpace takes victims until their sizes reach amountToFree (150 here).
    {"freeSpace: several until enough",
     {image("sha256:a", 60, 1, 0), image("sha256:b", 60, 2, 0), image("sha256:c", 60, 3, 0),
      image("sha256:d", 60, 4, 0)},
     {},
     kFull,
     kPolicy,
     {"sha256:a", "sha256:b", "sha256:c"}},
    // TestGarbageCollectImageNotOldEnough: MinAge keeps a young image; an old one goes.
    {"TestGarbageCollectImageNotOldEnough: young kept",
     {image("sha256:young", 500, kNow - 119, 0)},
     {},
     kFull,
     kDefaults,
     {}},
    {"TestGarbageCollectImageNotOldEnough: old enough",
     {image("sha256:young", 500, kNow - 119, 0), image("sha256:old", 500, kNow - 120, 0)},
     {},
     kFull,
     kDefaults,
     {"sha256:old"}},
    // Edge deviation: a cached DaemonSet's image (in in_use though no pod runs it) stays,
    // and so does every name of an image one of whose names is in use.
    {"edge: a DaemonSet's image not running stays, all its names",
     {image("sha256:ds", 500, 0, 0, {"docker.io/library/ds:1", "docker.io/library/ds:alias"}),
      image("sha256:old", 500, 0, 0, {"docker.io/library/app:1"})},
     {"docker.io/library/ds:1"},
     kFull,
     kPolicy,
     {"sha256:old"}},
};

std::string digests(const std::vector<GcImage>& images) {
    std::string s;
    for (const auto& i : images) s += i.digest + " ";
    return s;
}

}  // namespace

TEST_GROUP(ImageGc){};

TEST(ImageGc, SelectsVictimsAsKubeletsFreeSpace) {
    for (const Row& row : kRows) {
        auto got = select_image_victims(row.images, row.in_use, row.usage, row.policy, kNow);
        std::string want;
        for (const auto& d : row.victims) want += d + " ";
        STRCMP_EQUAL_TEXT(want.c_str(), digests(got).c_str(), row.name);
    }
}

TEST(ImageGc, BytesToFreeAsGarbageCollect) {
    // amountToFree = capacity*(100-low)/100 - available.
    LONGS_EQUAL(150, image_gc_bytes_to_free({1000, 50}, kPolicy));
    LONGS_EQUAL(0, image_gc_bytes_to_free({1000, 600}, kPolicy));
    // High 100: only a full file system triggers; kubelet's integer
    // percent reads 99.9 % used as 100 (1*100/1000 is 0 available).
    LONGS_EQUAL(0, image_gc_bytes_to_free({1000, 10}, ImageGcPolicy{100, 80, 0}));
    LONGS_EQUAL(199, image_gc_bytes_to_free({1000, 1}, ImageGcPolicy{100, 80, 0}));
    LONGS_EQUAL(200, image_gc_bytes_to_free({1000, 0}, ImageGcPolicy{100, 80, 0}));
}

namespace {
struct PolicyRow {
    const char* name;
    ImageGcPolicy policy;
    const char* error;  // a substring, "" when valid
};
// TestValidateImageGCPolicy (image_gc_manager_test.go) and NewImageGCManager's checks.
const PolicyRow kPolicyRows[] = {
    {"defaults", {85, 80, 120}, ""},
    {"high equal to low", {80, 80, 0}, ""},
    {"negative high", {-1, 80, 0}, "runtime.imageGC.highThresholdPercent: Invalid value: -1"},
    {"high over 100", {101, 80, 0}, "runtime.imageGC.highThresholdPercent: Invalid value: 101"},
    {"negative low", {85, -1, 0}, "runtime.imageGC.lowThresholdPercent: Invalid value: -1"},
    {"low over high", {50, 80, 0}, "can not be higher than highThresholdPercent (50)"},
    {"negative minimum age", {85, 80, -1}, "runtime.imageGC.minimumAgeSeconds"},
};
}  // namespace

TEST(ImageGc, ValidatesThePolicyAsNewImageGCManager) {
    for (const PolicyRow& row : kPolicyRows) {
        auto s = validate_image_gc_policy(row.policy);
        if (std::string(row.error).empty()) {
            CHECK_TEXT(s.ok(), row.name);
        } else {
            CHECK_TEXT(!s.ok(), row.name);
            CHECK_TEXT(s.error().message.find(row.error) != std::string::npos,
                       (std::string(row.name) + ": " + s.error().message).c_str());
        }
    }
}
