#include "core/node_pods.h"

#include <algorithm>

#include "core/daemon_pod.h"
#include "core/json_diff.h"

namespace daemonlet {

namespace {

bool starts_with(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }

bool terminal(const std::string& phase) { return phase == "Failed" || phase == "Succeeded"; }

}  // namespace

NodePod node_pod_of(const Json& pod) {
    NodePod p;
    const Json& meta = json_member(pod, "metadata");
    p.namespace_ = json_text(meta, "namespace");
    p.name = json_text(meta, "name");
    p.uid = json_text(meta, "uid");
    p.revision_hash = json_text(json_member(meta, "labels"), kControllerRevisionHashLabel);
    const Json& refs = json_member(meta, "ownerReferences");
    if (refs.is_array())
        for (const Json& r : refs)
            if (json_member(r, "controller") == Json(true)) {
                p.owner_kind = json_text(r, "kind");
                p.owner_name = json_text(r, "name");
                p.owner_uid = json_text(r, "uid");
                break;
            }
    p.mirror = json_member(json_member(meta, "annotations"), kConfigMirrorAnnotation).is_string();
    p.deleting = !json_member(meta, "deletionTimestamp").is_null();
    const Json& grace = json_member(meta, "deletionGracePeriodSeconds");
    if (grace.is_number_integer()) p.deletion_grace_seconds = grace.get<std::int64_t>();
    const Json& status = json_member(pod, "status");
    p.phase = json_text(status, "phase");
    p.reason = json_text(status, "reason");
    return p;
}

bool is_current_surge_pod(const NodePod& pod, const std::string& ds_uid, const std::string& current_hash) {
    return !current_hash.empty() && pod.owner_uid == ds_uid && pod.revision_hash == current_hash &&
           !pod.mirror && !pod.deleting && pod.phase != "Failed" && pod.phase != "Succeeded";
}

NodePodVerdict judge_node_pod(const NodePod& pod, bool claimed, const OwnerView& owner) {
    NodePodVerdict v;
    if (claimed) {
        // HandlePodUpdates with a DeletionTimestamp: the pod worker kills it.
        if (pod.deleting) {
            v.action = NodePodAction::RestartBoardPod;
            v.grace_seconds = pod.deletion_grace_seconds.value_or(0);
        }
        return v;
    }
    // Mirror pods: the API's view of static pods, never run (the board's
    // own are kept by ApiPods).
    if (pod.mirror) return v;
    if (pod.owner_kind != "DaemonSet" || pod.owner_uid.empty()) {
        // Not a DaemonSet's (the departure in node_pods.h): refused once;
        // being deleted, nothing runs it here, so the deletion is
        // confirmed (canBeDeleted) rather than left hanging.
        if (pod.deleting) {
            v.action = NodePodAction::Finish;
            v.message = "being deleted, and the board never runs a Pod that is not a DaemonSet's";
            return v;
        }
        if (terminal(pod.phase)) return v;
        const AdmissionRefusal r = not_daemon_set_refusal(pod);
        v.action = NodePodAction::Refuse;
        v.reason = r.reason;
        v.message = r.message;
        return v;
    }
    if (pod.deleting) {
        // A board pod of its DaemonSet still without its Pod (the agent
        // restarted while it was being deleted) may be running it:
        // list_pods takes it, and its deletion then restarts that pod
        // (HandlePodUpdates). Not confirmed under running containers.
        if (owner.board_pods > 0 && !owner.all_have_pods) return v;
        // Nothing runs it here: canBeDeleted holds, the deletion is confirmed.
        v.action = NodePodAction::Finish;
        v.message = "being deleted, and the board runs no pod of it";
        return v;
    }
    switch (owner.state) {
    case OwnerState::Unchecked: v.action = NodePodAction::CheckOwner; return v;
    case OwnerState::NotFollowed: return v;
    case OwnerState::Absent:
        v.action = NodePodAction::Finish;
        v.message = "its DaemonSet " + pod.owner_name + " is gone";
        return v;
    case OwnerState::Followed: break;
    }
    // A board pod still without its Pod may take this one (list_pods).
    if (owner.board_pods > 0 && !owner.all_have_pods) return v;
    if (!owner.decision.should_run) {
        if (terminal(pod.phase)) return v;  // refused already (or finished): the controller's now
        const AdmissionRefusal r = admission_refusal(owner.decision);
        v.action = NodePodAction::Refuse;
        v.reason = r.reason;
        v.message = r.message;
        return v;
    }
    // The board runs none yet: it starts one, which takes this Pod.
    if (owner.board_pods == 0) return v;
    // Beside the board pod's own Pod: a duplicate of its revision, or of an
    // old one, is a left-over; one of the current revision the board's pod
    // does not run yet (or of a revision not known yet) may be the
    // controller's surge Pod (rollingUpdate with maxSurge): kept.
    const bool duplicate = std::find(owner.board_pod_hashes.begin(), owner.board_pod_hashes.end(),
                                     pod.revision_hash) != owner.board_pod_hashes.end();
    if (!duplicate && (owner.current_hash.empty() || pod.revision_hash == owner.current_hash)) return v;
    v.action = NodePodAction::Finish;
    v.message = "a left-over: the board's pod of DaemonSet " + pod.owner_name + " has another Pod";
    return v;
}

NodePodVerdict judge_mirror_pod(const NodePod& pod, const std::string& node_name, bool board_has_it) {
    NodePodVerdict v;
    if (!pod.mirror || pod.owner_kind != "Node" || pod.owner_name != node_name || board_has_it) return v;
    v.action = NodePodAction::DeleteMirror;
    v.message = "an orphaned mirror pod: the board runs no static pod of it";
    return v;
}

Json mirror_pod_object(const Json& pod, const std::string& hash, const std::string& node_name,
                       const std::string& node_uid) {
    Json meta = json_member(pod, "metadata").is_object() ? json_member(pod, "metadata") : Json::object();
    for (const char* k : {"uid", "resourceVersion", "creationTimestamp", "generation", "managedFields",
                          "deletionTimestamp", "deletionGracePeriodSeconds", "selfLink", "generateName"})
        meta.erase(k);
    if (!meta.contains("annotations") || !meta["annotations"].is_object())
        meta["annotations"] = Json::object();
    meta["annotations"][kConfigMirrorAnnotation] = hash;
    if (!meta["annotations"].contains("kubernetes.io/config.hash"))
        meta["annotations"]["kubernetes.io/config.hash"] = hash;
    meta["ownerReferences"] = Json::array({{{"apiVersion", "v1"},
                                            {"kind", "Node"},
                                            {"name", node_name},
                                            {"uid", node_uid},
                                            {"controller", true}}});
    Json spec = json_member(pod, "spec").is_object() ? json_member(pod, "spec") : Json::object();
    spec["nodeName"] = node_name;
    return Json{
        {"apiVersion", "v1"}, {"kind", "Pod"}, {"metadata", std::move(meta)}, {"spec", std::move(spec)}};
}

bool is_mirror_pod_of(const Json& pod, const std::string& hash, const std::string& node_uid) {
    const Json& meta = json_member(pod, "metadata");
    if (json_text(json_member(meta, "annotations"), kConfigMirrorAnnotation) != hash || hash.empty())
        return false;
    const Json& refs = json_member(meta, "ownerReferences");
    if (!refs.is_array()) return false;
    for (const Json& r : refs)
        if (json_text(r, "kind") == "Node" && json_text(r, "uid") == node_uid) return true;
    return false;
}

std::int64_t kill_grace_seconds(std::optional<std::int64_t> deletion_grace, std::int64_t spec_grace) {
    constexpr std::int64_t kMinimumGracePeriodSeconds = 2;
    return std::max(deletion_grace.value_or(spec_grace), kMinimumGracePeriodSeconds);
}

AdmissionRefusal admission_refusal(const Decision& decision) {
    const std::string first = decision.reasons.empty() ? std::string() : decision.reasons.front();
    std::string name, desc;
    if (starts_with(first, "template nodeName")) {
        name = "NodeName";
        desc = "node(s) didn't match the requested node name";  // nodename.ErrReason
    } else if (starts_with(first, "node(s) didn't match Pod's node affinity")) {
        name = "NodeAffinity";
        desc = "node(s) didn't match Pod's node affinity/selector";  // nodeaffinity.ErrReasonPod
    } else if (starts_with(first, "taint {")) {
        name = "TaintToleration";
        desc = "node(s) had taints that the pod didn't tolerate";  // tainttoleration.ErrReasonNotMatch
    } else {
        // GeneralPredicates failed due to unknown reason.
        return {"UnexpectedAdmissionError", "Pod was rejected: the board does not run it" +
                                                (first.empty() ? std::string() : ": " + first)};
    }
    std::string message = "Pod was rejected: Predicate " + name + " failed: " + desc;
    std::string details;
    for (const auto& r : decision.reasons)
        if (r != desc) details += (details.empty() ? "" : "; ") + r;
    if (!details.empty()) message += " (" + details + ")";
    return {name, message};
}

AdmissionRefusal not_daemon_set_refusal(const NodePod& pod) {
    std::string message =
        "Pod was rejected: the node (daemonlet) runs only DaemonSet pods and its own static pods; ";
    if (pod.owner_kind.empty())
        message += "this Pod has no controller";
    else
        message += "this Pod's controller is " + pod.owner_kind + " " + pod.owner_name;
    return {kNotDaemonSetPodReason, message};
}

Json orphan_terminal_status(const Json& status, const std::string& now) {
    Json out = status.is_object() ? status : Json::object();
    out["phase"] = "Failed";
    if (out.contains("conditions") && out["conditions"].is_array())
        for (Json& c : out["conditions"]) {
            const std::string type = json_text(c, "type");
            if ((type == "Ready" || type == "ContainersReady") && json_text(c, "status") != "False") {
                c["status"] = "False";
                c["lastTransitionTime"] = now;
            }
        }
    for (const char* list : {"initContainerStatuses", "containerStatuses"}) {
        if (!out.contains(list) || !out[list].is_array()) continue;
        for (Json& cs : out[list]) {
            if (!cs.is_object()) continue;
            cs["ready"] = false;
            if (cs.contains("started")) cs["started"] = false;
            const Json& state = json_member(cs, "state");
            if (state.is_object() && state.contains("terminated")) continue;
            cs["state"] = {{"terminated",
                            {{"exitCode", 137},
                             {"reason", "ContainerStatusUnknown"},
                             {"message", "The container could not be located when the pod was terminated"}}}};
        }
    }
    return out;
}

}  // namespace daemonlet
