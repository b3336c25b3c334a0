#include "platform/exec/exec_runtime.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>
#include <uv.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <system_error>

#include "platform/exec/exec_runtime_watch.h"
#include "platform/exec/shim_state.h"
#include "platform/fd.h"
#include "platform/file.h"
#include "platform/proc_stat.h"
#include "platform/shim/shim_protocol.h"

namespace daemonlet::platform {
namespace {

namespace fs = std::filesystem;
using exec::ShimRecord;

Error errno_error(const std::string& what) {
    return Error{ErrorCode::Io, what + ": " + std::strerror(errno)};
}

// The shim runs in "/", and config.json names the log by its full path.
std::string absolute(const std::string& path) {
    std::error_code ec;
    fs::path p = fs::absolute(path, ec).lexically_normal();
    std::string s = ec ? path : p.string();
    while (s.size() > 1 && s.back() == '/') s.pop_back();
    return s;
}

// The beginning of shim.log, for an error message.
std::string shim_log_excerpt(const std::string& dir) {
    Fd fd(::open((dir + "/" + shim::kShimLogFile).c_str(), O_RDONLY | O_CLOEXEC));
    char buf[512];
    ssize_t n = fd.get() >= 0 ? ::read(fd.get(), buf, sizeof buf) : -1;
    if (n <= 0) return "";
    std::string text(buf, static_cast<std::size_t>(n));
    while (!text.empty() && text.back() == '\n') text.pop_back();
    return ": " + text;
}

// Waits for the shim's readiness byte until `deadline`. Returns the byte, 0
// at EOF (the shim died first), -1 on timeout.
int wait_ready(int fd, std::chrono::steady_clock::time_point deadline) {
    for (;;) {
        auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline -
                                                                          std::chrono::steady_clock::now());
        if (left.count() <= 0) return -1;
        struct pollfd p = {fd, POLLIN, 0};
        int r = ::poll(&p, 1, static_cast<int>(left.count()));
        if (r < 0 && errno == EINTR) continue;  // SIGCHLD, for one
        if (r <= 0) return -1;
        char c = 0;
        ssize_t n = ::read(fd, &c, 1);
        if (n < 0 && errno == EINTR) continue;
        return n == 1 ? c : 0;
    }
}

}  // namespace

Result<std::unique_ptr<Runtime>> make_exec_runtime(uv_loop_s* loop, std::string state_dir,
                                                   std::string shim_path) {
    if (auto s = make_dirs(state_dir, 0700); !s) return s.error();
    if (::access(shim_path.c_str(), X_OK) != 0) return errno_error("daemonlet-shim " + shim_path);
    Fd self(proc::pidfd_open(::getpid()));
    if (self.get() < 0) return errno_error("pidfd_open (the exec runtime needs Linux >= 5.3)");
    return std::unique_ptr<Runtime>(new ExecRuntime(loop, std::move(state_dir), std::move(shim_path)));
}

ExecRuntime::ExecRuntime(uv_loop_s* loop, std::string state_dir, std::string shim_path)
    : loop_(loop),
      state_dir_(absolute(state_dir)),
      shim_path_(shim_path.find('/') != std::string::npos ? absolute(shim_path) : shim_path) {
    attach_loop(loop);
}

ExecRuntime::~ExecRuntime() { close(); }

void ExecRuntime::set_exit_handler(std::function<void(const std::string& id)> handler) {
    on_exit_ = std::move(handler);
}

void ExecRuntime::close() {
    closed_ = true;
    // Starts in flight are left to their shims: the container runs on, and
    // the next agent adopts it from the state directory.
    for (auto& [id, st] : starting_) {
        st.wait->close();
        ::close(st.pidfd);
    }
    starting_.clear();
    for (auto& [id, w] : watches_) w->close();
    watches_.clear();
    for (auto* c : children_) c->close();
    children_.clear();
}

Result<ExecRuntime::Spawned> ExecRuntime::spawn_shim(const std::string& dir) {
    std::string shim_log_path = dir + "/" + shim::kShimLogFile;
    Fd shim_log(::open(shim_log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0640));
    if (shim_log.get() < 0) return errno_error(shim_log_path);
    int ready[2];
    if (::pipe2(ready, O_CLOEXEC) != 0) return errno_error("pipe2");
    Fd ready_r(ready[0]), ready_w(ready[1]);

    std::vector<std::string> args = {shim_path_, dir};
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    // The shim needs nothing from the agent's environment; the container
    // gets its env from config.json.
    std::string path_env = "PATH=/usr/sbin:/usr/bin:/sbin:/bin";
    char* env[] = {path_env.data(), nullptr};
    uv_stdio_container_t stdio[4];
    stdio[0].flags = UV_IGNORE;  // /dev/null
    stdio[1].flags = UV_IGNORE;
    stdio[2].flags = UV_INHERIT_FD;
    stdio[2].data.fd = shim_log.get();
    stdio[3].flags = UV_INHERIT_FD;  // shim::kReadyFd
    stdio[3].data.fd = ready_w.get();
    uv_process_options_t opts{};
    opts.file = argv[0];
    opts.args = argv.data();
    opts.env = env;
    opts.cwd = "/";
    opts.flags = UV_PROCESS_DETACHED;  // setsid: signals to the agent's group do not reach it
    opts.stdio_count = 4;
    opts.stdio = stdio;
    int err = 0;
    auto* child = exec::ShimChild::spawn(
        static_cast<uv_loop_t*>(loop_), opts, [this](exec::ShimChild* c) { children_.erase(c); }, &err);
    if (child == nullptr)
        return Error{ErrorCode::Spawn, "cannot run " + shim_path_ + ": " + uv_strerror(err)};
    children_.insert(child);
    Spawned spawned{-1, child->pid()};
    // Only the shim holds these now: its end of the pipe reaching EOF means it died.
    ready_w.reset();
    shim_log.reset();

    // Our unreaped child: its pid cannot have been reused, no check needed.
    Fd pidfd(proc::pidfd_open(spawned.pid));
    if (pidfd.get() < 0) {
        Error e = errno_error("pidfd_open (Linux >= 5.3)");
        abandon(dir, spawned.pid);
        return e;
    }
    spawned.pidfd = pidfd.release();
    spawned.ready_fd = ready_r.release();
    return spawned;
}

Result<std::string> ExecRuntime::finish_start(const std::string& id, const std::string& dir,
                                              const Spawned& spawned, int got) {
    Fd pidfd(spawned.pidfd);
    if (got == shim::kReadyRunning || got == shim::kReadyExited) {
        if (closed_)
            return Error{ErrorCode::Closed, "exec runtime: closed while container " + id + " started"};
        if (auto s = watch(id, pidfd.release()); !s) {
            abandon(dir, spawned.pid);
            return s.error();
        }
        return id;
    }
    abandon(dir, spawned.pid);
    std::string why = got < 0 ? "did not report within " + std::to_string(start_timeout_.count()) + " ms"
                              : "exited before reporting";
    return Error{ErrorCode::Shim, "daemonlet-shim for container " + id + " " + why + shim_log_excerpt(dir)};
}

void ExecRuntime::abandon(const std::string& dir, pid_t shim_pid) {
    // Still our unreaped child, so the pid is safe to signal; libuv reaps it.
    ::kill(shim_pid, SIGKILL);
    auto id = fs::path(dir).filename().string();
    auto record = exec::read_record(state_dir_, id);
    if (record && record.value().has_state &&
        proc::is_same_process(record.value().pid, record.value().pid_start_time))
        ::kill(-record.value().pid, SIGKILL);
    std::error_code ec;
    fs::remove_all(dir, ec);
}

Status ExecRuntime::watch(const std::string& id, int pidfd) {
    auto* w = exec::ShimWatch::start(static_cast<uv_loop_t*>(loop_), pidfd, [this, id] { on_shim_exit(id); });
    if (w == nullptr) return errno_error("watching the daemonlet-shim of container " + id);
    watches_[id] = w;
    return Ok{};
}

void ExecRuntime::on_shim_exit(const std::string& id) {
    auto it = watches_.find(id);
    if (it == watches_.end()) return;
    it->second->close();
    watches_.erase(it);
    auto record = exec::read_record(state_dir_, id);
    if (record && !record.value().has_exit) {
        // Failing that, inspect() still reports the container as lost.
        (void)exec::record_lost_exit(state_dir_, record.value(),
                                     "daemonlet-shim (pid " + std::to_string(record.value().shim_pid) +
                                         ") exited without recording the container's exit; see its shim.log");
    }
    auto handler = on_exit_;
    if (handler) handler(id);
}

// The process to run: the launch's argv, or the container's command + args.
ContainerLaunch ExecRuntime::resolved(const ContainerLaunch& launch) {
    ContainerLaunch out = launch;
    if (out.argv.empty() && launch.container) {
        out.argv = launch.container->command;
        out.argv.insert(out.argv.end(), launch.container->args.begin(), launch.container->args.end());
    }
    if (out.working_dir.empty() && launch.container) out.working_dir = launch.container->working_dir;
    return out;
}

Result<ExecRuntime::Prepared> ExecRuntime::prepare(const ContainerLaunch& given) {
    if (closed_) return Error{ErrorCode::Closed, "exec runtime: start() after close()"};
    const ContainerLaunch launch = resolved(given);
    if (auto s = exec::validate_launch(launch); !s) return s.error();
    if (!launch.id.empty() && !exec::is_container_id(launch.id))
        return Error{ErrorCode::Invalid, "\"" + launch.id + "\" is not a container id"};
    std::string id = launch.id.empty() ? exec::new_container_id() : launch.id;
    std::string dir = exec::container_dir(state_dir_, id);
    std::string log = exec::log_path(state_dir_, launch);
    if (auto s = make_dirs(exec::containers_dir(state_dir_), 0700); !s) return s.error();
    if (::mkdir(dir.c_str(), 0700) != 0) return errno_error(dir);
    auto fail = [&dir](const Error& e) -> Result<Prepared> {
        std::error_code ec;
        fs::remove_all(dir, ec);
        return e;
    };
    if (auto s = make_dirs(fs::path(log).parent_path().string(), 0755); !s) return fail(s.error());
    auto config = exec::write_file_atomic(dir + "/" + shim::kConfigFile, exec::config_json(launch, log));
    if (!config) return fail(config.error());
    auto spawned = spawn_shim(dir);
    if (!spawned) return fail(spawned.error());
    return Prepared{id, dir, spawned.value()};
}

Result<std::string> ExecRuntime::start(const ContainerLaunch& launch) {
    auto prepared = prepare(launch);
    if (!prepared) return prepared.error();
    const Prepared& p = prepared.value();
    int got = wait_ready(p.spawned.ready_fd, std::chrono::steady_clock::now() + start_timeout_);
    ::close(p.spawned.ready_fd);
    return finish_start(p.id, p.dir, p.spawned, got);
}

// As start(), but the shim's readiness byte is waited for on the loop (a
// uv_poll on the pipe and a timer for start_timeout): the fork and exec
// are all that happens in the call.
void ExecRuntime::start_async(ContainerLaunch launch, std::function<void(Result<std::string>)> done) {
    auto prepared = prepare(launch);
    if (!prepared) {
        post([done = std::move(done), e = prepared.error()] { done(e); });
        return;
    }
    Prepared p = prepared.value();
    auto* wait =
        exec::ReadyWait::start(static_cast<uv_loop_t*>(loop_), p.spawned.ready_fd,
                               static_cast<std::uint64_t>(start_timeout_.count()), [this, p, done](int got) {
                                   starting_.erase(p.id);
                                   done(finish_start(p.id, p.dir, p.spawned, got));
                               });
    if (wait == nullptr) {
        Error e = errno_error("waiting for the daemonlet-shim of container " + p.id);
        ::close(p.spawned.pidfd);
        abandon(p.dir, p.spawned.pid);
        post([done = std::move(done), e] { done(e); });
        return;
    }
    starting_[p.id] = Starting{wait, p.spawned.pidfd};
}

Status ExecRuntime::stop(const std::string& id) {
    if (!exec::is_container_id(id)) return Error{ErrorCode::NotFound, "no container \"" + id + "\""};
    if (auto it = watches_.find(id); it != watches_.end()) {
        int err = it->second->send_signal(SIGTERM);
        if (err != 0 && err != ESRCH)
            return Error{ErrorCode::Io,
                         "signalling the daemonlet-shim of container " + id + ": " + std::strerror(err)};
        return Ok{};
    }
    auto record = exec::read_record(state_dir_, id);
    if (!record) return record.error();
    const ShimRecord& r = record.value();
    if (r.has_exit) return Ok{};
    if (closed_) return Error{ErrorCode::Closed, "exec runtime: stop() after close()"};
    int pidfd = r.has_state ? exec::open_verified_pidfd(r.shim_pid, r.shim_start_time) : -1;
    if (pidfd < 0) {
        // Its shim is gone: nothing left to stop.
        (void)exec::record_lost_exit(state_dir_, r, "daemonlet-shim is gone");
        return Ok{};
    }
    if (auto s = watch(id, pidfd); !s) return s;
    return stop(id);
}

void ExecRuntime::set_stop_grace(const std::string& id, std::int64_t grace_seconds) {
    if (!exec::is_container_id(id)) return;
    // A few bytes in the state directory: as quick as the shim's own
    // records. Failing, the stop keeps the grace period given at start.
    (void)exec::write_file_atomic(exec::container_dir(state_dir_, id) + "/" + shim::kStopGraceFile,
                                  std::to_string(grace_seconds < 0 ? 0 : grace_seconds));
}

Result<ContainerInfo> ExecRuntime::inspect(const std::string& id) {
    if (!exec::is_container_id(id)) return Error{ErrorCode::NotFound, "no container \"" + id + "\""};
    auto record = exec::read_record(state_dir_, id);
    if (!record) return record.error();
    const ShimRecord& r = record.value();
    bool running =
        watches_.count(id) != 0 || (r.has_state && proc::is_same_process(r.shim_pid, r.shim_start_time));
    return exec::to_info(r, running);
}

Result<std::vector<ContainerInfo>> ExecRuntime::adopt_all() {
    if (closed_) return Error{ErrorCode::Closed, "exec runtime: adopt_all() after close()"};
    std::vector<std::string> ids;
    std::error_code ec;
    std::string dir = exec::containers_dir(state_dir_);
    fs::directory_iterator it(dir, ec);
    if (ec == std::errc::no_such_file_or_directory) return std::vector<ContainerInfo>{};
    for (; !ec && it != fs::directory_iterator(); it.increment(ec)) {
        std::string name = it->path().filename().string();
        if (exec::is_container_id(name)) ids.push_back(name);
    }
    if (ec) return Error{ErrorCode::Io, dir + ": " + ec.message()};
    std::sort(ids.begin(), ids.end());

    std::vector<ContainerInfo> out;
    for (const auto& id : ids) {
        auto record = exec::read_record(state_dir_, id);
        if (!record) {
            if (record.error().code == ErrorCode::NotFound) continue;  // removed meanwhile
            ContainerInfo info;
            info.id = id;
            info.exit_code = 137;
            info.reason = "ContainerStatusUnknown: " + record.error().message;
            out.push_back(info);
            continue;
        }
        ShimRecord r = record.value();
        bool running = watches_.count(id) != 0;
        if (!running && !r.has_exit) {
            int pidfd = r.has_state ? exec::open_verified_pidfd(r.shim_pid, r.shim_start_time) : -1;
            if (pidfd >= 0) {
                if (auto s = watch(id, pidfd); !s) return s.error();
                running = true;
            } else {
                std::string why = r.has_state ? "daemonlet-shim (pid " + std::to_string(r.shim_pid) +
                                                    ") is gone; its pid is free or another process's"
                                              : "daemonlet-shim never reported the container started";
                if (exec::record_lost_exit(state_dir_, r, why)) {
                    if (auto again = exec::read_record(state_dir_, id)) r = again.value();
                }
            }
        }
        out.push_back(exec::to_info(r, running));
    }
    return out;
}

Status ExecRuntime::remove(const std::string& id) {
    if (!exec::is_container_id(id)) return Error{ErrorCode::Invalid, "\"" + id + "\" is not a container id"};
    if (watches_.count(id) != 0)
        return Error{ErrorCode::Running, "container " + id + " is running: stop it first"};
    auto record = exec::read_record(state_dir_, id);
    if (!record && record.error().code == ErrorCode::NotFound) return Ok{};
    if (record) {
        const ShimRecord& r = record.value();
        if (!r.has_exit && r.has_state && proc::is_same_process(r.shim_pid, r.shim_start_time))
            return Error{ErrorCode::Running, "container " + id + " is running: stop it first"};
    }
    // A corrupt record goes too: that is how it is cleaned up.
    std::error_code ec;
    std::string dir = exec::container_dir(state_dir_, id);
    fs::remove_all(dir, ec);
    if (ec) return Error{ErrorCode::Io, dir + ": " + ec.message()};
    return Ok{};
}

}  // namespace daemonlet::platform
