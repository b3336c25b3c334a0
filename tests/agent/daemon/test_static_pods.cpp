// The StaticPods component (agent/daemon/static_pods.h): the kubelet's
// file source and its pod manager's static pods, over a real PodTable. Its
// decisions are plain data (the stops with their reasons, the starts in
// order), checked here without a loop, a runtime or a clock read.
#include <cstdlib>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "agent/daemon/static_pods.h"
#include "core/manifest.h"
#include "tests/agent/daemon/fake_clock.h"

#include <CppUTest/TestHarness.h>

using namespace daemonlet;
using namespace daemonlet::agent;
using namespace daemonlet::testing;

namespace {

constexpr const char* kNode = "Board-1";
constexpr const char* kGone = "its manifest file changed or no longer defines it";
constexpr const char* kDeleted = "deleted by the user; the static pod starts again";

// StaticPods never saves a pod: a save reaching the store is a bug here.
class NoSaves final : public PodTable::Host {
  public:
    store::Store& pod_store() override {
        FAIL("StaticPods saved a pod");
        std::abort();
    }
    MetricRegistry* pod_metrics() override { return nullptr; }
    void pod_saved() override {}
};

// A file's v1 Pod, as Sources gives it (validated and defaulted).
Sources::FilePod file(const std::string& path, const std::string& name, const std::string& image = "nginx") {
    auto m = load_manifest("apiVersion: v1\nkind: Pod\nmetadata: {name: " + name +
                               "}\nspec:\n  containers: [{name: c, image: " + image + "}]\n",
                           path);
    CHECK_TEXT(m.errors.empty(), m.errors.empty() ? "" : m.errors.front().to_string().c_str());
    return {std::make_shared<const Pod>(std::get<Pod>(m.objects.front().object)), path};
}

// The UID StaticPods gives the file's pod on this node (core make_static_pod).
std::string uid_of(const Sources::FilePod& f) { return make_static_pod(*f.pod, kNode, f.path).metadata.uid; }

}  // namespace

TEST_GROUP(StaticPods) {
    FakeClock clock;
    NoSaves host;
    PodTable pods{host, clock};
    StaticPods statics{pods};

    // The pod the agent runs for the file's pod (its record as
    // create_static_pod makes it).
    LivePod& run(const Sources::FilePod& f) {
        const Pod p = make_static_pod(*f.pod, kNode, f.path);
        LivePod live;
        live.rec.uid = p.metadata.uid;
        live.rec.name = p.metadata.name;
        live.rec.namespace_ = p.metadata.namespace_;
        live.rec.source = f.path;
        live.rec.phase = PodPhase::Running;
        return pods.add(std::move(live));
    }
    // The pod has stopped: PodWorkers' end, the agent's pod_terminated.
    void stopped(const std::string& uid) {
        pods.erase(uid);
        statics.pod_gone(uid);
    }
    static std::string starts_of(const std::vector<StaticPods::Start>& starts) {
        std::string out;
        for (const auto& s : starts)
            out += (out.empty() ? "" : " ") +
                   (s.pod ? s.pod->path + ":" + s.pod->pod->metadata.name : s.uid + ":next-reconcile");
        return out;
    }
};

// kubelet's filterInvalidPods (pkg/kubelet/config/common.go): a name
// already taken in the source is refused; the first file (path order, as
// Sources lists them) keeps it. The warning is said once per pairing, not
// on every rebuild.
TEST(StaticPods, FirstFileKeepsANameTwoFilesDefineAndSaysItOnce) {
    const auto a = file("/m/a.yaml", "web");
    const auto b = file("/m/b.yaml", "web", "nginx:2");
    const std::vector<Sources::FilePod> files{a, b};
    auto said = statics.rebuild(files, kNode, "cri");
    LONGS_EQUAL(1, said.size());
    STRCMP_EQUAL("default/web-board-1", said[0].name.c_str());
    STRCMP_EQUAL("/m/a.yaml", said[0].kept.c_str());
    STRCMP_EQUAL("/m/b.yaml", said[0].ignored.c_str());
    CHECK(statics.offered(uid_of(a)) != nullptr);
    CHECK(statics.offered(uid_of(b)) == nullptr);
    LONGS_EQUAL(0, statics.rebuild(files, kNode, "cri").size());  // said already
    STRCMP_EQUAL("/m/a.yaml:web-board-1", starts_of(statics.plan_starts()).c_str());
}

// A pod no file offers any more is stopped (HandlePodRemoves), with the
// spec its file offered last for its preStop hooks and grace period
// (killPodWithSyncResult with the pod's spec) until it has stopped; one the
// table never had keeps nothing.
TEST(StaticPods, PodNoFileOffersStopsAndKeepsItsSpecUntilGone) {
    const auto a = file("/m/a.yaml", "web");
    const auto b = file("/m/b.yaml", "db");
    statics.rebuild({a, b}, kNode, "cri");
    run(a);
    statics.rebuild({}, kNode, "cri");
    CHECK(statics.offered(uid_of(a)) == nullptr);
    const StaticPods::Desired* last = statics.of(uid_of(a));
    CHECK(last != nullptr);
    STRCMP_EQUAL("/m/a.yaml", last->path.c_str());
    CHECK(statics.of(uid_of(b)) == nullptr);  // never ran: nothing to stop
    auto stops = statics.plan_stops();
    LONGS_EQUAL(1, stops.size());
    STRCMP_EQUAL(uid_of(a).c_str(), stops[0].uid.c_str());
    STRCMP_EQUAL(kGone, stops[0].reason);
    pods.at(uid_of(a)).rec.deleting = true;  // the terminate
    LONGS_EQUAL(0, statics.plan_stops().size());
    CHECK(statics.of(uid_of(a)) != nullptr);  // still stopping
    stopped(uid_of(a));
    CHECK(statics.of(uid_of(a)) == nullptr);
}

// An edited file makes a new UID: the old pod stops, and the new one waits
// until no pod of the same full name is left (pod_workers.go
// allowStaticPodStart: one static pod of a full name runs at a time).
TEST(StaticPods, EditedFilesNewPodWaitsForTheOldPodOfItsName) {
    const auto before = file("/m/a.yaml", "web");
    const auto after = file("/m/a.yaml", "web", "nginx:2");
    CHECK(uid_of(before) != uid_of(after));
    statics.rebuild({before}, kNode, "cri");
    run(before);
    statics.rebuild({after}, kNode, "cri");
    auto stops = statics.plan_stops();
    LONGS_EQUAL(1, stops.size());
    STRCMP_EQUAL(uid_of(before).c_str(), stops[0].uid.c_str());
    pods.at(uid_of(before)).rec.deleting = true;
    STRCMP_EQUAL("", starts_of(statics.plan_starts()).c_str());
    stopped(uid_of(before));
    auto starts = statics.plan_starts();
    LONGS_EQUAL(1, starts.size());
    STRCMP_EQUAL(uid_of(after).c_str(), starts[0].uid.c_str());
    STRCMP_EQUAL("/m/a.yaml:web-board-1", starts_of(starts).c_str());
}

// `delete pod` on a static pod: the kubelet stops it and, the file still
// offering it, starts it again under the same UID. Here the start comes on
// the reconcile after the one that saw it gone, so that the delete's waiter
// is answered first.
TEST(StaticPods, DeletedPodStopsAndStartsAgainOnTheReconcileAfter) {
    const auto a = file("/m/a.yaml", "web");
    statics.rebuild({a}, kNode, "cri");
    run(a).deleted_by_user = true;
    auto stops = statics.plan_stops();
    LONGS_EQUAL(1, stops.size());
    STRCMP_EQUAL(kDeleted, stops[0].reason);
    pods.at(uid_of(a)).rec.deleting = true;
    STRCMP_EQUAL("", starts_of(statics.plan_starts()).c_str());  // still stopping
    stopped(uid_of(a));
    STRCMP_EQUAL((uid_of(a) + ":next-reconcile").c_str(), starts_of(statics.plan_starts()).c_str());
    STRCMP_EQUAL("/m/a.yaml:web-board-1", starts_of(statics.plan_starts()).c_str());
}

// HandlePodAdditions admits pods in order; here the files' order (path,
// then name), whatever their UIDs: the first file keeps a host port both
// ask for.
TEST(StaticPods, StartsInTheFilesOrderPathThenName) {
    struct Row {
        const char* name;
        std::vector<Sources::FilePod> files;
        const char* expected;
    };
    const Row rows[] = {
        {"by path",
         {file("/m/a.yaml", "zz"), file("/m/b.yaml", "mm"), file("/m/c.yaml", "aa")},
         "/m/a.yaml:zz-board-1 /m/b.yaml:mm-board-1 /m/c.yaml:aa-board-1"},
        {"one file's pods by name",
         {file("/m/a.yaml", "db"), file("/m/a.yaml", "api"), file("/m/a.yaml", "web")},
         "/m/a.yaml:api-board-1 /m/a.yaml:db-board-1 /m/a.yaml:web-board-1"},
    };
    for (const Row& row : rows) {
        StaticPods fresh{pods};
        fresh.rebuild(row.files, kNode, "cri");
        STRCMP_EQUAL_TEXT(row.expected, starts_of(fresh.plan_starts()).c_str(), row.name);
    }
}
