// Which images the agent's image garbage collection removes, as kubelet's
// image GC decides (pkg/kubelet/images/image_gc_manager.go,
// realImageGCManager.GarbageCollect and freeSpace), over plain values.
//
// kubelet's rules kept:
// - usage = 100 - available*100/capacity of the file system holding the
//   images (GarbageCollect: usagePercent); nothing is removed below
//   highThresholdPercent; at or above it, amountToFree =
//   capacity*(100-lowThresholdPercent)/100 - available.
// - victims least recently used first, ties by first detection (here the
//   import time; imagesInEvictionOrder / byLastUsedAndDetected);
//   an image in use is never a victim; an image detected (imported) less
//   than minimumAge ago is skipped (freeSpace: MinAge);
// - victims are taken until their sizes reach amountToFree (freeSpace:
//   spaceFreed >= bytesToFree).
// The edge deviation is in what counts as in use: the caller adds the
// images of every DaemonSet it would place on this node, running or not
// (an offline board must keep what its DaemonSets need to restart after a
// reboot); kubelet counts only the images of existing containers.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "core/result.h"

namespace daemonlet {

// kubelet's ImageGCPolicy, from runtime.imageGC (config.h).
struct ImageGcPolicy {
    int high_threshold_percent = 85;   // imageGCHighThresholdPercent
    int low_threshold_percent = 80;    // imageGCLowThresholdPercent
    std::int64_t minimum_age_s = 120;  // imageMinimumGCAge (2m0s)
    bool operator==(const ImageGcPolicy&) const = default;
};

// NewImageGCManager's checks: each percent in [0, 100], low <= high.
// Errors name the field (runtime.imageGC.<name>) and the reason.
Status validate_image_gc_policy(const ImageGcPolicy& policy);

struct GcImage {
    std::string digest;              // the image's identity: every name of it goes with it
    std::vector<std::string> names;  // normalised references, for matching and logs
    std::int64_t size = 0;           // bytes
    std::int64_t imported_s = 0;     // seconds since the epoch (firstDetected)
    std::int64_t last_used_s = 0;    // last time a container of ours used it; 0: never seen in use
};

struct FsUsage {
    std::int64_t capacity = 0;   // bytes of the file system
    std::int64_t available = 0;  // bytes free for us
};

// The bytes to free, 0 when usage is below the high threshold (or the
// capacity unknown).
std::int64_t image_gc_bytes_to_free(const FsUsage& usage, const ImageGcPolicy& policy);

// The images to remove, in order, for `usage` at `now_s`: none when usage
// is under the high threshold. `in_use` holds normalised references or
// digests; an image any of whose names or whose digest is in it is kept.
std::vector<GcImage> select_image_victims(std::vector<GcImage> images, const std::set<std::string>& in_use,
                                          const FsUsage& usage, const ImageGcPolicy& policy,
                                          std::int64_t now_s);

}  // namespace daemonlet
