// The Rollbacks component (agent/daemon/rollbacks.h): `rollout undo` of a
// manifest file's DaemonSet, kubectl's DaemonSetRollbacker
// (k8s.io/kubectl/pkg/polymorphichelpers/rollback.go) over a file the undo
// cannot edit. Over a real DesiredDaemonSets and its revision history in a
// SQLite store in a temporary directory, on a fake clock. The Host is a
// fake that does what the agent does: the DaemonSets in force are the
// DesiredDaemonSets', the files' are the test's, and a rollback that
// changed what applies is applied again by a rebuild; the Events are kept
// as "reason: message".
#include <algorithm>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "agent/daemon/rollbacks.h"
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
using Merged = std::map<std::string, SourcedDaemonSet>;

class FakeHost final : public DesiredDaemonSets::Host, public PodTable::Host, public Rollbacks::Host {
  public:
    FakeHost(std::unique_ptr<store::Store> s, const Merged& files) : store_(std::move(s)), files_(files) {}
    store::Store& desired_store() override { return *store_; }
    void apply_rollback(DesiredDaemonSets::Desired& d) override { rollbacks->apply(d); }
    void template_in_force(const std::string& /*key*/, const DesiredDaemonSets::Desired& /*d*/) override {}
    void revision_reported() override {}
    store::Store& pod_store() override { return *store_; }
    MetricRegistry* pod_metrics() override { return nullptr; }
    void pod_saved() override {}

    void record_rollback_event(const std::string& ns, const std::string& daemonset, const char* type,
                               const char* reason, const std::string& message) override {
        events.push_back(ns + "/" + daemonset + " " + type + " " + reason + ": " + message);
    }
    const DesiredDaemonSets::Desired* daemonset_in_force(const std::string& key) const override {
        return desired->find(key);
    }
    std::shared_ptr<const DaemonSet> manifest_daemonset(const std::string& path, const std::string& ns,
                                                        const std::string& name) const override {
        auto it = files_.find(ns + "/" + name);
        if (it == files_.end() || it->second.source.path != path) return nullptr;
        return it->second.object;
    }
    // As the agent: DesiredDaemonSets::reapply, then a rebuild.
    void rollback_changed(const std::string& key) override {
        changed.push_back(key);
        desired->reapply(key);
        CHECK(desired->rebuild(files_).applied);
    }

    store::Store& store() { return *store_; }

    Rollbacks* rollbacks = nullptr;
    DesiredDaemonSets* desired = nullptr;
    std::vector<std::string> events;
    std::vector<std::string> changed;  // the keys rollback_changed was asked for

  private:
    std::unique_ptr<store::Store> store_;
    const Merged& files_;
};

std::string key(const std::string& name) { return std::string(kNs) + "/" + name; }

// The image the DaemonSet in force runs.
std::string image_of(const DesiredDaemonSets::Desired& d) {
    return d.ds().spec.template_.spec.containers.at(0).image;
}

}  // namespace

TEST_GROUP(Rollbacks) {
    TempDir dir;
    FakeClock clock;
    Merged files;
    std::unique_ptr<FakeHost> host;
    std::unique_ptr<PodTable> pods;
    std::unique_ptr<DesiredDaemonSets> desired;
    std::unique_ptr<Rollbacks> rollbacks;

    void setup() override { start(); }
    void teardown() override { stop(); }
    // An agent's start over the stateDir's store (a restart: stop, start).
    void start() {
        host = std::make_unique<FakeHost>(
            MUST(store::Store::open(dir.file("daemonlet.db"), clock.wall_ms(), nullptr)), files);
        pods = std::make_unique<PodTable>(*host, clock);
        desired = std::make_unique<DesiredDaemonSets>(*pods, *host, clock);
        rollbacks = std::make_unique<Rollbacks>(*host, host->store(), clock);
        host->desired = desired.get();
        host->rollbacks = rollbacks.get();
        if (!files.empty()) CHECK(desired->rebuild(files).applied);
    }
    void stop() {
        rollbacks.reset();
        desired.reset();
        pods.reset();
        host.reset();
    }
    // The file `name` now runs `image` (a new file, or an edit of it);
    // returns the template hash in force.
    std::string write_file(const std::string& name, const std::string& image) {
        files.insert_or_assign(key(name), from_file(name, image));
        CHECK(desired->rebuild(files).applied);
        return in_force(name).hash;
    }
    const DesiredDaemonSets::Desired& in_force(const std::string& name) {
        const auto* d = desired->find(key(name));
        CHECK_TEXT(d != nullptr, name.c_str());
        return *d;
    }
    // `rollout undo ds/name --to-revision=to`: the answer, which comes once
    // (no store worker here: after a flush on this thread).
    Result<std::string> undo(const std::string& name, std::int64_t to, const std::string& ns = kNs) {
        std::optional<Result<std::string>> answer;
        int answers = 0;
        rollbacks->undo(ns, name, to, [&](Result<std::string> r) {
            ++answers;
            answer = std::move(r);
        });
        LONGS_EQUAL(1, answers);
        return std::move(*answer);
    }
    std::string error_of(const Result<std::string>& r) {
        CHECK_FALSE_TEXT(r.ok(), r.ok() ? r.value().c_str() : "");
        return r.error().message;
    }
    std::optional<store::StoredRollback> stored(const std::string& name) {
        return MUST(host->store().get_rollback(kNs, name));
    }
    // "revision:hash" of the store's history, oldest first.
    std::string history(const std::string& name) {
        std::vector<std::string> out;
        for (const auto& r : MUST(host->store().list_revisions(kNs, name)))
            out.push_back(std::to_string(r.revision) + ":" + r.hash);
        std::sort(out.begin(), out.end());
        return join(out, " ");
    }
};

// findHistory (rollback.go): revision 0 is the one before the current, the
// second largest revision number, not the oldest.
TEST(Rollbacks, UndoToZeroPicksTheSecondLargestRevision) {
    write_file("x", "nginx:1");
    const std::string h2 = write_file("x", "nginx:2");
    const std::string h3 = write_file("x", "nginx:3");
    STRCMP_EQUAL("rolled back", MUST(undo("x", 0)).c_str());
    STRCMP_EQUAL(h2.c_str(), in_force("x").hash.c_str());
    STRCMP_EQUAL("nginx:2", image_of(in_force("x")).c_str());
    CHECK_TRUE(in_force("x").rolled_back);
    CHECK(h3 != h2);
}

// DaemonSetRollbacker.Rollback: a revision whose template is the one in
// force is no rollback ("skipped rollback (current template already
// matches revision N)"): nothing stored, no Event, nothing applied again.
TEST(Rollbacks, UndoToTheTemplateInForceIsSkipped) {
    write_file("x", "nginx:1");
    const std::string h2 = write_file("x", "nginx:2");
    bool wrote = false;
    auto r = rollbacks->undo_in_memory(kNs, "x", 2, &wrote);
    STRCMP_EQUAL("skipped rollback (current template already matches revision 2)",
                 MUST(std::move(r)).c_str());
    CHECK_FALSE(wrote);
    CHECK_FALSE(stored("x").has_value());
    LONGS_EQUAL(0, host->events.size());
    LONGS_EQUAL(0, host->changed.size());
    STRCMP_EQUAL(h2.c_str(), in_force("x").hash.c_str());
}

// findHistory: a revision the history has not, or a negative one, is
// "unable to find specified revision N in history".
TEST(Rollbacks, UnknownOrNegativeRevisionIsNotInHistory) {
    write_file("x", "nginx:1");
    const std::string h2 = write_file("x", "nginx:2");
    auto unknown = undo("x", 7);
    STRCMP_EQUAL("unable to find specified revision 7 in history", error_of(unknown).c_str());
    CHECK(unknown.error().code == ErrorCode::Invalid);
    STRCMP_EQUAL("unable to find specified revision -1 in history", error_of(undo("x", -1)).c_str());
    CHECK_FALSE(stored("x").has_value());
    LONGS_EQUAL(0, host->changed.size());
    STRCMP_EQUAL(h2.c_str(), in_force("x").hash.c_str());
}

// findHistory: revision 0 with a single revision has no previous one.
TEST(Rollbacks, OneRevisionHasNoLastRevisionToRollBackTo) {
    const std::string h1 = write_file("x", "nginx:1");
    STRCMP_EQUAL("no last revision to roll back to", error_of(undo("x", 0)).c_str());
    // The one revision is the template in force.
    STRCMP_EQUAL("skipped rollback (current template already matches revision 1)",
                 MUST(undo("x", 1)).c_str());
    CHECK_FALSE(stored("x").has_value());
    STRCMP_EQUAL(h1.c_str(), in_force("x").hash.c_str());
}

// The API server's NotFound for a DaemonSet no source defines (in the
// namespace asked).
TEST(Rollbacks, UnknownDaemonSetIsNotFound) {
    write_file("x", "nginx:1");
    write_file("x", "nginx:2");
    auto gone = undo("y", 1);
    STRCMP_EQUAL("daemonsets.apps \"y\" not found", error_of(gone).c_str());
    CHECK(gone.error().code == ErrorCode::K8sNotFound);
    auto elsewhere = undo("x", 1, "default");
    STRCMP_EQUAL("daemonsets.apps \"x\" not found", error_of(elsewhere).c_str());
    CHECK(elsewhere.error().code == ErrorCode::K8sNotFound);
    LONGS_EQUAL(0, host->events.size());
}

// An undo to an older template: the rollback is stored against the file's
// DaemonSet (its hash) with the restored template, the Event says it holds
// until the file changes, and the DaemonSet is applied again: the restored
// template in force, renumbered to max+1 as the controller does
// (constructHistory, in DesiredDaemonSets).
TEST(Rollbacks, UndoToAnOlderTemplateStoresARollback) {
    const std::string h1 = write_file("x", "nginx:1");
    const std::string h2 = write_file("x", "nginx:2");
    const std::string file_hash = in_force("x").file_hash;
    std::string template_1;
    for (const auto& r : MUST(host->store().list_revisions(kNs, "x")))
        if (r.revision == 1) template_1 = r.template_json;
    clock.advance(5000);

    STRCMP_EQUAL("rolled back", MUST(undo("x", 1)).c_str());
    auto rb = stored("x");
    CHECK_TRUE(rb.has_value());
    STRCMP_EQUAL(file_hash.c_str(), rb->file_hash.c_str());
    STRCMP_EQUAL(h1.c_str(), rb->revision_hash.c_str());
    STRCMP_EQUAL(template_1.c_str(), rb->template_json.c_str());
    LONGS_EQUAL(clock.wall_ms(), rb->created_at_ms);
    STRCMP_EQUAL(("kube-system/x Normal RollbackDone: Rolled back to revision 1 (" + h1 +
                  "), in force until /m/x.yaml changes")
                     .c_str(),
                 join(host->events, "\n").c_str());
    STRCMP_EQUAL("kube-system/x", join(host->changed, " ").c_str());
    STRCMP_EQUAL(h1.c_str(), in_force("x").hash.c_str());
    CHECK_TRUE(in_force("x").rolled_back);
    LONGS_EQUAL(3, in_force("x").revision);
    STRCMP_EQUAL(("2:" + h2 + " 3:" + h1).c_str(), history("x").c_str());
}

// Undoing back to the file's own template is removing the rollback: the
// file is in force again, as it says.
TEST(Rollbacks, UndoToTheFilesOwnTemplateDeletesTheRollback) {
    write_file("x", "nginx:1");
    const std::string h2 = write_file("x", "nginx:2");
    MUST(undo("x", 1));
    CHECK_TRUE(stored("x").has_value());
    host->events.clear();
    host->changed.clear();

    STRCMP_EQUAL("rolled back", MUST(undo("x", 0)).c_str());  // revision 2: the file's
    CHECK_FALSE(stored("x").has_value());
    STRCMP_EQUAL(("kube-system/x Normal RollbackDone: Rolled back to revision 2 (" + h2 +
                  "), the manifest file's own template")
                     .c_str(),
                 join(host->events, "\n").c_str());
    STRCMP_EQUAL("kube-system/x", join(host->changed, " ").c_str());
    STRCMP_EQUAL(h2.c_str(), in_force("x").hash.c_str());
    CHECK_FALSE(in_force("x").rolled_back);
    STRCMP_EQUAL("nginx:2", image_of(in_force("x")).c_str());
}

// The stored rollback holds across a restart while the file is unchanged:
// its template is in force, with its hash.
TEST(Rollbacks, ApplyOverAnUnchangedFileKeepsTheRollbackInForce) {
    const std::string h1 = write_file("x", "nginx:1");
    write_file("x", "nginx:2");
    MUST(undo("x", 1));
    stop();
    files.insert_or_assign(key("x"), from_file("x", "nginx:2"));  // read again: the same file
    start();
    CHECK_TRUE(in_force("x").rolled_back);
    STRCMP_EQUAL(h1.c_str(), in_force("x").hash.c_str());
    STRCMP_EQUAL("nginx:1", image_of(in_force("x")).c_str());
    CHECK_TRUE(stored("x").has_value());
    LONGS_EQUAL(0, host->events.size());
}

// The file changed since the undo: the file wins again, the rollback is
// dropped and a RollbackSuperseded Event says so.
TEST(Rollbacks, ApplyAfterTheFileChangedDropsTheRollback) {
    const std::string h1 = write_file("x", "nginx:1");
    write_file("x", "nginx:2");
    MUST(undo("x", 1));
    host->events.clear();

    const std::string h3 = write_file("x", "nginx:3");
    CHECK_FALSE(stored("x").has_value());
    CHECK_FALSE(in_force("x").rolled_back);
    STRCMP_EQUAL("nginx:3", image_of(in_force("x")).c_str());
    CHECK(h3 != h1);
    STRCMP_EQUAL(("kube-system/x Normal RollbackSuperseded: Manifest /m/x.yaml changed: its template "
                  "replaces the rollback to " +
                  h1)
                     .c_str(),
                 join(host->events, "\n").c_str());
}

// A stored template that does not decode (not JSON, or no pod template) is
// dropped: the file's is in force, no Event.
TEST(Rollbacks, ApplyWithAnUndecodableTemplateKeepsTheFiles) {
    write_file("x", "nginx:1");
    const std::string h2 = write_file("x", "nginx:2");
    for (const char* broken : {"{not json", R"({"spec":{"containers":"nope"}})"}) {
        MUST(host->store().put_rollback(
            store::StoredRollback{kNs, "x", in_force("x").file_hash, "0123abcd", broken, clock.wall_ms()}));
        desired->reapply(key("x"));
        CHECK(desired->rebuild(files).applied);
        CHECK_FALSE_TEXT(stored("x").has_value(), broken);
        CHECK_FALSE_TEXT(in_force("x").rolled_back, broken);
        STRCMP_EQUAL_TEXT(h2.c_str(), in_force("x").hash.c_str(), broken);
        STRCMP_EQUAL("nginx:2", image_of(in_force("x")).c_str());
    }
    LONGS_EQUAL(0, host->events.size());
}
