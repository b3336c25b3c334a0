// The static pods' admission, the agent's side of StaticPods
// (static_pods.h): what its decisions do here. The kubelet's admission
// (kubelet.go HandlePodAdditions: the sysctl handler, then core
// admit_static_pod: NodeAffinity, NodePorts against the pods that run) is
// decided when the pod is created, and again for every adopted static pod
// when the agent starts, as the kubelet admits every pod again at its start
// (core readmit_static_pods): one no longer admissible stops and is Failed
// with the kubelet's reason, one refused before and admissible now starts.
// A rejected pod otherwise stays, Failed, until its file changes or goes
// (or `delete pod` makes it try again). A pod its file no longer offers
// (the file removed or edited, while the agent ran or before it started)
// stops with its preStop hooks and grace period, from the file's last
// version (StaticPods::of).
#include <memory>
#include <vector>

#include "agent/daemon/agent.h"
#include "core/sysctl.h"
#include "platform/log.h"

namespace daemonlet::agent {

using platform::Level;
using platform::log;

void Agent::readmit_adopted_static_pods() {
    // allowedUnsafeSysctls was checked with the configuration: an error
    // here is a bug, and admits nothing anew.
    auto allowlist = kubelet_sysctl_allowlist(kernel_release_, config_.allowed_unsafe_sysctls);
    if (!allowlist) return;
    std::vector<std::shared_ptr<const PodSpec>> held;
    std::vector<const PodSpec*> active;  // the DaemonSets' pods that run
    for (const auto& [uid, p] : pods_) {
        if (p.rec.is_static() || p.rec.deleting || p.rec.phase == PodPhase::Succeeded ||
            p.rec.phase == PodPhase::Failed)
            continue;
        if (auto spec = pod_source(p.rec).spec) {
            active.push_back(spec.get());
            held.push_back(std::move(spec));
        }
    }
    // Each change stops the pod; the reconcile then creates it again, through
    // create_static_pod's admission: Failed with the refusal's reason (its
    // processes gone), or started.
    for (const auto& r :
         readmit_static_pods(static_pods_.adopted(), node_, allowlist.value(), std::move(active)))
        workers_->terminate(r.uid, r.rejection ? "not admitted at this start: " + r.rejection->reason + ": " +
                                                     r.rejection->message
                                               : "admitted at this start (refused before): it starts");
}

void Agent::create_static_pod(const std::string& uid, const StaticPods::Desired& s) {
    const Pod& pod = *s.pod;
    LivePod p;
    p.rec.uid = uid;
    p.rec.name = pod.metadata.name;
    p.rec.namespace_ = pod.metadata.namespace_;
    p.rec.source = s.path;
    p.rec.revision_hash = uid;  // kubernetes.io/config.hash
    p.rec.created_at_ms = clock_.wall_ms();
    const std::string name = p.rec.namespace_ + "/" + p.rec.name;
    // The pods that run (not finished, not stopping): their host ports are
    // taken (the kubelet's admission over its active pods).
    std::vector<std::shared_ptr<const PodSpec>> held;
    std::vector<const PodSpec*> active;
    for (const auto& [other_uid, other] : pods_) {
        if (other.rec.deleting || other.rec.phase == PodPhase::Succeeded ||
            other.rec.phase == PodPhase::Failed)
            continue;
        if (auto spec = pod_source(other.rec).spec) {
            active.push_back(spec.get());
            held.push_back(std::move(spec));
        }
    }
    // kubelet's canAdmitPod: the sysctl handler, then the predicates;
    // rejectPod: Failed, with the first refusal's reason; nothing runs.
    auto rejected = admit_pod(pod.spec);
    if (!rejected) rejected = admit_static_pod(pod, node_, active);
    if (rejected) return reject_pod(std::move(p), *rejected, "static pod " + name + " from " + s.path);
    log(Level::Notice,
        "static pod " + name + " created from " + s.path + " (restartPolicy " + restart_policy_of(p.rec) +
            ")",
        {{"DAEMONLET_POD", name}});
    start_new_pod(std::move(p), pod.spec);
}

}  // namespace daemonlet::agent
