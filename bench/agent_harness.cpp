#include "bench/agent_harness.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/inotify.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "platform/file.h"
#include "platform/proc_stat.h"

extern char** environ;

namespace daemonlet::bench {
namespace {

namespace fs = std::filesystem;

std::string errno_text(const std::string& what) { return what + ": " + std::strerror(errno); }

// The "Key:   123 kB" line of a /proc file, in KiB; -1 when absent.
std::int64_t kib_field(const std::string& path, const std::string& key) {
    std::ifstream in(path);
    std::string line;
    while (std::getline(in, line))
        if (line.compare(0, key.size(), key) == 0) return std::stoll(line.substr(key.size()));
    return -1;
}

}  // namespace

Ns mono_ns() {
    timespec ts{};
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<Ns>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

Ns write_then_rename(const std::string& path, const std::string& text) {
    std::string tmp = path + ".tmp";
    int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) throw Failure(errno_text(tmp));
    bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
    ::close(fd);
    if (!ok) throw Failure(errno_text(tmp));
    Ns t = mono_ns();
    if (::rename(tmp.c_str(), path.c_str()) != 0) throw Failure(errno_text("rename to " + path));
    return t;
}

Observer::Observer(std::string marks_dir, const std::string& notify_socket)
    : marks_dir_(std::move(marks_dir)) {
    inotify_fd_ = ::inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    if (inotify_fd_ < 0 || ::inotify_add_watch(inotify_fd_, marks_dir_.c_str(), IN_CLOSE_WRITE) < 0)
        throw Failure(errno_text("inotify on " + marks_dir_));
    notify_fd_ = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    if (notify_socket.size() >= sizeof addr.sun_path) throw Failure(notify_socket + ": path too long");
    std::strncpy(addr.sun_path, notify_socket.c_str(), sizeof addr.sun_path - 1);
    ::unlink(notify_socket.c_str());
    if (notify_fd_ < 0 || ::bind(notify_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0)
        throw Failure(errno_text("bind " + notify_socket));
}

Observer::~Observer() {
    if (inotify_fd_ >= 0) ::close(inotify_fd_);
    if (notify_fd_ >= 0) ::close(notify_fd_);
}

void Observer::read_marks() {
    alignas(inotify_event) char buf[16 * 1024];
    for (;;) {
        ssize_t n = ::read(inotify_fd_, buf, sizeof buf);
        if (n <= 0) return;
        Ns at = mono_ns();
        for (ssize_t off = 0; off < n;) {
            auto* ev = reinterpret_cast<inotify_event*>(buf + off);
            off += static_cast<ssize_t>(sizeof(inotify_event) + ev->len);
            if (ev->len == 0 || (ev->mask & IN_CLOSE_WRITE) == 0) continue;
            Mark m;
            m.pod = ev->name;
            m.at = at;
            auto text = platform::read_file(marks_dir_ + "/" + m.pod, 64);
            if (!text.ok()) continue;
            m.pid = static_cast<pid_t>(std::atol(text.value().c_str()));
            if (m.pid <= 0) continue;  // closed before the shell wrote the pid
            m.start_time = start_time_of(m.pid);
            marks_.push_back(m);
            latest_[m.pod.substr(0, m.pod.rfind('-'))] = m;
        }
    }
}

void Observer::read_notify() {
    char buf[4096];
    for (;;) {
        ssize_t n = ::recv(notify_fd_, buf, sizeof buf, 0);
        if (n < 0) return;
        ++notify_count_;
        std::string msg(buf, static_cast<std::size_t>(n));
        if (msg == "WATCHDOG=1") pings_.push_back(mono_ns());
        if (!ready_at_ && (msg.rfind("READY=1", 0) == 0 || msg.find("\nREADY=1") != std::string::npos))
            ready_at_ = mono_ns();
        auto at = msg.find("STATUS=");
        if (at != std::string::npos) status_ = msg.substr(at + 7, msg.find('\n', at) - (at + 7));
    }
}

bool Observer::wait_until(Ns timeout, const std::function<bool()>& done, int extra_fd, bool* extra_ready) {
    const Ns deadline = mono_ns() + timeout;
    for (;;) {
        read_marks();
        read_notify();
        if (done()) return true;
        Ns left = deadline - mono_ns();
        if (left <= 0) return false;
        pollfd p[3] = {{inotify_fd_, POLLIN, 0}, {notify_fd_, POLLIN, 0}, {extra_fd, POLLIN, 0}};
        nfds_t count = extra_fd >= 0 && !(extra_ready && *extra_ready) ? 3 : 2;
        int r = ::poll(p, count, static_cast<int>(std::min<Ns>(left / 1'000'000 + 1, 60'000)));
        if (r < 0 && errno != EINTR) throw Failure(errno_text("poll"));
        if (count == 3 && (p[2].revents & (POLLIN | POLLHUP | POLLERR)) && extra_ready) *extra_ready = true;
    }
}

Observer::Replaced Observer::replace(const std::string& ds, const std::function<Ns()>& change,
                                     const char* what) {
    const Mark old = latest_.at(ds);
    int fd = open_pidfd(old.pid);
    bool old_gone = fd < 0 || !same_process(old.pid, old.start_time);
    if (old_gone) {
        if (fd >= 0) ::close(fd);
        throw Failure(ds + ": its container (pid " + std::to_string(old.pid) + ") is not running");
    }
    Replaced r;
    const Ns t0 = change();
    bool ok = wait_until(
        30'000'000'000,
        [&] {
            const Mark& now = latest_.at(ds);
            if (!r.started && now.pid != old.pid) r.started = now.at;
            if (old_gone && !r.gone) r.gone = mono_ns();
            return r.started && r.gone;
        },
        fd, &old_gone);
    ::close(fd);
    if (!ok) throw Failure(std::string(what) + ": not within 30 s");
    r.started -= t0;
    r.gone -= t0;
    return r;
}

void Observer::wait_exits(const std::vector<std::pair<pid_t, std::uint64_t>>& procs, const char* what) {
    for (auto [pid, start] : procs) {
        int fd = open_pidfd(pid);
        if (fd < 0) continue;  // already gone
        bool gone = !same_process(pid, start);
        bool ok = wait_until(
            30'000'000'000, [&] { return gone; }, fd, &gone);
        ::close(fd);
        if (!ok) throw Failure(std::string(what) + ": not within 30 s");
    }
}

void Observer::expect(const char* what, Ns timeout, const std::function<bool()>& done, int extra_fd,
                      bool* extra_ready) {
    if (!wait_until(timeout, done, extra_fd, extra_ready))
        throw Failure(std::string(what) + ": not within " + std::to_string(timeout / 1'000'000'000) + " s");
}

AgentProcess::~AgentProcess() {
    if (pid_ > 0) {
        ::kill(pid_, SIGKILL);
        ::waitpid(pid_, nullptr, 0);
    }
    if (pidfd_ >= 0) ::close(pidfd_);
}

void AgentProcess::start(const std::string& daemonlet, const std::string& config,
                         const std::string& notify_socket, const std::string& log) {
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 1, log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    posix_spawn_file_actions_adddup2(&fa, 1, 2);
    std::vector<std::string> args = {daemonlet, "run", "--config", config};
    std::vector<std::string> envs = {"NOTIFY_SOCKET=" + notify_socket, "PATH=/usr/sbin:/usr/bin:/sbin:/bin"};
    // A watchdog as systemd's WatchdogSec gives it (bench_stall).
    if (const char* w = std::getenv("WATCHDOG_USEC")) envs.push_back(std::string("WATCHDOG_USEC=") + w);
    // A slow disk (bench_stall --fsync-delay-ms, --sqlite-sync-delay-ms):
    // bench/slow_fsync.c, bench/slow_vfs.c.
    for (const char* name :
         {"LD_PRELOAD", "SLOW_FSYNC_MS", "SLOW_FSYNC_LOG", "SLOW_VFS_SYNC_MS", "SLOW_VFS_LOG"})
        if (const char* v = std::getenv(name)) envs.push_back(std::string(name) + "=" + v);
    std::vector<char*> argv, envp;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    for (auto& e : envs) envp.push_back(e.data());
    envp.push_back(nullptr);
    int err = posix_spawn(&pid_, daemonlet.c_str(), &fa, nullptr, argv.data(), envp.data());
    posix_spawn_file_actions_destroy(&fa);
    if (err != 0) {
        pid_ = -1;
        throw Failure(daemonlet + ": " + std::strerror(err));
    }
    pidfd_ = open_pidfd(pid_);
    if (pidfd_ < 0) throw Failure(errno_text("pidfd_open"));
}

void AgentProcess::stop(int sig, Observer& obs) {
    if (pid_ <= 0) return;
    ::kill(pid_, sig);
    bool exited = false;
    obs.expect(
        "the agent exits", 30'000'000'000, [&] { return exited; }, pidfd_, &exited);
    int status = 0;
    ::waitpid(pid_, &status, 0);
    ::close(pidfd_);
    pidfd_ = -1;
    pid_ = -1;
    if (sig == SIGTERM && !(WIFEXITED(status) && WEXITSTATUS(status) == 0))
        throw Failure("the agent did not exit 0 after SIGTERM (status " + std::to_string(status) + ")");
}

ProcFigures proc_figures(pid_t pid) {
    std::string base = "/proc/" + std::to_string(pid);
    ProcFigures f;
    f.vm_rss_kib = kib_field(base + "/status", "VmRSS:");
    f.rss_anon_kib = kib_field(base + "/status", "RssAnon:");
    f.pss_kib = kib_field(base + "/smaps_rollup", "Pss:");
    return f;
}

ProcIo proc_io(pid_t pid) {
    std::ifstream in("/proc/" + std::to_string(pid) + "/io");
    ProcIo io;
    std::string key;
    std::int64_t value = 0;
    while (in >> key >> value) {
        if (key == "wchar:") io.wchar = value;
        if (key == "write_bytes:") io.write_bytes = value;
        if (key == "syscw:") io.syscw = value;
    }
    return io;
}

std::int64_t proc_cpu_ticks(pid_t pid) {
    std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
    std::string line;
    std::getline(in, line);
    auto close = line.rfind(')');
    if (close == std::string::npos) return -1;
    std::istringstream fields(line.substr(close + 2));
    std::string f;
    std::int64_t utime = 0, stime = 0;
    for (int i = 3; fields >> f; ++i) {  // field 3 is the state
        if (i == 14) utime = std::stoll(f);
        if (i == 15) {
            stime = std::stoll(f);
            break;
        }
    }
    return utime + stime;
}

std::uint64_t start_time_of(pid_t pid) {
    proc::ProcStat st;
    return proc::read_stat(pid, &st) == 0 && st.state != 'Z' ? st.start_time : 0;
}

bool same_process(pid_t pid, std::uint64_t start_time) { return proc::is_same_process(pid, start_time); }

int open_pidfd(pid_t pid) { return proc::pidfd_open(pid); }

std::map<std::string, FileFacts> file_facts(const std::string& dir, const std::string& skip) {
    std::map<std::string, FileFacts> out;
    std::error_code ec;
    for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::recursive_directory_iterator();
         it.increment(ec)) {
        const std::string p = it->path().string();
        if (p == skip) {
            it.disable_recursion_pending();
            continue;
        }
        struct stat st {};
        if (::lstat(p.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
        out[p] = {static_cast<std::int64_t>(st.st_size),
                  static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec};
    }
    return out;
}

std::string ds_name(int i) {
    char buf[16];
    std::snprintf(buf, sizeof buf, "ds-%03d", i);
    return buf;
}

double percentile(std::vector<double> v, double p) {
    std::sort(v.begin(), v.end());
    auto rank = static_cast<std::size_t>(std::ceil(p / 100.0 * static_cast<double>(v.size())));
    return v[std::clamp<std::size_t>(rank, 1, v.size()) - 1];
}

std::vector<std::pair<pid_t, std::uint64_t>> live_shims(const std::string& state_dir,
                                                        std::vector<pid_t>* containers) {
    std::vector<std::pair<pid_t, std::uint64_t>> out;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(state_dir + "/runtime/containers", ec)) {
        auto text = platform::read_file(e.path().string() + "/state.json", 64 * 1024);
        if (!text.ok()) continue;
        auto doc = nlohmann::json::parse(text.value(), nullptr, false);
        if (!doc.is_object() || !doc.contains("shimPid") || !doc.contains("shimStartTime")) continue;
        auto pid = doc["shimPid"].get<pid_t>();
        auto start = doc["shimStartTime"].get<std::uint64_t>();
        if (!same_process(pid, start)) continue;
        out.emplace_back(pid, start);
        if (containers) containers->push_back(doc.value("pid", 0));
    }
    return out;
}

WorkDir make_work_dir(const std::string& parent, const std::string& prefix) {
    std::string tmpl = parent + "/" + prefix + ".XXXXXX";
    if (!::mkdtemp(tmpl.data())) throw Failure(errno_text(tmpl));
    WorkDir w{tmpl,
              tmpl + "/marks",
              tmpl + "/manifests",
              tmpl + "/state",
              tmpl + "/config.yaml",
              tmpl + "/notify.sock",
              tmpl + "/agent.log"};
    fs::create_directories(w.marks);
    fs::create_directories(w.manifests);
    std::fprintf(stderr, "%s: work directory %s\n", prefix.c_str(), w.root.c_str());
    return w;
}

void unmount_below(const std::string& root) {
    std::ifstream mounts("/proc/mounts");
    std::vector<std::string> left;
    for (std::string dev, at, rest; mounts >> dev >> at && std::getline(mounts, rest);)
        if (at.rfind(root + "/", 0) == 0) left.push_back(at);
    for (auto it = left.rbegin(); it != left.rend(); ++it) ::umount2(it->c_str(), MNT_DETACH);
}

bool no_pods_left(const std::string& status) { return status.rfind("0 DaemonSets, 0/0", 0) == 0; }

void kill_all_and_clean(AgentProcess& agent, const std::string& state_dir, const Observer* obs,
                        const std::string& work, bool keep, const char* bench) {
    if (agent.running()) ::kill(agent.pid(), SIGKILL);
    for (auto [pid, start] : live_shims(state_dir)) ::kill(pid, SIGKILL);
    if (obs)
        for (const auto& [ds, m] : obs->latest())
            if (same_process(m.pid, m.start_time)) ::kill(m.pid, SIGKILL);
    if (keep) {
        std::fprintf(stderr, "%s: kept %s\n", bench, work.c_str());
        return;
    }
    std::error_code ec;
    fs::remove_all(work, ec);
}

std::optional<int> parse_flags(int argc, char** argv, const Flags& flags, const char* usage) {
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        const bool has_value = i + 1 < argc;
        if (auto s = flags.strings.find(a); s != flags.strings.end() && has_value) {
            *s->second = argv[++i];
        } else if (auto n = flags.numbers.find(a); n != flags.numbers.end() && has_value) {
            *n->second = std::atoi(argv[++i]);
        } else if (auto b = flags.switches.find(a); b != flags.switches.end()) {
            *b->second = true;
        } else if (a == "--help") {
            std::fputs(usage, stdout);
            return 0;
        } else {
            std::fputs(usage, stderr);
            return 2;
        }
    }
    return std::nullopt;
}

std::string fmt(double v, const std::string& unit) {
    char buf[64];
    std::snprintf(buf, sizeof buf, v >= 100 ? "%.0f %s" : "%.1f %s", v, unit.c_str());
    return buf;
}

void print_table(const std::vector<Row>& rows) {
    std::string model = "unknown CPU";
    std::ifstream cpuinfo("/proc/cpuinfo");
    for (std::string line; std::getline(cpuinfo, line);)
        if (line.rfind("model name", 0) == 0) {
            model = line.substr(line.find(':') + 2);
            break;
        }
    utsname u{};
    ::uname(&u);
    std::printf("machine: %u x %s, Linux %s %s\n\n", std::thread::hardware_concurrency(), model.c_str(),
                u.release, u.machine);
    std::printf("| Figure | p50 | p99 | max | n | target |\n|---|---|---|---|---|---|\n");
    for (const auto& r : rows) {
        if (r.samples.empty()) {
            std::printf("| %s | %s | | | 1 | %s |\n", r.figure.c_str(), r.value.c_str(), r.target.c_str());
            continue;
        }
        std::printf("| %s | %s | %s | %s | %zu | %s |\n", r.figure.c_str(),
                    fmt(percentile(r.samples, 50), r.unit).c_str(),
                    fmt(percentile(r.samples, 99), r.unit).c_str(),
                    fmt(percentile(r.samples, 100), r.unit).c_str(), r.samples.size(), r.target.c_str());
    }
}

}  // namespace daemonlet::bench
