// The Adoption component (agent/daemon/adoption.h): what a starting agent
// finds running, matched with the store's pod records, as the kubelet's
// first relist after a restart adopts the runtime's containers rather than
// starting them again (pkg/kubelet/pleg/generic.go relist, kuberuntime
// GetPods; a container's restartCount is kept, kuberuntime_manager.go
// computePodActions starts only what does not run). Containers no record
// knows rebuild their pod from the labels they were started with (the
// real pod_labels, container_config.cpp), as the kubelet reads a
// container's pod from its CRI labels (kuberuntime labels.go
// getContainerInfoFromLabels). Plain data in, plain data out: no runtime,
// no loop, no clock.
#include <cstdint>
#include <string>
#include <vector>

#include "agent/daemon/adoption.h"
#include "agent/daemon/pod_labels.h"
#include "core/strings.h"

#include <CppUTest/TestHarness.h>

using namespace daemonlet;
using namespace daemonlet::agent;

namespace {

constexpr std::int64_t kNowMono = 5000;

ContainerStatus adoption_status(const std::string& name, const std::string& id, ContainerState state,
                                bool sidecar = false) {
    ContainerStatus cs;
    cs.name = name;
    cs.runtime_id = id;
    cs.state = state;
    cs.sidecar = sidecar;
    return cs;
}

// A pod of DaemonSet "agent" with one app container "app".
PodRecord adoption_record(const std::string& uid, const std::string& app_id,
                          ContainerState state = ContainerState::Running) {
    PodRecord rec;
    rec.uid = uid;
    rec.name = "agent-" + uid;
    rec.namespace_ = "kube-system";
    rec.daemonset = "agent";
    rec.revision_hash = "5d8f9";
    rec.revision = 3;
    rec.created_at_ms = 1700000000000;
    rec.phase = PodPhase::Running;
    rec.containers.push_back(adoption_status("app", app_id, state));
    return rec;
}

platform::ContainerInfo found_container(const std::string& id, const std::string& uid,
                                        const std::string& name, bool running = true) {
    platform::ContainerInfo info;
    info.id = id;
    info.pod_uid = uid;
    info.container_name = name;
    info.running = running;
    info.started_at_ms = 1700000100000;
    info.pod_name = "agent-" + uid;
    info.pod_namespace = "kube-system";
    info.image_ref = "docker.io/library/busybox@sha256:abc";
    return info;
}

// A container of the pod `rec` describes, labelled as its start labels it.
platform::ContainerInfo labelled(const PodRecord& rec, const std::string& id, const std::string& name) {
    platform::ContainerInfo info = found_container(id, rec.uid, name);
    info.pod_name = rec.name;
    info.labels = pod_labels(rec);
    return info;
}

std::string watched(const std::vector<AdoptionPlan::Watch>& watch) {
    std::vector<std::string> out;
    for (const auto& w : watch) out.push_back(w.id + "@" + w.uid + "/" + std::to_string(w.index));
    return join(out, " ");
}

std::string stopped(const AdoptionPlan& plan) {
    std::vector<std::string> out;
    for (const auto& s : plan.second_instances) out.push_back("second:" + s.id);
    for (const auto& o : plan.orphans)
        for (const auto& s : o.stop) out.push_back("orphan:" + s.id);
    return join(out, " ");
}

std::string state_of(const ContainerStatus& cs) {
    const char* s = cs.state == ContainerState::Running   ? "Running"
                    : cs.state == ContainerState::Waiting ? "Waiting"
                                                          : "Terminated";
    return std::string(s) + (cs.reason.empty() ? "" : " " + cs.reason);
}

// A labelled pod: init container "setup", sidecar "proxy", app "app".
PodRecord labelled_record() {
    PodRecord rec = adoption_record("u-lost", "");
    rec.init_containers.push_back(adoption_status("setup", "", ContainerState::Waiting));
    rec.init_containers.push_back(adoption_status("proxy", "", ContainerState::Waiting, /*sidecar=*/true));
    return rec;
}

}  // namespace

TEST_GROUP(Adoption){};

// A recorded container that still runs is adopted as it is: its id kept,
// its restarts untouched, its start already observed (the kubelet's relist
// adopts it; computePodActions starts nothing that runs).
TEST(Adoption, RecordedRunningContainerIsAdoptedWithZeroRestarts) {
    PodRecord rec = adoption_record("u1", "c1");
    rec.containers[0].restart_count = 2;  // crash-looped before the agent's restart
    AdoptionPlan plan = plan_adoption({rec}, {found_container("c1", "u1", "app")}, kNowMono);
    LONGS_EQUAL(1, plan.pods.size());
    const LivePod& p = plan.pods.front();
    STRCMP_EQUAL("c1", p.containers.at(0).id.c_str());
    LONGS_EQUAL(kNowMono, p.containers.at(0).started_mono_ms);
    CHECK(p.start_observed);
    STRCMP_EQUAL("Running", state_of(p.rec.containers.at(0)).c_str());
    LONGS_EQUAL(2, p.rec.containers.at(0).restart_count);  // kept: adopting is no restart
    // Started by an older agent that kept no image id: the runtime's.
    STRCMP_EQUAL("docker.io/library/busybox@sha256:abc", p.rec.containers.at(0).image_id.c_str());
    STRCMP_EQUAL("c1@u1/0", watched(plan.watch).c_str());
    CHECK(plan.exited.empty());
    CHECK(plan.remove.empty());
    STRCMP_EQUAL("", stopped(plan).c_str());
    CHECK(plan.orphans.empty());
    CHECK(plan.notices.empty());
}

// The runtime no longer has the container the record names: it waits to
// be created again (the kubelet's ContainerCreating), nothing is watched.
TEST(Adoption, RecordNamingAGoneContainerGoesWaitingContainerCreating) {
    AdoptionPlan plan = plan_adoption({adoption_record("u1", "c1")}, {}, kNowMono);
    LONGS_EQUAL(1, plan.pods.size());
    const LivePod& p = plan.pods.front();
    STRCMP_EQUAL("Waiting ContainerCreating", state_of(p.rec.containers.at(0)).c_str());
    STRCMP_EQUAL("", p.containers.at(0).id.c_str());
    STRCMP_EQUAL("", watched(plan.watch).c_str());
}

// Issue 15's kill -9 storm: the agent was killed between the runtime's start
// and the record of its id. The running instance of the pod's container is
// adopted into the record, never started a second time; an exited instance
// of it is not (it is removed).
TEST(Adoption, UnrecordedRunningInstanceIsAdoptedIntoTheRecord) {
    AdoptionPlan plan = plan_adoption(
        {adoption_record("u1", "", ContainerState::Waiting)},
        {found_container("c0", "u1", "app", /*running=*/false), found_container("c9", "u1", "app")},
        kNowMono);
    const LivePod& p = plan.pods.at(0);
    const ContainerStatus& cs = p.rec.containers.at(0);
    STRCMP_EQUAL("c9", cs.runtime_id.c_str());
    STRCMP_EQUAL("Running", state_of(cs).c_str());
    CHECK(cs.started);
    LONGS_EQUAL(1700000100000, cs.started_at_ms);
    STRCMP_EQUAL("c9", p.containers.at(0).id.c_str());
    STRCMP_EQUAL("c9@u1/0", watched(plan.watch).c_str());
    STRCMP_EQUAL("c0", join(plan.remove, " ").c_str());
    STRCMP_EQUAL("", stopped(plan).c_str());
    STRCMP_EQUAL(
        "container app of pod kube-system/agent-u1 runs as c9, started by an agent that stopped "
        "before recording it: adopted",
        join(plan.notices, "|").c_str());
}

// A recorded container that exited while no agent ran is watched and
// listed as exited: its exit is handled now (restart, back-off).
TEST(Adoption, ExitedRecordedContainerIsListedAsExited) {
    AdoptionPlan plan = plan_adoption(
        {adoption_record("u1", "c1"), adoption_record("u2", "c2")},
        {found_container("c1", "u1", "app", /*running=*/false), found_container("c2", "u2", "app")},
        kNowMono);
    STRCMP_EQUAL("c1", join(plan.exited, " ").c_str());
    STRCMP_EQUAL("c1@u1/0 c2@u2/0", watched(plan.watch).c_str());
    STRCMP_EQUAL("c1", plan.pods.at(0).containers.at(0).id.c_str());
    CHECK(plan.remove.empty());
}

// Two instances of one container of a known pod: the one the record names
// stays, the other is stopped (a container runs once).
TEST(Adoption, SecondInstanceOfAKnownPodsContainerIsStopped) {
    AdoptionPlan plan =
        plan_adoption({adoption_record("u1", "c1")},
                      {found_container("c1", "u1", "app"), found_container("c2", "u1", "app")}, kNowMono);
    STRCMP_EQUAL("second:c2", stopped(plan).c_str());
    STRCMP_EQUAL("c1@u1/0", watched(plan.watch).c_str());
    STRCMP_EQUAL("container c2 of pod kube-system/agent-u1 is a second instance of app; stopping it",
                 plan.second_instances.at(0).warning.c_str());
    CHECK(plan.orphans.empty());
}

// The database was lost: the running containers' labels rebuild their pod.
// The app container runs, so the init containers all completed; the
// sidecar runs on. Rebuilt Running, start observed, to be saved.
TEST(Adoption, OrphanWithPodLabelsIsRebuilt) {
    PodRecord lost = labelled_record();
    AdoptionPlan plan =
        plan_adoption({}, {labelled(lost, "c-app", "app"), labelled(lost, "c-proxy", "proxy")}, kNowMono);
    CHECK(plan.pods.empty());
    LONGS_EQUAL(1, plan.orphans.size());
    const AdoptionPlan::Orphan& o = plan.orphans.front();
    CHECK(o.stop.empty());
    CHECK(o.rebuilt.has_value());
    const LivePod& p = *o.rebuilt;
    STRCMP_EQUAL("u-lost", p.rec.uid.c_str());
    STRCMP_EQUAL("agent-u-lost", p.rec.name.c_str());
    STRCMP_EQUAL("agent", p.rec.daemonset.c_str());
    STRCMP_EQUAL("5d8f9", p.rec.revision_hash.c_str());
    LONGS_EQUAL(3, p.rec.revision);
    LONGS_EQUAL(1700000000000, p.rec.created_at_ms);
    CHECK(p.rec.phase == PodPhase::Running);
    STRCMP_EQUAL("Terminated Completed", state_of(p.rec.init_containers.at(0)).c_str());
    STRCMP_EQUAL("Running", state_of(p.rec.init_containers.at(1)).c_str());
    CHECK(p.rec.init_containers.at(1).sidecar);
    STRCMP_EQUAL("c-proxy", p.rec.init_containers.at(1).runtime_id.c_str());
    STRCMP_EQUAL("Running", state_of(p.rec.containers.at(0)).c_str());
    STRCMP_EQUAL("c-app", p.rec.containers.at(0).runtime_id.c_str());
    STRCMP_EQUAL("c-proxy@u-lost/1 c-app@u-lost/2", watched(o.watch).c_str());
    STRCMP_EQUAL("c-app", p.containers.at(2).id.c_str());
    LONGS_EQUAL(kNowMono, p.containers.at(2).started_mono_ms);
    CHECK(p.start_observed);
    STRCMP_EQUAL(
        "pod kube-system/agent-u-lost (DaemonSet agent) was not in the store: rebuilt from its "
        "running containers and adopted",
        o.rebuilt_warning.c_str());
}

// Only the sidecar runs: the pod was still initializing (the kubelet's
// PodInitializing); its other init containers run again.
TEST(Adoption, OnlyASidecarFoundLeavesTheInitContainersWaitingPodInitializing) {
    PodRecord lost = labelled_record();
    AdoptionPlan plan = plan_adoption({}, {labelled(lost, "c-proxy", "proxy")}, kNowMono);
    const LivePod& p = *plan.orphans.at(0).rebuilt;
    STRCMP_EQUAL("Waiting PodInitializing", state_of(p.rec.init_containers.at(0)).c_str());
    STRCMP_EQUAL("Running", state_of(p.rec.init_containers.at(1)).c_str());
    STRCMP_EQUAL("Waiting ContainerCreating", state_of(p.rec.containers.at(0)).c_str());
    STRCMP_EQUAL("c-proxy@u-lost/1", watched(plan.orphans.at(0).watch).c_str());
}

// No way to know their pod: containers whose labels disagree, that carry
// none, or whose labels name no DaemonSet (as a static pod's do) are
// stopped, never rebuilt.
TEST(Adoption, OrphansWithDisagreeingOrMissingLabelsAreStopped) {
    PodRecord lost = labelled_record();
    platform::ContainerInfo other = labelled(lost, "c-proxy", "proxy");
    other.labels[kLabelRevisionHash] = "77aa1";
    platform::ContainerInfo bare = found_container("c-bare", "u-bare", "app");
    PodRecord static_pod = adoption_record("u-static", "");
    static_pod.daemonset.clear();
    AdoptionPlan plan = plan_adoption(
        {}, {labelled(lost, "c-app", "app"), other, bare, labelled(static_pod, "c-static", "app")}, kNowMono);
    LONGS_EQUAL(3, plan.orphans.size());
    for (const auto& o : plan.orphans) CHECK_FALSE(o.rebuilt.has_value());
    STRCMP_EQUAL("orphan:c-bare orphan:c-app orphan:c-proxy orphan:c-static", stopped(plan).c_str());
    STRCMP_EQUAL("container c-bare of pod u-bare is not in the store and carries no pod labels; stopping it",
                 plan.orphans.at(0).stop.at(0).warning.c_str());
}

// An exited container no record knows is removed, never rebuilt.
TEST(Adoption, ExitedOrphanIsRemoved) {
    PodRecord lost = labelled_record();
    platform::ContainerInfo gone = labelled(lost, "c-app", "app");
    gone.running = false;
    AdoptionPlan plan = plan_adoption({}, {gone}, kNowMono);
    STRCMP_EQUAL("c-app", join(plan.remove, " ").c_str());
    CHECK(plan.orphans.empty());
    CHECK(plan.exited.empty());
}

// The Pod's deletion grace counts once its stop began (saved `deleting`):
// a record not deleting loses it, a deleting one keeps it for
// resume_termination (the kubelet's killPod resumed with the Pod's
// deletionGracePeriodSeconds).
TEST(Adoption, OnlyADeletingRecordKeepsItsDeletionGrace) {
    PodRecord running = adoption_record("u1", "c1");
    running.deletion_grace_seconds = 5;
    PodRecord deleting = adoption_record("u2", "c2");
    deleting.deleting = true;
    deleting.deletion_grace_seconds = 7;
    AdoptionPlan plan = plan_adoption({running, deleting}, {}, kNowMono);
    CHECK_FALSE(plan.pods.at(0).rec.deletion_grace_seconds.has_value());
    CHECK(plan.pods.at(1).rec.deletion_grace_seconds.has_value());
    LONGS_EQUAL(7, *plan.pods.at(1).rec.deletion_grace_seconds);
}

// A running container with no pod uid at all (started by something else
// under the agent's namespace, or labels stripped): no way to know its pod,
// so it is stopped, never rebuilt.
TEST(Adoption, AContainerWithoutAPodUidIsStopped) {
    AdoptionPlan plan = plan_adoption({}, {found_container("c-x", "", "app")}, kNowMono);
    STRCMP_EQUAL("orphan:c-x", stopped(plan).c_str());
    for (const auto& o : plan.orphans) CHECK_FALSE(o.rebuilt.has_value());
    CHECK(plan.pods.empty());
    CHECK(plan.watch.empty());
}
