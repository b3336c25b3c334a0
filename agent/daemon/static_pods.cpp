// Static pods: the v1 Pods of the manifest directory's files, run as the
// kubelet runs the pods of its staticPodPath (pkg/kubelet/config/file.go,
// common.go; kubelet.go HandlePodAdditions). Each file's last good version
// (Sources, sources.h) gives them, so a restart, a broken edit and a file
// removed while the agent was down answer as for DaemonSets.
//
// A static pod's UID is derived from the file's pod (core make_static_pod):
// an edit makes a new UID, so the old pod is stopped and the new one
// started, as the kubelet treats a changed static pod as a new pod; a pod
// no file offers any more is stopped. `delete pod` stops it and the next
// reconcile starts it again under the same UID, as the kubelet recreates a
// static pod. Admission (the sysctl handler, then core admit_static_pod:
// NodeAffinity, NodePorts against the pods that run) is decided when the
// pod is created, and again for every adopted static pod when the agent
// starts, as the kubelet admits every pod again at its start (core
// readmit_static_pods): one no longer admissible stops and is Failed with
// the kubelet's reason, one refused before and admissible now starts. A
// rejected pod otherwise stays, Failed, until its file changes or goes (or
// `delete pod` makes it try again). A pod its file no longer offers (the
// file removed or edited, while the agent ran or before it started) stops
// with its preStop hooks and grace period, from the file's last version.
#include <algorithm>
#include <set>
#include <tuple>

#include "agent/daemon/agent.h"
#include "core/pod_network.h"
#include "core/sysctl.h"
#include "platform/log.h"

namespace daemonlet::agent {

using platform::Level;
using platform::log;

void Agent::rebuild_static_pods() {
    std::map<std::string, StaticDesired> next;
    std::map<std::string, std::string> by_name;  // "namespace/name" -> path, the first file wins
    for (const auto& f : sources_->static_pods()) {
        auto pod = std::make_shared<const Pod>(make_static_pod(*f.pod, node_.metadata.name, f.path));
        const std::string key = pod->metadata.namespace_ + "/" + pod->metadata.name;
        auto [it, fresh] = by_name.emplace(key, f.path);
        if (!fresh) {
            // kubelet's filterInvalidPods: a name already taken in the
            // source. Said once per pairing, not per rebuild.
            if (static_conflicts_.insert(key + "|" + it->second + "|" + f.path).second)
                log(Level::Warning, "static pod " + key + " is defined in both " + it->second + " and " +
                                        f.path + "; using " + it->second + " (its path sorts first)");
            continue;
        }
        // Once per file version (its UID): hostPorts the runtime cannot
        // map, as for a DaemonSet's template (desired.cpp).
        if (!static_pods_.count(pod->metadata.uid))
            if (auto why = unmapped_host_ports(pod->spec, config_.runtime_type); !why.empty())
                log(Level::Warning, "static pod " + key + " from " + f.path + ": " + why);
        next[pod->metadata.uid] = StaticDesired{pod, f.path};
    }
    std::erase_if(static_deleted_, [&](const std::string& uid) { return !next.count(uid); });
    // A pod its file no longer offers keeps its spec until it has stopped.
    for (auto& [uid, s] : static_pods_)
        if (!next.count(uid) && pods_.contains(uid)) static_leaving_.emplace(uid, std::move(s));
    std::erase_if(static_leaving_, [&](const auto& e) { return next.count(e.first) > 0; });
    static_pods_ = std::move(next);
}

const Agent::StaticDesired* Agent::static_pod_of(const std::string& uid) const {
    auto it = static_pods_.find(uid);
    if (it != static_pods_.end()) return &it->second;
    it = static_leaving_.find(uid);
    return it == static_leaving_.end() ? nullptr : &it->second;
}

void Agent::readmit_adopted_static_pods() {
    // allowedUnsafeSysctls was checked with the configuration: an error
    // here is a bug, and admits nothing anew.
    auto allowlist = kubelet_sysctl_allowlist(kernel_release_, config_.allowed_unsafe_sysctls);
    if (!allowlist) return;
    std::vector<AdoptedStaticPod> adopted;
    std::vector<std::shared_ptr<const PodSpec>> held;
    std::vector<const PodSpec*> active;  // the DaemonSets' pods that run
    for (const auto& [uid, p] : pods_) {
        if (p.rec.deleting || p.rec.phase == PodPhase::Succeeded) continue;
        if (!p.rec.is_static()) {
            if (p.rec.phase == PodPhase::Failed) continue;
            if (auto spec = pod_source(p.rec).spec) {
                active.push_back(spec.get());
                held.push_back(std::move(spec));
            }
            continue;
        }
        auto s = static_pods_.find(uid);
        if (s == static_pods_.end()) continue;  // its file went: it stops
        AdoptedStaticPod a;
        a.pod = s->second.pod.get();
        a.created_at_ms = p.rec.created_at_ms;
        if (p.rec.phase == PodPhase::Failed) {
            // Finished (restartPolicy Never or OnFailure): it stays so. A
            // refused pod ran no container.
            if (!p.rec.containers.empty() || p.rec.reason.empty()) continue;
            a.rejected = PodRejection{p.rec.reason, p.rec.message};
        }
        adopted.push_back(a);
    }
    // Each change stops the pod; the reconcile then creates it again, through
    // create_static_pod's admission: Failed with the refusal's reason (its
    // processes gone), or started.
    for (const auto& r : readmit_static_pods(std::move(adopted), node_, allowlist.value(), std::move(active)))
        workers_->terminate(r.uid, r.rejection ? "not admitted at this start: " + r.rejection->reason + ": " +
                                                     r.rejection->message
                                               : "admitted at this start (refused before): it starts");
}

void Agent::reconcile_static_pods() {
    std::vector<std::pair<std::string, const char*>> gone;
    for (const auto& [uid, p] : pods_) {
        if (!p.rec.is_static() || p.rec.deleting) continue;
        if (!static_pods_.count(uid))
            gone.emplace_back(uid, "its manifest file changed or no longer defines it");
        else if (p.deleted_by_user)
            gone.emplace_back(uid, "deleted by the user; the static pod starts again");
    }
    for (const auto& [uid, why] : gone) {
        if (pods_.at(uid).deleted_by_user) static_deleted_.insert(uid);
        workers_->terminate(uid, why);
    }
    // In the files' order, as the kubelet admits pods in order: the first
    // file keeps a host port both ask for.
    std::vector<std::pair<const std::string*, const StaticDesired*>> to_create;
    for (const auto& [uid, s] : static_pods_)
        if (!pods_.contains(uid)) to_create.emplace_back(&uid, &s);
    std::sort(to_create.begin(), to_create.end(), [](const auto& a, const auto& b) {
        return std::tie(a.second->path, a.second->pod->metadata.name) <
               std::tie(b.second->path, b.second->pod->metadata.name);
    });
    for (const auto& [uid_p, s_p] : to_create) {
        const std::string& uid = *uid_p;
        const StaticDesired& s = *s_p;
        if (static_deleted_.erase(uid)) {
            schedule_reconcile(true);  // after this pass has answered the delete
            continue;
        }
        // An edited file's pod (a new UID) waits until the old pod of the
        // same full name has terminated, as the kubelet's pod workers hold
        // it (pod_workers.go allowStaticPodStart): two etcds must not share
        // a data directory or a port. The old pod's end (PodWorkers'
        // finish_if_stopped, the agent's pod_terminated) reconciles again.
        const std::string& ns = s.pod->metadata.namespace_;
        const std::string& name = s.pod->metadata.name;
        if (std::any_of(pods_.begin(), pods_.end(), [&](const auto& other) {
                return other.second.rec.is_static() && other.second.rec.namespace_ == ns &&
                       other.second.rec.name == name;
            }))
            continue;
        create_static_pod(uid, s);
    }
}

void Agent::create_static_pod(const std::string& uid, const StaticDesired& s) {
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
    PodTable::add_containers(p, pod.spec);
    log(Level::Notice,
        "static pod " + name + " created from " + s.path + " (restartPolicy " + restart_policy_of(p.rec) +
            ")",
        {{"DAEMONLET_POD", name}});
    pods_.add(std::move(p));
    workers_->advance(uid);
    ensure_probes();
    LivePod& added = pods_.at(uid);
    refresh_readiness(added);
    pods_.save(added);
}

}  // namespace daemonlet::agent
