#include "core/image_wait.h"

#include <algorithm>

namespace daemonlet {

bool is_image_wait(const std::string& reason) {
    return reason == "ErrImagePull" || reason == "ImagePullBackOff" || reason == "ErrImageNeverPull";
}

const char* image_wait_reason(bool never_pull, bool waited_before) {
    if (never_pull) return "ErrImageNeverPull";
    return waited_before ? "ImagePullBackOff" : "ErrImagePull";
}

std::int64_t next_image_pull_backoff(std::int64_t previous_ms, const BackoffPolicy& policy) {
    if (previous_ms <= 0) return policy.initial_ms;
    // min(2 x previous, max) without overflowing.
    return previous_ms > policy.max_ms / 2 ? policy.max_ms : std::min(previous_ms * 2, policy.max_ms);
}

ImagePullStep image_pull_step(bool pull_running, std::int64_t retry_at_mono_ms, std::int64_t now_mono_ms) {
    if (pull_running) return ImagePullStep::Join;
    return now_mono_ms < retry_at_mono_ms ? ImagePullStep::BackOff : ImagePullStep::Pull;
}

bool may_run_local_image(ErrorCode pull_error_code) { return pull_error_code == ErrorCode::Unreachable; }

}  // namespace daemonlet
