// The DaemonSetSync component (agent/daemon/daemonset_sync.h): the
// DaemonSet controller's syncDaemonSet for this node
// (pkg/controller/daemon/daemon_controller.go manage, syncNodes), over real
// DesiredDaemonSets (a SQLite store in a temporary directory) and a real
// PodTable, on a fake clock. The Host is a fake: the node is the test's,
// the cluster paces the DaemonSets the test names. Each pass's decisions
// are plain data, checked without a loop or a runtime.
#include <map>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "agent/daemon/daemonset_sync.h"
#include "core/manifest.h"
#include "core/strings.h"
#include "tests/agent/daemon/fake_clock.h"
#include "tests/store/store_fixture.h"

#include <CppUTest/TestHarness.h>

using namespace daemonlet;
using namespace daemonlet::agent;
using namespace daemonlet::testing;

namespace {

constexpr const char* kNs = "kube-system";
// The API server's names.SimpleNameGenerator suffix alphabet
// (k8s.io/apimachinery/pkg/util/rand's alphanums): no vowels, no 0, 1, 3.
constexpr const char* kNameAlphabet = "bcdfghjklmnpqrstvwxz2456789";

class FakeHost final : public DesiredDaemonSets::Host, public PodTable::Host, public DaemonSetSync::Host {
  public:
    explicit FakeHost(std::unique_ptr<store::Store> s) : store_(std::move(s)) {
        node.metadata.name = "board-1";
        node.metadata.labels["disk"] = "ssd";
    }
    store::Store& desired_store() override { return *store_; }
    void apply_rollback(DesiredDaemonSets::Desired& /*d*/) override {}
    void template_in_force(const std::string& /*key*/, const DesiredDaemonSets::Desired& /*d*/) override {}
    void revision_reported() override {}
    store::Store& pod_store() override { return *store_; }
    MetricRegistry* pod_metrics() override { return nullptr; }
    void pod_saved() override {}
    const Node& sync_node() const override { return node; }
    void pace_by_cluster(const DesiredDaemonSets::Desired& d, DesiredDaemonSet& w) const override {
        w.paced_by_cluster = paced.count(d.ds().metadata.name) != 0;
    }

    Node node;
    std::set<std::string> paced;  // DaemonSet names the cluster paces

  private:
    std::unique_ptr<store::Store> store_;
};

// A file's DaemonSet (validated and defaulted: RollingUpdate, maxSurge 0).
// spec_extra: lines of its spec (indented two spaces).
SourcedDaemonSet daemonset(const std::string& name, const std::string& image = "nginx:1",
                           const std::string& pod_spec_extra = "", const std::string& spec_extra = "") {
    const std::string path = "/m/" + name + ".yaml";
    auto m = load_manifest("apiVersion: apps/v1\nkind: DaemonSet\nmetadata: {name: " + name +
                               ", namespace: " + kNs + "}\nspec:\n" + spec_extra +
                               "  selector: {matchLabels: {app: " + name +
                               "}}\n  template:\n    metadata: {labels: {app: " + name + "}}\n    spec:\n" +
                               pod_spec_extra + "      containers: [{name: c, image: " + image + "}]\n",
                           path);
    CHECK_TEXT(m.errors.empty(), m.errors.empty() ? "" : m.errors.front().to_string().c_str());
    return {std::make_shared<const DaemonSet>(std::get<DaemonSet>(m.objects.front().object)),
            DaemonSetSource::file(path)};
}

std::string key(const std::string& name) { return std::string(kNs) + "/" + name; }

std::string creates_of(const DaemonSetSync::Plan& plan) {
    std::string out;
    for (const auto& c : plan.create) out += (out.empty() ? "" : " ") + c.daemonset;
    return out;
}

// A rolling update that surges (update.go: the new pod starts while the old
// one runs; the old one goes once the new one is available).
const char* const kSurge =
    "  updateStrategy: {type: RollingUpdate, rollingUpdate: {maxSurge: 1, maxUnavailable: 0}}\n";

}  // namespace

TEST_GROUP(DaemonSetSync) {
    TempDir dir;
    FakeClock clock;
    std::unique_ptr<FakeHost> host;
    std::unique_ptr<PodTable> pods;
    std::unique_ptr<DesiredDaemonSets> desired;
    std::unique_ptr<DaemonSetSync> sync;
    std::map<std::string, SourcedDaemonSet> merged;

    void setup() override {
        host = std::make_unique<FakeHost>(
            MUST(store::Store::open(dir.file("daemonlet.db"), clock.wall_ms(), nullptr)));
        pods = std::make_unique<PodTable>(*host, clock);
        desired = std::make_unique<DesiredDaemonSets>(*pods, *host, clock);
        sync = std::make_unique<DaemonSetSync>(*host, clock);
    }
    void teardown() override {
        sync.reset();
        desired.reset();
        pods.reset();
        host.reset();
    }
    void want(const SourcedDaemonSet& ds) {
        merged.insert_or_assign(key(ds.object->metadata.name), ds);
        CHECK(desired->rebuild(merged).applied);
    }
    void drop(const std::string& name) {
        merged.erase(key(name));
        CHECK(desired->rebuild(merged).applied);
    }
    DaemonSetSync::Plan pass() { return sync->plan(sync->observe(*desired, *pods)); }
    // What the agent does with a create (create_pod): the new pod runs.
    LivePod& run(const PodToCreate& c) {
        LivePod p = sync->new_pod(c);
        p.rec.phase = PodPhase::Running;
        return pods->add(std::move(p));
    }
    LivePod& run(const std::string& name) {
        const auto* d = desired->find(key(name));
        CHECK(d != nullptr);
        return run(PodToCreate{kNs, name, d->hash, d->revision});
    }
};

// syncNodes creates what manage asks for; here at most kCreatesPerTurn (8)
// per loop turn, the rest on a pass planned after the loop has polled
// (next_turn). Mutations tried: the cap at 9 (off by one) and next_turn
// false when capped: this fails.
TEST(DaemonSetSync, TenDaemonSetsAreCreatedEightThisTurnThenTheOtherTwo) {
    for (int i = 0; i < 10; ++i) want(daemonset("ds" + std::to_string(i)));
    auto first = pass();
    STRCMP_EQUAL("ds0 ds1 ds2 ds3 ds4 ds5 ds6 ds7", creates_of(first).c_str());
    CHECK(first.remove.empty());
    CHECK(first.again);
    CHECK(first.next_turn);
    for (const auto& c : first.create) run(c);
    auto second = pass();
    STRCMP_EQUAL("ds8 ds9", creates_of(second).c_str());
    CHECK(second.again);
    CHECK_FALSE(second.next_turn);  // under the cap: planned again on this turn
    for (const auto& c : second.create) run(c);
    auto third = pass();
    CHECK(third.create.empty());
    CHECK(third.remove.empty());
    CHECK_FALSE(third.again);
}

// A pod whose DaemonSet is gone: the garbage collector's cascading delete
// (its ownerReference's owner is absent), with core's reason. Mutation
// tried: plan() dropping the plan's removals: this fails.
TEST(DaemonSetSync, PodOfARemovedDaemonSetIsTerminated) {
    want(daemonset("web"));
    want(daemonset("log"));
    const std::string uid = run("web").rec.uid;
    run("log");
    drop("web");
    auto plan = pass();
    LONGS_EQUAL(1, plan.remove.size());
    STRCMP_EQUAL(uid.c_str(), plan.remove[0].uid.c_str());
    STRCMP_EQUAL("DaemonSet kube-system/web removed", plan.remove[0].reason.c_str());
    CHECK(plan.create.empty());
    CHECK(plan.again);
    CHECK_FALSE(plan.next_turn);
}

// The node no longer matches the DaemonSet's nodeSelector:
// podsShouldBeOnNode deletes its pod (!shouldContinueRunning), and makes
// none again. Mutation tried: observe() placing on a default Node instead
// of the Host's: this fails (nothing created in the first pass).
TEST(DaemonSetSync, NodeTheDaemonSetNoLongerSelectsLosesItsPod) {
    want(daemonset("ssd-only", "nginx:1", "      nodeSelector: {disk: ssd}\n"));
    auto first = pass();
    STRCMP_EQUAL("ssd-only", creates_of(first).c_str());
    const std::string uid = run(first.create[0]).rec.uid;
    host->node.metadata.labels["disk"] = "hdd";
    auto plan = pass();
    CHECK(plan.create.empty());
    LONGS_EQUAL(1, plan.remove.size());
    STRCMP_EQUAL(uid.c_str(), plan.remove[0].uid.c_str());
    STRCMP_CONTAINS("node no longer matches", plan.remove[0].reason.c_str());
}

// apiServer.rollouts: cluster: the rollout of a template change waits for
// the DaemonSet controller (update.go rollingUpdate deletes the old Pod).
// The DaemonSet is in paced() while it waits, and newly_paced names it once,
// on the pass it began to wait; again after it stopped and waits anew.
// Mutation tried: newly_paced as every paced key of the pass: this fails.
TEST(DaemonSetSync, PacedRolloutIsSaidOnceWhileItStaysPaced) {
    want(daemonset("web", "nginx:1"));
    run("web");
    want(daemonset("web", "nginx:2"));  // the old pod is now of an older revision
    host->paced.insert("web");
    auto first = pass();
    STRCMP_EQUAL("kube-system/web", join(first.newly_paced, " ").c_str());
    STRCMP_EQUAL("kube-system/web", join(sync->paced(), " ").c_str());
    CHECK(first.remove.empty());  // the controller deletes it, not the board
    CHECK(first.create.empty());
    clock.advance(1000);
    auto second = pass();
    CHECK(second.newly_paced.empty());
    STRCMP_EQUAL("kube-system/web", join(sync->paced(), " ").c_str());
    // Not paced any more (the board rolls alone): the old pod goes.
    host->paced.clear();
    auto alone = pass();
    CHECK(alone.newly_paced.empty());
    CHECK(sync->paced().empty());
    LONGS_EQUAL(1, alone.remove.size());
    // Paced again: said again.
    host->paced.insert("web");
    auto again = pass();
    STRCMP_EQUAL("kube-system/web", join(again.newly_paced, " ").c_str());
}

// The new pod's record: the controller's GenerateName "<daemonset>-" with
// the API server's 5 random characters (names.SimpleNameGenerator,
// utilrand.String's alphabet), a v4 UUID, the revision it was made for,
// created now by the wall clock. Mutations tried: created_at from the
// monotonic clock, and the name alphabet with vowels ("a" in it): this fails.
TEST(DaemonSetSync, NewPodIsNamedAfterItsDaemonSetWithFiveApiServerNameCharacters) {
    const PodToCreate c{kNs, "web", "abc123", 7};
    for (int i = 0; i < 20; ++i) {
        const LivePod p = sync->new_pod(c);
        LONGS_EQUAL(std::string("web-").size() + 5, p.rec.name.size());
        STRCMP_EQUAL("web-", p.rec.name.substr(0, 4).c_str());
        CHECK_EQUAL(std::string::npos, p.rec.name.substr(4).find_first_not_of(kNameAlphabet));
        LONGS_EQUAL(36, p.rec.uid.size());
        CHECK_EQUAL('4', p.rec.uid[14]);
        CHECK_EQUAL(std::string::npos, p.rec.uid.find_first_not_of("0123456789abcdef-"));
    }
    // A generator the test pins: the exact record.
    DaemonSetSync pinned(*host, clock, [](std::size_t n, std::string_view alphabet) {
        std::string s;
        for (std::size_t i = 0; i < n; ++i) s += alphabet[i % alphabet.size()];
        return s;
    });
    clock.advance(1234);
    const LivePod p = pinned.new_pod(c);
    STRCMP_EQUAL("web-bcdfg", p.rec.name.c_str());
    STRCMP_EQUAL("01234567-89ab-4def-0123-456789abcdef", p.rec.uid.c_str());
    STRCMP_EQUAL(kNs, p.rec.namespace_.c_str());
    STRCMP_EQUAL("web", p.rec.daemonset.c_str());
    STRCMP_EQUAL("abc123", p.rec.revision_hash.c_str());
    LONGS_EQUAL(7, p.rec.revision);
    CHECK_EQUAL(clock.wall_ms(), p.rec.created_at_ms);
    CHECK(!p.rec.is_static());
}

// minReadySeconds: the new pod counts as available minReadySeconds after it
// became ready (podutil.IsPodAvailable); upstream's DaemonSet controller
// requeues the DaemonSet then (daemon_controller.go updatePod:
// enqueueDaemonSetAfter(ds, minReadySeconds)), the plan says when to wake.
// Ready since T, 2 s later: wake in 3000 ms; at T + 5 s the old pod goes.
// Mutation tried: plan() not setting wake_in_ms: this fails.
TEST(DaemonSetSync, NewPodReadyTwoSecondsOfFiveWakesThePlanInThreeSeconds) {
    want(daemonset("web", "nginx:1", "", "  minReadySeconds: 5\n" + std::string(kSurge)));
    LivePod& old_pod = run("web");
    old_pod.ready_since_mono_ms = clock.monotonic_ms() - 60'000;  // long available
    const std::string old_uid = old_pod.rec.uid;
    want(daemonset("web", "nginx:2", "", "  minReadySeconds: 5\n" + std::string(kSurge)));
    auto surge = pass();
    STRCMP_EQUAL("web", creates_of(surge).c_str());
    CHECK(surge.remove.empty());
    run(surge.create[0]).ready_since_mono_ms = clock.monotonic_ms();  // T
    clock.advance(2000);
    auto waiting = pass();
    CHECK(waiting.remove.empty());
    CHECK(waiting.create.empty());
    CHECK_FALSE(waiting.again);
    CHECK(waiting.wake_in_ms.has_value());
    LONGS_EQUAL(3000, *waiting.wake_in_ms);
    clock.advance(3000);
    auto available = pass();
    LONGS_EQUAL(1, available.remove.size());
    STRCMP_EQUAL(old_uid.c_str(), available.remove[0].uid.c_str());
    CHECK_FALSE(available.wake_in_ms.has_value());
}

// A surging rollout: the old pod stays while the new one is not ready, and
// goes once it is (minReadySeconds 0: ready is available). observe() takes
// readiness from the table (ready_since_mono_ms). Mutation tried: observe()
// copying ready as false: this fails (the old pod, "not ready", would go at
// once).
TEST(DaemonSetSync, OldPodGoesOnlyOnceTheNewPodIsReady) {
    want(daemonset("web", "nginx:1", "", kSurge));
    LivePod& old_pod = run("web");
    old_pod.ready_since_mono_ms = clock.monotonic_ms();
    const std::string old_uid = old_pod.rec.uid;
    want(daemonset("web", "nginx:2", "", kSurge));
    auto surge = pass();
    STRCMP_EQUAL("web", creates_of(surge).c_str());
    CHECK(surge.remove.empty());
    LivePod& new_pod = run(surge.create[0]);
    clock.advance(1000);
    auto starting = pass();
    CHECK(starting.remove.empty());
    CHECK(starting.create.empty());
    new_pod.ready_since_mono_ms = clock.monotonic_ms();
    auto ready = pass();
    LONGS_EQUAL(1, ready.remove.size());
    STRCMP_EQUAL(old_uid.c_str(), ready.remove[0].uid.c_str());
    STRCMP_CONTAINS("is available", ready.remove[0].reason.c_str());
}

// A static pod (a manifest file's, static_pods.h) has no DaemonSet: the
// sync leaves it alone, whatever DaemonSets are in force. Mutation tried:
// observe() without the static-pod skip: this fails (it would go as the
// pod of a removed DaemonSet).
TEST(DaemonSetSync, StaticPodIsNotTheSyncs) {
    want(daemonset("web"));
    run("web");
    LivePod st;
    st.rec.uid = "static-uid-1";
    st.rec.name = "etcd-board-1";
    st.rec.namespace_ = kNs;
    st.rec.source = "/etc/daemonlet/static/etcd.yaml";
    st.rec.phase = PodPhase::Running;
    pods->add(std::move(st));
    auto plan = pass();
    CHECK(plan.remove.empty());
    CHECK(plan.create.empty());
    CHECK_FALSE(plan.again);
}

// A pod being stopped (its record deleting, containers not all exited)
// still holds back its replacement without surge (manage's `exists`); a pod
// the user deleted (`daemonlet delete pod`) goes. Mutations tried: observe()
// copying terminating as false, and deleted_by_user as false: this fails.
TEST(DaemonSetSync, StoppingPodHoldsBackItsReplacementAndUserDeletedPodGoes) {
    want(daemonset("web"));
    want(daemonset("log"));
    run("web").rec.deleting = true;
    LivePod& log = run("log");
    log.deleted_by_user = true;
    auto plan = pass();
    CHECK(plan.create.empty());
    LONGS_EQUAL(1, plan.remove.size());
    STRCMP_EQUAL(log.rec.uid.c_str(), plan.remove[0].uid.c_str());
    STRCMP_EQUAL("deleted by user", plan.remove[0].reason.c_str());
}
