// bench_stall: how long the agent's loop is held at once (issue 12 §2, "a
// loop that never blocks"), measured on the real daemonlet.
//
//   bench_stall [--daemonlet PATH] [--runtime exec|runc|cri] [--endpoint unix:///SOCK]
//               [--pods N] [--watchdog-ms N] [--fsync-delay-ms N] [--sqlite-sync-delay-ms N]
//               [--undos N] [--wait-s N] [--work-parent DIR] [--keep]
//
// The agent runs with WATCHDOG_USEC = 2 x --watchdog-ms, so that its loop
// pings WATCHDOG=1 every --watchdog-ms on NOTIFY_SOCKET, where the bench
// timestamps each one: the largest gap between two pings, less the period,
// is the longest the loop was held. Every container writes its mark (its
// pid, bench_agent's harness) when it runs.
//
// Phases: (1) N DaemonSets written at once into the directory of a running
// agent: the largest ping gap until every pod runs, and the time to the
// last container; the agent's VmRSS then. (2) a "reboot": the agent, every
// shim and container killed, the state directory kept; the agent started
// again: time to its first ping, to READY, and to every container running
// again (each restarts: its shim is gone), and the largest ping gap.
//
// runc needs root, runc and the busybox test image
// (tests/data/make_busybox_image.sh), imported from the import directory;
// cri a containerd with busybox:latest and the pause image imported:
// bench/bench_stall_cri.sh starts one as tests/agent/test_cri.sh does.
// --fsync-delay-ms N: a slow disk (issue 15 §3, an SD card whose flush
// takes hundreds of milliseconds): the agent and its shims run under
// bench/slow_fsync.c, which adds N ms to every fsync and fdatasync; the
// table then also counts the flushes made on the agent's loop thread in
// each phase (each holds the loop N ms).
// --sqlite-sync-delay-ms N: the same for SQLite's flushes only: the agent
// runs under bench/slow_vfs.c, a VFS shim over SQLite's unix VFS whose
// xSync of the database or -wal takes N ms longer; the table counts the
// syncs the shim saw on the loop thread and on the others (the store's
// worker) per phase. With either delay, two more phases run after the cold
// start: (1b) every DaemonSet's template changed at once (a rollout: new
// revisions, every pod replaced), the largest ping gap until every new pod
// runs; (1c) --undos N (default 10) `daemonlet rollout undo` of as many
// DaemonSets, one after the other (the answer waits for the rollback to be
// on the disk): the largest ping gap and each answer's time.
//
// --wait-s N (default 180): how long each phase waits for every
// container. When they do not all run by then (a CRI endpoint so slow that
// the agent's calls time out: bench_stall_cri.sh --slow-ms), the phase
// still gives the longest stall over those N seconds and how many ran, and
// the reboot is skipped.
//
// It prints a Markdown table.
#include <fcntl.h>
#include <spawn.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "bench/agent_harness.h"

using namespace daemonlet::bench;
namespace fs = std::filesystem;

namespace {

constexpr Ns kSecond = 1'000'000'000;

struct Options {
    std::string daemonlet = DAEMONLET_PATH;
    std::string make_image = MAKE_IMAGE_PATH;
    std::string runtime = "exec";
    std::string endpoint;  // cri: a containerd started by bench_stall_cri.sh, its images imported
    int pods = 50;
    int watchdog_ms = 20;
    int fsync_delay_ms = 0;
    int sqlite_sync_delay_ms = -1;  // -1: no VFS shim
    int undos = 10;
    int wait_s = 180;
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
    std::string manifest(int i) const;
    std::string manifest_path(int i) const { return w_.manifests + "/" + ds_name(i) + ".yaml"; }
    bool all_running() const {
        const std::string n = std::to_string(o_.pods);
        return obs_->status() == n + " DaemonSets, " + n + "/" + n + " pods running";
    }
    // The largest gap between pings from `from` on, less the period.
    double stall_ms(Ns from) const;
    // A phase whose pods did not all run within --wait-s: its longest stall
    // since `from` and how many ran, as two rows.
    void not_all_ran(const std::string& stall_what, Ns from, const std::string& running_what,
                     std::size_t running);
    void setup();
    void cold_start();
    void roll();
    void undo();
    void reboot();
    bool slow_disk() const { return o_.fsync_delay_ms > 0 || o_.sqlite_sync_delay_ms >= 0; }
    void cleanup();
    // The flushes bench/slow_fsync.c saw on the agent's loop thread (its
    // main thread: tid == pid) since the last call.
    int loop_flushes();
    // With --fsync-delay-ms: a row of loop_flushes() for the phase.
    void add_flush_row(const std::string& phase);
    // bench/slow_vfs.c's syncs since the last call: on the loop thread, on others.
    std::pair<int, int> sqlite_syncs();

    Options o_;
    bool all_started_ = false;  // the cold start saw every container run
    std::size_t flush_lines_seen_ = 0;
    std::size_t sync_lines_seen_ = 0;
    WorkDir w_;
    std::unique_ptr<Observer> obs_;
    AgentProcess agent_;
    std::vector<Row> rows_;
};

std::string Bench::manifest(int i) const {
    const std::string n = ds_name(i);
    std::string head = "apiVersion: apps/v1\nkind: DaemonSet\nmetadata: {name: " + n +
                       ", namespace: bench}\nspec:\n  selector: {matchLabels: {app: " + n +
                       "}}\n  template:\n    metadata: {labels: {app: " + n +
                       "}}\n    spec:\n      terminationGracePeriodSeconds: 2\n";
    const std::string env =
        "          env: [{name: POD_NAME, valueFrom: {fieldRef: {fieldPath: metadata.name}}}]\n";
    if (o_.runtime == "runc" || o_.runtime == "cri")
        return head + (o_.runtime == "cri" ? "      hostNetwork: true\n" : "") +
               "      hostPID: true\n      volumes: [{name: marks, hostPath: {path: " + w_.marks +
               "}}]\n      containers:\n        - name: main\n          image: " +
               (o_.runtime == "cri" ? "busybox:latest" : "busybox") +
               "\n"
               "          imagePullPolicy: Never\n          volumeMounts: [{name: marks, mountPath: "
               "/marks}]\n"
               "          command: [/bin/sh, -c, 'trap \"exit 0\" TERM; echo $$$$ > /marks/$(POD_NAME); "
               "while :; do sleep 1 & wait $$!; done']\n" +
               env;
    return head +
           "      containers:\n        - name: main\n          image: none\n          command: [/bin/sh, -c, "
           "'echo $$$$ > " +
           w_.marks + "/$(POD_NAME); exec /bin/sleep infinity']\n" + env;
}

double Bench::stall_ms(Ns from) const {
    Ns last = from, gap = 0;
    for (Ns at : obs_->pings()) {
        if (at < from) continue;
        gap = std::max(gap, at - last);
        last = at;
    }
    gap = std::max(gap, mono_ns() - last);
    return std::max(0.0, ms(gap) - o_.watchdog_ms);
}

void Bench::setup() {
    w_ = make_work_dir(o_.work_parent, "daemonlet-bench-stall");
    std::ofstream config(w_.config);
    config << "nodeName: bench-node\nmanifestDir: " << w_.manifests << "\nstateDir: " << w_.state
           << "\nfileCheckFrequency: 20s\n";
    if (o_.runtime == "runc") {
        const std::string import = w_.root + "/import";
        fs::create_directories(import);
        const std::string cmd =
            o_.make_image + " " + import + "/busybox.tar > " + w_.root + "/image.log 2>&1";
        if (std::system(cmd.c_str()) != 0)
            throw Failure("cannot build the busybox image: " + w_.root + "/image.log");
        config << "runtime: {type: runc, imageImportDir: " << import << "}\n";
    } else if (o_.runtime == "cri") {
        config << "runtime: {type: cri, endpoint: \"" << o_.endpoint << "\"}\n";
    }
    config.close();
    obs_ = std::make_unique<Observer>(w_.marks, w_.notify_socket);
    std::string preload;
    if (o_.fsync_delay_ms > 0) {
        preload = SLOW_FSYNC_PATH;
        ::setenv("SLOW_FSYNC_MS", std::to_string(o_.fsync_delay_ms).c_str(), 1);
        ::setenv("SLOW_FSYNC_LOG", (w_.root + "/fsync.log").c_str(), 1);
    }
    if (o_.sqlite_sync_delay_ms >= 0) {
        preload += (preload.empty() ? "" : ":") + std::string(SLOW_VFS_PATH);
        ::setenv("SLOW_VFS_SYNC_MS", std::to_string(o_.sqlite_sync_delay_ms).c_str(), 1);
        ::setenv("SLOW_VFS_LOG", (w_.root + "/sync.log").c_str(), 1);
    }
    if (!preload.empty()) ::setenv("LD_PRELOAD", preload.c_str(), 1);
    // sd_watchdog_enabled: WATCHDOG_USEC without WATCHDOG_PID is for whoever reads it.
    ::setenv("WATCHDOG_USEC", std::to_string(o_.watchdog_ms * 2000).c_str(), 1);
    ::unsetenv("WATCHDOG_PID");
}

void Bench::not_all_ran(const std::string& stall_what, Ns from, const std::string& running_what,
                        std::size_t running) {
    const std::string wait = std::to_string(o_.wait_s) + " s";
    rows_.push_back(
        {stall_what + " in " + wait + " (not all ran)", {}, "", "<= 50 ms", fmt(stall_ms(from), "ms")});
    rows_.push_back({running_what + " after " + wait,
                     {},
                     "",
                     "",
                     std::to_string(running) + " of " + std::to_string(o_.pods)});
}

void Bench::cold_start() {
    std::fprintf(stderr, "bench_stall: %d DaemonSets into a running agent (%s)\n", o_.pods,
                 o_.runtime.c_str());
    const Ns started = mono_ns();
    agent_.start(o_.daemonlet, w_.config, w_.notify_socket, w_.agent_log);
    obs_->expect("READY=1", 60 * kSecond, [&] { return obs_->ready_at().has_value(); });
    if (slow_disk()) {
        rows_.push_back({"first start (the database created) -> READY=1",
                         {},
                         "",
                         "",
                         fmt(ms(*obs_->ready_at() - started), "ms")});
        add_flush_row("from the first start to READY=1");
    }
    if (o_.runtime == "runc")  // the image imported before the pods come
        obs_->expect("a quiet agent", 10 * kSecond, [&] { return obs_->pings().size() > 20; });
    obs_->forget_pings();
    (void)loop_flushes();  // since READY=1: not this phase's
    (void)sqlite_syncs();
    const Ns t0 = mono_ns();
    for (int i = 0; i < o_.pods; ++i) write_then_rename(manifest_path(i), manifest(i));
    const std::string n = std::to_string(o_.pods);
    if (!obs_->wait_until(o_.wait_s * kSecond,
                          [&] { return obs_->latest().size() == static_cast<std::size_t>(o_.pods); })) {
        not_all_ran(n + " DaemonSets written at once -> longest loop stall", t0, "containers running",
                    obs_->latest().size());
        return;
    }
    all_started_ = true;
    Ns last = 0;
    for (const auto& [ds, m] : obs_->latest()) last = std::max(last, m.at);
    obs_->expect("the agent reports every pod running", 60 * kSecond, [&] { return all_running(); });
    rows_.push_back({n + " DaemonSets written at once -> longest loop stall until all run",
                     {},
                     "",
                     "<= 50 ms",
                     fmt(stall_ms(t0), "ms")});
    rows_.push_back({n + " DaemonSets written at once -> all " + n + " containers running",
                     {},
                     "",
                     "",
                     fmt(ms(last - t0), "ms")});
    rows_.push_back({"agent VmRSS with " + n + " pods",
                     {},
                     "",
                     "",
                     fmt(static_cast<double>(proc_figures(agent_.pid()).vm_rss_kib) / 1024.0, "MiB")});
    add_flush_row("until all run");
}

void Bench::roll() {
    std::fprintf(stderr, "bench_stall: every template changed at once\n");
    obs_->forget_pings();
    (void)loop_flushes();
    (void)sqlite_syncs();
    const Ns t0 = mono_ns();
    for (int i = 0; i < o_.pods; ++i) {
        std::string m = manifest(i);
        m += "            - {name: ROLLED, value: \"1\"}\n";  // one more env var: a new template
        const std::string env_line =
            "          env: [{name: POD_NAME, valueFrom: {fieldRef: {fieldPath: metadata.name}}}]\n";
        const auto at = m.find(env_line);
        if (at == std::string::npos) throw Failure("the manifest has no env line to change");
        m.replace(at, env_line.size(),
                  "          env:\n            - {name: POD_NAME, valueFrom: {fieldRef: {fieldPath: "
                  "metadata.name}}}\n");
        write_then_rename(manifest_path(i), m);
    }
    const std::string n = std::to_string(o_.pods);
    const auto all_new = [&] {
        if (obs_->latest().size() != static_cast<std::size_t>(o_.pods)) return false;
        for (const auto& [ds, m] : obs_->latest())
            if (m.at < t0) return false;
        return all_running();
    };
    if (!obs_->wait_until(o_.wait_s * kSecond, all_new)) throw Failure("the rollout did not finish");
    rows_.push_back({n + " templates changed at once -> longest loop stall until every new pod runs",
                     {},
                     "",
                     "<= 50 ms",
                     fmt(stall_ms(t0), "ms")});
    add_flush_row("during the rollout");
}

void Bench::undo() {
    const int undos = std::min(o_.undos, o_.pods);
    if (undos <= 0) return;
    std::fprintf(stderr, "bench_stall: %d rollout undos\n", undos);
    obs_->forget_pings();
    (void)loop_flushes();
    (void)sqlite_syncs();
    const Ns t0 = mono_ns();
    std::vector<double> answers;
    std::vector<Ns> asked_at;
    for (int i = 0; i < undos; ++i) {
        const std::string out = w_.root + "/undo.out";
        std::vector<std::string> args = {o_.daemonlet, "rollout", "undo",     "ds/" + ds_name(i),
                                         "-n",         "bench",   "--config", w_.config};
        std::vector<char*> argv;
        for (auto& a : args) argv.push_back(a.data());
        argv.push_back(nullptr);
        posix_spawn_file_actions_t fa;
        posix_spawn_file_actions_init(&fa);
        posix_spawn_file_actions_addopen(&fa, 1, out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        posix_spawn_file_actions_adddup2(&fa, 1, 2);
        pid_t pid = -1;
        const Ns asked = mono_ns();
        const int err = posix_spawn(&pid, o_.daemonlet.c_str(), &fa, nullptr, argv.data(), environ);
        posix_spawn_file_actions_destroy(&fa);
        if (err != 0) throw Failure("cannot run daemonlet rollout undo");
        const int pidfd = open_pidfd(pid);
        bool exited = false;
        // The observer reads the pings all along: the CLI is waited on through its pidfd.
        obs_->expect(
            "rollout undo's answer", 60 * kSecond, [&] { return exited; }, pidfd, &exited);
        const Ns answered = mono_ns();
        ::close(pidfd);
        int status = 0;
        ::waitpid(pid, &status, 0);
        std::ifstream in(out);
        std::string line;
        std::getline(in, line);
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || line.find(" rolled back") == std::string::npos)
            throw Failure("rollout undo of " + ds_name(i) + " failed: " + line);
        answers.push_back(ms(answered - asked));
        asked_at.push_back(asked);
    }
    const std::string n = std::to_string(undos);
    rows_.push_back({n + " rollout undos, one after the other -> longest loop stall",
                     {},
                     "",
                     "<= 50 ms",
                     fmt(stall_ms(t0), "ms")});
    rows_.push_back({"rollout undo -> its answer (the CLI's run)", answers, "ms", "", ""});
    add_flush_row("during the undos");
    // Each undo replaces its pod: the reboot comes once they all run, so
    // that it does not find a shim too young to have its state recorded.
    obs_->expect("the undone DaemonSets' new pods", 60 * kSecond, [&] {
        for (int i = 0; i < undos; ++i) {
            auto it = obs_->latest().find(ds_name(i));
            if (it == obs_->latest().end() || it->second.at < asked_at[static_cast<std::size_t>(i)])
                return false;
        }
        return all_running();
    });
}

void Bench::reboot() {
    std::fprintf(stderr, "bench_stall: reboot with %d cached pods\n", o_.pods);
    agent_.stop(SIGKILL, *obs_);
    for (auto [pid, start] : live_shims(w_.state)) ::kill(pid, SIGKILL);
    std::vector<std::pair<pid_t, std::uint64_t>> gone;
    for (const auto& [ds, m] : obs_->latest()) {
        if (same_process(m.pid, m.start_time)) ::kill(m.pid, SIGKILL);
        gone.emplace_back(m.pid, m.start_time);
    }
    obs_->wait_exits(gone, "the containers killed");
    if (o_.runtime == "runc") {
        // What a reboot leaves of runc's state: nothing running.
        const std::string root = w_.state + "/runtime/runc";
        std::error_code ec;
        for (const auto& e : fs::directory_iterator(root, ec))
            std::system(("runc --root " + root + " delete --force " + e.path().filename().string() +
                         " >/dev/null 2>&1")
                            .c_str());
    }
    obs_->forget_ready();
    obs_->forget_pings();
    const std::size_t marks_before = obs_->marks().size();
    (void)loop_flushes();
    (void)sqlite_syncs();
    const Ns t0 = mono_ns();
    agent_.start(o_.daemonlet, w_.config, w_.notify_socket, w_.agent_log);
    const std::string n = std::to_string(o_.pods);
    if (!obs_->wait_until(o_.wait_s * kSecond, [&] {
            return obs_->marks().size() >= marks_before + static_cast<std::size_t>(o_.pods);
        })) {
        // The first ping comes after adopt_all, which is on the loop.
        const Ns first = obs_->pings().empty() ? mono_ns() : obs_->pings().front();
        rows_.push_back({"boot with " + n + " cached pods -> first watchdog ping" +
                             (obs_->pings().empty() ? " (none yet)" : ""),
                         {},
                         "",
                         "",
                         fmt(ms(first - t0), "ms")});
        not_all_ran("boot -> longest loop stall after the first ping", first, "containers running again",
                    obs_->marks().size() - marks_before);
        return;
    }
    Ns last = 0;
    for (std::size_t i = marks_before; i < obs_->marks().size(); ++i)
        last = std::max(last, obs_->marks()[i].at);
    obs_->expect("READY=1", 60 * kSecond, [&] { return obs_->ready_at().has_value(); });
    obs_->expect("the agent reports every pod running", 60 * kSecond, [&] { return all_running(); });
    const Ns first = obs_->pings().empty() ? mono_ns() : obs_->pings().front();
    rows_.push_back(
        {"boot with " + n + " cached pods -> first watchdog ping", {}, "", "", fmt(ms(first - t0), "ms")});
    rows_.push_back(
        {"boot with " + n + " cached pods -> READY=1", {}, "", "", fmt(ms(*obs_->ready_at() - t0), "ms")});
    rows_.push_back({"boot with " + n + " cached pods -> all " + n + " containers running",
                     {},
                     "",
                     "<= 2 s (runc)",
                     fmt(ms(last - t0), "ms")});
    rows_.push_back(
        {"boot -> longest loop stall after the first ping", {}, "", "<= 50 ms", fmt(stall_ms(first), "ms")});
    add_flush_row("from the boot to all running");
}

int Bench::loop_flushes() {
    std::ifstream in(w_.root + "/fsync.log");
    std::string line;
    std::size_t n = 0;
    int on_loop = 0;
    const long pid = agent_.pid();
    while (std::getline(in, line)) {
        if (n++ < flush_lines_seen_) continue;
        long p = 0, t = 0;
        if (std::sscanf(line.c_str(), "%ld %ld", &p, &t) == 2 && p == pid && t == pid) ++on_loop;
    }
    flush_lines_seen_ = n;
    return on_loop;
}

std::pair<int, int> Bench::sqlite_syncs() {
    std::ifstream in(w_.root + "/sync.log");
    std::string line;
    std::size_t n = 0;
    int on_loop = 0, others = 0;
    const long pid = agent_.pid();
    while (std::getline(in, line)) {
        if (n++ < sync_lines_seen_) continue;
        long p = 0, t = 0;
        if (std::sscanf(line.c_str(), "%ld %ld", &p, &t) != 2 || p != pid) continue;
        ++(t == pid ? on_loop : others);
    }
    sync_lines_seen_ = n;
    return {on_loop, others};
}

void Bench::add_flush_row(const std::string& phase) {
    if (o_.sqlite_sync_delay_ms >= 0) {
        const auto [on_loop, others] = sqlite_syncs();
        rows_.push_back({"SQLite syncs " + phase + ": on the loop thread / on the store's worker (each +" +
                             std::to_string(o_.sqlite_sync_delay_ms) + " ms)",
                         {},
                         "",
                         "",
                         std::to_string(on_loop) + " / " + std::to_string(others)});
    }
    if (o_.fsync_delay_ms <= 0) return;
    rows_.push_back(
        {"flushes on the loop thread " + phase + " (each +" + std::to_string(o_.fsync_delay_ms) + " ms)",
         {},
         "",
         "",
         std::to_string(loop_flushes())});
}

void Bench::cleanup() {
    if (w_.root.empty()) return;
    if (agent_.running() && obs_) {
        // The agent removes its pods (runc: bundles unmounted, runc's state
        // deleted) before it stops.
        for (int i = 0; i < o_.pods; ++i) fs::remove(manifest_path(i));
        if (obs_->wait_until(60 * kSecond, [&] { return no_pods_left(obs_->status()); }))
            agent_.stop(SIGTERM, *obs_);
    }
    // What a killed agent left mounted (runc root filesystems) goes first,
    // detached, so that the work directory can go.
    unmount_below(w_.root);
    kill_all_and_clean(agent_, w_.state, obs_.get(), w_.root, o_.keep, "bench_stall");
    w_.root.clear();
}

void Bench::run() {
    setup();
    cold_start();
    if (all_started_ && slow_disk()) {
        roll();
        undo();
    }
    if (all_started_) reboot();
}

void Bench::print_table() const {
    std::printf("bench_stall: runtime %s, %d pods, watchdog ping every %d ms", o_.runtime.c_str(), o_.pods,
                o_.watchdog_ms);
    if (o_.fsync_delay_ms > 0) std::printf(", fsync and fdatasync delayed %d ms", o_.fsync_delay_ms);
    if (o_.sqlite_sync_delay_ms >= 0) std::printf(", SQLite's syncs delayed %d ms", o_.sqlite_sync_delay_ms);
    std::printf("\n");
    daemonlet::bench::print_table(rows_);
}

const char* const kUsage =
    "usage: bench_stall [--daemonlet PATH] [--runtime exec|runc|cri] [--endpoint unix:///SOCK] [--pods N]\n"
    "                   [--watchdog-ms N] [--fsync-delay-ms N] [--sqlite-sync-delay-ms N] [--undos N]\n"
    "                   [--wait-s N] [--work-parent DIR] [--keep]\n";

}  // namespace

int main(int argc, char** argv) {
    Options o;
    const Flags flags{{{"--daemonlet", &o.daemonlet},
                       {"--runtime", &o.runtime},
                       {"--endpoint", &o.endpoint},
                       {"--work-parent", &o.work_parent}},
                      {{"--pods", &o.pods},
                       {"--watchdog-ms", &o.watchdog_ms},
                       {"--fsync-delay-ms", &o.fsync_delay_ms},
                       {"--sqlite-sync-delay-ms", &o.sqlite_sync_delay_ms},
                       {"--undos", &o.undos},
                       {"--wait-s", &o.wait_s}},
                      {{"--keep", &o.keep}}};
    if (auto exit = parse_flags(argc, argv, flags, kUsage)) return *exit;
    if (o.pods < 1 || o.pods > 200 || o.watchdog_ms < 1 || o.fsync_delay_ms < 0 || o.wait_s < 1 ||
        (o.runtime != "exec" && o.runtime != "runc" && o.runtime != "cri") ||
        (o.runtime == "cri" && o.endpoint.empty())) {
        std::fputs(kUsage, stderr);
        return 2;
    }
    if (o.runtime == "runc" && (::geteuid() != 0 || std::system("command -v runc >/dev/null") != 0)) {
        std::fputs("bench_stall: --runtime runc needs root and runc\n", stderr);
        return 2;
    }
    Bench bench(o);
    try {
        bench.run();
    } catch (const std::exception& f) {
        bench.print_table();
        std::fprintf(stderr,
                     "bench_stall: FAILED: %s (--keep keeps the work directory and the agent's log)\n",
                     f.what());
        return 1;
    }
    bench.print_table();
    return 0;
}
