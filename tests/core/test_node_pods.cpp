// The node's Pods and what the board does about each (core/node_pods.h).
// Rows name the upstream rule they pin: the kubelet's pod source
// (config/apiserver.go), HandlePodUpdates / HandlePodRemoves, the status
// manager's canBeDeleted / deletePod, lifecycle/predicate.go Admit with
// rejectPod, kuberuntime killContainer's minimum grace, and
// convertToAPIContainerStatuses' ContainerStatusUnknown.
#include <string>
#include <vector>

#include "core/node_pods.h"

// CppUTest last: its leak-detection macros redefine new.
#include <CppUTest/TestHarness.h>

using namespace daemonlet;

namespace {

NodePod ds_pod(bool deleting = false, std::string phase = "Running") {
    return NodePod{.namespace_ = "it",
                   .name = "web-abcde",
                   .uid = "pod-1",
                   .owner_kind = "DaemonSet",
                   .owner_name = "web",
                   .owner_uid = "uid-web",
                   .revision_hash = "",
                   .deleting = deleting,
                   .deletion_grace_seconds = deleting ? std::optional<std::int64_t>(7) : std::nullopt,
                   .phase = std::move(phase),
                   .reason = ""};
}

OwnerView owner(OwnerState state, bool should_run = true, std::size_t board_pods = 1, bool all = true) {
    OwnerView v;
    v.state = state;
    v.decision.should_run = should_run;
    v.decision.should_continue_running = should_run;
    if (!should_run) v.decision.reasons = {"node(s) didn't match Pod's node affinity/selector"};
    v.board_pods = board_pods;
    v.all_have_pods = all;
    v.board_pod_hashes = {"rev1"};  // the board pod's own Pod
    v.current_hash = "rev2";
    return v;
}

NodePod of_revision(const std::string& hash) {
    NodePod p = ds_pod();
    p.revision_hash = hash;
    return p;
}

// A Pod whose controller is the Node `node`; `mirror`: with the
// annotation kubernetes.io/config.mirror.
NodePod node_owned_pod(const char* node, bool mirror) {
    NodePod p = ds_pod();
    p.owner_kind = "Node";
    p.owner_name = node;
    p.owner_uid = "node-uid";
    p.mirror = mirror;
    return p;
}

OwnerView current_unknown() {
    OwnerView v = owner(OwnerState::Followed);
    v.current_hash.clear();
    return v;
}

}  // namespace

TEST_GROUP(NodePods){};

TEST(NodePods, JudgesEachPodAsTheKubeletAndTheStatusManagerDo) {
    NodePod other = ds_pod();
    other.owner_kind = "ReplicaSet";
    other.owner_name = "web-5d8f";
    NodePod bare = other;
    bare.owner_kind = bare.owner_name = bare.owner_uid = "";
    const NodePod mirror = node_owned_pod("board", true);
    const NodePod node_owned = node_owned_pod("board", false);  // without the annotation: not a mirror pod
    NodePod other_failed = other;
    other_failed.phase = "Failed";
    NodePod other_deleting = other;
    other_deleting.deleting = true;
    NodePod mirror_deleting = mirror;
    mirror_deleting.deleting = true;
    struct Row {
        const char* name;
        NodePod pod;
        bool claimed;
        OwnerView owner;
        NodePodAction want;
        std::int64_t grace;
    };
    const std::vector<Row> rows = {
        {"HandlePodUpdates: the board pod's Pod has a deletionTimestamp: its pod restarts with the grace",
         ds_pod(true), true, owner(OwnerState::Followed), NodePodAction::RestartBoardPod, 7},
        {"the board pod's Pod, not being deleted: kept", ds_pod(), true, owner(OwnerState::Followed),
         NodePodAction::Keep, 0},
        {"departure from predicate.go Admit (the kubelet admits it): a ReplicaSet's Pod bound to the board is"
         " refused as rejectPod refuses, NotDaemonSetPod",
         other, false, owner(OwnerState::Unchecked), NodePodAction::Refuse, 0},
        {"departure from predicate.go Admit: a bare Pod (no controller) bound to the board: refused", bare,
         false, owner(OwnerState::Unchecked), NodePodAction::Refuse, 0},
        {"departure: owned by a Node without kubernetes.io/config.mirror (IsMirrorPod false): refused",
         node_owned, false, owner(OwnerState::Unchecked), NodePodAction::Refuse, 0},
        {"rejectPod once: a refused (phase Failed) Pod that is not a DaemonSet's: left alone", other_failed,
         false, owner(OwnerState::Unchecked), NodePodAction::Keep, 0},
        {"canBeDeleted: a Pod that is not a DaemonSet's, being deleted, never run here: confirmed",
         other_deleting, false, owner(OwnerState::Unchecked), NodePodAction::Finish, 0},
        {"IsMirrorPod (the annotation kubernetes.io/config.mirror): never run, never refused", mirror, false,
         owner(OwnerState::Unchecked), NodePodAction::Keep, 0},
        {"IsMirrorPod: a mirror pod being deleted is not the pod worker's: left alone", mirror_deleting,
         false, owner(OwnerState::Unchecked), NodePodAction::Keep, 0},
        {"canBeDeleted: a DaemonSet's Pod being deleted that nothing runs here: confirmed", ds_pod(true),
         false, owner(OwnerState::Followed), NodePodAction::Finish, 0},
        {"deleted while the agent was down, its board pod without its Pod yet: kept for the board pod to take"
         " (then HandlePodUpdates restarts it), never confirmed under running containers",
         ds_pod(true), false, owner(OwnerState::Followed, true, 1, false), NodePodAction::Keep, 0},
        {"its DaemonSet not in the board's cache: the server is asked first", ds_pod(), false,
         owner(OwnerState::Unchecked), NodePodAction::CheckOwner, 0},
        {"its DaemonSet is gone (removed while the agent was down): finished and deleted", ds_pod(), false,
         owner(OwnerState::Absent), NodePodAction::Finish, 0},
        {"its DaemonSet is in the cluster but not followed by the board: left alone", ds_pod(), false,
         owner(OwnerState::NotFollowed), NodePodAction::Keep, 0},
        {"a board pod of its DaemonSet still has no Pod: this one may be taken", ds_pod(), false,
         owner(OwnerState::Followed, true, 1, false), NodePodAction::Keep, 0},
        {"syncNodes made it before the board's pod started: the board's pod takes it", ds_pod(), false,
         owner(OwnerState::Followed, true, 0, true), NodePodAction::Keep, 0},
        {"a left-over of the board pod's revision beside its own Pod (an earlier board pod's): deleted",
         of_revision("rev1"), false, owner(OwnerState::Followed), NodePodAction::Finish, 0},
        {"a left-over of an old revision (neither the board pod's nor the current): deleted",
         of_revision("rev0"), false, owner(OwnerState::Followed), NodePodAction::Finish, 0},
        {"rollingUpdate maxSurge: the controller's Pod of the current revision beside an old board pod: kept",
         of_revision("rev2"), false, owner(OwnerState::Followed), NodePodAction::Keep, 0},
        {"the current revision not known yet (ControllerRevisions not listed): kept, never guessed",
         of_revision("rev0"), false, current_unknown(), NodePodAction::Keep, 0},
        {"Admit: the board's decision does not run it (labels differ): refused", ds_pod(), false,
         owner(OwnerState::Followed, false, 0, true), NodePodAction::Refuse, 0},
        {"rejectPod once: a refused Pod (phase Failed) is the controller's", ds_pod(false, "Failed"), false,
         owner(OwnerState::Followed, false, 0, true), NodePodAction::Keep, 0},
    };
    for (const auto& r : rows) {
        const NodePodVerdict v = judge_node_pod(r.pod, r.claimed, r.owner);
        CHECK_EQUAL_TEXT(static_cast<int>(r.want), static_cast<int>(v.action), r.name);
        LONGS_EQUAL_TEXT(r.grace, v.grace_seconds, r.name);
    }
}

TEST(NodePods, NotADaemonSetsPodIsRefusedWithItsController) {
    // kubelet.go rejectPod: phase Failed, a single-word reason
    // (PodAdmitResult), a message saying why; the departure from Admit
    // (which admits any pod) named in the message.
    struct Row {
        const char* name;
        const char* kind;
        const char* owner;
        const char* message;
    };
    const std::vector<Row> rows = {
        {"a ReplicaSet's Pod", "ReplicaSet", "web-5d8f",
         "Pod was rejected: the node (daemonlet) runs only DaemonSet pods and its own static pods; this "
         "Pod's "
         "controller is ReplicaSet web-5d8f"},
        {"a bare Pod", "", "",
         "Pod was rejected: the node (daemonlet) runs only DaemonSet pods and its own static pods; this Pod "
         "has no controller"},
    };
    for (const auto& r : rows) {
        NodePod p = ds_pod();
        p.owner_kind = r.kind;
        p.owner_name = r.owner;
        p.owner_uid = *r.kind ? "u" : "";
        const NodePodVerdict v = judge_node_pod(p, false, OwnerView{});
        CHECK_EQUAL_TEXT(static_cast<int>(NodePodAction::Refuse), static_cast<int>(v.action), r.name);
        STRCMP_EQUAL_TEXT("NotDaemonSetPod", v.reason.c_str(), r.name);
        STRCMP_EQUAL_TEXT(r.message, v.message.c_str(), r.name);
    }
}

TEST(NodePods, OrphanedMirrorPodsAreDeletedAsHandlePodCleanupsDoes) {
    const NodePod mirror = node_owned_pod("board", true);
    struct Row {
        const char* name;
        NodePod pod;
        bool board_has_it;
        NodePodAction want;
    };
    const std::vector<Row> rows = {
        {"deleteOrphanedMirrorPods: a mirror pod of this Node no static pod has: DeleteMirrorPod", mirror,
         false, NodePodAction::DeleteMirror},
        {"a mirror pod of a static pod the board runs: kept (syncPod keeps it, or remakes it)", mirror, true,
         NodePodAction::Keep},
        {"a mirror pod owned by another Node: not this kubelet's", node_owned_pod("elsewhere", true), false,
         NodePodAction::Keep},
        {"IsMirrorPod false (no kubernetes.io/config.mirror): not a mirror pod",
         node_owned_pod("board", false), false, NodePodAction::Keep},
    };
    for (const auto& r : rows)
        CHECK_EQUAL_TEXT(static_cast<int>(r.want),
                         static_cast<int>(judge_mirror_pod(r.pod, "board", r.board_has_it).action), r.name);
}

TEST(NodePods, MirrorPodIsTheStaticPodsCopyOwnedByTheNode) {
    // mirror_client.go CreateMirrorPod: a copy, the config.mirror annotation
    // set to the hash, the Node as its controller owner; IsMirrorPodOf.
    const Json pod = Json::parse(R"({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "web-board", "namespace": "kube-system", "uid": "h1", "resourceVersion": "7",
                     "labels": {"app": "web"}, "annotations": {"kubernetes.io/config.hash": "h1"}},
        "spec": {"containers": [{"name": "main", "image": "busybox"}]}, "status": {"phase": "Running"}})");
    const Json m = mirror_pod_object(pod, "h1", "board", "node-uid");
    const Json want = Json::parse(R"({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "web-board", "namespace": "kube-system", "labels": {"app": "web"},
                     "annotations": {"kubernetes.io/config.hash": "h1", "kubernetes.io/config.mirror": "h1"},
                     "ownerReferences": [{"apiVersion": "v1", "kind": "Node", "name": "board", "uid": "node-uid",
                                          "controller": true}]},
        "spec": {"containers": [{"name": "main", "image": "busybox"}], "nodeName": "board"}})");
    STRCMP_EQUAL(want.dump().c_str(), m.dump().c_str());
    CHECK_TRUE(is_mirror_pod_of(m, "h1", "node-uid"));
    CHECK_FALSE(is_mirror_pod_of(m, "h2", "node-uid"));        // outdated: another config hash
    CHECK_FALSE(is_mirror_pod_of(m, "h1", "other-node-uid"));  // the Node was made again
    CHECK_FALSE(is_mirror_pod_of(pod, "h1", "node-uid"));      // the static pod itself: no annotation
    CHECK_TRUE(node_pod_of(m).mirror);
}

TEST(NodePods, KillGraceIsTheDeletionGraceAtLeastTwoSeconds) {
    struct Row {
        const char* name;
        std::optional<std::int64_t> deletion;
        std::int64_t spec, want;
    };
    const std::vector<Row> rows = {
        {"killContainer: the Pod's deletionGracePeriodSeconds over the spec's", 7, 30, 7},
        {"killContainer: no deletion grace: terminationGracePeriodSeconds", std::nullopt, 30, 30},
        {"minimumGracePeriodInSeconds: a forced delete (0) still gets 2 s", 0, 30, 2},
        {"minimumGracePeriodInSeconds: a spec of 1 s gets 2 s", std::nullopt, 1, 2},
    };
    for (const auto& r : rows) LONGS_EQUAL_TEXT(r.want, kill_grace_seconds(r.deletion, r.spec), r.name);
}

TEST(NodePods, RefusalNamesThePredicateAsAdmitDoes) {
    struct Row {
        const char* name;
        std::vector<std::string> reasons;
        const char* reason;
        const char* message;
    };
    const std::vector<Row> rows = {
        {"nodeaffinity.ErrReasonPod",
         {"node(s) didn't match Pod's node affinity/selector", "nodeSelector zone=b: the node's zone is a"},
         "NodeAffinity",
         "Pod was rejected: Predicate NodeAffinity failed: node(s) didn't match Pod's node affinity/selector "
         "(nodeSelector zone=b: the node's zone is a)"},
        {"tainttoleration.ErrReasonNotMatch",
         {"taint {k=v:NoExecute} is not tolerated"},
         "TaintToleration",
         "Pod was rejected: Predicate TaintToleration failed: node(s) had taints that the pod didn't "
         "tolerate "
         "(taint {k=v:NoExecute} is not tolerated)"},
        {"nodename.ErrReason",
         {"template nodeName \"a\" does not match node \"b\""},
         "NodeName",
         "Pod was rejected: Predicate NodeName failed: node(s) didn't match the requested node name "
         "(template nodeName \"a\" does not match node \"b\")"},
    };
    for (const auto& r : rows) {
        Decision d;
        d.reasons = r.reasons;
        const AdmissionRefusal a = admission_refusal(d);
        STRCMP_EQUAL_TEXT(r.reason, a.reason.c_str(), r.name);
        STRCMP_EQUAL_TEXT(r.message, a.message.c_str(), r.name);
    }
}

TEST(NodePods, NodePodReadsTheControllerAndTheDeletion) {
    const Json pod = Json::parse(R"({"metadata": {"namespace": "it", "name": "web-x", "uid": "u1",
        "labels": {"controller-revision-hash": "abc"},
        "annotations": {"kubernetes.io/config.mirror": "h1"},
        "deletionTimestamp": "2026-01-01T00:00:00Z", "deletionGracePeriodSeconds": 5,
        "ownerReferences": [{"kind": "Node", "name": "n", "uid": "n1"},
                            {"kind": "DaemonSet", "name": "web", "uid": "d1", "controller": true}]},
        "status": {"phase": "Running"}})");
    const NodePod p = node_pod_of(pod);
    STRCMP_EQUAL("DaemonSet", p.owner_kind.c_str());
    STRCMP_EQUAL("d1", p.owner_uid.c_str());
    STRCMP_EQUAL("abc", p.revision_hash.c_str());
    CHECK_TRUE(p.deleting);
    CHECK_TRUE(p.mirror);
    CHECK_FALSE(node_pod_of(Json::parse(R"({"metadata": {"uid": "u"}})")).mirror);
    LONGS_EQUAL(5, *p.deletion_grace_seconds);
    STRCMP_EQUAL("Running", p.phase.c_str());
}

// update.go's surge path makes the new Pod at the current revision only
// (syncNodes with the current hash): only such a Pod starts a paced
// rollout's new pod, never a leftover or an earlier template's (A to B to C
// quickly: B's surge Pod is not C's).
TEST(NodePods, OnlyALivePodOfTheCurrentRevisionIsTheControllersSurgePod) {
    NodePod p;
    p.owner_kind = "DaemonSet";
    p.owner_uid = "d1";
    p.revision_hash = "c3";
    p.phase = "Pending";
    CHECK_TRUE(is_current_surge_pod(p, "d1", "c3"));
    CHECK_FALSE(is_current_surge_pod(p, "d1", "b2"));  // an earlier template's Pod
    CHECK_FALSE(is_current_surge_pod(p, "d1", ""));    // the current revision not listed yet
    CHECK_FALSE(is_current_surge_pod(p, "d2", "c3"));  // another DaemonSet's
    NodePod gone = p;
    gone.deleting = true;
    CHECK_FALSE(is_current_surge_pod(gone, "d1", "c3"));
    NodePod failed = p;
    failed.phase = "Failed";
    CHECK_FALSE(is_current_surge_pod(failed, "d1", "c3"));
    NodePod mirror = p;
    mirror.mirror = true;
    CHECK_FALSE(is_current_surge_pod(mirror, "d1", "c3"));
}

TEST(NodePods, OrphanTerminalStatusIsContainerStatusUnknown) {
    const Json status = Json::parse(R"({"phase": "Running",
        "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": "t0"},
                       {"type": "PodScheduled", "status": "True", "lastTransitionTime": "t0"}],
        "containerStatuses": [{"name": "main", "ready": true, "started": true, "restartCount": 1,
                               "state": {"running": {"startedAt": "t0"}}},
                              {"name": "done", "ready": false, "restartCount": 0,
                               "state": {"terminated": {"exitCode": 0, "reason": "Completed"}}}]})");
    const Json out = orphan_terminal_status(status, "t1");
    STRCMP_EQUAL("Failed", out["phase"].get<std::string>().c_str());
    STRCMP_EQUAL("False", out["conditions"][0]["status"].get<std::string>().c_str());
    STRCMP_EQUAL("t1", out["conditions"][0]["lastTransitionTime"].get<std::string>().c_str());
    STRCMP_EQUAL("True", out["conditions"][1]["status"].get<std::string>().c_str());
    const Json& main = out["containerStatuses"][0];
    LONGS_EQUAL(137, main["state"]["terminated"]["exitCode"].get<int>());
    STRCMP_EQUAL("ContainerStatusUnknown", main["state"]["terminated"]["reason"].get<std::string>().c_str());
    CHECK_FALSE(main["ready"].get<bool>());
    LONGS_EQUAL(1, main["restartCount"].get<int>());
    STRCMP_EQUAL("Completed",
                 out["containerStatuses"][1]["state"]["terminated"]["reason"].get<std::string>().c_str());
}
