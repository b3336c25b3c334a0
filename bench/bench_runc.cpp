// bench_runc: the runc runtime's figures of issue 5, measured on the real
// daemonlet, daemonlet-shim, daemonlet-image and Debian's runc.
//
//   bench_runc [--daemonlet PATH] [--image-tool PATH] [--pods N] [--changes N]
//              [--imports N] [--bare N] [--work-parent DIR] [--keep]
//
// Needs root and runc. It builds the busybox test image
// (tests/data/make_busybox_image.sh) and a bigger one (the same with three
// more layers of 16 MiB of incompressible data), and measures:
// - image import: `daemonlet-image import` into a fresh store, the whole
//   process (verification of every digest and diff_id, unpacking);
// - start: the agent on a fresh state directory with the busybox archive in
//   its import directory, to the first container running (import included);
// - memory of the node stack per pod: the sum of Pss of the agent, every
//   shim and every runc process that stays (the runtime: runc has no
//   daemon; a build that keeps `runc run` in the foreground has one per
//   container), with 1 pod and with N pods; per pod is the difference over
//   N - 1 pods. The containers' own processes are the workload and are not
//   counted; the supervisor per container is the shims' and runc's Pss
//   over N pods, divided by N (conmon's figure in README);
// - bare `runc run --detach` of a bundle like the agent's (a copy of the
//   image's rootfs), to the command's return: what the agent's start adds
//   to runc is the difference;
// - rootfs preparation: `daemonlet-image prepare --overlay` as a process
//   against the agent's in-process mount (overlay_mount.h
//   mount_stored_image), wall and CPU time each;
// - template change to the new container running (p50, p99), with maxSurge
//   1 (the new pod starts before the old one stops).
//
// Every container runs
//   sh -c 'echo $$ > /marks/$(POD_NAME); ...'
// with MARKS mounted at /marks (hostPath), and the bench sees the mark's
// IN_CLOSE_WRITE (inotify, bench_agent's harness). The pods use hostPID so
// that $$ names a host process (bench_agent's marks hold host pids); their
// mount, network, IPC and UTS namespaces, root filesystem (runtime.rootfs
// auto: an overlay where the node can mount one) and cgroup are as
// any pod's.
//
// It prints a Markdown table; docs/figures.md records one run.
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "bench/agent_harness.h"
#include "platform/image/overlay_mount.h"
#include "platform/proc_stat.h"

using namespace daemonlet::bench;
namespace fs = std::filesystem;

namespace {

constexpr Ns kSecond = 1'000'000'000;

struct Options {
    std::string daemonlet = DAEMONLET_PATH;
    std::string image_tool = IMAGE_TOOL_PATH;
    std::string make_image = MAKE_IMAGE_PATH;
    int pods = 10;
    int changes = 50;
    int imports = 10;
    int bare = 20;
    std::string work_parent = "/tmp";
    bool keep = false;
};

// Runs argv (no shell), stdout and stderr to `log`; returns the exit
// status and the wall time in ms.
std::pair<int, double> run_process(const std::vector<std::string>& argv, const std::string& log,
                                   const std::vector<std::string>& env = {}) {
    std::fflush(nullptr);  // else the child's freopen writes our buffered stdout again
    Ns t0 = mono_ns();
    pid_t pid = ::fork();
    if (pid < 0) throw Failure("fork failed");
    if (pid == 0) {
        std::FILE* out = std::freopen(log.c_str(), "a", stdout);
        if (out) ::dup2(STDOUT_FILENO, STDERR_FILENO);
        for (const auto& e : env) ::putenv(const_cast<char*>(e.c_str()));
        std::vector<char*> args;
        for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
        args.push_back(nullptr);
        ::execvp(args[0], args.data());
        ::_exit(127);
    }
    int status = 0;
    ::waitpid(pid, &status, 0);
    return {WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status), ms(mono_ns() - t0)};
}

// CPU time (user + system) in ms of this process (RUSAGE_SELF) or of its
// reaped children (RUSAGE_CHILDREN).
double cpu_ms(int who) {
    rusage u{};
    ::getrusage(who, &u);
    return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) * 1e3 +
           static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e3;
}

std::string comm_of(pid_t pid) {
    std::ifstream f("/proc/" + std::to_string(pid) + "/comm");
    std::string name;
    std::getline(f, name);
    return name;
}

// The parent pid of a process (0 when gone).
pid_t ppid_of(pid_t pid) {
    daemonlet::proc::ProcStat st;
    return daemonlet::proc::read_stat(pid, &st) == 0 ? st.ppid : 0;
}

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
    void settle(int pods);
    struct Stack {
        double pss_kib = 0;
        double rss_kib = 0;
        int processes = 0;
        double supervisor_pss_kib = 0;  // the shims and runc processes only
    };
    Stack stack() const;

    void images();
    void imports();
    void start_and_memory();
    void changes();
    void bare_runc();
    void prepare();
    bool overlay_rootfs() const;  // runtime.rootfs auto chose overlays
    void teardown();
    void cleanup();

    Options o_;
    WorkDir w_;
    std::string busybox_, big_;
    std::unique_ptr<Observer> obs_;
    AgentProcess agent_;
    std::vector<int> generation_;
    std::vector<Row> rows_;
};

std::string Bench::manifest(int i) const {
    const std::string n = ds_name(i);
    // "$$$$" is "$$" once the kubelet's $(VAR) expansion has unescaped it.
    // The shell traps SIGTERM (as PID 1 it would otherwise ignore it) so
    // that an old pod goes at once rather than after its grace period.
    return "apiVersion: apps/v1\nkind: DaemonSet\nmetadata: {name: " + n +
           ", namespace: bench}\nspec:\n  selector: {matchLabels: {app: " + n +
           "}}\n  updateStrategy: {type: RollingUpdate, rollingUpdate: {maxSurge: 1, maxUnavailable: 0}}\n"
           "  template:\n    metadata: {labels: {app: " +
           n +
           "}}\n    spec:\n      hostPID: true\n      terminationGracePeriodSeconds: 5\n"
           "      volumes: [{name: marks, hostPath: {path: " +
           w_.marks +
           "}}]\n      containers:\n"
           "        - name: main\n          image: busybox\n          imagePullPolicy: Never\n"
           "          volumeMounts: [{name: marks, mountPath: /marks}]\n"
           "          command: [/bin/sh, -c, 'trap \"exit 0\" TERM; echo $$$$ > /marks/$(POD_NAME); "
           "while :; do sleep 1 & wait $$!; done']\n"
           "          env:\n"
           "            - {name: POD_NAME, valueFrom: {fieldRef: {fieldPath: metadata.name}}}\n"
           "            - {name: GENERATION, value: \"" +
           std::to_string(generation_[static_cast<std::size_t>(i)]) + "\"}\n";
}

void Bench::settle(int pods) {
    const std::string n = std::to_string(pods);
    const std::string want = n + " DaemonSets, " + n + "/" + n + " pods running";
    obs_->expect("the agent reports every pod running", 60 * kSecond, [&] { return obs_->status() == want; });
}

// The agent, its shims and each shim's child that is runc (`runc run`
// when runc stays; none when the shim ran `runc create` and `runc start`,
// and its child is the container's init).
Bench::Stack Bench::stack() const {
    std::vector<pid_t> pids{agent_.pid()};
    for (auto [shim, start] : live_shims(w_.state)) pids.push_back(shim);
    std::vector<pid_t> shims(pids.begin() + 1, pids.end());
    std::error_code ec;
    for (const auto& e : fs::directory_iterator("/proc", ec)) {
        const std::string name = e.path().filename().string();
        if (name.find_first_not_of("0123456789") != std::string::npos) continue;
        const auto pid = static_cast<pid_t>(std::atol(name.c_str()));
        const pid_t parent = ppid_of(pid);
        for (pid_t s : shims)
            if (parent == s && comm_of(pid) == "runc") pids.push_back(pid);
    }
    Stack st;
    for (pid_t pid : pids) {
        ProcFigures f = proc_figures(pid);
        if (f.pss_kib < 0) continue;
        st.pss_kib += static_cast<double>(f.pss_kib);
        st.rss_kib += static_cast<double>(f.vm_rss_kib);
        if (pid != agent_.pid()) st.supervisor_pss_kib += static_cast<double>(f.pss_kib);
        ++st.processes;
    }
    return st;
}

void Bench::images() {
    w_ = make_work_dir(o_.work_parent, "daemonlet-bench-runc");
    busybox_ = w_.root + "/busybox.tar";
    big_ = w_.root + "/big.tar";
    const std::string log = w_.root + "/images.log";
    if (run_process({o_.make_image, busybox_}, log).first != 0)
        throw Failure("cannot build the busybox image: " + log);
    if (run_process({o_.make_image, big_, "example.com/bench/big:1"}, log, {"EXTRA_LAYERS_MIB=16 16 16"})
            .first != 0)
        throw Failure("cannot build the bigger image: " + log);
}

void Bench::imports() {
    std::fprintf(stderr, "bench_runc: %d imports of each image\n", o_.imports);
    const std::string log = w_.root + "/imports.log";
    for (const auto& [archive, label, count] :
         {std::tuple{busybox_, std::string("busybox"), o_.imports},
          std::tuple{big_, std::string("busybox + 3 x 16 MiB layers"), std::max(3, o_.imports / 3)}}) {
        Row row{"image import, " + label + " (" +
                    fmt(static_cast<double>(fs::file_size(archive)) / 1048576.0, "MiB") +
                    " archive), fresh store",
                {},
                "ms",
                "",
                ""};
        for (int k = 0; k < count; ++k) {
            const std::string store = w_.root + "/store-" + std::to_string(k);
            auto [status, took] = run_process({o_.image_tool, "import", "--store", store, archive}, log);
            if (status != 0) throw Failure("daemonlet-image import " + archive + " failed: " + log);
            row.samples.push_back(took);
            fs::remove_all(store);
        }
        rows_.push_back(row);
    }
}

void Bench::start_and_memory() {
    const std::string import = w_.root + "/import";
    fs::create_directories(import);
    fs::copy_file(busybox_, import + "/busybox.tar");
    std::ofstream(w_.config) << "nodeName: bench-node\nmanifestDir: " << w_.manifests
                             << "\nstateDir: " << w_.state
                             << "\nruntime: {type: runc, imageImportDir: " << import
                             << "}\nfileCheckFrequency: 20s\n";
    obs_ = std::make_unique<Observer>(w_.marks, w_.notify_socket);
    generation_.assign(static_cast<std::size_t>(o_.pods), 1);
    write_then_rename(manifest_path(0), manifest(0));

    std::fprintf(stderr, "bench_runc: start with 1 pod, then %d\n", o_.pods);
    Ns t0 = mono_ns();
    agent_.start(o_.daemonlet, w_.config, w_.notify_socket, w_.agent_log);
    obs_->expect("the first container running", 60 * kSecond,
                 [&] { return obs_->latest().count(ds_name(0)); });
    rows_.push_back({"start, fresh state and store -> the container running (import included)",
                     {},
                     "",
                     "",
                     fmt(ms(obs_->latest().at(ds_name(0)).at - t0), "ms")});
    settle(1);
    const Stack one = stack();

    t0 = mono_ns();
    for (int i = 1; i < o_.pods; ++i) write_then_rename(manifest_path(i), manifest(i));
    obs_->expect("every container running", 120 * kSecond,
                 [&] { return obs_->latest().size() == static_cast<std::size_t>(o_.pods); });
    Ns last = 0;
    for (const auto& [ds, m] : obs_->latest()) last = std::max(last, m.at);
    const std::string more = std::to_string(o_.pods - 1);
    rows_.push_back({more + " DaemonSets written at once -> all " + more + " containers running",
                     {},
                     "",
                     "",
                     fmt(ms(last - t0), "ms")});
    settle(o_.pods);
    const Stack all = stack();

    const std::string n = std::to_string(o_.pods);
    rows_.push_back({"node stack (agent + shims + runc processes), 1 pod: Pss (VmRSS)",
                     {},
                     "",
                     "",
                     fmt(one.pss_kib / 1024.0, "MiB") + " (" + fmt(one.rss_kib / 1024.0, "MiB") + "), " +
                         std::to_string(one.processes) + " processes"});
    rows_.push_back({"node stack, " + n + " pods: Pss (VmRSS)",
                     {},
                     "",
                     "",
                     fmt(all.pss_kib / 1024.0, "MiB") + " (" + fmt(all.rss_kib / 1024.0, "MiB") + "), " +
                         std::to_string(all.processes) + " processes"});
    const double per = static_cast<double>(o_.pods - 1);
    rows_.push_back({"node stack per pod: Pss (VmRSS)",
                     {},
                     "",
                     "",
                     fmt((all.pss_kib - one.pss_kib) / 1024.0 / per, "MiB") + " (" +
                         fmt((all.rss_kib - one.rss_kib) / 1024.0 / per, "MiB") + ")"});
    rows_.push_back({"supervisor per container (shim + runc processes that stay), " + n + " pods: Pss",
                     {},
                     "",
                     "<= 0.3 MiB",
                     fmt(all.supervisor_pss_kib / static_cast<double>(o_.pods), "KiB")});
}

void Bench::bare_runc() {
    // A bundle like a running container's: its config.json, a copied rootfs,
    // a command that writes no mark, a cgroup of its own.
    std::error_code ec;
    std::string source;
    for (const auto& e : fs::directory_iterator(w_.state + "/runtime/bundles", ec))
        if (source.empty()) source = e.path().string();
    if (source.empty()) throw Failure("no bundle to copy for bare runc");
    const std::string bundle = w_.root + "/bare", root = w_.root + "/bare-runc";
    fs::create_directories(bundle);
    if (run_process({o_.image_tool, "prepare", "--store", w_.state + "/images", "--ref", "busybox",
                     "--rootfs", bundle + "/rootfs"},
                    w_.root + "/bare.log")
            .first != 0)
        throw Failure("daemonlet-image prepare for bare runc failed: " + w_.root + "/bare.log");
    auto config = nlohmann::json::parse(std::ifstream(source + "/config.json"));
    config["root"]["path"] = "rootfs";
    config["process"]["args"] = {"/bin/sh", "-c", "exec sleep 1000"};
    config["linux"]["cgroupsPath"] = "/daemonlet-bench-bare";
    std::ofstream(bundle + "/config.json") << config.dump();
    std::fprintf(stderr, "bench_runc: %d bare runc run --detach\n", o_.bare);
    Row row{"bare `runc run --detach` of a like bundle -> returned (container running)", {}, "ms", "", ""};
    for (int k = 0; k < o_.bare; ++k) {
        const std::string id = "bare-" + std::to_string(k);
        auto [status, took] = run_process({"runc", "--root", root, "run", "--detach", "--bundle", bundle, id},
                                          w_.root + "/bare.log");
        run_process({"runc", "--root", root, "delete", "--force", id}, w_.root + "/bare.log");
        if (status != 0) throw Failure("runc run --detach failed: " + w_.root + "/bare.log");
        row.samples.push_back(took);
    }
    rows_.push_back(row);
}

bool Bench::overlay_rootfs() const {
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(w_.state + "/runtime/bundles", ec))
        if (daemonlet::platform::is_mount_point(e.path().string() + "/rootfs")) return true;
    return false;
}

void Bench::prepare() {
    // The agent's store, whose layers have their overlay forms by now.
    const std::string store = w_.state + "/images", dir = w_.root + "/prepare";
    Row process{"rootfs prepare: `daemonlet-image prepare --overlay` process, wall", {}, "ms", "", ""};
    Row process_cpu{"rootfs prepare: `daemonlet-image prepare --overlay` process, CPU", {}, "ms", "", ""};
    Row inproc{"rootfs prepare: in the agent (mount_stored_image), wall", {}, "ms", "", ""};
    Row inproc_cpu{"rootfs prepare: in the agent (mount_stored_image), CPU", {}, "ms", "", ""};
    auto undo = [&] {
        ::umount2((dir + "/rootfs").c_str(), MNT_DETACH);
        fs::remove_all(dir);
    };
    for (int k = 0; k < o_.bare; ++k) {
        fs::create_directories(dir);
        double cpu0 = cpu_ms(RUSAGE_CHILDREN);
        auto [status, took] = run_process({o_.image_tool, "prepare", "--store", store, "--ref", "busybox",
                                           "--rootfs", dir + "/rootfs", "--overlay", dir + "/overlay"},
                                          "/dev/null");
        process_cpu.samples.push_back(cpu_ms(RUSAGE_CHILDREN) - cpu0);
        undo();
        if (status != 0) throw Failure("daemonlet-image prepare --overlay failed");
        process.samples.push_back(took);

        fs::create_directories(dir);
        cpu0 = cpu_ms(RUSAGE_SELF);
        const Ns t0 = mono_ns();
        auto mounted =
            daemonlet::platform::mount_stored_image(store, "busybox", dir + "/rootfs", dir + "/overlay");
        inproc.samples.push_back(ms(mono_ns() - t0));
        inproc_cpu.samples.push_back(cpu_ms(RUSAGE_SELF) - cpu0);
        undo();
        if (!mounted) throw Failure("mount_stored_image: " + mounted.error().message);
    }
    for (Row* r : {&process, &process_cpu, &inproc, &inproc_cpu}) rows_.push_back(*r);
}

void Bench::changes() {
    std::fprintf(stderr, "bench_runc: %d template changes\n", o_.changes);
    Row row{"template change -> new container running (maxSurge 1)", {}, "ms", "", ""};
    for (int c = 0; c < o_.changes; ++c) {
        const int i = c % o_.pods;
        ++generation_[static_cast<std::size_t>(i)];
        const Ns t0 = write_then_rename(manifest_path(i), manifest(i));
        obs_->expect("the changed pod's new container", 30 * kSecond, [&] {
            auto it = obs_->latest().find(ds_name(i));
            return it != obs_->latest().end() && it->second.at >= t0;
        });
        row.samples.push_back(ms(obs_->latest().at(ds_name(i)).at - t0));
        settle(o_.pods);  // the old pod gone before the next change
    }
    rows_.push_back(row);
}

void Bench::teardown() {
    for (int i = 0; i < o_.pods; ++i) fs::remove(manifest_path(i));
    // Until the agent says it has no pod left: the shims go before their
    // containers' removes (runc delete, the rootfs unmounted) are done, and
    // an agent stopped then drops the queued ones, leaving mounts and runc's
    // stopped containers behind.
    obs_->expect("every pod gone", 60 * kSecond, [&] { return no_pods_left(obs_->status()); });
    agent_.stop(SIGTERM, *obs_);
}

void Bench::cleanup() {
    if (w_.root.empty()) return;
    // After a failure, or what the agent left: runc's containers (a
    // SIGKILLed `runc run` leaves its container running), then the root
    // filesystems still mounted, detached, so that the work directory can go.
    const std::string root = w_.state + "/runtime/runc";
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(root, ec))
        run_process({"runc", "--root", root, "delete", "--force", e.path().filename().string()}, "/dev/null");
    unmount_below(w_.root);
    kill_all_and_clean(agent_, w_.state, obs_.get(), w_.root, o_.keep, "bench_runc");
    w_.root.clear();
}

void Bench::run() {
    images();
    imports();
    start_and_memory();
    changes();
    bare_runc();
    if (overlay_rootfs()) prepare();  // the node mounts overlays (runtime.rootfs auto)
    teardown();
}

void Bench::print_table() const {
    std::printf("bench_runc: runtime runc, %d pods, %d changes, %d imports\n", o_.pods, o_.changes,
                o_.imports);
    daemonlet::bench::print_table(rows_);
}

const char* const kUsage =
    "usage: bench_runc [--daemonlet PATH] [--image-tool PATH] [--pods N] [--changes N]\n"
    "                  [--imports N] [--bare N] [--work-parent DIR] [--keep]\n";

}  // namespace

int main(int argc, char** argv) {
    Options o;
    const Flags flags{
        {{"--daemonlet", &o.daemonlet}, {"--image-tool", &o.image_tool}, {"--work-parent", &o.work_parent}},
        {{"--pods", &o.pods}, {"--changes", &o.changes}, {"--imports", &o.imports}, {"--bare", &o.bare}},
        {{"--keep", &o.keep}}};
    if (auto exit = parse_flags(argc, argv, flags, kUsage)) return *exit;
    if (o.pods < 2 || o.pods > 200 || o.changes < 1 || o.imports < 1) {
        std::fputs("bench_runc: --pods 2..200, --changes and --imports at least 1\n", stderr);
        return 2;
    }
    if (::geteuid() != 0) {
        std::fputs("bench_runc: needs root (runc makes namespaces and cgroups)\n", stderr);
        return 2;
    }
    if (std::system("command -v runc >/dev/null") != 0) {
        std::fputs("bench_runc: needs runc (apt-get install runc)\n", stderr);
        return 2;
    }
    Bench bench(o);
    try {
        bench.run();
    } catch (const std::exception& f) {
        bench.print_table();
        std::fprintf(stderr, "bench_runc: FAILED: %s (--keep keeps the work directory and the agent's log)\n",
                     f.what());
        return 1;
    }
    bench.print_table();
    return 0;
}
