// The StaticPods component: the kubelet's file source (pkg/kubelet/config/
// file.go, common.go filterInvalidPods) and its pod manager's static pods
// (pod_manager.go), over the pods the agent runs (PodTable, pod_table.h).
// It owns the static pods the files offer, by pod UID, the ones no file
// offers any more that still stop, the ones `delete pod` stopped, and the
// name conflicts already said; and it decides, as plain data, which static
// pods a reconcile stops (with the reason) and which it creates, in which
// order. The agent does what the decisions say (terminate, admission and
// creation: static_admission.cpp).
//
// A static pod's UID is derived from the file's pod (core make_static_pod):
// an edit makes a new UID, so the old pod is stopped and the new one
// started, as the kubelet treats a changed static pod as a new pod; a pod
// no file offers any more is stopped. `delete pod` stops it and a
// reconcile after the one that saw it gone starts it again under the same
// UID, as the kubelet recreates a static pod.
#pragma once

#include <map>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "agent/daemon/pod_table.h"
#include "agent/daemon/sources.h"
#include "core/static_pod.h"

namespace daemonlet::agent {

class StaticPods {
  public:
    // A static pod in force: a v1 Pod of a manifest file (the file's last
    // good version), named and defaulted as the kubelet does
    // (core/static_pod.h).
    struct Desired {
        std::shared_ptr<const Pod> pod;
        std::string path;
    };
    // Two files define the same namespace/name: the first path keeps it.
    struct Conflict {
        std::string name;  // "namespace/name"
        std::string kept;
        std::string ignored;
    };
    // A static pod the reconcile stops, and why.
    struct Stop {
        std::string uid;
        const char* reason = "";
    };
    // A static pod the reconcile starts (pod set), or, deleted by the user
    // (pod null), one that starts on the reconcile after this one.
    struct Start {
        std::string uid;
        const Desired* pod = nullptr;
    };

    explicit StaticPods(const PodTable& pods) : pods_(pods) {}
    StaticPods(const StaticPods&) = delete;
    StaticPods& operator=(const StaticPods&) = delete;

    // The files' pods (Sources::static_pods(), in path order) made this
    // node's static pods. A name two files define goes to the first
    // (filterInvalidPods), with a warning said once per pairing; returned:
    // the pairings said now. A pod no file offers any more keeps its spec
    // (of) while the table still has it. A pod not offered before whose
    // hostPorts `runtime` cannot map is said once (core unmapped_host_ports).
    std::vector<Conflict> rebuild(const std::vector<Sources::FilePod>& files, const std::string& node_name,
                                  std::string_view runtime);

    // The static pod the pod `uid` runs: its file's, or, while it stops,
    // the one its file offered last; null: none.
    const Desired* of(const std::string& uid) const;
    // Only the one a file offers now (its mirror pod, its admission at a
    // start); null: none.
    const Desired* offered(const std::string& uid) const;
    // The pod has left the table: its last spec is not needed any more.
    void pod_gone(const std::string& uid) { leaving_.erase(uid); }

    // The reconcile's first half, in uid order: the table's static pods
    // (not already stopping) that no file offers, or that `delete pod`
    // stopped (these are remembered, to start again a reconcile later).
    std::vector<Stop> plan_stops();
    // Its second half, after the stops were done: the offered pods the
    // table has not, in the files' order (path, then name), as the kubelet
    // admits pods in order: the first file keeps a host port both ask for.
    // One whose old pod of the same namespace/name is still in the table
    // (an edited file) waits for that pod's end, as the kubelet's pod
    // workers hold it (pod_workers.go allowStaticPodStart).
    std::vector<Start> plan_starts();

    // The adopted static pods a file still offers, for their admission at
    // the start (core readmit_static_pods): not stopping, not Succeeded,
    // and of the Failed ones only those refused (no container ran).
    std::vector<AdoptedStaticPod> adopted() const;

  private:
    const PodTable& pods_;
    std::map<std::string, Desired> offered_;  // by pod uid (derived from the file's pod)
    // Static pods no file offers any more whose containers have not all
    // stopped yet: their spec for the preStop hooks and the grace period
    // (a file removed or edited while the agent was down included: the
    // store's last good version of the file gives it at the start).
    std::map<std::string, Desired> leaving_;
    // Static pods `delete pod` stopped: started again a reconcile after the
    // one that saw them gone, so that the delete's waiter is answered.
    std::set<std::string> deleted_;
    std::set<std::string> conflicts_;  // "name|first|second" said once
};

}  // namespace daemonlet::agent
