// The store's entities: round trips, writes only on change, transactions,
// bounded events, revision pruning. Real SQLite files in a fresh directory.
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "store/store.h"
#include "store/testing.h"
#include "tests/store/store_fixture.h"

#include <CppUTest/TestHarness.h>

using namespace daemonlet;
using namespace daemonlet::testing;

namespace {

std::unique_ptr<store::Store> open_store(const std::string& path) {
    store::OpenReport report;
    return MUST(store::Store::open(path, 1000, &report));
}

std::string revision_numbers(store::Store& s, const std::string& ds) {
    std::string out;
    for (const RevisionRecord& r : MUST(s.list_revisions("kube-system", ds)))
        out += (out.empty() ? "" : ",") + std::to_string(r.revision);
    return out;
}

}  // namespace

// ---------------------------------------------------------------------------

TEST_GROUP(StoreRoundTrip) {
    TempDir dir;
    std::string path = dir.file("daemonlet.db");
    std::unique_ptr<store::Store> s;
    void setup() override { s = open_store(path); }
    void teardown() override { s.reset(); }
};

TEST(StoreRoundTrip, DaemonSetComesBackAsStored) {
    store::StoredDaemonSet ds = sample_daemonset("agent");
    CHECK_TRUE(MUST(s->put_daemonset(ds)));
    auto got = MUST(s->get_daemonset("kube-system", "agent"));
    CHECK_TRUE(got.has_value());
    CHECK_TRUE(*got == ds);
    CHECK_FALSE(MUST(s->get_daemonset("kube-system", "other")).has_value());
    CHECK_FALSE(MUST(s->get_daemonset("default", "agent")).has_value());

    store::StoredDaemonSet changed = sample_daemonset("agent", 2);
    CHECK_TRUE(MUST(s->put_daemonset(changed)));
    CHECK_TRUE(*MUST(s->get_daemonset("kube-system", "agent")) == changed);
}

TEST(StoreRoundTrip, DaemonSetsAreListedByNamespaceAndName) {
    store::StoredDaemonSet b = sample_daemonset("b");
    store::StoredDaemonSet a = sample_daemonset("a");
    store::StoredDaemonSet z = sample_daemonset("z");
    z.namespace_ = "default";
    for (const auto& ds : {b, a, z}) CHECK_TRUE(MUST(s->put_daemonset(ds)));
    auto all = MUST(s->list_daemonsets());
    LONGS_EQUAL(3, all.size());
    CHECK_TRUE(all[0] == z);
    CHECK_TRUE(all[1] == a);
    CHECK_TRUE(all[2] == b);
}

TEST(StoreRoundTrip, DeletingADaemonSetDeletesItsRevisionsOnly) {
    CHECK_TRUE(MUST(s->put_daemonset(sample_daemonset("agent"))));
    CHECK_TRUE(MUST(s->put_revision(sample_revision("agent", 1))));
    CHECK_TRUE(MUST(s->put_revision(sample_revision("agent", 2))));
    CHECK_TRUE(MUST(s->put_pod(sample_pod("uid-1", "agent"))));
    CHECK_TRUE(MUST(s->delete_daemonset("kube-system", "agent")));
    CHECK_FALSE(MUST(s->get_daemonset("kube-system", "agent")).has_value());
    CHECK_TRUE(MUST(s->list_revisions("kube-system", "agent")).empty());
    // The pod stays until the agent has stopped it.
    LONGS_EQUAL(1, MUST(s->list_pods()).size());
    CHECK_FALSE(MUST(s->delete_daemonset("kube-system", "agent")));
}

TEST(StoreRoundTrip, RevisionsComeBackInOrder) {
    CHECK_TRUE(MUST(s->put_daemonset(sample_daemonset("agent"))));
    for (int r : {3, 1, 2}) CHECK_TRUE(MUST(s->put_revision(sample_revision("agent", r))));
    auto revs = MUST(s->list_revisions("kube-system", "agent"));
    LONGS_EQUAL(3, revs.size());
    for (std::size_t i = 0; i < revs.size(); ++i) {
        RevisionRecord want = sample_revision("agent", static_cast<std::int64_t>(i) + 1);
        LONGS_EQUAL(want.revision, revs[i].revision);
        STRCMP_EQUAL(want.hash.c_str(), revs[i].hash.c_str());
        STRCMP_EQUAL(want.template_json.c_str(), revs[i].template_json.c_str());
        STRCMP_EQUAL(want.namespace_.c_str(), revs[i].namespace_.c_str());
        STRCMP_EQUAL(want.daemonset.c_str(), revs[i].daemonset.c_str());
        LONGS_EQUAL(want.created_at_ms, revs[i].created_at_ms);
    }
}

TEST(StoreRoundTrip, UndoRenumbersTheRestoredTemplate) {
    // Upstream bumps the Revision of the existing ControllerRevision.
    CHECK_TRUE(MUST(s->put_daemonset(sample_daemonset("agent"))));
    CHECK_TRUE(MUST(s->put_revision(sample_revision("agent", 1))));
    CHECK_TRUE(MUST(s->put_revision(sample_revision("agent", 2))));
    RevisionRecord undo = sample_revision("agent", 1);
    undo.revision = 3;
    CHECK_TRUE(MUST(s->put_revision(undo)));
    STRCMP_EQUAL("2,3", revision_numbers(*s, "agent").c_str());
    STRCMP_EQUAL("hash-1", MUST(s->list_revisions("kube-system", "agent")).back().hash.c_str());
}

TEST(StoreRoundTrip, ARollbackComesBackAsStoredAndWritesOnlyOnChange) {
    CHECK_TRUE(MUST(s->put_daemonset(sample_daemonset("agent"))));
    CHECK_FALSE(MUST(s->get_rollback("kube-system", "agent")).has_value());
    store::StoredRollback rb{"kube-system", "agent", "file-1", "hash-1", R"({"spec":{}})", 1000};
    CHECK_TRUE(MUST(s->put_rollback(rb)));
    CHECK(MUST(s->get_rollback("kube-system", "agent")) == rb);
    rb.created_at_ms = 2000;  // a new time alone is not a change
    CHECK_FALSE(MUST(s->put_rollback(rb)));
    rb.revision_hash = "hash-2";
    CHECK_TRUE(MUST(s->put_rollback(rb)));
    STRCMP_EQUAL("hash-2", MUST(s->get_rollback("kube-system", "agent"))->revision_hash.c_str());
    CHECK_TRUE(MUST(s->delete_rollback("kube-system", "agent")));
    CHECK_FALSE(MUST(s->delete_rollback("kube-system", "agent")));
    CHECK_FALSE(MUST(s->get_rollback("kube-system", "agent")).has_value());
}

TEST(StoreRoundTrip, ARollbackGoesWithItsDaemonSetAndNeedsIt) {
    auto orphan = s->put_rollback({"kube-system", "missing", "f", "h", "{}", 1});
    CHECK_FALSE(orphan.ok());
    CHECK(orphan.error().message.find("FOREIGN KEY") != std::string::npos);
    CHECK_TRUE(MUST(s->put_daemonset(sample_daemonset("agent"))));
    CHECK_TRUE(MUST(s->put_rollback({"kube-system", "agent", "f", "h", "{}", 1})));
    // The file that defines the DaemonSet changing keeps the row (upsert, no cascade).
    CHECK_TRUE(MUST(s->put_daemonset(sample_daemonset("agent", 2))));
    CHECK_TRUE(MUST(s->get_rollback("kube-system", "agent")).has_value());
    CHECK_TRUE(MUST(s->delete_daemonset("kube-system", "agent")));
    CHECK_FALSE(MUST(s->get_rollback("kube-system", "agent")).has_value());
}

TEST(StoreRoundTrip, ARevisionNeedsItsDaemonSet) {
    auto r = s->put_revision(sample_revision("missing", 1));
    CHECK_FALSE(r.ok());
    STRCMP_EQUAL((path + ": put_revision: FOREIGN KEY constraint failed").c_str(), r.error().message.c_str());
}

TEST(StoreRoundTrip, PodComesBackAsStored) {
    PodRecord pod = sample_pod("uid-1");
    CHECK_TRUE(MUST(s->put_pod(pod)));
    auto pods = MUST(s->list_pods());
    LONGS_EQUAL(1, pods.size());
    STRCMP_EQUAL("", pod_difference(pod, pods[0]).c_str());

    pod.phase = PodPhase::Failed;
    pod.deleting = true;
    // A static pod the kubelet's admission rejected (migration 5).
    pod.source = "/m/web.yaml";
    pod.reason = "NodeAffinity";
    pod.message = "Pod was rejected: Predicate NodeAffinity failed";
    pod.containers[1].state = ContainerState::Terminated;
    pod.containers[1].reason = "OOMKilled";
    pod.containers[1].restart_count = 6;
    // Its stop record (core/lifecycle_hook.h), in the containers' JSON: a
    // row written before it reads back without one.
    pod.containers[0].stop_record = R"({"spec":{"containers":[{"name":"a"}]}})";
    CHECK_TRUE(MUST(s->put_pod(pod)));
    pods = MUST(s->list_pods());
    LONGS_EQUAL(1, pods.size());
    STRCMP_EQUAL("", pod_difference(pod, pods[0]).c_str());

    CHECK_TRUE(MUST(s->delete_pod("uid-1")));
    CHECK_TRUE(MUST(s->list_pods()).empty());
    CHECK_FALSE(MUST(s->delete_pod("uid-1")));
}

// A Pod deleted through the API with its own grace: the kubelet kills its
// containers within deletionGracePeriodSeconds, kept with each container
// (kuberuntime labels.go io.kubernetes.pod.deletionGracePeriod) so that a
// restarted kubelet still has it. Here in the containers' JSON, no
// migration: a row written before it (or without one) reads back as none,
// another shape as none.
TEST(StoreRoundTrip, APodsDeletionGraceComesBackWithIt) {
    PodRecord pod = sample_pod("uid-1");
    CHECK_TRUE(MUST(s->put_pod(pod)));
    CHECK_FALSE(MUST(s->list_pods())[0].deletion_grace_seconds.has_value());
    pod.deleting = true;
    pod.deletion_grace_seconds = 3;
    CHECK_TRUE(MUST(s->put_pod(pod)));
    auto pods = MUST(s->list_pods());
    STRCMP_EQUAL("", pod_difference(pod, pods[0]).c_str());
    LONGS_EQUAL(3, *pods[0].deletion_grace_seconds);
    pod.deletion_grace_seconds = 0;  // 0 (the agent stores at least 2): kept, not taken for none
    CHECK_TRUE(MUST(s->put_pod(pod)));
    LONGS_EQUAL(0, MUST(s->list_pods())[0].deletion_grace_seconds.value_or(-1));

    RawDb raw(path);
    STRCMP_EQUAL("", raw.exec("UPDATE pods SET containers_json = json_remove(json_remove(containers_json, "
                              "'$[0].deletionGracePeriodSeconds'), '$[1].deletionGracePeriodSeconds')")
                         .c_str());
    pods = MUST(s->list_pods());
    CHECK_FALSE(pods[0].deletion_grace_seconds.has_value());
    CHECK_TRUE(pods[0].deleting);
    STRCMP_EQUAL("", raw.exec("UPDATE pods SET containers_json = json_set(containers_json, "
                              "'$[0].deletionGracePeriodSeconds', 'soon')")
                         .c_str());
    pods = MUST(s->list_pods());
    LONGS_EQUAL(1, pods.size());
    CHECK_FALSE(pods[0].deletion_grace_seconds.has_value());
}

TEST(StoreRoundTrip, InitContainersComeBackApartFromAppContainers) {
    PodRecord pod = sample_pod("uid-1");
    ContainerStatus init;
    init.name = "setup";
    init.state = ContainerState::Terminated;
    init.reason = "Completed";
    init.ready = true;
    init.restart_count = 2;
    pod.init_containers = {init, init};
    pod.init_containers[1].name = "proxy";
    pod.init_containers[1].state = ContainerState::Running;
    pod.init_containers[1].sidecar = true;
    CHECK_TRUE(MUST(s->put_pod(pod)));
    auto pods = MUST(s->list_pods());
    LONGS_EQUAL(1, pods.size());
    STRCMP_EQUAL("", pod_difference(pod, pods[0]).c_str());
    // Unchanged: nothing written.
    CHECK_FALSE(MUST(s->put_pod(pod)));
    pod.init_containers[1].state = ContainerState::Terminated;
    CHECK_TRUE(MUST(s->put_pod(pod)));
    STRCMP_EQUAL("", pod_difference(pod, MUST(s->list_pods())[0]).c_str());
}

TEST(StoreRoundTrip, EveryPhaseAndStateComesBack) {
    const PodPhase phases[] = {PodPhase::Pending, PodPhase::Running, PodPhase::Succeeded, PodPhase::Failed,
                               PodPhase::Unknown};
    const ContainerState states[] = {ContainerState::Waiting, ContainerState::Running,
                                     ContainerState::Terminated};
    for (int i = 0; i < 5; ++i) {
        PodRecord pod = sample_pod("uid-" + std::to_string(i));
        pod.phase = phases[i];
        pod.containers[0].state = states[i % 3];
        pod.containers.resize(static_cast<std::size_t>(i % 3));  // none, one, two containers
        CHECK_TRUE(MUST(s->put_pod(pod)));
    }
    auto pods = MUST(s->list_pods());
    LONGS_EQUAL(5, pods.size());
    for (const PodRecord& got : pods) {
        int i = got.uid.back() - '0';
        PodRecord want = sample_pod(got.uid);
        want.phase = phases[i];
        want.containers[0].state = states[i % 3];
        want.containers.resize(static_cast<std::size_t>(i % 3));
        STRCMP_EQUAL("", pod_difference(want, got).c_str());
    }
    STRCMP_EQUAL("Succeeded", to_string(PodPhase::Succeeded));
    STRCMP_EQUAL("Terminated", to_string(ContainerState::Terminated));
}

TEST(StoreRoundTrip, AContainerMessageThatIsNotUtf8IsStoredReplaced) {
    PodRecord pod = sample_pod("uid-1");
    pod.containers[1].message = "bad \xff\xfe bytes";
    CHECK_TRUE(MUST(s->put_pod(pod)));
    CHECK_FALSE(MUST(s->put_pod(pod)));  // encoded the same way again: unchanged
    STRCMP_EQUAL("bad \xEF\xBF\xBD\xEF\xBF\xBD bytes", MUST(s->list_pods())[0].containers[1].message.c_str());
}

TEST(StoreRoundTrip, ARowThatDoesNotDecodeIsAnErrorNamingThePod) {
    CHECK_TRUE(MUST(s->put_pod(sample_pod("uid-1"))));
    RawDb raw(path);
    STRCMP_EQUAL("", raw.exec("UPDATE pods SET containers_json = '[{\"state\":\"Sleeping\"}]'").c_str());
    auto r = s->list_pods();
    CHECK_FALSE(r.ok());
    STRCMP_EQUAL("corrupt", r.error().code_name());
    STRCMP_EQUAL(
        (path + ": list_pods: pod uid-1: containers_json: unknown container state \"Sleeping\"").c_str(),
        r.error().message.c_str());
}

TEST(StoreRoundTrip, NodeComesBackAsStored) {
    CHECK_FALSE(MUST(s->get_node()).has_value());
    store::StoredNode node = sample_node();
    CHECK_TRUE(MUST(s->put_node(node)));
    CHECK_TRUE(*MUST(s->get_node()) == node);
    node.taints.clear();
    node.labels.erase("zone");
    node.unschedulable = false;
    CHECK_TRUE(MUST(s->put_node(node)));
    CHECK_TRUE(*MUST(s->get_node()) == node);
}

TEST(StoreRoundTrip, MetaComesBackAsStored) {
    CHECK_FALSE(MUST(s->get_meta("resourceVersion")).has_value());
    CHECK_TRUE(MUST(s->put_meta("resourceVersion", "12345")));
    STRCMP_EQUAL("12345", MUST(s->get_meta("resourceVersion"))->c_str());
    CHECK_TRUE(MUST(s->put_meta("resourceVersion", "")));
    STRCMP_EQUAL("", MUST(s->get_meta("resourceVersion"))->c_str());
}

TEST(StoreRoundTrip, AManifestFileComesBackAsStoredAndWritesOnlyOnChange) {
    store::StoredManifestFile good{"/m/b.yaml", "kind: DaemonSet\n", false, "", 5};
    store::StoredManifestFile broken{"/m/a.yaml", "kind: DaemonSet\n", true, "/m/a.yaml: line 3: bad", 6};
    CHECK_TRUE(MUST(s->put_manifest_file(good)));
    CHECK_TRUE(MUST(s->put_manifest_file(broken)));
    auto files = MUST(s->list_manifest_files());
    LONGS_EQUAL(2, files.size());
    CHECK_TRUE(files[0] == broken);  // by path
    CHECK_TRUE(files[1] == good);
    // The time alone is no change: an idle agent writes nothing.
    const std::int64_t before = store::testing::total_changes(*s);
    good.updated_at_ms = 99;
    CHECK_FALSE(MUST(s->put_manifest_file(good)));
    LONGS_EQUAL(before, store::testing::total_changes(*s));
    // Fixed: broken and the error go, the last good content changes.
    broken = {"/m/a.yaml", "kind: DaemonSet # v2\n", false, "", 7};
    CHECK_TRUE(MUST(s->put_manifest_file(broken)));
    CHECK_TRUE(MUST(s->list_manifest_files())[0] == broken);
    CHECK_TRUE(MUST(s->delete_manifest_file("/m/a.yaml")));
    CHECK_FALSE(MUST(s->delete_manifest_file("/m/a.yaml")));
    LONGS_EQUAL(1, MUST(s->list_manifest_files()).size());
}

TEST(StoreRoundTrip, TheApiServersCopyIsKeptBesideAFileThatOverridesIt) {
    // The version in force of ns/dup is a file's (the daemonsets table); the
    // API server's copy has its own row, as the kubelet's config mux keeps
    // each source's pods apart, and outlives the file's row.
    store::StoredDaemonSet file_ds = sample_daemonset("dup");
    file_ds.source = "file:/m/dup.yaml";
    CHECK_TRUE(MUST(s->put_daemonset(file_ds)));
    store::StoredApiDaemonSet api{"ns", "dup", R"({"kind":"DaemonSet","spec":{"v":1}})"};
    store::StoredApiDaemonSet other{"ns", "agent", R"({"kind":"DaemonSet"})"};
    CHECK_TRUE(MUST(s->put_api_daemonset(api)));
    CHECK_TRUE(MUST(s->put_api_daemonset(other)));
    const std::int64_t before = store::testing::total_changes(*s);
    CHECK_FALSE(MUST(s->put_api_daemonset(api)));  // unchanged: not written
    LONGS_EQUAL(before, store::testing::total_changes(*s));
    CHECK_TRUE(MUST(s->delete_daemonset(file_ds.namespace_, "dup")));  // the file went
    auto rows = MUST(s->list_api_daemonsets());
    LONGS_EQUAL(2, rows.size());
    CHECK_TRUE(rows[0] == other);  // by namespace, name
    CHECK_TRUE(rows[1] == api);
    api.object_json = R"({"kind":"DaemonSet","spec":{"v":2}})";
    CHECK_TRUE(MUST(s->put_api_daemonset(api)));
    CHECK_TRUE(MUST(s->list_api_daemonsets())[1] == api);
    CHECK_TRUE(MUST(s->delete_api_daemonset("ns", "dup")));
    CHECK_FALSE(MUST(s->delete_api_daemonset("ns", "dup")));
    LONGS_EQUAL(1, MUST(s->list_api_daemonsets()).size());
    CHECK_TRUE(MUST(s->list_daemonsets()).empty());
}

TEST(StoreRoundTrip, EventsComeBackOldestFirstWithIds) {
    for (int i = 0; i < 5; ++i) CHECK_TRUE(MUST(s->add_event(sample_event("Pod/agent-x7k2p", i))));
    CHECK_TRUE(MUST(s->add_event(sample_event("DaemonSet/agent", 9))));
    auto evs = MUST(s->list_events("kube-system", "Pod/agent-x7k2p", 3));
    LONGS_EQUAL(3, evs.size());
    for (std::size_t i = 0; i < 3; ++i) {
        store::EventRecord want = sample_event("Pod/agent-x7k2p", static_cast<int>(i) + 2);
        STRCMP_EQUAL(want.message.c_str(), evs[i].message.c_str());
        STRCMP_EQUAL(want.type.c_str(), evs[i].type.c_str());
        STRCMP_EQUAL(want.reason.c_str(), evs[i].reason.c_str());
        STRCMP_EQUAL(want.object.c_str(), evs[i].object.c_str());
        STRCMP_EQUAL(want.namespace_.c_str(), evs[i].namespace_.c_str());
        LONGS_EQUAL(want.time_ms, evs[i].time_ms);
        if (i) CHECK_TRUE(evs[i].id > evs[i - 1].id);
    }
    LONGS_EQUAL(5, MUST(s->list_events("kube-system", "Pod/agent-x7k2p", 0)).size());
    LONGS_EQUAL(1, MUST(s->list_events("kube-system", "DaemonSet/agent", 0)).size());
    LONGS_EQUAL(0, MUST(s->list_events("default", "DaemonSet/agent", 0)).size());
    // Empty namespace and object: every event.
    LONGS_EQUAL(6, MUST(s->list_events("", "", 0)).size());
}

// A step of the wall clock (core/wall_clock.h): the times in the window
// move, the others stay, all in one transaction.
TEST(StoreRoundTrip, AWallClockStepMovesTheTimesInItsWindowOnly) {
    store::StoredDaemonSet ds = sample_daemonset("agent");  // updated at ...001
    CHECK_TRUE(MUST(s->put_daemonset(ds)));
    CHECK_TRUE(MUST(s->put_revision(sample_revision("agent", 1))));  // ...001
    CHECK_TRUE(MUST(s->put_revision(sample_revision("agent", 5))));  // ...005: outside
    CHECK_TRUE(MUST(s->add_event(sample_event("DaemonSet/agent", 2))));
    const std::int64_t base = 1'700'000'000'000;
    CHECK_TRUE(MUST(s->rebase_wall_times(base, base + 4, 1'000'000)));
    LONGS_EQUAL(base + 1 + 1'000'000, MUST(s->get_daemonset("kube-system", "agent"))->updated_at_ms);
    auto revs = MUST(s->list_revisions("kube-system", "agent"));
    LONGS_EQUAL(base + 1 + 1'000'000, revs[0].created_at_ms);
    LONGS_EQUAL(base + 5, revs[1].created_at_ms);
    LONGS_EQUAL(base + 2 + 1'000'000, MUST(s->list_events("", "", 0))[0].time_ms);
    // Nothing left in the window: nothing written.
    CHECK_FALSE(MUST(s->rebase_wall_times(base, base + 4, 1'000'000)));
}

// ---------------------------------------------------------------------------

TEST_GROUP(StoreEvents) {
    TempDir dir;
    std::string path = dir.file("daemonlet.db");
    std::unique_ptr<store::Store> s;
    void setup() override { s = open_store(path); }
    void teardown() override { s.reset(); }
};

TEST(StoreEvents, EachObjectKeepsItsNewestFifty) {
    for (int i = 0; i < 60; ++i) CHECK_TRUE(MUST(s->add_event(sample_event("Pod/a", i))));
    for (int i = 0; i < 3; ++i) CHECK_TRUE(MUST(s->add_event(sample_event("Pod/b", i))));
    auto a = MUST(s->list_events("kube-system", "Pod/a", 0));
    LONGS_EQUAL(50, a.size());
    STRCMP_EQUAL("event 10 of Pod/a", a.front().message.c_str());
    STRCMP_EQUAL("event 59 of Pod/a", a.back().message.c_str());
    LONGS_EQUAL(3, MUST(s->list_events("kube-system", "Pod/b", 0)).size());
}

TEST(StoreEvents, AllObjectsTogetherKeepTheNewestTwoThousand) {
    // Pods come and go under new names: the total is bounded too.
    auto tx = MUST(s->begin());
    for (int i = 0; i < 2100; ++i)
        CHECK_TRUE(MUST(s->add_event(sample_event("Pod/p" + std::to_string(i), i))));
    CHECK_TRUE(tx->commit().ok());
    auto all = MUST(s->list_events("", "", 0));
    LONGS_EQUAL(2000, all.size());
    STRCMP_EQUAL("event 100 of Pod/p100", all.front().message.c_str());
    STRCMP_EQUAL("event 2099 of Pod/p2099", all.back().message.c_str());
}

// ---------------------------------------------------------------------------
// The Events queued for the cluster (migration 6): one row each, so that
// queueing one writes that row, not the whole queue (flash wears out).

namespace {

std::string queued_json(int n) {
    // About the size of the agent's rows: ~400 bytes.
    return R"({"count":1,"eventName":"crasher.18765)" + std::to_string(100000 + n) +
           R"(","first":1717000000000,"kind":"Pod","message":")" + std::string(250, 'm') +
           R"(","name":"crasher","namespace":"it","reason":"BackOff","type":"Warning"})";
}

std::string queued_seqs(store::Store& s) {
    std::string out;
    for (const auto& ev : MUST(s.list_queued_events()))
        out += (out.empty() ? "" : ",") + std::to_string(ev.seq);
    return out;
}

// Frames in the -wal (SQLite's format: a 32-byte header, then 24 + 4096
// bytes a page), after a TRUNCATE checkpoint emptied it.
std::int64_t wal_frames(const std::string& path) {
    const std::int64_t size = stamp(path + "-wal").size;
    return size <= 32 ? 0 : (size - 32) / (24 + 4096);
}

}  // namespace

TEST_GROUP(StoreQueuedEvents) {
    TempDir dir;
    std::string path = dir.file("daemonlet.db");
    std::unique_ptr<store::Store> s;
    void setup() override { s = open_store(path); }
    void teardown() override { s.reset(); }
};

TEST(StoreQueuedEvents, RowsComeBackInOrderAndOnlyAChangeWrites) {
    for (int seq : {3, 1, 2}) CHECK_TRUE(MUST(s->put_queued_event({seq, queued_json(seq)})));
    STRCMP_EQUAL("1,2,3", queued_seqs(*s).c_str());
    CHECK(MUST(s->list_queued_events()).front() == (store::Store::QueuedEvent{1, queued_json(1)}));
    const std::int64_t before = store::testing::total_changes(*s);
    CHECK_FALSE(MUST(s->put_queued_event({2, queued_json(2)})));  // unchanged: nothing written
    LONGS_EQUAL(before, store::testing::total_changes(*s));
    CHECK_TRUE(MUST(s->put_queued_event({2, queued_json(20)})));  // a folded count: that row
    LONGS_EQUAL(before + 1, store::testing::total_changes(*s));
    STRCMP_EQUAL(queued_json(20).c_str(), MUST(s->list_queued_events())[1].json.c_str());
    CHECK_TRUE(MUST(s->delete_queued_event(2)));
    CHECK_FALSE(MUST(s->delete_queued_event(2)));
    CHECK_TRUE(MUST(s->put_queued_event({4, queued_json(4)})));
    CHECK_TRUE(MUST(s->delete_queued_events_below(4)));  // the front, sent
    STRCMP_EQUAL("4", queued_seqs(*s).c_str());
    CHECK_FALSE(MUST(s->delete_queued_events_below(4)));
}

TEST(StoreQueuedEvents, QueueingAnEventWritesAPageNotTheWholeQueue) {
    // A full queue (1000 Events), then one more queued: the -wal grows by
    // the pages of that row, not by the queue's ~400 KB as the one JSON
    // array in meta 'api.events' of earlier builds did (measured too).
    {
        auto tx = MUST(s->begin());
        for (int i = 1; i <= 1000; ++i) CHECK_TRUE(MUST(s->put_queued_event({i, queued_json(i)})));
        CHECK_TRUE(tx->commit().ok());
    }
    RawDb raw(path);
    STRCMP_EQUAL("", raw.exec("PRAGMA wal_checkpoint(TRUNCATE)").c_str());
    LONGS_EQUAL(0, wal_frames(path));
    CHECK_TRUE(MUST(s->put_queued_event({1001, queued_json(1001)})));
    const std::int64_t row_frames = wal_frames(path);
    CHECK_TRUE(MUST(s->delete_queued_events_below(2)));
    const std::int64_t sent_frames = wal_frames(path) - row_frames;

    std::string blob = "[";
    for (int i = 1; i <= 1001; ++i) blob += (i > 1 ? "," : "") + queued_json(i);
    blob += "]";
    CHECK_TRUE(
        MUST(s->put_meta("api.events", blob.substr(0, blob.size() - queued_json(1001).size() - 2) + "]")));
    STRCMP_EQUAL("", raw.exec("PRAGMA wal_checkpoint(TRUNCATE)").c_str());
    CHECK_TRUE(MUST(s->put_meta("api.events", blob)));
    const std::int64_t blob_frames = wal_frames(path);
    std::printf(
        "\nmeasured: one Event queued behind 1000 (%zu-byte rows): %lld -wal frames (%lld bytes) as a "
        "row, %lld frames (%lld bytes) as the whole queue in one meta value; one sent: %lld frames\n",
        queued_json(1).size(), static_cast<long long>(row_frames), static_cast<long long>(row_frames * 4120),
        static_cast<long long>(blob_frames), static_cast<long long>(blob_frames * 4120),
        static_cast<long long>(sent_frames));
    CHECK_TRUE(row_frames >= 1);
    CHECK_TRUE(row_frames <= 3);   // the leaf page, perhaps a new one and its parent
    CHECK_TRUE(sent_frames <= 3);  // the first leaf page
    CHECK_TRUE(blob_frames > 50);  // the old shape, for the record
}

// ---------------------------------------------------------------------------

TEST_GROUP(StorePrune) {
    TempDir dir;
    std::string path = dir.file("daemonlet.db");
    std::unique_ptr<store::Store> s;
    void setup() override {
        s = open_store(path);
        CHECK_TRUE(MUST(s->put_daemonset(sample_daemonset("agent"))));
        CHECK_TRUE(MUST(s->put_daemonset(sample_daemonset("other"))));
        for (int r = 1; r <= 6; ++r) CHECK_TRUE(MUST(s->put_revision(sample_revision("agent", r))));
        CHECK_TRUE(MUST(s->put_revision(sample_revision("other", 1))));
    }
    void teardown() override { s.reset(); }
};

TEST(StorePrune, KeepsTheNewestOldOnesAndEveryOneInUse) {
    // cleanupHistory: toKill = len(old) - revisionHistoryLimit, old being all
    // but the current (6); a revision a pod runs (2) is skipped but counts:
    // 3 of the 5 old go, 1, 3 and 4 (upstream keeps 2, 5 and 6, not 4 too).
    LONGS_EQUAL(3, MUST(s->prune_revisions("kube-system", "agent", 2, {2, 6})));
    STRCMP_EQUAL("2,5,6", revision_numbers(*s, "agent").c_str());
    STRCMP_EQUAL("1", revision_numbers(*s, "other").c_str());
}

TEST(StorePrune, KeepZeroLeavesOnlyTheOnesInUse) {
    LONGS_EQUAL(5, MUST(s->prune_revisions("kube-system", "agent", 0, {3})));
    STRCMP_EQUAL("3", revision_numbers(*s, "agent").c_str());
}

TEST(StorePrune, NothingBeyondTheLimitDeletesNothing) {
    LONGS_EQUAL(0, MUST(s->prune_revisions("kube-system", "agent", 10, {6})));
    LONGS_EQUAL(0, MUST(s->prune_revisions("kube-system", "agent", 5, {6})));
    STRCMP_EQUAL("1,2,3,4,5,6", revision_numbers(*s, "agent").c_str());
}

TEST(StorePrune, ANegativeLimitIsAnError) {
    auto r = s->prune_revisions("kube-system", "agent", -1, {});
    CHECK_FALSE(r.ok());
    STRCMP_EQUAL("invalid", r.error().code_name());
}

// ---------------------------------------------------------------------------

TEST_GROUP(StoreTransaction) {
    TempDir dir;
    std::string path = dir.file("daemonlet.db");
    std::unique_ptr<store::Store> s;
    void setup() override { s = open_store(path); }
    void teardown() override { s.reset(); }
};

TEST(StoreTransaction, CommittedChangesAreKept) {
    {
        auto tx = MUST(s->begin());
        CHECK_TRUE(MUST(s->put_daemonset(sample_daemonset("agent"))));
        CHECK_TRUE(MUST(s->put_revision(sample_revision("agent", 1))));
        CHECK_TRUE(MUST(s->put_pod(sample_pod("uid-1"))));
        CHECK_TRUE(MUST(s->add_event(sample_event("Pod/agent-x7k2p", 1))));
        CHECK_TRUE(tx->commit().ok());
    }
    s.reset();
    s = open_store(path);
    LONGS_EQUAL(1, MUST(s->list_daemonsets()).size());
    LONGS_EQUAL(1, MUST(s->list_revisions("kube-system", "agent")).size());
    LONGS_EQUAL(1, MUST(s->list_pods()).size());
    LONGS_EQUAL(1, MUST(s->list_events("", "", 0)).size());
}

TEST(StoreTransaction, ATransactionNotCommittedIsRolledBackWhenDropped) {
    CHECK_TRUE(MUST(s->put_meta("before", "1")));
    const std::string before = dump_state(path);
    {
        auto tx = MUST(s->begin());
        CHECK_TRUE(MUST(s->put_daemonset(sample_daemonset("agent"))));
        CHECK_TRUE(MUST(s->put_revision(sample_revision("agent", 1))));
        CHECK_TRUE(MUST(s->put_pod(sample_pod("uid-1"))));
        CHECK_TRUE(MUST(s->put_node(sample_node())));
        CHECK_TRUE(MUST(s->add_event(sample_event("Pod/agent-x7k2p", 1))));
        CHECK_TRUE(MUST(s->put_meta("before", "2")));
        // Another connection sees none of it yet.
        STRCMP_EQUAL(before.c_str(), dump_state(path).c_str());
        // The store's own connection sees its writes.
        LONGS_EQUAL(1, MUST(s->list_pods()).size());
    }
    STRCMP_EQUAL(before.c_str(), dump_state(path).c_str());
    CHECK_TRUE(MUST(s->list_pods()).empty());
    STRCMP_EQUAL("1", MUST(s->get_meta("before"))->c_str());
    // And the store goes on.
    CHECK_TRUE(MUST(s->put_pod(sample_pod("uid-2"))));
    LONGS_EQUAL(1, MUST(s->list_pods()).size());
}

TEST(StoreTransaction, OneTransactionAtATime) {
    auto tx = MUST(s->begin());
    auto second = s->begin();
    CHECK_FALSE(second.ok());
    STRCMP_EQUAL((path + ": begin: a transaction is already open").c_str(), second.error().message.c_str());
    CHECK_TRUE(tx->commit().ok());
    auto third = MUST(s->begin());
    CHECK_TRUE(third->commit().ok());
}

TEST(StoreTransaction, CommittingTwiceIsAnError) {
    auto tx = MUST(s->begin());
    CHECK_TRUE(MUST(s->put_meta("k", "v")));
    CHECK_TRUE(tx->commit().ok());
    auto again = tx->commit();
    CHECK_FALSE(again.ok());
    STRCMP_EQUAL("invalid", again.error().code_name());
    STRCMP_EQUAL("v", MUST(s->get_meta("k"))->c_str());
}

TEST(StoreTransaction, AFailedPutInsideATransactionIsUndoneAlone) {
    auto tx = MUST(s->begin());
    CHECK_TRUE(MUST(s->put_pod(sample_pod("uid-1"))));
    CHECK_FALSE(s->put_revision(sample_revision("missing", 1)).ok());  // foreign key
    CHECK_TRUE(MUST(s->put_pod(sample_pod("uid-2"))));
    CHECK_TRUE(tx->commit().ok());
    LONGS_EQUAL(2, MUST(s->list_pods()).size());
}

// ---------------------------------------------------------------------------
// Flash wears out: a put that changes nothing writes nothing. Checked on the
// files (size and mtime of the database and its -wal), on SQLite's
// data_version seen from another connection, and on the store connection's
// count of changed rows.

TEST_GROUP(StoreIdempotent) {
    TempDir dir;
    std::string path = dir.file("daemonlet.db");
    std::unique_ptr<store::Store> s;
    void setup() override {
        s = open_store(path);
        CHECK_TRUE(MUST(s->put_daemonset(sample_daemonset("agent"))));
        CHECK_TRUE(MUST(s->put_revision(sample_revision("agent", 1))));
        CHECK_TRUE(MUST(s->put_pod(sample_pod("uid-1"))));
        CHECK_TRUE(MUST(s->put_node(sample_node())));
        CHECK_TRUE(MUST(s->put_meta("resourceVersion", "42")));
    }
    void teardown() override { s.reset(); }

    struct Seen {
        FileStamp db, wal;
        std::int64_t data_version;
        std::int64_t changes;
    };
    Seen look(RawDb & raw) {
        return Seen{stamp(path), stamp(path + "-wal"), raw.scalar("PRAGMA data_version"),
                    store::testing::total_changes(*s)};
    }
    // Runs `write` and checks that nothing at all was written.
    template <class F>
    void check_writes_nothing(F && write) {
        RawDb raw(path);
        Seen before = look(raw);
        write();
        Seen after = look(raw);
        CHECK_TRUE(before.db == after.db);
        CHECK_TRUE(before.wal == after.wal);
        LONGS_EQUAL(before.data_version, after.data_version);
        LONGS_EQUAL(before.changes, after.changes);
    }
};

TEST(StoreIdempotent, PuttingTheSameRecordsAgainWritesNothing) {
    check_writes_nothing([&] {
        CHECK_FALSE(MUST(s->put_daemonset(sample_daemonset("agent"))));
        CHECK_FALSE(MUST(s->put_revision(sample_revision("agent", 1))));
        CHECK_FALSE(MUST(s->put_pod(sample_pod("uid-1"))));
        CHECK_FALSE(MUST(s->put_node(sample_node())));
        CHECK_FALSE(MUST(s->put_meta("resourceVersion", "42")));
    });
}

TEST(StoreIdempotent, DeletingWhatIsNotThereWritesNothing) {
    check_writes_nothing([&] {
        CHECK_FALSE(MUST(s->delete_pod("uid-missing")));
        CHECK_FALSE(MUST(s->delete_daemonset("kube-system", "missing")));
        LONGS_EQUAL(0, MUST(s->prune_revisions("kube-system", "agent", 10, {})));
    });
}

TEST(StoreIdempotent, AnUnchangedTransactionWritesNothing) {
    check_writes_nothing([&] {
        auto tx = MUST(s->begin());
        CHECK_FALSE(MUST(s->put_pod(sample_pod("uid-1"))));
        CHECK_FALSE(MUST(s->put_node(sample_node())));
        CHECK_TRUE(tx->commit().ok());
    });
}

TEST(StoreIdempotent, ANewTimestampAloneIsNotAChange) {
    store::StoredDaemonSet ds = sample_daemonset("agent");
    ds.updated_at_ms += 60'000;
    RevisionRecord rev = sample_revision("agent", 1);
    rev.created_at_ms += 60'000;
    check_writes_nothing([&] {
        CHECK_FALSE(MUST(s->put_daemonset(ds)));
        CHECK_FALSE(MUST(s->put_revision(rev)));
    });
    // updated_at_ms stays the time of the last real change.
    LONGS_EQUAL(sample_daemonset("agent").updated_at_ms,
                MUST(s->get_daemonset("kube-system", "agent"))->updated_at_ms);
}

TEST(StoreIdempotent, AChangedFieldIsWritten) {
    RawDb raw(path);
    Seen before = look(raw);
    PodRecord pod = sample_pod("uid-1");
    pod.containers[0].restart_count += 1;
    CHECK_TRUE(MUST(s->put_pod(pod)));
    Seen after = look(raw);
    CHECK_TRUE(after.data_version != before.data_version);
    LONGS_EQUAL(before.changes + 1, after.changes);
    CHECK_FALSE(before.wal == after.wal);
}
