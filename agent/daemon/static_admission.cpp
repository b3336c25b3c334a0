// The static pods' admission, the agent's side of StaticPods
// (static_pods.h): what its decisions do here. The kubelet's admission
// (PodAdmission, pod_admission.h: the sysctl handler, then core
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

#include "agent/daemon/agent.h"
#include "platform/log.h"

namespace daemonlet::agent {

using platform::Level;
using platform::log;

std::shared_ptr<const PodSpec> Agent::admission_spec(const PodRecord& rec) const {
    return pod_source(rec).spec;
}

void Agent::readmit_adopted_static_pods() {
    // PodAdmission::readmit: against the active pods but the static ones.
    // Each change stops the pod; the reconcile then creates it again, through
    // create_static_pod's admission: Failed with the refusal's reason (its
    // processes gone), or started.
    for (const auto& r : admission_.readmit(static_pods_.adopted(), node_state_->node()))
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
    // taken (the kubelet's admission over its active pods). kubelet's
    // canAdmitPod: the sysctl handler, then the predicates; rejectPod:
    // Failed, with the first refusal's reason; nothing runs.
    const PodAdmission::ActivePods active = admission_.active_pods(/*skip_static=*/false);
    auto rejected = admission_.admit_static(pod, node_state_->node(), active.specs);
    if (rejected) return reject_pod(std::move(p), *rejected, "static pod " + name + " from " + s.path);
    log(Level::Notice,
        "static pod " + name + " created from " + s.path + " (restartPolicy " + restart_policy_of(p.rec) +
            ")",
        {{"DAEMONLET_POD", name}});
    start_new_pod(std::move(p), pod.spec);
}

}  // namespace daemonlet::agent
