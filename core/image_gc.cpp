#include "core/image_gc.h"

#include <algorithm>

namespace daemonlet {

Status validate_image_gc_policy(const ImageGcPolicy& p) {
    auto percent = [](int v, const char* field) -> Status {
        if (v < 0 || v > 100)
            return Error{ErrorCode::Invalid, std::string("runtime.imageGC.") + field + ": Invalid value: " +
                                                 std::to_string(v) + ": must be in range [0-100]"};
        return Ok{};
    };
    if (auto s = percent(p.high_threshold_percent, "highThresholdPercent"); !s) return s;
    if (auto s = percent(p.low_threshold_percent, "lowThresholdPercent"); !s) return s;
    if (p.low_threshold_percent > p.high_threshold_percent)
        return Error{ErrorCode::Invalid, "runtime.imageGC.lowThresholdPercent: Invalid value: " +
                                             std::to_string(p.low_threshold_percent) +
                                             ": can not be higher than highThresholdPercent (" +
                                             std::to_string(p.high_threshold_percent) + ")"};
    if (p.minimum_age_s < 0)
        return Error{ErrorCode::Invalid,
                     "runtime.imageGC.minimumAgeSeconds: Invalid value: " + std::to_string(p.minimum_age_s) +
                         ": must be greater than or equal to 0"};
    return Ok{};
}

std::int64_t image_gc_bytes_to_free(const FsUsage& usage, const ImageGcPolicy& policy) {
    if (usage.capacity <= 0) return 0;
    const std::int64_t available = std::clamp<std::int64_t>(usage.available, 0, usage.capacity);
    // Integer arithmetic as kubelet's: 100 - int(available*100/capacity).
    const std::int64_t usage_percent = 100 - available * 100 / usage.capacity;
    if (usage_percent < policy.high_threshold_percent) return 0;
    const std::int64_t to_free = usage.capacity * (100 - policy.low_threshold_percent) / 100 - available;
    return std::max<std::int64_t>(to_free, 0);
}

std::vector<GcImage> select_image_victims(std::vector<GcImage> images, const std::set<std::string>& in_use,
                                          const FsUsage& usage, const ImageGcPolicy& policy,
                                          std::int64_t now_s) {
    std::vector<GcImage> out;
    const std::int64_t to_free = image_gc_bytes_to_free(usage, policy);
    if (to_free <= 0) return out;
    // byLastUsedAndDetected: least recently used first, then first detected;
    // the digest last, so that the order never depends on the input's.
    std::sort(images.begin(), images.end(), [](const GcImage& a, const GcImage& b) {
        if (a.last_used_s != b.last_used_s) return a.last_used_s < b.last_used_s;
        if (a.imported_s != b.imported_s) return a.imported_s < b.imported_s;
        return a.digest < b.digest;
    });
    std::int64_t freed = 0;
    for (GcImage& image : images) {
        bool used = in_use.count(image.digest) > 0;
        for (const std::string& n : image.names) used = used || in_use.count(n) > 0;
        if (used) continue;
        if (now_s - image.imported_s < policy.minimum_age_s) continue;
        freed += image.size;
        out.push_back(std::move(image));
        if (freed >= to_free) break;
    }
    return out;
}

}  // namespace daemonlet
