// The image-wait machine of one container, pure: what a container whose
// image is not in the store waits in, and the per-image back-off of failed
// registry pulls, as kubelet's image manager (pkg/kubelet/images
// image_manager.go EnsureImageExists) and its imageBackOff
// (pkg/kubelet/kubelet.go NewBackOff(10 s, 300 s)). The agent
// (agent/daemon/images.cpp, agent/daemon/pods.cpp) runs the pulls and the timers.
//
//   absent, policy Never                    -> ErrImageNeverPull (waits for an import)
//   absent, no pull possible, first time    -> ErrImagePull
//   absent, no pull possible, again         -> ImagePullBackOff
//   pull failed, first time for the wait    -> ErrImagePull, retry after the image's back-off
//   pull failed again                       -> ImagePullBackOff
//   a pull asked while the image backs off  -> ImagePullBackOff until retry_at
//
// Deviation: kubelet keys its back-off by pod and image; here one pull per
// image serves every container waiting for it, so the key is the image.
#pragma once

#include <cstdint>
#include <string>

#include "core/error_code.h"
#include "core/reconcile.h"

namespace daemonlet {

// Whether a waiting reason is one of the image waits above.
bool is_image_wait(const std::string& reason);

// The waiting reason of a container whose image is absent and is not being
// pulled: ErrImageNeverPull for imagePullPolicy Never, else ErrImagePull the
// first time and ImagePullBackOff while it waits again (`waited_before`:
// its reason already is an image wait).
const char* image_wait_reason(bool never_pull, bool waited_before);

// The back-off after a failed pull of an image, given the previous one (0:
// none failed): flowcontrol.Backoff.Next as image_manager.go calls it, the
// initial period first, then twice the last, up to max.
std::int64_t next_image_pull_backoff(std::int64_t previous_ms, const BackoffPolicy& policy);

// What a container that needs a pull of its image does now.
enum class ImagePullStep {
    BackOff,  // a failed pull's back-off runs: ImagePullBackOff until retry_at
    Join,     // a pull of the image runs: wait for it
    Pull,     // start a pull
};
ImagePullStep image_pull_step(bool pull_running, std::int64_t retry_at_mono_ms, std::int64_t now_mono_ms);

// imagePullPolicy Always on an offline board: whether a pull that failed
// with this error code lets the image in the local store run, if it is
// there (the caller asks the runtime after this says yes). Only for a
// registry found unreachable: a deliberate deviation from kubelet, which
// fails the start, as an offline board runs its static pods.
bool may_run_local_image(ErrorCode pull_error_code);

}  // namespace daemonlet
