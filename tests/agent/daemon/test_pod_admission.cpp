// The PodAdmission component (agent/daemon/pod_admission.h): the kubelet's
// canAdmitPod as HandlePodAdditions runs it (pkg/kubelet/kubelet.go: the
// sysctl admit handler, pkg/kubelet/sysctl allowlist.go; then
// pkg/kubelet/lifecycle/predicate.go generalFilter: NodeAffinity,
// NodePorts) over a real PodTable's active pods (filterOutInactivePods).
#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <variant>

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
