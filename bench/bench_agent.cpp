// bench_agent: the agent's figures of issue 3, measured on the real
// daemonlet and daemonlet-shim binaries.
//
//   bench_agent [--daemonlet PATH] [--daemonsets N] [--changes N] [--restarts N]
//               [--idle-seconds N] [--work-parent DIR] [--keep]
//
// It writes a configuration and N DaemonSets into a temporary directory and
// runs `daemonlet run` on them with NOTIFY_SOCKET pointing at a socket it
// listens on. Every container runs
//   sh -c 'echo $$ > MARKS/$(POD_NAME); exec /bin/sleep infinity'
// so the moment a container process runs is the IN_CLOSE_WRITE event of its
// mark file (inotify, no polling), and the pid in the file, which sleep
// keeps, names the process. The latency figures include that shell's start
// (about a millisecond).
//
// Phases, in order: start on a fresh state directory; restarts after SIGTERM
// and after kill -9 (READY=1 with every container pid unchanged: zero
// restarts); template changes cycling through the DaemonSets, first with the
// default RollingUpdate (maxUnavailable 1, maxSurge 0: the old pod stops
// before the new one starts), then with maxSurge 1, maxUnavailable 0 (the
// new one starts first); RSS of the agent and of every shim; an idle window
// (bytes the agent writes, files of the state directory that change); a
// "reboot" (agent, shims and containers killed, the state directory kept)
// and start; then every DaemonSet removed and the agent stopped.
//
// It prints a Markdown table; docs/figures.md records one run.
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "bench/agent_harness.h"
#include "platform/file.h"

using namespace daemonlet::bench;
namespace fs = std::filesystem;

namespace {

constexpr Ns kSecond = 1'000'000'000;

struct Options {
    std::string daemonlet = DAEMONLET_PATH;
    int daemonsets = 50;
    int changes = 100;
    int restarts = 5;
    int idle_seconds = 600;
    std::string work_parent = "/tmp";
    bool keep = false;
};

class Bench {
  public:
    explicit Bench(Options o) : o_(std::move(o)) {}
    Bench(const Bench&) = delete;
    Bench& operator=(const Bench&) = delete;
    ~Bench() { cleanup(); }

    void run();
    void print_table() const;

  private:
    std::string manifest(int i, bool surge) const;
    std::string manifest_path(int i) const { return w_.manifests + "/" + ds_name(i) + ".yaml"; }
    bool all_running_since(Ns since) const;
    std::map<std::string, Mark> current_pods() const;
    std::size_t unchanged(const std::map<std::string, Mark>& before) const;
    std::vector<std::pair<pid_t, std::uint64_t>> shims(std::vector<pid_t>* containers = nullptr) const {
        return live_shims(w_.state, containers);
    }
    void start_agent() { agent_.start(o_.daemonlet, w_.config, w_.notify_socket, w_.agent_log); }
    void settle();
    std::pair<double, double> start_until_all_running(const std::string& what);
    void wait_exits(const std::vector<std::pair<pid_t, std::uint64_t>>& procs, const char* what) {
        obs_->wait_exits(procs, what);
    }

    void setup();
    void fresh_start();
    void restarts(int sig, const char* how);
    void changes(bool surge);
    void memory();
    void idle();
    void reboot();
    void teardown();
    void cleanup();

    Options o_;
    WorkDir w_;
    std::unique_ptr<Observer> obs_;
    AgentProcess agent_;
    std::vector<int> generation_;
    std::vector<Row> rows_;
};

std::string Bench::manifest(int i, bool surge) const {
    const std::string n = ds_name(i);
    std::string s = "apiVersion: apps/v1\nkind: DaemonSet\nmetadata: {name: " + n +
                    ", namespace: bench}\nspec:\n  selector: {matchLabels: {app: " + n + "}}\n";
    if (surge)
        s += "  updateStrategy: {type: RollingUpdate, rollingUpdate: {maxSurge: 1, maxUnavailable: 0}}\n";
    // "$$$$" is "$$" once the kubelet's $(VAR) expansion has unescaped it.
    s += "  template:\n    metadata: {labels: {app: " + n +
         "}}\n    spec:\n      terminationGracePeriodSeconds: 2\n      containers:\n"
         "        - name: main\n          image: none\n"
         "          command: [/bin/sh, -c, 'echo $$$$ > " +
         w_.marks +
         "/$(POD_NAME); exec /bin/sleep infinity']\n"
         "          env:\n"
         "            - {name: POD_NAME, valueFrom: {fieldRef: {fieldPath: metadata.name}}}\n"
         "            - {name: GENERATION, value: \"" +
         std::to_string(generation_[i]) + "\"}\n";
    return s;
}

bool Bench::all_running_since(Ns since) const {
    int n = 0;
    for (const auto& [ds, m] : obs_->latest())
        if (m.at >= since) ++n;
    return n == o_.daemonsets;
}

std::map<std::string, Mark> Bench::current_pods() const { return obs_->latest(); }

// How many of `before`'s containers are the same processes and still the
// newest of their DaemonSet.
std::size_t Bench::unchanged(const std::map<std::string, Mark>& before) const {
    std::size_t same = 0;
    for (const auto& [ds, m] : before) {
        auto it = obs_->latest().find(ds);
        if (it != obs_->latest().end() && it->second.pid == m.pid && same_process(m.pid, m.start_time))
            ++same;
    }
    return same;
}

// The agent has finished what it was doing: its last STATUS= says every
// pod runs and none is stopping (it is sent only when it changes, after the
// reconcile that follows a pod's removal from the store).
void Bench::settle() {
    const std::string n = std::to_string(o_.daemonsets);
    const std::string want = n + " DaemonSets, " + n + "/" + n + " pods running";
    obs_->expect("the agent reports every pod running", 30 * kSecond, [&] { return obs_->status() == want; });
}

void Bench::setup() {
    w_ = make_work_dir(o_.work_parent, "daemonlet-bench");
    // The defaults of dist/config.yaml: a full rescan every 20 s.
    std::ofstream(w_.config) << "nodeName: bench-node\nmanifestDir: " << w_.manifests
                             << "\nstateDir: " << w_.state
                             << "\nruntime: {type: exec}\nfileCheckFrequency: 20s\n"
                                "crashLoopBackoff: {initial: 10s, max: 300s}\n";
    obs_ = std::make_unique<Observer>(w_.marks, w_.notify_socket);
    generation_.assign(static_cast<std::size_t>(o_.daemonsets), 1);
    for (int i = 0; i < o_.daemonsets; ++i) write_then_rename(manifest_path(i), manifest(i, false));
}

// Starts the agent and waits for READY=1 and for every DaemonSet to have a
// container started since; returns both times from the start, in ms.
std::pair<double, double> Bench::start_until_all_running(const std::string& what) {
    obs_->forget_ready();
    Ns t0 = mono_ns();
    start_agent();
    obs_->expect(("READY=1 after " + what).c_str(), 60 * kSecond,
                 [&] { return obs_->ready_at().has_value(); });
    obs_->expect(("every pod running after " + what).c_str(), 60 * kSecond,
                 [&] { return all_running_since(t0); });
    Ns last = 0;
    for (const auto& [ds, m] : obs_->latest()) last = std::max(last, m.at);
    return {ms(*obs_->ready_at() - t0), ms(last - t0)};
}

void Bench::fresh_start() {
    std::fprintf(stderr, "bench_agent: start on a fresh state directory\n");
    auto [ready, all] = start_until_all_running("a fresh start");
    const std::string n = std::to_string(o_.daemonsets);
    rows_.push_back({"start, fresh state -> all " + n + " pods running", {}, "", "", fmt(all, "ms")});
    rows_.push_back({"start, fresh state -> READY=1", {}, "", "", fmt(ready, "ms")});
}

void Bench::restarts(int sig, const char* how) {
    std::fprintf(stderr, "bench_agent: %d restarts after %s\n", o_.restarts, how);
    Row row{std::string("restart after ") + how + " -> READY=1", {}, "ms", "<= 1 s", ""};
    std::size_t kept = 0, total = 0;
    for (int r = 0; r < o_.restarts; ++r) {
        auto before = current_pods();
        agent_.stop(sig, *obs_);
        obs_->forget_ready();
        Ns t0 = mono_ns();
        start_agent();
        obs_->expect("READY=1 after a restart", 60 * kSecond, [&] { return obs_->ready_at().has_value(); });
        row.samples.push_back(ms(*obs_->ready_at() - t0));
        kept += unchanged(before);
        total += before.size();
    }
    row.figure += " (" + std::to_string(total - kept) + " of " + std::to_string(total) + " pods restarted)";
    rows_.push_back(row);
}

void Bench::changes(bool surge) {
    const char* order = surge ? "maxSurge 1, maxUnavailable 0: new started first"
                              : "maxUnavailable 1, maxSurge 0: old stopped first";
    std::fprintf(stderr, "bench_agent: %d template changes, %s\n", o_.changes, order);
    Row started{
        std::string("manifest change -> new process running (") + order + ")", {}, "ms", "p99 <= 100 ms", ""};
    Row gone{std::string("manifest change -> old process gone (") + order + ")", {}, "ms", "", ""};
    int in_order = 0;
    for (int k = 0; k < o_.changes; ++k) {
        const int i = k % o_.daemonsets;
        const std::string name = ds_name(i);
        ++generation_[static_cast<std::size_t>(i)];
        auto r = obs_->replace(
            name, [&] { return write_then_rename(manifest_path(i), manifest(i, surge)); },
            "the new pod runs and the old one is gone after a template change");
        started.samples.push_back(ms(r.started));
        gone.samples.push_back(ms(r.gone));
        if (surge ? r.started < r.gone : r.gone < r.started) ++in_order;
    }
    gone.figure += "; in that order " + std::to_string(in_order) + " of " + std::to_string(o_.changes);
    rows_.push_back(started);
    rows_.push_back(gone);
}

void Bench::memory() {
    settle();
    const std::string n = std::to_string(o_.daemonsets);
    ProcFigures a = proc_figures(agent_.pid());
    rows_.push_back({"agent VmRSS, " + n + " DaemonSets and pods, after the changes",
                     {},
                     "",
                     "<= 8 MiB",
                     fmt(static_cast<double>(a.vm_rss_kib) / 1024.0, "MiB")});
    rows_.push_back(
        {"agent Pss (smaps_rollup)", {}, "", "", fmt(static_cast<double>(a.pss_kib) / 1024.0, "MiB")});
    rows_.push_back({"agent RssAnon (heap, stacks)",
                     {},
                     "",
                     "",
                     fmt(static_cast<double>(a.rss_anon_kib) / 1024.0, "MiB")});
    // A replaced container's shim lingers for the moment it takes to record
    // the exit: wait for those, then count.
    std::vector<pid_t> containers;
    auto live = shims(&containers);
    std::set<pid_t> current;
    for (const auto& [ds, m] : obs_->latest()) current.insert(m.pid);
    std::vector<std::pair<pid_t, std::uint64_t>> leaving;
    for (std::size_t k = 0; k < live.size(); ++k)
        if (!current.count(containers[k])) leaving.push_back(live[k]);
    wait_exits(leaving, "the shim of a replaced container exits");
    live = shims();
    if (static_cast<int>(live.size()) != o_.daemonsets)
        throw Failure(std::to_string(live.size()) + " shims running, expected " + n);
    Row rss{"shim VmRSS, over the " + n + " shims", {}, "KiB", "<= 1 MiB", ""};
    Row pss{"shim Pss, over the " + n + " shims", {}, "KiB", "", ""};
    Row anon{"shim RssAnon, over the " + n + " shims", {}, "KiB", "", ""};
    for (auto [pid, start] : live) {
        ProcFigures f = proc_figures(pid);
        rss.samples.push_back(static_cast<double>(f.vm_rss_kib));
        pss.samples.push_back(static_cast<double>(f.pss_kib));
        anon.samples.push_back(static_cast<double>(f.rss_anon_kib));
    }
    rows_.push_back(rss);
    rows_.push_back(pss);
    rows_.push_back(anon);
}

void Bench::idle() {
    std::fprintf(stderr, "bench_agent: idle for %d s\n", o_.idle_seconds);
    const std::string logs = w_.state + "/runtime/logs";
    const pid_t pid = agent_.pid();
    settle();
    ProcIo io0 = proc_io(pid);
    std::int64_t cpu0 = proc_cpu_ticks(pid);
    auto files0 = file_facts(w_.state, logs);
    auto log0 = fs::file_size(w_.agent_log);
    std::size_t marks0 = obs_->marks().size();
    obs_->wait_until(o_.idle_seconds * kSecond, [] { return false; });
    ProcIo io1 = proc_io(pid);
    std::int64_t cpu1 = proc_cpu_ticks(pid);
    auto files1 = file_facts(w_.state, logs);
    auto log1 = fs::file_size(w_.agent_log);

    std::int64_t grown = 0;
    std::vector<std::string> changed;
    for (const auto& [path, after] : files1) {
        auto it = files0.find(path);
        if (it != files0.end() && it->second.size == after.size && it->second.mtime_ns == after.mtime_ns)
            continue;
        changed.push_back(path.substr(w_.state.size() + 1));
        grown += after.size - (it == files0.end() ? 0 : it->second.size);
    }
    for (const auto& [path, before] : files0)
        if (!files1.count(path)) changed.push_back(path.substr(w_.state.size() + 1) + " (removed)");
    const std::string w = "idle " + std::to_string(o_.idle_seconds) + " s: ";
    rows_.push_back({w + "agent write_bytes (/proc/PID/io, to the block layer)",
                     {},
                     "",
                     "0",
                     std::to_string(io1.write_bytes - io0.write_bytes) + " B"});
    rows_.push_back({w + "agent wchar (every write(2), its own log included)",
                     {},
                     "",
                     "",
                     std::to_string(io1.wchar - io0.wchar) + " B in " +
                         std::to_string(io1.syscw - io0.syscw) + " calls"});
    std::string which;
    for (const auto& c : changed) which += (which.empty() ? ": " : ", ") + c;
    rows_.push_back({w + "state directory files changed (container logs excluded)",
                     {},
                     "",
                     "0",
                     std::to_string(changed.size()) + ", " + std::to_string(grown) + " B" + which});
    rows_.push_back({w + "agent log", {}, "", "", std::to_string(log1 - log0) + " B"});
    rows_.push_back(
        {w + "agent CPU time",
         {},
         "",
         "",
         fmt(static_cast<double>(cpu1 - cpu0) * 1000.0 / static_cast<double>(sysconf(_SC_CLK_TCK)), "ms")});
    rows_.push_back({w + "containers started", {}, "", "0", std::to_string(obs_->marks().size() - marks0)});
}

void Bench::reboot() {
    std::fprintf(stderr, "bench_agent: reboot: agent, shims and containers killed, state kept\n");
    agent_.stop(SIGKILL, *obs_);
    std::vector<std::pair<pid_t, std::uint64_t>> procs = shims();
    for (const auto& [ds, m] : obs_->latest()) procs.emplace_back(m.pid, m.start_time);
    for (auto [pid, start] : procs)
        if (same_process(pid, start)) ::kill(pid, SIGKILL);
    wait_exits(procs, "a killed shim or container exits");
    auto [ready, all] = start_until_all_running("a reboot");
    const std::string what =
        "start with " + std::to_string(o_.daemonsets) + " cached pods whose processes are gone (reboot) -> ";
    rows_.push_back({what + "READY=1", {}, "", "", fmt(ready, "ms")});
    rows_.push_back({what + "all running", {}, "", "<= 1 s", fmt(all, "ms")});
}

// Every DaemonSet removed: the agent stops every pod, then itself.
void Bench::teardown() {
    std::fprintf(stderr, "bench_agent: removing every DaemonSet\n");
    std::vector<std::pair<pid_t, std::uint64_t>> procs;
    for (const auto& [ds, m] : obs_->latest()) procs.emplace_back(m.pid, m.start_time);
    for (int i = 0; i < o_.daemonsets; ++i) fs::remove(manifest_path(i));
    wait_exits(procs, "the agent stops every pod once its DaemonSet is removed");
    agent_.stop(SIGTERM, *obs_);
}

// After a failure: nothing of the bench's may keep running.
void Bench::cleanup() {
    if (w_.root.empty()) return;
    kill_all_and_clean(agent_, w_.state, obs_.get(), w_.root, o_.keep, "bench_agent");
}

void Bench::run() {
    setup();
    fresh_start();
    restarts(SIGTERM, "SIGTERM");
    restarts(SIGKILL, "kill -9");
    changes(false);
    changes(true);
    memory();
    idle();
    reboot();
    teardown();
}

void Bench::print_table() const {
    std::printf("bench_agent: %d DaemonSets, %d changes per strategy, %d restarts each way, idle %d s\n",
                o_.daemonsets, o_.changes, o_.restarts, o_.idle_seconds);
    daemonlet::bench::print_table(rows_);
}

const char* const kUsage =
    "usage: bench_agent [--daemonlet PATH] [--daemonsets N] [--changes N] [--restarts N]\n"
    "                   [--idle-seconds N] [--work-parent DIR] [--keep]\n";

}  // namespace

int main(int argc, char** argv) {
    Options o;
    const Flags flags{{{"--daemonlet", &o.daemonlet}, {"--work-parent", &o.work_parent}},
                      {{"--daemonsets", &o.daemonsets},
                       {"--changes", &o.changes},
                       {"--restarts", &o.restarts},
                       {"--idle-seconds", &o.idle_seconds}},
                      {{"--keep", &o.keep}}};
    if (auto exit = parse_flags(argc, argv, flags, kUsage)) return *exit;
    if (o.daemonsets < 1 || o.daemonsets > 999 || o.changes < 1 || o.restarts < 1 || o.idle_seconds < 0) {
        std::fputs("bench_agent: --daemonsets 1..999, --changes and --restarts at least 1\n", stderr);
        return 2;
    }
    Bench bench(o);
    try {
        bench.run();
    } catch (const std::exception& f) {  // a Failure, or /proc or the filesystem failing under us
        bench.print_table();
        std::fprintf(stderr,
                     "bench_agent: FAILED: %s (see the agent's log in the work directory; --keep keeps it)\n",
                     f.what());
        return 1;
    }
    bench.print_table();
    return 0;
}
