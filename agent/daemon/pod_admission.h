// The PodAdmission component: the kubelet's pod admission
// (pkg/kubelet/kubelet.go HandlePodAdditions -> canAdmitPod, its admit
// handlers; pkg/kubelet/lifecycle/predicate.go predicateAdmitHandler).
// It owns the sysctl allowlist (pkg/kubelet/sysctl allowlist.go
// NewAllowlist: the safe sysctls of this kernel, then the configuration's
// allowedUnsafeSysctls; built once, again on a reload) and the "active pods"
// admission is decided against (kubelet.go filterOutInactivePods: neither
// stopping nor Succeeded nor Failed). Decisions only: the agent logs,
// rejects (rejectPod: the pod Failed, saved, its Event) and starts
// (agent/daemon/static_admission.cpp, pods.cpp).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "agent/daemon/pod_table.h"
#include "core/model.h"
#include "core/pod.h"
#include "core/static_pod.h"
#include "core/sysctl.h"

namespace daemonlet::agent {

class PodAdmission {
  public:
    // What admission reads of the agent: the spec each pod runs.
    class Host {
      public:
        virtual ~Host() = default;
        // null: unknown (the pod is not counted as active).
        virtual std::shared_ptr<const PodSpec> admission_spec(const PodRecord& rec) const = 0;
    };

    // The active pods' specs, kept alive while they are used.
    struct ActivePods {
        std::vector<std::shared_ptr<const PodSpec>> held;
        std::vector<const PodSpec*> specs;  // in uid order
    };

    PodAdmission(Host& host, const PodTable& pods) : host_(host), pods_(pods) { rebuild(); }
    PodAdmission(const PodAdmission&) = delete;
    PodAdmission& operator=(const PodAdmission&) = delete;

    // uname -r at the agent's start: which safe sysctls the kernel
    // namespaces (SafeSysctlAllowlist).
    void set_kernel_release(std::string release);
    // allowedUnsafeSysctls, at the start and on a reload.
    void set_allowed_unsafe_sysctls(std::vector<std::string> patterns);

    // The admit handler for every pod (a DaemonSet's, a static pod):
    // the sysctl allowlist (core admit_sysctls, SysctlForbidden). An
    // allowlist the configuration could not make (checked when it is
    // loaded: a bug) refuses every pod with its message.
    std::optional<PodRejection> admit(const PodSpec& spec) const;
    // A static pod's canAdmitPod: the sysctl handler first, then the
    // predicates (core admit_static_pod: NodeAffinity, NodePorts against
    // `active`).
    std::optional<PodRejection> admit_static(const Pod& pod, const Node& node,
                                             const std::vector<const PodSpec*>& active) const;
    // The pods admission counts: not deleting, not Succeeded nor Failed,
    // with a known spec; without the static ones if `skip_static`.
    ActivePods active_pods(bool skip_static) const;
    // The kubelet's admission of every pod at its start (core
    // readmit_static_pods) over the adopted static pods, against the
    // active DaemonSets' pods; nothing without an allowlist.
    std::vector<StaticReadmission> readmit(std::vector<AdoptedStaticPod> adopted, const Node& node) const;

  private:
    void rebuild();

    Host& host_;
    const PodTable& pods_;
    std::string kernel_release_;
    std::vector<std::string> allowed_unsafe_;
    std::optional<SysctlAllowlist> allowlist_;  // nullopt: allowlist_error_ says why
    std::string allowlist_error_;
};

}  // namespace daemonlet::agent
