// The PodAdmission component (pod_admission.h).
#include "agent/daemon/pod_admission.h"

#include <utility>

namespace daemonlet::agent {

void PodAdmission::set_kernel_release(std::string release) {
    kernel_release_ = std::move(release);
    rebuild();
}

void PodAdmission::set_allowed_unsafe_sysctls(std::vector<std::string> patterns) {
    allowed_unsafe_ = std::move(patterns);
    rebuild();
}

void PodAdmission::rebuild() {
    auto made = kubelet_sysctl_allowlist(kernel_release_, allowed_unsafe_);
    if (made) {
        allowlist_ = std::move(made).value();
        allowlist_error_.clear();
    } else {
        allowlist_.reset();
        allowlist_error_ = made.error().message;
    }
}

std::optional<PodRejection> PodAdmission::admit(const PodSpec& spec) const {
    if (!allowlist_) return PodRejection{kSysctlForbiddenReason, allowlist_error_};
    return admit_sysctls(*allowlist_, spec);
}

std::optional<PodRejection> PodAdmission::admit_static(const Pod& pod, const Node& node,
                                                       const std::vector<const PodSpec*>& active) const {
    if (auto rejected = admit(pod.spec)) return rejected;
    return admit_static_pod(pod, node, active);
}

PodAdmission::ActivePods PodAdmission::active_pods(bool skip_static) const {
    ActivePods out;
    for (const auto& [uid, p] : pods_) {
        if ((skip_static && p.rec.is_static()) || p.rec.deleting || p.rec.phase == PodPhase::Succeeded ||
            p.rec.phase == PodPhase::Failed)
            continue;
        if (auto spec = host_.admission_spec(p.rec)) {
            out.specs.push_back(spec.get());
            out.held.push_back(std::move(spec));
        }
    }
    return out;
}

std::vector<StaticReadmission> PodAdmission::readmit(std::vector<AdoptedStaticPod> adopted,
                                                     const Node& node) const {
    if (!allowlist_) return {};
    ActivePods active = active_pods(/*skip_static=*/true);
    return readmit_static_pods(std::move(adopted), node, *allowlist_, std::move(active.specs));
}

}  // namespace daemonlet::agent
