// NodeShouldRunDaemonPod and its predicates, Kubernetes 1.25 to 1.30
// (pkg/controller/daemon/daemon_controller.go):
//
//   pod := NewPod(ds, node.Name)            // template + the daemon tolerations
//   template nodeName set and not this node  -> false, false
//   required node affinity / nodeSelector no -> false, false (parse errors ignored)
//   an untolerated NoSchedule/NoExecute taint -> false, !(an untolerated NoExecute taint)
//   otherwise                                -> true, true
//
// Nothing else is looked at: not spec.unschedulable (only its taint, which
// DaemonSet pods tolerate), not node conditions, resources or host ports
// (left to the kubelet's admission), not PreferNoSchedule taints, not
// preferred affinity.
#include "core/decision.h"

#include "core/field_error.h"
#include "core/node_affinity.h"
#include "core/taints.h"

namespace daemonlet {

Decision node_should_run_daemon_pod(const Node& node, const DaemonSet& ds) {
    Decision d;
    const PodSpec& tmpl = ds.spec.template_.spec;

    if (!tmpl.node_name.empty() && tmpl.node_name != node.metadata.name) {
        d.reasons.push_back("template nodeName " + render_string(tmpl.node_name) + " does not match node " +
                            render_string(node.metadata.name));
        return d;
    }

    // NewPod sets the pod's nodeName to this node, so the scheduler's node
    // name predicate always passes; affinity only reads nodeSelector and
    // affinity, which NewPod copies unchanged from the template.
    const NodeAffinityMatch affinity = match_required_node_affinity(tmpl, node);
    if (!affinity.matches) {
        // The scheduler's NodeAffinity phrase (ErrReasonPod), then the details.
        d.reasons.emplace_back("node(s) didn't match Pod's node affinity/selector");
        d.reasons.insert(d.reasons.end(), affinity.reasons.begin(), affinity.reasons.end());
        return d;
    }

    // NewPod adds the controller's tolerations to the template's; only the
    // tolerations and hostNetwork matter to them, so copy just those.
    PodSpec pod;
    pod.tolerations = tmpl.tolerations;
    pod.host_network = tmpl.host_network;
    add_daemon_tolerations(pod);

    const std::vector<Taint> untolerated =
        untolerated_taints(node.taints, pod.tolerations, is_no_schedule_or_no_execute);
    if (!untolerated.empty()) {
        bool evicts = false;
        for (const auto& t : untolerated) {
            d.reasons.push_back("taint {" + taint_to_string(t) + "} is not tolerated");
            evicts = evicts || is_no_execute(t);
        }
        // A running pod stays unless a NoExecute taint would evict it.
        d.should_continue_running = !evicts;
        return d;
    }

    d.should_run = true;
    d.should_continue_running = true;
    return d;
}

}  // namespace daemonlet
