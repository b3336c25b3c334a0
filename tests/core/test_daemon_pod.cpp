// The Pod of the API for a board's DaemonSet pod (issue 14 §2) and its
// status. Rows name the upstream function they pin:
// pkg/controller/daemon (syncNodes, util.CreatePodTemplate,
// util.ReplaceDaemonSetPodNodeNameNodeAffinity, update.go Match / getPatch /
// dedupCurHistories), pkg/controller controller_utils.go
// GetPodFromTemplate, apimachinery LabelSelectorAsSelector, and the
// kubelet's generateAPIPodStatus, status/generate.go, getPhase,
// status_manager.go updateLastTransitionTime and pkg/util/pod
// PatchPodStatus.
#include <string>
#include <vector>

#include "core/daemon_pod.h"
#include "core/json_diff.h"
#include "core/manifest.h"
#include "core/pod_api_status.h"

// CppUTest last: its leak-detection macros redefine new.
#include <CppUTest/TestHarness.h>

using namespace daemonlet;

namespace {

// A DaemonSet as the cluster sends it (not defaulted by the test server).
Json ds_json(const Json& spec_extra = Json::object(), const Json& annotations = Json::object()) {
    Json spec = {{"containers", Json::array({{{"name", "main"}, {"image", "busybox:1.36"}}})}};
    if (spec_extra.is_object()) spec.update(spec_extra);
    Json md = {{"name", "agent"}, {"namespace", "edge"}, {"uid", "uid-agent"}};
    if (!annotations.empty()) md["annotations"] = annotations;
    return {{"apiVersion", "apps/v1"},
            {"kind", "DaemonSet"},
            {"metadata", md},
            {"spec",
             {{"selector", {{"matchLabels", {{"app", "agent"}}}}},
              {"template", {{"metadata", {{"labels", {{"app", "agent"}}}}}, {"spec", spec}}}}}};
}

DaemonSet load(const Json& obj) {
    LoadedManifest m = load_manifest(obj.dump(), "test");
    CHECK_TRUE_TEXT(m.errors.empty(), m.errors.empty() ? "" : m.errors[0].to_string().c_str());
    return std::get<DaemonSet>(m.objects.at(0).object);
}

// A ControllerRevision as the controller writes it for `ds` (as sent).
Json revision(const Json& ds, const std::string& hash, std::int64_t number, const std::string& owner_uid) {
    Json tmpl = ds["spec"]["template"];
    tmpl["$patch"] = "replace";
    return {{"metadata",
             {{"name", "agent-" + hash},
              {"labels", {{"app", "agent"}, {"controller-revision-hash", hash}}},
              {"ownerReferences", Json::array({{{"apiVersion", "apps/v1"},
                                                {"kind", "DaemonSet"},
                                                {"name", "agent"},
                                                {"uid", owner_uid},
                                                {"controller", true}}})}}},
            {"data", {{"spec", {{"template", tmpl}}}}},
            {"revision", number}};
}

std::string board_hash(const DaemonSet& ds) {
    // What the agent stores as the pod's revision_hash (desired_daemonsets.cpp).
    return cluster_revisions(ds, Json{{"items", Json::array({revision(ds.object, "x", 1, ds.metadata.uid)})}})
        .at(0)
        .template_hash;
}

}  // namespace

TEST_GROUP(LabelSelectorString){};

TEST(LabelSelectorString, RequirementsSortedByKeyAsLabelSelectorAsSelector) {
    struct Row {
        const char* name;
        LabelSelector selector;
        const char* want;
    };
    const Row rows[] = {
        {"LabelSelectorAsSelector: empty selects everything", {}, ""},
        {"matchLabels: k=v, sorted by key", {{{"tier", "edge"}, {"app", "x"}}, {}}, "app=x,tier=edge"},
        {"In: values sorted, in (a,b)", {{}, {{"zone", "In", {"b", "a"}}}}, "zone in (a,b)"},
        {"NotIn", {{}, {{"zone", "NotIn", {"c"}}}}, "zone notin (c)"},
        {"Exists and DoesNotExist", {{}, {{"b", "DoesNotExist", {}}, {"a", "Exists", {}}}}, "a,!b"},
        {"matchLabels and expressions sorted together",
         {{{"m", "1"}}, {{"a", "Exists", {}}, {"z", "In", {"q"}}}},
         "a,m=1,z in (q)"},
    };
    for (const auto& r : rows) STRCMP_EQUAL_TEXT(r.want, label_selector_string(r.selector).c_str(), r.name);
}

TEST_GROUP(ClusterRevisions){};

TEST(ClusterRevisions, TheRevisionOfTheBoardsTemplateAsMatchFindsIt) {
    const Json sent = ds_json();
    const DaemonSet ds = load(sent);
    const std::string mine = board_hash(ds);
    Json other_template = ds_json({{"hostNetwork", true}});
    struct Row {
        const char* name;
        Json items;
        const char* want;  // hash, or "" for none
    };
    const Row rows[] = {
        {"constructHistory: no revision yet: none (wait, never guess)", Json::array(), ""},
        {"Match: the template as the server sent it matches the defaulted one",
         Json::array({revision(sent, "5d8f", 1, "uid-agent")}), "5d8f"},
        {"Match: another template does not match",
         Json::array({revision(other_template, "9abc", 2, "uid-agent")}), ""},
        {"dedupCurHistories: several match: the highest revision",
         Json::array({revision(sent, "old1", 1, "uid-agent"), revision(sent, "new3", 3, "uid-agent"),
                      revision(sent, "mid2", 2, "uid-agent")}),
         "new3"},
        {"controlled by another DaemonSet: not ours", Json::array({revision(sent, "5d8f", 1, "uid-other")}),
         ""},
        {"no controller-revision-hash label: skipped", Json::array({[&] {
             Json r = revision(sent, "5d8f", 1, "uid-agent");
             r["metadata"]["labels"].erase("controller-revision-hash");
             return r;
         }()}),
         ""},
    };
    for (const auto& r : rows) {
        auto revs = cluster_revisions(ds, Json{{"items", r.items}});
        const ClusterRevision* got = revision_for(revs, mine);
        STRCMP_EQUAL_TEXT(r.want, got ? got->hash.c_str() : "", r.name);
    }
}

TEST_GROUP(DaemonPodObject){};

TEST(DaemonPodObject, ThePodSyncNodesCreatesBoundToTheBoard) {
    const Json sent = ds_json(
        {{"tolerations",
          Json::array({{{"key", "daemonlet.io/board"}, {"operator", "Exists"}, {"effect", "NoSchedule"}}})}},
        {{"deprecated.daemonset.template.generation", "4"}});
    const DaemonSet ds = load(sent);
    auto revs = cluster_revisions(ds, Json{{"items", Json::array({revision(sent, "7c9d", 2, "uid-agent")})}});
    const Json pod = daemon_pod_object(ds, revs.at(0), "edge-01");
    // GetPodFromTemplate: generateName, the template's labels; CreatePodTemplate's two labels.
    STRCMP_EQUAL("agent-", pod["metadata"]["generateName"].get<std::string>().c_str());
    STRCMP_EQUAL("edge", pod["metadata"]["namespace"].get<std::string>().c_str());
    CHECK_FALSE(pod["metadata"].contains("name"));
    CHECK(json_same(
        pod["metadata"]["labels"],
        Json({{"app", "agent"}, {"pod-template-generation", "4"}, {"controller-revision-hash", "7c9d"}})));
    // NewControllerRef.
    CHECK(pod["metadata"]["ownerReferences"] == Json::array({{{"apiVersion", "apps/v1"},
                                                              {"kind", "DaemonSet"},
                                                              {"name", "agent"},
                                                              {"uid", "uid-agent"},
                                                              {"controller", true},
                                                              {"blockOwnerDeletion", true}}}));
    // AddOrUpdateDaemonPodTolerations after the template's own.
    std::vector<std::string> keys;
    for (const Json& t : pod["spec"]["tolerations"]) keys.push_back(t["key"].get<std::string>());
    CHECK(keys == (std::vector<std::string>{
                      "daemonlet.io/board", "node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable",
                      "node.kubernetes.io/disk-pressure", "node.kubernetes.io/memory-pressure",
                      "node.kubernetes.io/pid-pressure", "node.kubernetes.io/unschedulable"}));
    STRCMP_EQUAL("edge-01", pod["spec"]["nodeName"].get<std::string>().c_str());
    // The defaulted template's spec (the server's defaults).
    STRCMP_EQUAL("Always", pod["spec"]["restartPolicy"].get<std::string>().c_str());
}

TEST(DaemonPodObject, TheTemplateGenerationLabelOnlyForTheCurrentTemplate) {
    const Json old_sent = ds_json({{"hostNetwork", true}});
    const DaemonSet ds = load(ds_json({}, {{"deprecated.daemonset.template.generation", "5"}}));
    auto revs =
        cluster_revisions(ds, Json{{"items", Json::array({revision(old_sent, "0ld", 1, "uid-agent")})}});
    const Json pod = daemon_pod_object(ds, revs.at(0), "edge-01");
    CHECK_FALSE(pod["metadata"]["labels"].contains("pod-template-generation"));
    STRCMP_EQUAL("0ld", pod["metadata"]["labels"]["controller-revision-hash"].get<std::string>().c_str());
}

TEST(DaemonPodObject, ReplaceDaemonSetPodNodeNameNodeAffinityRows) {
    const Json want_terms = Json::array(
        {{{"matchFields",
           Json::array({{{"key", "metadata.name"}, {"operator", "In"}, {"values", Json::array({"n1"})}}})}}});
    const Json preferred = Json::array(
        {{{"weight", 1},
          {"preference", {{"matchExpressions", Json::array({{{"key", "a"}, {"operator", "Exists"}}})}}}}});
    struct Row {
        const char* name;
        Json affinity;  // null: none
        bool keeps_preferred;
        bool keeps_pod_affinity;
    };
    const Row rows[] = {
        {"nil affinity: a node affinity with the node's term", nullptr, false, false},
        {"affinity without nodeAffinity: podAffinity kept",
         {{"podAffinity",
           {{"requiredDuringSchedulingIgnoredDuringExecution",
             Json::array({{{"topologyKey", "kubernetes.io/hostname"},
                           {"labelSelector", {{"matchLabels", {{"x", "y"}}}}}}})}}}},
         false,
         true},
        {"nodeAffinity with preferred only: required added, preferred kept",
         {{"nodeAffinity", {{"preferredDuringSchedulingIgnoredDuringExecution", preferred}}}},
         true,
         false},
        {"required with matchExpressions: its terms replaced",
         {{"nodeAffinity",
           {{"requiredDuringSchedulingIgnoredDuringExecution",
             {{"nodeSelectorTerms",
               Json::array({{{"matchExpressions",
                              Json::array({{{"key", "zone"}, {"operator", "In"}, {"values", {"a"}}}})}}})}}},
            {"preferredDuringSchedulingIgnoredDuringExecution", preferred}}}},
         true,
         false},
    };
    for (const auto& r : rows) {
        const Json sent = r.affinity.is_null() ? ds_json() : ds_json({{"affinity", r.affinity}});
        const DaemonSet ds = load(sent);
        auto revs =
            cluster_revisions(ds, Json{{"items", Json::array({revision(sent, "h", 1, "uid-agent")})}});
        const Json pod = daemon_pod_object(ds, revs.at(0), "n1");
        const Json& a = pod["spec"]["affinity"];
        CHECK_TEXT(a["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"] ==
                       want_terms,
                   r.name);
        CHECK_EQUAL_TEXT(r.keeps_preferred,
                         a["nodeAffinity"].contains("preferredDuringSchedulingIgnoredDuringExecution"),
                         r.name);
        CHECK_EQUAL_TEXT(r.keeps_pod_affinity, a.contains("podAffinity"), r.name);
    }
}

TEST(DaemonPodObject, ControlledPodsOfThisNodeNotBeingDeleted) {
    auto pod = [](const char* name, const char* owner, const char* node, bool deleting) {
        Json p = {{"metadata",
                   {{"name", name},
                    {"ownerReferences",
                     Json::array({{{"kind", "DaemonSet"}, {"uid", owner}, {"controller", true}}})}}},
                  {"spec", {{"nodeName", node}}}};
        if (deleting) p["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z";
        return p;
    };
    const Json list = {
        {"items", Json::array({pod("a", "uid-agent", "n1", false), pod("b", "uid-other", "n1", false),
                               pod("c", "uid-agent", "n2", false), pod("d", "uid-agent", "n1", true)})}};
    auto got = controlled_pods(list, "uid-agent", "n1");
    LONGS_EQUAL(1, got.size());
    STRCMP_EQUAL("a", got[0]["metadata"]["name"].get<std::string>().c_str());
    LONGS_EQUAL(2, controlled_pods(list, "uid-agent", "n1", true).size());
}

TEST_GROUP(PodApiStatus){};

namespace {

ContainerStatus running(const char* name, bool ready) {
    ContainerStatus c;
    c.name = name;
    c.runtime_id = std::string("id-") + name;
    c.state = ContainerState::Running;
    c.started_at_ms = 1'767'225'600'000;  // 2026-01-01
    c.ready = ready;
    c.started = true;
    return c;
}

// A container that ended once (Error) and runs again.
ContainerStatus ran_again(const char* name, std::int32_t restarts, std::int32_t exit_code) {
    ContainerStatus c = running(name, true);
    c.restart_count = restarts;
    c.termination_reason = "Error";
    c.exit_code = exit_code;
    c.termination_started_at_ms = 1'767'225'550'000;
    c.finished_at_ms = 1'767'225'560'000;
    return c;
}

PodRecord pod_with(std::vector<ContainerStatus> containers, PodPhase phase = PodPhase::Running) {
    PodRecord p;
    p.uid = "u1";
    p.name = "agent-abcde";
    p.namespace_ = "edge";
    p.daemonset = "agent";
    p.phase = phase;
    p.created_at_ms = 1'767'225'500'000;
    p.containers = std::move(containers);
    return p;
}

std::string conditions_of(const Json& st) {
    std::string out;
    for (const Json& c : st["conditions"])
        out += c["type"].get<std::string>() + "=" + c["status"].get<std::string>() +
               (c.contains("reason") ? "(" + c["reason"].get<std::string>() + ")" : "") + " ";
    return out;
}

}  // namespace

TEST(PodApiStatus, ConditionsAsGenerateAPIPodStatusOrdersAndReasonsThem) {
    ContainerStatus crashed = running("b", false);
    crashed.state = ContainerState::Terminated;
    crashed.exit_code = 0;
    crashed.reason = "Completed";
    ContainerStatus killed = running("a", false);
    killed.state = ContainerState::Terminated;
    killed.exit_code = 143;
    killed.reason = "Error";
    ContainerStatus creating;
    creating.name = "a";
    creating.reason = "ContainerCreating";
    ContainerStatus backing_off = killed;
    backing_off.state = ContainerState::Waiting;
    backing_off.reason = "CrashLoopBackOff";
    backing_off.termination_reason = "Error";
    struct Row {
        const char* name;
        PodRecord pod;
        bool terminal;
        const char* want_phase;
        const char* want;
    };
    const Row rows[] = {
        {"all ready: Initialized, Ready, ContainersReady, PodScheduled True", pod_with({running("a", true)}),
         false, "Running",
         "PodReadyToStartContainers=True Initialized=True Ready=True ContainersReady=True "
         "PodScheduled=True "},
        {"GenerateContainersReadyCondition: an unready container",
         pod_with({running("a", true), running("b", false)}), false, "Running",
         "PodReadyToStartContainers=True Initialized=True Ready=False(ContainersNotReady) "
         "ContainersReady=False(ContainersNotReady) PodScheduled=True "},
        {"getPhase(podIsTerminal): every container exited 0: Succeeded, PodCompleted", pod_with({crashed}),
         true, "Succeeded",
         "PodReadyToStartContainers=False Initialized=True Ready=False(PodCompleted) "
         "ContainersReady=False(PodCompleted) PodScheduled=True "},
        {"getPhase(podIsTerminal): one failed: Failed, PodFailed", pod_with({crashed, killed}), true,
         "Failed",
         "PodReadyToStartContainers=False Initialized=True Ready=False(PodFailed) "
         "ContainersReady=False(PodFailed) PodScheduled=True "},
        {"GeneratePodReadyToStartContainersCondition: no sandbox yet (nothing started): False",
         pod_with({creating}, PodPhase::Pending), false, "Pending",
         "PodReadyToStartContainers=False Initialized=True Ready=False(ContainersNotReady) "
         "ContainersReady=False(ContainersNotReady) PodScheduled=True "},
        {"GeneratePodReadyToStartContainersCondition: the sandbox stays while it backs off: True",
         pod_with({backing_off}), false, "Running",
         "PodReadyToStartContainers=True Initialized=True Ready=False(ContainersNotReady) "
         "ContainersReady=False(ContainersNotReady) PodScheduled=True "},
    };
    for (const auto& r : rows) {
        PodStatusContext ctx;
        ctx.now_ms = 1'767'225'700'000;
        ctx.terminal = r.terminal;
        const Json st = pod_api_status(r.pod, ctx);
        STRCMP_EQUAL_TEXT(r.want_phase, st["phase"].get<std::string>().c_str(), r.name);
        STRCMP_EQUAL_TEXT(r.want, conditions_of(st).c_str(), r.name);
    }
    // The unready message: Go's %s of the names.
    PodStatusContext ctx;
    const Json st = pod_api_status(pod_with({running("a", false), running("b", false)}), ctx);
    STRCMP_EQUAL("containers with unready status: [a b]",
                 st["conditions"][2]["message"].get<std::string>().c_str());
}

TEST(PodApiStatus, ContainerStatusesSortedByNameWithImageAndLastState) {
    const ContainerStatus z = ran_again("z", 2, 3);
    PodStatusContext ctx;
    ctx.runtime = "exec";
    ctx.images = {"img-z", "img-a"};
    ctx.node_ips = {"10.0.0.2", "fd00::2", "10.0.0.3"};
    ctx.qos_class = "BestEffort";
    ctx.now_ms = 1'767'225'700'000;
    const Json st = pod_api_status(pod_with({z, running("a", true)}), ctx);
    // kubetypes.SortedContainerStatuses: by name, each with its own image.
    STRCMP_EQUAL("a", st["containerStatuses"][0]["name"].get<std::string>().c_str());
    STRCMP_EQUAL("img-a", st["containerStatuses"][0]["image"].get<std::string>().c_str());
    const Json& zs = st["containerStatuses"][1];
    STRCMP_EQUAL("exec://id-z", zs["containerID"].get<std::string>().c_str());
    LONGS_EQUAL(2, zs["restartCount"].get<int>());
    LONGS_EQUAL(3, zs["lastState"]["terminated"]["exitCode"].get<int>());
    STRCMP_EQUAL("Error", zs["lastState"]["terminated"]["reason"].get<std::string>().c_str());
    // hostIPs: at most a dual-stack pair; startTime; qosClass.
    LONGS_EQUAL(2, st["hostIPs"].size());
    STRCMP_EQUAL("10.0.0.2", st["hostIP"].get<std::string>().c_str());
    STRCMP_EQUAL("2025-12-31T23:58:20Z", st["startTime"].get<std::string>().c_str());
    STRCMP_EQUAL("BestEffort", st["qosClass"].get<std::string>().c_str());
}

TEST(PodApiStatus, ContainerStatusFieldsAsConvertContainerStatus) {
    // A container that crashed once and runs again, its image known to the
    // runtime; another that has just ended.
    ContainerStatus again = ran_again("a", 1, 2);
    again.termination_runtime_id = "id-a-0";
    again.image_id = "docker.io/library/busybox@sha256:0123";
    ContainerStatus ended = running("b", false);
    ended.state = ContainerState::Terminated;
    ended.started = false;
    ended.exit_code = 1;
    ended.reason = "Error";
    ended.finished_at_ms = 1'767'225'650'000;
    PodStatusContext ctx;
    ctx.runtime = "containerd";
    ctx.images = {"busybox:1.36", "busybox:1.36"};
    ctx.now_ms = 1'767'225'700'000;
    const Json st = pod_api_status(pod_with({again, ended}), ctx);
    const Json& a = st["containerStatuses"][0];
    const Json& b = st["containerStatuses"][1];
    struct Row {
        const char* name;
        Json got;
        Json want;
    };
    const Row rows[] = {
        {"convertContainerStatus: imageID is the runtime's imageRef", a["imageID"],
         "docker.io/library/busybox@sha256:0123"},
        {"convertContainerStatus: imageID empty while the runtime has not said", b["imageID"], ""},
        {"convertContainerStatus: containerID <runtime>://<id>", a["containerID"], "containerd://id-a"},
        {"convertToAPIContainerStatuses: lastState.terminated of the previous instance, its containerID",
         a["lastState"]["terminated"],
         {{"exitCode", 2},
          {"reason", "Error"},
          {"startedAt", "2025-12-31T23:59:10Z"},
          {"finishedAt", "2025-12-31T23:59:20Z"},
          {"containerID", "containerd://id-a-0"}}},
        {"convertContainerStatus: state.terminated carries its containerID",
         b["state"]["terminated"]["containerID"], "containerd://id-b"},
        {"prober UpdatePodStatus: started true while running", a["started"], true},
        {"prober UpdatePodStatus: started false once terminated", b["started"], false},
        {"restartCount", a["restartCount"], 1},
        {"no previous termination: lastState {}", b["lastState"], Json::object()},
    };
    for (const auto& r : rows)
        CHECK_TEXT(r.got == r.want, (std::string(r.name) + ": " + r.got.dump()).c_str());
}

TEST_GROUP(PodStatusPatch){};

TEST(PodStatusPatch, UpdateLastTransitionTimeKeepsTheTimeWhileTheStatusHolds) {
    Json old_status = {
        {"conditions",
         Json::array({{{"type", "Ready"}, {"status", "True"}, {"lastTransitionTime", "T0"}},
                      {{"type", "Initialized"}, {"status", "False"}, {"lastTransitionTime", "T0"}}})}};
    Json st = {{"conditions",
                Json::array({{{"type", "Ready"}, {"status", "True"}, {"lastTransitionTime", "x"}},
                             {{"type", "Initialized"}, {"status", "True"}, {"lastTransitionTime", "x"}},
                             {{"type", "PodScheduled"}, {"status", "True"}, {"lastTransitionTime", "x"}}})}};
    keep_transition_times(st, old_status, "NOW");
    STRCMP_EQUAL("T0", st["conditions"][0]["lastTransitionTime"].get<std::string>().c_str());
    STRCMP_EQUAL("NOW", st["conditions"][1]["lastTransitionTime"].get<std::string>().c_str());
    STRCMP_EQUAL("NOW", st["conditions"][2]["lastTransitionTime"].get<std::string>().c_str());
}

TEST(PodStatusPatch, TwoWayStrategicMergePatchWithTheUidPrecondition) {
    const Json ready = {{"type", "Ready"}, {"status", "True"}};
    const Json sched = {{"type", "PodScheduled"}, {"status", "True"}};
    const Json base = {{"phase", "Running"},
                       {"conditions", Json::array({ready, sched})},
                       {"podIPs", Json::array({{{"ip", "10.1.0.5"}}})},
                       {"containerStatuses", Json::array({{{"name", "a"}, {"restartCount", 0}}})}};
    struct Row {
        const char* name;
        Json old_status;
        Json status;
        Json want_status;  // the patch's status; null: no patch
    };
    Json not_ready = ready;
    not_ready["status"] = "False";
    Json restarted = base;
    restarted["containerStatuses"][0]["restartCount"] = 1;
    Json moved = base;
    moved["conditions"] = Json::array({not_ready, sched});
    Json ips = base;
    ips["podIPs"] = Json::array({{{"ip", "10.1.0.6"}}});
    Json fewer = base;
    fewer.erase("podIPs");
    const Row rows[] = {
        {"preparePatchBytesForPodStatus: unchanged: no patch", base, base, nullptr},
        {"key order does not matter", base,
         [&] {
             Json b = Json::object();
             for (auto it = base.rbegin(); it != base.rend(); ++it) b[it.key()] = it.value();
             return b;
         }(),
         nullptr},
        {"conditions: patchMergeKey type: only the changed one, with the order",
         base,
         moved,
         {{"$setElementOrder/conditions", Json::array({{{"type", "Ready"}}, {{"type", "PodScheduled"}}})},
          {"conditions", Json::array({not_ready})}}},
        {"containerStatuses: no patch strategy: replaced whole",
         base,
         restarted,
         {{"containerStatuses", restarted["containerStatuses"]}}},
        {"podIPs: patchMergeKey ip: the new one, the old one deleted",
         base,
         ips,
         {{"$setElementOrder/podIPs", Json::array({{{"ip", "10.1.0.6"}}})},
          {"podIPs", Json::array({{{"ip", "10.1.0.6"}}, {{"ip", "10.1.0.5"}, {"$patch", "delete"}}})}}},
        {"a field gone: null", base, fewer, {{"podIPs", nullptr}}},
        {"from the empty status of a new Pod: everything", Json::object(), base, base},
    };
    for (const auto& r : rows) {
        const Json patch = pod_status_patch(r.old_status, r.status, "uid-1");
        if (r.want_status.is_null()) {
            CHECK_TEXT(patch.empty(), r.name);
            continue;
        }
        CHECK_TEXT(patch["metadata"] == Json({{"uid", "uid-1"}}), r.name);
        CHECK_TEXT(json_same(patch["status"], r.want_status),
                   (std::string(r.name) + ": " + patch.dump()).c_str());
    }
}
