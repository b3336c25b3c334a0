// Static pods (core/static_pod.h): the kubelet's naming and defaults for a
// pod read from a file (pkg/kubelet/config/common.go applyDefaults,
// generatePodName) and its admission (pkg/kubelet/lifecycle/predicate.go
// Admit, generalFilter; kubelet.go rejectPod).
#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "core/manifest.h"
#include "core/static_pod.h"

// CppUTest last: its leak-detection macros redefine new.
#include <CppUTest/TestHarness.h>

using namespace daemonlet;

namespace {

Pod pod_of(const std::string& yaml) {
    auto m = load_manifest(yaml, "/etc/daemonlet/manifests/web.yaml");
    CHECK_TEXT(m.errors.empty(), m.errors.empty() ? "" : m.errors.front().to_string().c_str());
    return std::get<Pod>(m.objects.front().object);
}

const char* const kPod =
    "apiVersion: v1\nkind: Pod\nmetadata: {name: web}\nspec:\n  nodeName: elsewhere\n"
    "  containers: [{name: c, image: nginx}]\n";

Node node_with(Labels labels) {
    Node n;
    n.metadata.name = "Board-1";
    n.metadata.labels = std::move(labels);
    return n;
}

}  // namespace

TEST_GROUP(StaticPod){};

TEST(StaticPod, NamedAndDefaultedAsApplyDefaults) {
    Pod p = make_static_pod(pod_of(kPod), "Board-1", "/m/web.yaml");
    STRCMP_EQUAL("web-board-1", p.metadata.name.c_str());  // generatePodName: node name lower-cased
    STRCMP_EQUAL("default", p.metadata.namespace_.c_str());
    STRCMP_EQUAL("Board-1", p.spec.node_name.c_str());  // whatever the file said
    LONGS_EQUAL(32, p.metadata.uid.size());
    STRCMP_EQUAL(p.metadata.uid.c_str(), p.metadata.annotations["kubernetes.io/config.hash"].c_str());
    STRCMP_EQUAL("file", p.metadata.annotations["kubernetes.io/config.source"].c_str());
    STRCMP_EQUAL("web-board-1", p.object["metadata"]["name"].get<std::string>().c_str());
    // AddOrUpdateTolerationInPod: every NoExecute taint tolerated, once.
    LONGS_EQUAL(1, p.spec.tolerations.size());
    STRCMP_EQUAL("Exists", p.spec.tolerations[0].op.c_str());
    STRCMP_EQUAL("NoExecute", p.spec.tolerations[0].effect.c_str());
    LONGS_EQUAL(1, make_static_pod(p, "Board-1", "/m/web.yaml").spec.tolerations.size());
}

TEST(StaticPod, UidFollowsTheContentTheNodeAndTheFile) {
    const std::string uid = make_static_pod(pod_of(kPod), "Board-1", "/m/web.yaml").metadata.uid;
    STRCMP_EQUAL(uid.c_str(), make_static_pod(pod_of(kPod), "Board-1", "/m/web.yaml").metadata.uid.c_str());
    std::string edited = kPod;
    edited.replace(edited.find("nginx"), 5, "nginx:2");
    CHECK(uid != make_static_pod(pod_of(edited), "Board-1", "/m/web.yaml").metadata.uid);
    CHECK(uid != make_static_pod(pod_of(kPod), "board-2", "/m/web.yaml").metadata.uid);
    CHECK(uid != make_static_pod(pod_of(kPod), "Board-1", "/m/other.yaml").metadata.uid);
}

TEST(StaticPod, AdmissionAsGeneralFilter) {
    struct Row {
        const char* name;
        const char* spec;  // appended to the pod
        bool admitted;
    };
    const Row rows[] = {
        {"generalFilter: no selector fits", "", true},
        {"generalFilter: NodeAffinity, nodeSelector matches", "  nodeSelector: {role: edge}\n", true},
        {"generalFilter: NodeAffinity, nodeSelector does not match", "  nodeSelector: {role: core}\n", false},
        {"generalFilter: NodeAffinity, required node affinity does not match",
         "  affinity: {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution: {nodeSelectorTerms: "
         "[{matchExpressions: [{key: role, operator: In, values: [core]}]}]}}}\n",
         false},
        {"Admit: taints are not checked for static pods (only NoExecute, and not for static pods)", "", true},
    };
    Node node = node_with({{"role", "edge"}});
    node.taints.push_back({"dedicated", "x", "NoExecute", ""});
    for (const auto& row : rows) {
        Pod p = make_static_pod(pod_of(std::string(kPod) + row.spec), "Board-1", "/m/web.yaml");
        auto rejected = admit_static_pod(p, node);
        CHECK_EQUAL_TEXT(row.admitted, !rejected.has_value(), row.name);
        if (rejected) {
            // rejectPod: reason the predicate's name, the kubelet's message.
            STRCMP_EQUAL_TEXT("NodeAffinity", rejected->reason.c_str(), row.name);
            STRCMP_EQUAL_TEXT("Pod was rejected: Predicate NodeAffinity failed", rejected->message.c_str(),
                              row.name);
        }
    }
}

TEST(StaticPod, HostPortConflictsAsNodePorts) {
    // nodeports.Fits over HostPortInfo.CheckConflict: the same protocol and
    // port conflict on the same hostIP or when either is 0.0.0.0 (unset).
    struct Row {
        const char* name;
        const char* wanted;  // the static pod's port
        const char* used;    // a running pod's port
        bool admitted;
    };
    const Row rows[] = {
        {"CheckConflict: the same port, both on every address", "{containerPort: 80, hostPort: 8080}",
         "{containerPort: 80, hostPort: 8080}", false},
        {"CheckConflict: another port", "{containerPort: 80, hostPort: 8080}",
         "{containerPort: 80, hostPort: 8081}", true},
        {"CheckConflict: another protocol", "{containerPort: 53, hostPort: 53, protocol: UDP}",
         "{containerPort: 53, hostPort: 53}", true},
        {"CheckConflict: 0.0.0.0 against a given address", "{containerPort: 80, hostPort: 8080}",
         "{containerPort: 80, hostPort: 8080, hostIP: 10.0.0.1}", false},
        {"CheckConflict: two different addresses", "{containerPort: 80, hostPort: 8080, hostIP: 10.0.0.2}",
         "{containerPort: 80, hostPort: 8080, hostIP: 10.0.0.1}", true},
        {"GetContainerPorts: a containerPort without hostPort takes none", "{containerPort: 8080}",
         "{containerPort: 8080}", true},
    };
    const Node node = node_with({});
    for (const auto& row : rows) {
        auto with_port = [](const char* port) {
            return std::string(
                       "apiVersion: v1\nkind: Pod\nmetadata: {name: web}\nspec:\n  containers: [{name: c, "
                       "image: nginx, ports: [") +
                   port + "]}]\n";
        };
        Pod running = pod_of(with_port(row.used));
        Pod p = make_static_pod(pod_of(with_port(row.wanted)), "Board-1", "/m/web.yaml");
        auto rejected = admit_static_pod(p, node, {&running.spec});
        CHECK_EQUAL_TEXT(row.admitted, !rejected.has_value(), row.name);
        if (rejected) {
            STRCMP_EQUAL_TEXT("NodePorts", rejected->reason.c_str(), row.name);
            STRCMP_EQUAL_TEXT("Pod was rejected: Predicate NodePorts failed", rejected->message.c_str(),
                              row.name);
        }
    }
    // generalFilter's order: NodeAffinity is the first reason.
    Pod both = make_static_pod(
        pod_of("apiVersion: v1\nkind: Pod\nmetadata: {name: web}\nspec:\n  nodeSelector: {role: core}\n"
               "  containers: [{name: c, image: nginx, ports: [{containerPort: 1, hostPort: 1}]}]\n"),
        "Board-1", "/m/web.yaml");
    auto rejected = admit_static_pod(both, node, {&both.spec});
    CHECK(rejected.has_value());
    STRCMP_EQUAL("NodeAffinity", rejected->reason.c_str());
}

TEST(StaticPod, AdmittedAgainAtTheKubeletsStart) {
    // kubelet.go HandlePodAdditions at a start: every pod through canAdmitPod
    // again, oldest first, each against those admitted before it.
    struct In {
        const char* name;
        const char* spec;  // appended to the pod
        std::int64_t created_at_ms;
        const char* rejected;  // the reason an earlier admission recorded, or nullptr
    };
    struct Row {
        const char* name;
        std::vector<std::string> allowed_unsafe;  // allowedUnsafeSysctls now
        std::vector<In> pods;
        const char* changes;  // "<name>=<reason>" or "<name>=admitted", in order
    };
    const char* const sysctl = "  securityContext: {sysctls: [{name: kernel.msgmax, value: '1'}]}\n";
    const char* const port =
        "  containers: [{name: p, image: nginx, ports: [{containerPort: 1, hostPort: 1}]}]\n";
    const char* const port_core =
        "  nodeSelector: {role: core}\n  containers: [{name: p, image: nginx, ports: [{containerPort: 1, "
        "hostPort: "
        "1}]}]\n";
    const Row rows[] = {
        {"HandlePodAdditions: a pod still admissible runs on",
         {"kernel.msg*"},
         {{"a", sysctl, 1, nullptr}},
         ""},
        {"allowlist.go Admit: allowedUnsafeSysctls narrowed, a running pod is refused",
         {},
         {{"a", sysctl, 1, nullptr}},
         "a=SysctlForbidden"},
        {"generalFilter NodeAffinity: the node's labels changed, a running pod is refused",
         {},
         {{"a", "  nodeSelector: {role: core}\n", 1, nullptr}},
         "a=NodeAffinity"},
        {"canAdmitPod: the sysctl handler before the predicates",
         {},
         {{"a",
           "  nodeSelector: {role: core}\n  securityContext: {sysctls: [{name: kernel.msgmax, value: "
           "'1'}]}\n",
           1, nullptr}},
         "a=SysctlForbidden"},
        {"rejectPod at the last start, admissible now: admitted",
         {"kernel.msg*"},
         {{"a", sysctl, 1, "SysctlForbidden"}},
         "a=admitted"},
        {"rejectPod at the last start, refused for the same reason: no change",
         {},
         {{"a", sysctl, 1, "SysctlForbidden"}},
         ""},
        {"rejectPod at the last start, refused for another reason now",
         {},
         {{"a", "  nodeSelector: {role: core}\n", 1, "SysctlForbidden"}},
         "a=NodeAffinity"},
        {"PodsByCreationTime: the older pod keeps its host port, the newer is refused NodePorts",
         {},
         {{"new", port, 2, nullptr}, {"old", port, 1, nullptr}},
         "new=NodePorts"},
        {"canAdmitPod against admitted pods only: a refused pod holds no port",
         {},
         {{"old", port_core, 1, nullptr}, {"new", port, 2, nullptr}},
         "old=NodeAffinity"},
    };
    const Node node = node_with({{"role", "edge"}});
    for (const auto& row : rows) {
        auto allowlist = kubelet_sysctl_allowlist("6.1.0", row.allowed_unsafe);
        CHECK_TEXT(allowlist.ok(), row.name);
        std::vector<Pod> pods;
        pods.reserve(row.pods.size());
        std::vector<AdoptedStaticPod> adopted;
        for (const In& in : row.pods) {
            std::string yaml = std::string("apiVersion: v1\nkind: Pod\nmetadata: {name: ") + in.name +
                               "}\nspec:\n" + in.spec;
            if (yaml.find("containers:") == std::string::npos)
                yaml += "  containers: [{name: c, image: nginx}]\n";
            pods.push_back(make_static_pod(pod_of(yaml), "Board-1", std::string("/m/") + in.name + ".yaml"));
            AdoptedStaticPod a;
            a.pod = &pods.back();
            a.created_at_ms = in.created_at_ms;
            // rejectPod's message as that handler gives it.
            if (in.rejected)
                a.rejected = PodRejection{
                    in.rejected, std::string(in.rejected) == "SysctlForbidden"
                                     ? "forbidden sysctl: \"kernel.msgmax\" not allowlisted"
                                     : "Pod was rejected: Predicate " + std::string(in.rejected) + " failed"};
            adopted.push_back(a);
        }
        std::string changes;
        for (const auto& r : readmit_static_pods(adopted, node, allowlist.value(), {})) {
            std::string name;
            for (const Pod& p : pods)
                if (p.metadata.uid == r.uid) name = p.metadata.name.substr(0, p.metadata.name.find('-'));
            changes +=
                (changes.empty() ? "" : " ") + name + "=" + (r.rejection ? r.rejection->reason : "admitted");
        }
        STRCMP_EQUAL_TEXT(row.changes, changes.c_str(), row.name);
    }
    // rejectPod's message is the handler's.
    Pod p = make_static_pod(pod_of(std::string(kPod) + sysctl), "Board-1", "/m/web.yaml");
    auto none = kubelet_sysctl_allowlist("6.1.0", {});
    auto r = readmit_static_pods({AdoptedStaticPod{&p, 1, std::nullopt}}, node, none.value(), {});
    LONGS_EQUAL(1, r.size());
    STRCMP_EQUAL("forbidden sysctl: \"kernel.msgmax\" not allowlisted", r[0].rejection->message.c_str());
}
