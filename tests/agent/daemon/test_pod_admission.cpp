// The PodAdmission component (agent/daemon/pod_admission.h): the kubelet's
// canAdmitPod as HandlePodAdditions runs it (pkg/kubelet/kubelet.go: the
// sysctl admit handler, pkg/kubelet/sysctl allowlist.go; then
// pkg/kubelet/lifecycle/predicate.go generalFilter: NodeAffinity,
// NodePorts) over a real PodTable's active pods (filterOutInactivePods).
#include <cstdlib>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "agent/daemon/pod_admission.h"
#include "core/manifest.h"
#include "tests/agent/daemon/fake_clock.h"

#include <CppUTest/TestHarness.h>

using namespace daemonlet;
using namespace daemonlet::agent;
using namespace daemonlet::testing;

namespace {

// Admission never saves a pod: a save reaching the store is a bug here.
class AdmissionNoSaves final : public PodTable::Host {
  public:
    store::Store& pod_store() override {
        FAIL("PodAdmission saved a pod");
        std::abort();
    }
    MetricRegistry* pod_metrics() override { return nullptr; }
    void pod_saved() override {}
};

// The specs the pods run, by uid (the agent's pod_source).
class AdmissionSpecs final : public PodAdmission::Host {
  public:
    std::map<std::string, std::shared_ptr<const PodSpec>> specs;
    std::shared_ptr<const PodSpec> admission_spec(const PodRecord& rec) const override {
        auto it = specs.find(rec.uid);
        return it == specs.end() ? nullptr : it->second;
    }
};

Pod admission_pod(const std::string& spec) {
    auto m = load_manifest(
        "apiVersion: v1\nkind: Pod\nmetadata: {name: web}\nspec:\n" + spec +
            "  containers: [{name: c, image: nginx, ports: [{containerPort: 80, hostPort: 8080}]}]\n",
        "/etc/daemonlet/manifests/web.yaml");
    CHECK_TEXT(m.errors.empty(), m.errors.empty() ? "" : m.errors.front().to_string().c_str());
    return std::get<Pod>(m.objects.front().object);
}

constexpr const char* kUnsafeSysctl = "  securityContext: {sysctls: [{name: kernel.msgmax, value: '1'}]}\n";
constexpr const char* kCoreOnly = "  nodeSelector: {role: core}\n";

}  // namespace

TEST_GROUP(PodAdmission) {
    FakeClock clock;
    AdmissionNoSaves saves;
    PodTable pods{saves, clock};
    AdmissionSpecs specs;
    PodAdmission admission{specs, pods};
    Node node;

    void setup() override {
        node.metadata.name = "board-1";
        node.metadata.labels["role"] = "edge";
        admission.set_kernel_release("6.1.0");
    }
    // A pod in the table that takes host port 8080 (a DaemonSet's, or a
    // static pod's when `source` is set).
    LivePod& holder(const std::string& uid, PodPhase phase, bool deleting = false,
                    const std::string& source = "") {
        specs.specs[uid] = std::make_shared<const PodSpec>(admission_pod("").spec);
        LivePod live;
        live.rec.uid = uid;
        live.rec.name = uid;
        live.rec.namespace_ = "default";
        live.rec.source = source;
        live.rec.phase = phase;
        live.rec.deleting = deleting;
        return pods.add(std::move(live));
    }
    std::string reason_of(const std::optional<PodRejection>& r) { return r ? r->reason : "admitted"; }
    std::string admit_static(const Pod& pod, bool skip_static = false) {
        const auto active = admission.active_pods(skip_static);
        return reason_of(admission.admit_static(pod, node, active.specs));
    }
};

// allowlist.go Admit: an unsafe sysctl not in allowedUnsafeSysctls is
// refused (SysctlForbidden), for every pod; listed, it is admitted.
TEST(PodAdmission, UnsafeSysctlForbiddenUnlessAllowed) {
    const Pod pod = admission_pod(kUnsafeSysctl);
    const auto refused = admission.admit(pod.spec);
    STRCMP_EQUAL("SysctlForbidden", reason_of(refused).c_str());
    STRCMP_EQUAL("forbidden sysctl: \"kernel.msgmax\" not allowlisted", refused->message.c_str());
    STRCMP_EQUAL("SysctlForbidden", admit_static(pod).c_str());
    admission.set_allowed_unsafe_sysctls({"kernel.msgmax"});
    STRCMP_EQUAL("admitted", reason_of(admission.admit(pod.spec)).c_str());
    STRCMP_EQUAL("admitted", admit_static(pod).c_str());
    // A reload narrowing it refuses again.
    admission.set_allowed_unsafe_sysctls({});
    STRCMP_EQUAL("SysctlForbidden", reason_of(admission.admit(pod.spec)).c_str());
}

// generalFilter NodePorts over filterOutInactivePods: a host port an
// active pod holds refuses the static pod; a Failed, Succeeded or
// deleting holder does not count.
TEST(PodAdmission, HostPortOfAnActivePodRefusedAsNodePorts) {
    const Pod pod = admission_pod("");
    STRCMP_EQUAL("admitted", admit_static(pod).c_str());
    LivePod& other = holder("ds-pod", PodPhase::Running);
    STRCMP_EQUAL("NodePorts", admit_static(pod).c_str());
    other.rec.phase = PodPhase::Failed;
    STRCMP_EQUAL("admitted", admit_static(pod).c_str());
    other.rec.phase = PodPhase::Succeeded;
    STRCMP_EQUAL("admitted", admit_static(pod).c_str());
    other.rec.phase = PodPhase::Running;
    other.rec.deleting = true;
    STRCMP_EQUAL("admitted", admit_static(pod).c_str());
    // A static holder counts at creation; the readmission at start leaves
    // the static pods out of the active ones (they are readmitted in turn).
    holder("static-pod", PodPhase::Running, false, "/etc/daemonlet/manifests/other.yaml");
    STRCMP_EQUAL("NodePorts", admit_static(pod).c_str());
    STRCMP_EQUAL("admitted", admit_static(pod, /*skip_static=*/true).c_str());
}

// generalFilter NodeAffinity: a nodeSelector the node's labels miss.
TEST(PodAdmission, NodeSelectorNotMatchingRefusedAsNodeAffinity) {
    const auto refused = admission.admit_static(admission_pod(kCoreOnly), node, {});
    STRCMP_EQUAL("NodeAffinity", reason_of(refused).c_str());
    STRCMP_EQUAL("Pod was rejected: Predicate NodeAffinity failed", refused->message.c_str());
    node.metadata.labels["role"] = "core";
    STRCMP_EQUAL("admitted", admit_static(admission_pod(kCoreOnly)).c_str());
}

// HandlePodAdditions' handlers in order: the sysctl handler before the
// predicates, so a pod failing both has the sysctl's reason.
TEST(PodAdmission, SysctlHandlerBeforeThePredicates) {
    holder("ds-pod", PodPhase::Running);
    STRCMP_EQUAL("SysctlForbidden",
                 admit_static(admission_pod(std::string(kCoreOnly) + kUnsafeSysctl)).c_str());
}

// kubelet.go syncLoopIteration (the pods of a restart go through admission
// again) as readmit_static_pods sees it from the agent: the adopted static
// pod is readmitted against the other pods that run except the static ones
// (they are readmitted in turn, creation order), so only the DaemonSet's
// pod holding its host port refuses it (NodePorts).
TEST(PodAdmission, ReadmitCountsTheDaemonSetsPodsNotTheStaticOnes) {
    Pod web = admission_pod("");
    web.metadata.uid = "static-web";
    const std::vector<AdoptedStaticPod> adopted{{&web, 1000, std::nullopt}};
    holder("static-pod", PodPhase::Running, false, "/etc/daemonlet/manifests/other.yaml");
    CHECK_TRUE(admission.readmit(adopted, node).empty());
    holder("ds-pod", PodPhase::Running);
    const auto changed = admission.readmit(adopted, node);
    LONGS_EQUAL(1, changed.size());
    STRCMP_EQUAL("static-web", changed.front().uid.c_str());
    STRCMP_EQUAL("NodePorts", reason_of(changed.front().rejection).c_str());
    STRCMP_EQUAL("Pod was rejected: Predicate NodePorts failed", changed.front().rejection->message.c_str());
}

// allowlist.go NewAllowlist refuses a sysctl no namespace is known for; the
// agent checks allowedUnsafeSysctls when loading its configuration, so an
// allowlist it cannot make here is a bug: every pod is refused with the
// builder's message, the readmission changes nothing, and a valid list
// (a reload) makes the allowlist again.
TEST(PodAdmission, AllowlistThatCannotBeMadeRefusesEveryPod) {
    const Pod pod = admission_pod("");
    holder("ds-pod", PodPhase::Running);
    Pod web = admission_pod("");
    web.metadata.uid = "static-web";
    const std::vector<AdoptedStaticPod> adopted{{&web, 1000, std::nullopt}};
    LONGS_EQUAL(1, admission.readmit(adopted, node).size());
    admission.set_allowed_unsafe_sysctls({"foo.bar"});
    const auto refused = admission.admit(pod.spec);
    STRCMP_EQUAL("SysctlForbidden", reason_of(refused).c_str());
    STRCMP_EQUAL("the sysctl \"foo.bar\" are not known to be namespaced", refused->message.c_str());
    STRCMP_EQUAL("SysctlForbidden", admit_static(pod).c_str());
    CHECK_TRUE(admission.readmit(adopted, node).empty());
    admission.set_allowed_unsafe_sysctls({"kernel.msgmax"});
    STRCMP_EQUAL("admitted", reason_of(admission.admit(admission_pod(kUnsafeSysctl).spec)).c_str());
    LONGS_EQUAL(1, admission.readmit(adopted, node).size());
}

// SafeSysctlAllowlist(kernel): net.ipv4.tcp_keepalive_time is namespaced
// (so safe) from Linux 4.5 only; the allowlist follows the release set.
TEST(PodAdmission, KernelReleaseRebuildsTheSafeSysctls) {
    const Pod pod =
        admission_pod("  securityContext: {sysctls: [{name: net.ipv4.tcp_keepalive_time, value: '60'}]}\n");
    admission.set_kernel_release("3.10.0");
    STRCMP_EQUAL("SysctlForbidden", reason_of(admission.admit(pod.spec)).c_str());
    admission.set_kernel_release("6.1.0");
    STRCMP_EQUAL("admitted", reason_of(admission.admit(pod.spec)).c_str());
}

// Host::admission_spec null: the pod's spec is unknown, it is not counted
// as active (it cannot hold a host port).
TEST(PodAdmission, PodWithoutAKnownSpecIsNotActive) {
    const Pod pod = admission_pod("");
    holder("ds-pod", PodPhase::Running);
    const auto active = admission.active_pods(false);
    const auto refused = admission.admit_static(pod, node, active.specs);
    STRCMP_EQUAL("NodePorts", reason_of(refused).c_str());
    STRCMP_EQUAL("Pod was rejected: Predicate NodePorts failed", refused->message.c_str());
    specs.specs.erase("ds-pod");
    LONGS_EQUAL(0, admission.active_pods(false).specs.size());
    STRCMP_EQUAL("admitted", admit_static(pod).c_str());
}
