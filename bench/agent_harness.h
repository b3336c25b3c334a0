// What bench_agent needs to drive the real daemonlet and watch its pods
// without polling: the agent as a child process, a NOTIFY_SOCKET listener,
// and an inotify watch on the directory where every container writes its
// "I run" mark before it execs sleep. Figures of a process come from /proc.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace daemonlet::bench {

using Ns = std::int64_t;  // CLOCK_MONOTONIC nanoseconds

Ns mono_ns();
inline double ms(Ns ns) { return static_cast<double>(ns) / 1e6; }

// A benchmark step that did not happen: the run stops and says which.
struct Failure : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// Writes `text` to path + ".tmp", then renames it onto `path`, as tools do.
// Returns the monotonic time just before the rename: the moment the agent
// can first see the new content.
Ns write_then_rename(const std::string& path, const std::string& text);

// One container's mark: the file <marks>/<pod name> holding its pid,
// seen when the container's shell closed it (IN_CLOSE_WRITE).
struct Mark {
    std::string pod;
    pid_t pid = 0;
    std::uint64_t start_time = 0;  // /proc/<pid>/stat field 22: pid + this names one process
    Ns at = 0;
};

// Everything the bench waits on, in one poll(2): container marks, the
// agent's sd_notify messages and, per wait, one more descriptor (a pidfd).
class Observer {
  public:
    Observer(std::string marks_dir, const std::string& notify_socket);
    Observer(const Observer&) = delete;
    Observer& operator=(const Observer&) = delete;
    ~Observer();

    // Runs until `done()` holds (true) or `timeout` passes (false). When
    // `extra_fd` is readable, *extra_ready is set (and stays set).
    bool wait_until(Ns timeout, const std::function<bool()>& done, int extra_fd = -1,
                    bool* extra_ready = nullptr);
    // As wait_until, but a timeout is a Failure naming `what`.
    void expect(const char* what, Ns timeout, const std::function<bool()>& done, int extra_fd = -1,
                bool* extra_ready = nullptr);
    // A change that replaces the newest container of DaemonSet `ds`:
    // `change()` makes it and returns when it was made; then waits for a
    // new container's mark and for the old one's exit (pidfd). Returns
    // both times (monotonic); a timeout is a Failure naming `what`.
    struct Replaced {
        Ns started = 0;
        Ns gone = 0;
    };
    Replaced replace(const std::string& ds, const std::function<Ns()>& change, const char* what);
    // Waits (pidfd) until each (pid, start time) has exited; a timeout is a
    // Failure naming `what`.
    void wait_exits(const std::vector<std::pair<pid_t, std::uint64_t>>& procs, const char* what);

    // Marks in arrival order, and the newest one per DaemonSet name prefix
    // ("ds-007" for pod "ds-007-x5k2p").
    const std::vector<Mark>& marks() const { return marks_; }
    const std::map<std::string, Mark>& latest() const { return latest_; }

    // The time of the first READY=1 since forget_ready().
    std::optional<Ns> ready_at() const { return ready_at_; }
    void forget_ready() { ready_at_.reset(); }
    std::size_t notify_messages() const { return notify_count_; }
    // When each WATCHDOG=1 arrived (monotonic), since forget_pings(): with
    // a short WATCHDOG_USEC, the largest gap is the agent's longest stall.
    const std::vector<Ns>& pings() const { return pings_; }
    void forget_pings() { pings_.clear(); }
    // The last STATUS= text ("50 DaemonSets, 50/50 pods running").
    const std::string& status() const { return status_; }

  private:
    void read_marks();
    void read_notify();

    std::string marks_dir_;
    int inotify_fd_ = -1;
    int notify_fd_ = -1;
    std::vector<Mark> marks_;
    std::map<std::string, Mark> latest_;
    std::optional<Ns> ready_at_;
    std::size_t notify_count_ = 0;
    std::vector<Ns> pings_;
    std::string status_;
};

// The agent, `daemonlet run --config FILE`, as the bench's child, with
// NOTIFY_SOCKET set and stdout and stderr appended to a log file.
class AgentProcess {
  public:
    AgentProcess() = default;
    AgentProcess(const AgentProcess&) = delete;
    AgentProcess& operator=(const AgentProcess&) = delete;
    ~AgentProcess();

    void start(const std::string& daemonlet, const std::string& config, const std::string& notify_socket,
               const std::string& log);
    // Sends `sig` and waits (through the observer, which keeps reading) for
    // the exit, reaping it.
    void stop(int sig, Observer& obs);
    pid_t pid() const { return pid_; }
    bool running() const { return pid_ > 0; }

  private:
    pid_t pid_ = -1;
    int pidfd_ = -1;
};

// The figures of one process from /proc.
struct ProcFigures {
    std::int64_t vm_rss_kib = -1;
    std::int64_t pss_kib = -1;  // smaps_rollup: shared pages divided among their users
    std::int64_t rss_anon_kib = -1;
};
ProcFigures proc_figures(pid_t pid);

struct ProcIo {
    std::int64_t wchar = 0;        // bytes passed to write(2) and friends, any file or socket
    std::int64_t write_bytes = 0;  // bytes the process made the block layer write (dirtied pages)
    std::int64_t syscw = 0;
};
ProcIo proc_io(pid_t pid);

// utime + stime of a process, in clock ticks.
std::int64_t proc_cpu_ticks(pid_t pid);

// The process's start time, 0 when it is gone.
std::uint64_t start_time_of(pid_t pid);

// True while pid is alive (not a zombie) and started at start_time.
bool same_process(pid_t pid, std::uint64_t start_time);

// pidfd_open(2), or -1.
int open_pidfd(pid_t pid);

// Every regular file below `dir`, except below `skip` (a path below dir),
// with its size and mtime: what an idle agent must not change.
struct FileFacts {
    std::int64_t size = 0;
    std::int64_t mtime_ns = 0;
};
std::map<std::string, FileFacts> file_facts(const std::string& dir, const std::string& skip);

// The benches' DaemonSet names: "ds-007" for 7.
std::string ds_name(int i);

// Percentile by nearest rank (p in [0, 100]) of a non-empty sample.
double percentile(std::vector<double> v, double p);

// The live shims of a state directory, from their state.json records:
// (pid, start time), and the pid of each one's container.
std::vector<std::pair<pid_t, std::uint64_t>> live_shims(const std::string& state_dir,
                                                        std::vector<pid_t>* containers = nullptr);

// A bench's temporary directory and the paths in it.
struct WorkDir {
    std::string root, marks, manifests, state, config, notify_socket, agent_log;
};
// Creates PARENT/PREFIX.XXXXXX with marks/ and manifests/ in it.
WorkDir make_work_dir(const std::string& parent, const std::string& prefix);

// Unmounts, detached and innermost first, every mount below `root` (what a
// killed agent left: runc root filesystems), so that the directory can go.
void unmount_below(const std::string& root);

// Whether the agent's STATUS says it runs no DaemonSet and no pod: every
// pod's removal (runc: delete, rootfs unmounted) is done.
bool no_pods_left(const std::string& status);

// After a failure: SIGKILL to the agent, the live shims of `state_dir` and
// the containers `obs` has seen (when it exists), and the work directory
// removed unless `keep` (then `bench` says where it is).
void kill_all_and_clean(AgentProcess& agent, const std::string& state_dir, const Observer* obs,
                        const std::string& work, bool keep, const char* bench);

// One line of a bench's table: a sample (p50, p99, max) or a single value.
struct Row {
    std::string figure;
    std::vector<double> samples;
    std::string unit;
    std::string target;
    std::string value;  // set instead of samples for a single figure
};

// A bench's command line: "--name VALUE" for the strings and numbers,
// "--name" for the switches, "--help". Returns the exit code when the
// program should end here: 0 after --help (usage on stdout), 2 after
// anything else (usage on stderr).
struct Flags {
    std::map<std::string, std::string*> strings;
    std::map<std::string, int*> numbers;
    std::map<std::string, bool*> switches;
};
std::optional<int> parse_flags(int argc, char** argv, const Flags& flags, const char* usage);

// "12.3 ms", "456 ms".
std::string fmt(double v, const std::string& unit);

// Prints the machine line ("machine: 2 x MODEL, Linux ...") and the rows
// as a Markdown table.
void print_table(const std::vector<Row>& rows);

}  // namespace daemonlet::bench
