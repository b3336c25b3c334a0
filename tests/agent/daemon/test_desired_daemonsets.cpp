// The DesiredDaemonSets component (agent/daemon/desired_daemonsets.h): the
// DaemonSets in force and their rows in a real SQLite store, with the
// revision history the DaemonSet controller keeps as ControllerRevisions
// (pkg/controller/daemon/update.go constructHistory, dedupCurHistories).
// The Host is a fake: no rollbacks, the callbacks counted.
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "agent/daemon/desired_daemonsets.h"
#include "core/strings.h"
#include "tests/agent/daemon/fake_clock.h"
#include "tests/agent/daemon/file_daemonsets.h"
#include "tests/store/store_fixture.h"

#include <CppUTest/TestHarness.h>

using namespace daemonlet;
using namespace daemonlet::agent;
using namespace daemonlet::testing;

namespace {

constexpr const char* kNs = "kube-system";

// The agent's side: the store, no rollback in force, the callbacks counted.
class FakeHost final : public DesiredDaemonSets::Host, public PodTable::Host {
  public:
    explicit FakeHost(std::unique_ptr<store::Store> s) : store_(std::move(s)) {}
    store::Store& desired_store() override { return *store_; }
    void apply_rollback(DesiredDaemonSets::Desired& /*d*/) override { ++applied; }
    void template_in_force(const std::string& key, const DesiredDaemonSets::Desired& d) override {
        templates.push_back(key + "@" + d.hash);
    }
    void revision_reported() override { ++reported; }
    store::Store& pod_store() override { return *store_; }
    MetricRegistry* pod_metrics() override { return nullptr; }
    void pod_saved() override {}

    int applied = 0;
    int reported = 0;
    std::vector<std::string> templates;

  private:
    std::unique_ptr<store::Store> store_;
};

using Merged = std::map<std::string, SourcedDaemonSet>;
std::string key(const std::string& name) { return std::string(kNs) + "/" + name; }

}  // namespace

TEST_GROUP(DesiredDaemonSets) {
    TempDir dir;
    FakeClock clock;
    std::unique_ptr<FakeHost> host;
    std::unique_ptr<PodTable> pods;
    std::unique_ptr<DesiredDaemonSets> desired;

    void setup() override { start(); }
    void teardown() override { stop(); }
    // An agent's start over the stateDir's store (a restart: stop, start).
    void start() {
        host = std::make_unique<FakeHost>(
            MUST(store::Store::open(dir.file("daemonlet.db"), clock.wall_ms(), nullptr)));
        pods = std::make_unique<PodTable>(*host, clock);
        desired = std::make_unique<DesiredDaemonSets>(*pods, *host, clock);
    }
    void stop() {
        desired.reset();
        pods.reset();
        host.reset();
    }
    std::string rows(const std::string& sql) {
        RawDb raw(dir.file("daemonlet.db"), SQLITE_OPEN_READONLY);
        return raw.rows(sql);
    }
    std::string daemonsets() {
        return rows("SELECT name, template_hash, generation FROM daemonsets ORDER BY name");
    }
    std::string history(const std::string& name) {
        return rows("SELECT revision, hash FROM revisions WHERE daemonset = '" + name +
                    "' ORDER BY revision");
    }
};

// constructHistory: a DaemonSet's first template is revision 1
// (maxRevision of no history + 1); the store keeps the object with that
// template's hash.
TEST(DesiredDaemonSets, NewDaemonSetIsStoredWithRevisionOneAndItsHash) {
    auto changes = desired->rebuild({{key("web"), from_file("web", "nginx:1")}});
    CHECK(changes.applied);
    STRCMP_EQUAL("kube-system/web", join(changes.changed, " ").c_str());
    const auto* d = desired->find(key("web"));
    CHECK(d != nullptr);
    LONGS_EQUAL(1, d->revision);
    CHECK(!d->hash.empty());
    STRCMP_EQUAL(("web|" + d->hash + "|1").c_str(), daemonsets().c_str());
    STRCMP_EQUAL(("1|" + d->hash).c_str(), history("web").c_str());
    LONGS_EQUAL(1, host->applied);
    STRCMP_EQUAL((key("web") + "@" + d->hash).c_str(), join(host->templates, " ").c_str());
}

// The same object from the same source (Sources shares it while the file
// is unchanged): nothing applied, nothing written, the template not said
// again. reapply() (an undo) makes the next rebuild apply it again.
TEST(DesiredDaemonSets, SameObjectFromSameSourceAgainWritesNothing) {
    const Merged merged{{key("web"), from_file("web", "nginx:1")}};
    desired->rebuild(merged);
    clock.advance(1000);
    const FileStamp db = stamp(dir.file("daemonlet.db")), wal = stamp(dir.file("daemonlet.db-wal"));
    auto changes = desired->rebuild(merged);
    CHECK(changes.applied);
    LONGS_EQUAL(0, changes.changed.size());
    LONGS_EQUAL(1, host->applied);
    LONGS_EQUAL(1, host->templates.size());
    CHECK(db == stamp(dir.file("daemonlet.db")));
    CHECK(wal == stamp(dir.file("daemonlet.db-wal")));
    LONGS_EQUAL(1, desired->find(key("web"))->revision);

    desired->reapply(key("web"));
    STRCMP_EQUAL("kube-system/web", join(desired->rebuild(merged).changed, " ").c_str());
    LONGS_EQUAL(2, host->applied);
    LONGS_EQUAL(1, host->templates.size());  // the same template: said once
}

// constructHistory: a new template is maxRevision + 1; the old revision
// stays in the history (cleanupHistory keeps revisionHistoryLimit). A
// change outside the template (a label) is a new generation of the same
// revision, and its template is not said again.
TEST(DesiredDaemonSets, TemplateChangeGetsRevisionTwoAndTheHistoryKeepsOne) {
    desired->rebuild({{key("web"), from_file("web", "nginx:1")}});
    const std::string h1 = desired->find(key("web"))->hash;
    desired->rebuild({{key("web"), from_file("web", "nginx:2")}});
    const auto* d = desired->find(key("web"));
    LONGS_EQUAL(2, d->revision);
    CHECK(d->hash != h1);
    STRCMP_EQUAL(("1|" + h1 + "\n2|" + d->hash).c_str(), history("web").c_str());
    STRCMP_EQUAL(("web|" + d->hash + "|2").c_str(), daemonsets().c_str());

    const std::string h2 = d->hash;
    desired->rebuild({{key("web"), from_file("web", "nginx:2", "b")}});
    LONGS_EQUAL(2, desired->find(key("web"))->revision);
    STRCMP_EQUAL(("web|" + h2 + "|3").c_str(), daemonsets().c_str());
    LONGS_EQUAL(2, host->templates.size());
    LONGS_EQUAL(2, host->reported);
}

// cleanupHistory: revisionHistoryLimit counts the old revisions, the
// current one aside: a limit of 1 over three templates keeps 2 and 3.
TEST(DesiredDaemonSets, TheHistoryKeepsRevisionHistoryLimitOldOnes) {
    const std::string limit = "  revisionHistoryLimit: 1\n";
    for (const char* image : {"nginx:1", "nginx:2", "nginx:3"})
        desired->rebuild({{key("web"), from_file("web", image, "a", limit)}});
    const auto* d = desired->find(key("web"));
    LONGS_EQUAL(3, d->revision);
    const std::string h = history("web");
    STRCMP_EQUAL("2|", h.substr(0, 2).c_str());
    LONGS_EQUAL(1, std::count(h.begin(), h.end(), '\n'));
}

// dedupCurHistories and constructHistory: the template of an old revision
// back again gets its ControllerRevision, not a new one, renumbered to
// maxRevision + 1; the pods running it follow (their revision saved).
TEST(DesiredDaemonSets, SameTemplateBackGetsItsOldRevisionRenumbered) {
    desired->rebuild({{key("web"), from_file("web", "nginx:1")}});
    const std::string h1 = desired->find(key("web"))->hash;
    LivePod p;
    p.rec.uid = "uid-1";
    p.rec.name = "web-abcde";
    p.rec.namespace_ = kNs;
    p.rec.daemonset = "web";
    p.rec.revision_hash = h1;
    p.rec.revision = 1;
    p.rec.phase = PodPhase::Running;
    pods->save(pods->add(std::move(p)));
    desired->rebuild({{key("web"), from_file("web", "nginx:2")}});
    const std::string h2 = desired->find(key("web"))->hash;
    desired->rebuild({{key("web"), from_file("web", "nginx:1")}});
    const auto* d = desired->find(key("web"));
    STRCMP_EQUAL(h1.c_str(), d->hash.c_str());
    LONGS_EQUAL(3, d->revision);
    STRCMP_EQUAL(("2|" + h2 + "\n3|" + h1).c_str(), history("web").c_str());
    LONGS_EQUAL(3, pods->at("uid-1").rec.revision);
    STRCMP_EQUAL("3", rows("SELECT revision FROM pods WHERE uid = 'uid-1'").c_str());
}

// A DaemonSet no source offers any more is removed: its row (and, by the
// foreign key, its history) deleted, as the controller's history goes with
// its DaemonSet (ControllerRevisions are owned by it).
TEST(DesiredDaemonSets, DaemonSetNoSourceOffersIsDeletedFromTheStore) {
    desired->rebuild({{key("db"), from_file("db", "redis:7")}, {key("web"), from_file("web", "nginx:1")}});
    auto changes = desired->rebuild({{key("web"), from_file("web", "nginx:1")}});
    STRCMP_EQUAL("kube-system/db", join(changes.removed, " ").c_str());
    CHECK(desired->find(key("db")) == nullptr);
    LONGS_EQUAL(1, desired->size());
    STRCMP_EQUAL("web", rows("SELECT name FROM daemonsets").c_str());
    STRCMP_EQUAL("", history("db").c_str());
}

// A file removed while the agent was down: at the first rebuild after the
// start, the store's row no source offers is deleted as a removal seen
// while running; only then (the store is swept once, not read again).
TEST(DesiredDaemonSets, FirstRebuildDeletesStoreRowsNoSourceOffers) {
    const auto web = from_file("web", "nginx:1");
    desired->rebuild({{key("db"), from_file("db", "redis:7")}, {key("web"), web}});
    stop();
    start();
    auto changes = desired->rebuild({{key("web"), web}});
    STRCMP_EQUAL("kube-system/db", join(changes.removed, " ").c_str());
    STRCMP_EQUAL("web", rows("SELECT name FROM daemonsets").c_str());

    // A row the agent did not write, after the first rebuild: not swept.
    store::StoredDaemonSet row = sample_daemonset("other");
    row.namespace_ = kNs;
    CHECK(host->desired_store().put_daemonset(row).ok());
    changes = desired->rebuild({{key("web"), web}});
    LONGS_EQUAL(0, changes.removed.size());
    STRCMP_EQUAL("other\nweb", rows("SELECT name FROM daemonsets ORDER BY name").c_str());
}

// A pod of an older revision (a rollout in progress, OnDelete) runs by its
// own revision's template, from the history (the kubelet probes, hooks and
// reports each pod by its own spec): the DaemonSet in force with that
// template; a hash the history does not have is none. Cached: what the
// Pod's status reads without a store read.
TEST(DesiredDaemonSets, APodOfAnOlderRevisionRunsByItsOwnTemplate) {
    desired->rebuild({{key("web"), from_file("web", "nginx:1")}});
    PodRecord old_pod;
    old_pod.namespace_ = kNs;
    old_pod.daemonset = "web";
    old_pod.revision_hash = desired->find(key("web"))->hash;
    desired->rebuild({{key("web"), from_file("web", "nginx:2")}});
    const auto* d = desired->find(key("web"));
    CHECK(d->hash != old_pod.revision_hash);

    POINTERS_EQUAL(nullptr, desired->cached_pod_revision(old_pod));  // not read yet
    const DaemonSet* old = desired->pod_revision(old_pod, d->ds().object);
    CHECK(old != nullptr);
    STRCMP_EQUAL("nginx:1", old->spec.template_.spec.containers.at(0).image.c_str());
    STRCMP_EQUAL("web", old->metadata.name.c_str());  // the DaemonSet in force around it
    POINTERS_EQUAL(old, desired->cached_pod_revision(old_pod));

    PodRecord current = old_pod;
    current.revision_hash = d->hash;
    STRCMP_EQUAL(
        "nginx:2",
        desired->pod_revision(current, d->ds().object)->spec.template_.spec.containers.at(0).image.c_str());
    PodRecord unknown = old_pod;
    unknown.revision_hash = "0000000000";
    POINTERS_EQUAL(nullptr, desired->pod_revision(unknown, d->ds().object));
}
