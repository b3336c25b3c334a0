// The PodTable component (agent/daemon/pod_table.h), kubelet's pod manager
// (pkg/kubelet/pod/pod_manager.go): the pods by uid, a new pod's container
// statuses, and the pod's save to a real SQLite store with the start
// duration observed once.
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <memory>
#include <string>
#include <vector>

#include "agent/daemon/pod_table.h"
#include "tests/agent/daemon/fake_clock.h"
#include "tests/store/store_fixture.h"

#include <CppUTest/TestHarness.h>

using namespace daemonlet;
using namespace daemonlet::agent;
using namespace daemonlet::testing;

namespace {

constexpr const char* kStartDuration = "kubelet_pod_start_duration_seconds";

// The agent's side of a save: a real store, a registry with the start
// duration declared, the saves counted.
class SaveHost final : public PodTable::Host {
  public:
    explicit SaveHost(std::unique_ptr<store::Store> s) : store_(std::move(s)) {
        registry.histogram(kStartDuration, "start", {1, 10, 60});
    }
    store::Store& pod_store() override { return *store_; }
    MetricRegistry* pod_metrics() override { return metrics_on ? &registry : nullptr; }
    // The API's podStatus follows the store's row: the row is there when told.
    void pod_saved() override {
        ++saved;
        auto rows = store_->list_pods();
        rows_when_told = rows.ok() ? rows.value().size() : 0;
    }

    MetricRegistry registry;
    bool metrics_on = true;
    int saved = 0;
    std::size_t rows_when_told = 0;

  private:
    std::unique_ptr<store::Store> store_;
};

LivePod pod(const std::string& uid, PodPhase phase = PodPhase::Pending) {
    LivePod p;
    p.rec.uid = uid;
    p.rec.name = "agent-" + uid;
    p.rec.namespace_ = "kube-system";
    p.rec.daemonset = "agent";
    p.rec.phase = phase;
    return p;
}

Container container(const std::string& name, const std::string& restart_policy = "") {
    Container c;
    c.name = name;
    c.restart_policy = restart_policy;
    return c;
}

// The exposition's line for the start duration's count (or sum).
std::string series(const MetricRegistry& r, const std::string& suffix) {
    const std::string text = r.render();
    const std::string key = std::string(kStartDuration) + suffix + " ";
    const auto at = text.find(key);
    if (at == std::string::npos) return "absent";
    return text.substr(at + key.size(), text.find('\n', at) - at - key.size());
}

// `f` run in a child: how it ended (a signal number, or 0 if it returned).
template <class F>
int signal_of(F&& f) {
    const pid_t pid = ::fork();
    if (pid == 0) {
        std::signal(SIGABRT, SIG_DFL);
        ::close(STDERR_FILENO);  // the abort's message is for the agent's log, not the test's
        f();
        ::_exit(0);
    }
    int status = 0;
    CHECK_EQUAL(pid, ::waitpid(pid, &status, 0));
    return WIFSIGNALED(status) ? WTERMSIG(status) : 0;
}

}  // namespace

TEST_GROUP(PodTable) {
    TempDir dir;
    FakeClock clock;
    SaveHost* host = nullptr;
    std::unique_ptr<SaveHost> owned;
    std::unique_ptr<PodTable> table;

    void setup() override {
        owned = std::make_unique<SaveHost>(
            MUST(store::Store::open(dir.file("daemonlet.db"), clock.wall_ms(), nullptr)));
        host = owned.get();
        table = std::make_unique<PodTable>(*host, clock);
    }
    void teardown() override {
        table.reset();
        owned.reset();
    }
};

TEST(PodTable, PodsAreFoundByUidAndAMissingOneIsNull) {
    table->add(pod("b"));
    LivePod& a = table->add(pod("a"));
    CHECK_EQUAL(std::string("a"), a.rec.uid);
    CHECK_EQUAL(2u, table->size());
    CHECK_EQUAL(&a, table->find("a"));
    CHECK_EQUAL(&a, &table->at("a"));
    POINTERS_EQUAL(nullptr, table->find("gone"));
    CHECK_FALSE(table->contains("gone"));
    CHECK(table->uids() == (std::vector<std::string>{"a", "b"}));
    std::vector<std::string> walked;
    for (const auto& [uid, p] : *table) walked.push_back(uid + "=" + p.rec.uid);
    CHECK(walked == (std::vector<std::string>{"a=a", "b=b"}));
    table->erase("a");
    POINTERS_EQUAL(nullptr, table->find("a"));
    CHECK(table->uids() == (std::vector<std::string>{"b"}));
    table->erase("a");  // gone already: nothing
    table->erase("b");
    CHECK_TRUE(table->empty());
}

TEST(PodTable, AtOnAMissingUidOrAddingAUidTwiceAborts) {
    // A pod that must exist and does not is a broken invariant: a crash
    // with its uid, never an empty pod made up for it.
    table->add(pod("a"));
    CHECK_EQUAL(SIGABRT, signal_of([&] { (void)table->at("gone"); }));
    CHECK_EQUAL(SIGABRT, signal_of([&] { (void)static_cast<const PodTable&>(*table).at("gone"); }));
    CHECK_EQUAL(SIGABRT, signal_of([&] { table->add(pod("a")); }));
    CHECK_EQUAL(0, signal_of([&] { (void)table->at("a"); }));
    CHECK_EQUAL(1u, table->size());
}

TEST(PodTable, ANewPodsContainersWaitWithTheKubeletsReasons) {
    // kubelet_pods.go convertToAPIContainerStatuses: every container's
    // default Waiting reason is ContainerCreating, PodInitializing when the
    // pod has init containers; an init container with restartPolicy Always
    // is a sidecar (1.28+). Init containers come first.
    struct Row {
        const char* name;
        std::vector<Container> init;
        std::vector<Container> app;
        std::vector<std::string> want;  // name:reason[:sidecar], init first
    };
    const std::vector<Row> rows = {
        // not static: CppUTest counts what a test leaves allocated
        {"no init containers: ContainerCreating",
         {},
         {container("a"), container("b")},
         {"a:ContainerCreating", "b:ContainerCreating"}},
        {"init containers: all PodInitializing",
         {container("setup")},
         {container("a")},
         {"setup:PodInitializing", "a:PodInitializing"}},
        {"restartPolicy Always: a sidecar",
         {container("setup", "Never"), container("proxy", "Always")},
         {container("a")},
         {"setup:PodInitializing", "proxy:PodInitializing:sidecar", "a:PodInitializing"}},
    };
    for (const Row& row : rows) {
        LivePod p = pod("u");
        PodSpec spec;
        spec.init_containers = row.init;
        spec.containers = row.app;
        PodTable::add_containers(p, spec);
        std::vector<std::string> got;
        for (std::size_t i = 0; i < p.containers.size(); ++i) {
            const ContainerStatus& cs = p.status(i);
            CHECK_TEXT(cs.state == ContainerState::Waiting, row.name);
            CHECK_EQUAL_TEXT(i < row.init.size(), p.is_init(i), row.name);
            got.push_back(cs.name + ":" + cs.reason + (cs.sidecar ? ":sidecar" : ""));
        }
        CHECK_EQUAL_TEXT(row.init.size(), p.rec.init_containers.size(), row.name);
        CHECK_EQUAL_TEXT(row.app.size(), p.rec.containers.size(), row.name);
        CHECK_TEXT(got == row.want, row.name);
    }
}

TEST(PodTable, ASaveWritesTheRecordToTheStore) {
    LivePod& p = table->add(pod("u", PodPhase::Pending));
    PodSpec spec;
    spec.init_containers = {container("setup")};
    spec.containers = {container("main")};
    PodTable::add_containers(p, spec);
    p.rec.containers[0].restart_count = 3;
    table->save(p);
    CHECK_EQUAL(1, host->saved);
    CHECK_EQUAL(1u, host->rows_when_told);
    auto stored = MUST(host->pod_store().list_pods());
    CHECK_EQUAL(1u, stored.size());
    const PodRecord& back = stored[0];
    CHECK_EQUAL(std::string("u"), back.uid);
    CHECK_EQUAL(std::string("agent-u"), back.name);
    CHECK_EQUAL(std::string("agent"), back.daemonset);
    CHECK(back.phase == PodPhase::Pending);
    CHECK_EQUAL(1u, back.init_containers.size());
    CHECK_EQUAL(std::string("PodInitializing"), back.init_containers[0].reason);
    CHECK_EQUAL(1u, back.containers.size());
    CHECK_EQUAL(std::string("main"), back.containers[0].name);
    CHECK_EQUAL(3, back.containers[0].restart_count);
    // A second save replaces it.
    p.rec.phase = PodPhase::Running;
    table->save(p);
    stored = MUST(host->pod_store().list_pods());
    CHECK_EQUAL(1u, stored.size());
    CHECK(stored[0].phase == PodPhase::Running);
    CHECK_EQUAL(2, host->saved);
}

TEST(PodTable, TheStartDurationIsObservedOnceWhenThePodRuns) {
    // kubelet_pod_start_duration_seconds (the kubelet's PodStartDuration):
    // from the pod's creation to its first save Running, once per pod.
    LivePod& p = table->add(pod("u", PodPhase::Pending));
    p.rec.created_at_ms = clock.wall_ms();
    table->save(p);
    CHECK_EQUAL(std::string("0"), series(host->registry, "_count"));
    clock.advance(2500);
    p.rec.phase = PodPhase::Running;
    table->save(p);
    CHECK_EQUAL(std::string("1"), series(host->registry, "_count"));
    CHECK_EQUAL(std::string("2.5"), series(host->registry, "_sum"));
    CHECK_TRUE(p.start_observed);
    clock.advance(1000);
    table->save(p);
    CHECK_EQUAL(std::string("1"), series(host->registry, "_count"));
    // An adopted pod (start_observed set) is not observed again.
    LivePod& adopted = table->add(pod("v", PodPhase::Running));
    adopted.start_observed = true;
    table->save(adopted);
    CHECK_EQUAL(std::string("1"), series(host->registry, "_count"));
    CHECK_EQUAL(4, host->saved);
}

TEST(PodTable, WithoutMetricsTheStartIsObservedOnceTheyAreThere) {
    // The metrics start after the table (the agent's /metrics is opened
    // later): a save before only writes, and the pod is observed at its
    // next save Running once they are there.
    host->metrics_on = false;
    LivePod& p = table->add(pod("u", PodPhase::Running));
    p.rec.created_at_ms = clock.wall_ms();
    table->save(p);
    CHECK_FALSE(p.start_observed);
    CHECK_EQUAL(1u, MUST(host->pod_store().list_pods()).size());
    host->metrics_on = true;
    table->save(p);
    CHECK_EQUAL(std::string("1"), series(host->registry, "_count"));
}
