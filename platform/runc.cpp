// Drives the runc binary: see runc.h.
#include "platform/runc.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>

#include "core/oci_spec.h"
#include "platform/fd.h"
#include "platform/file.h"

extern char** environ;

namespace daemonlet::platform {
namespace {

// runc's answers are a state document or a line of error; more is cut.
constexpr std::size_t kMaxOutputBytes = 1 << 20;

std::string errno_text(int err) { return std::strerror(err); }

// The last lines of runc's --log file (JSON lines: {"level","msg","time"}),
// their messages only: what a person needs from a failed run.
std::string log_tail(const std::string& path) {
    auto text = read_file(path, kMaxOutputBytes);
    if (!text) return {};
    std::string out;
    std::size_t start = 0;
    const std::string& t = text.value();
    while (start < t.size()) {
        auto end = t.find('\n', start);
        if (end == std::string::npos) end = t.size();
        const std::string line = t.substr(start, end - start);
        start = end + 1;
        auto j = Json::parse(line, nullptr, false);
        const std::string msg =
            j.is_object() && j.contains("msg") && j["msg"].is_string() ? j["msg"].get<std::string>() : line;
        if (!msg.empty()) out = out.empty() ? msg : out + "; " + msg;
    }
    return out;
}

std::string trim(std::string s) {
    while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
    return s;
}

}  // namespace

Result<std::vector<std::string>> current_capabilities() {
    auto status = read_file("/proc/self/status", kMaxOutputBytes);
    if (!status) return status.error();
    const std::string& t = status.value();
    const auto at = t.find("\nCapEff:");
    if (at == std::string::npos) return Error{"io", "/proc/self/status: no CapEff line"};
    const std::uint64_t mask = std::strtoull(t.c_str() + at + 8, nullptr, 16);
    std::vector<std::string> names;
    const auto all = all_capabilities();
    for (std::size_t bit = 0; bit < all.size() && bit < 64; ++bit)
        if (mask & (std::uint64_t{1} << bit)) names.push_back(all[bit]);
    return names;
}

Status Runc::write_bundle(const std::string& bundle, const Json& spec) {
    std::error_code ec;
    std::filesystem::create_directories(bundle, ec);
    if (ec) return Error{"io", bundle + ": cannot create the bundle directory: " + ec.message()};
    const std::string path = bundle + "/config.json";
    const std::string tmp = path + ".tmp";
    {
        std::ofstream f(tmp, std::ios::trunc);
        f << spec.dump(2) << '\n';
        f.close();
        if (!f) return Error{"io", tmp + ": cannot write: " + errno_text(errno)};
    }
    if (::rename(tmp.c_str(), path.c_str()) != 0)
        return Error{"io", path + ": cannot rename " + tmp + " into place: " + errno_text(errno)};
    return Ok{};
}

std::vector<std::string> Runc::global_args(const std::string& log_path) const {
    std::vector<std::string> args = {options_.binary, "--root", options_.root};
    if (!log_path.empty()) {
        args.insert(args.end(), {"--log", log_path, "--log-format", "json"});
    }
    if (options_.systemd_cgroup) args.emplace_back("--systemd-cgroup");
    return args;
}

// Runs `args` with stdin /dev/null; stdout and stderr to the given fds, or
// captured when -1. Waits at most kRuncDeadlineMs, then kills it.
Result<Runc::Output> Runc::execute(const std::vector<std::string>& args, int stdout_fd, int stderr_fd) const {
    int out_pipe[2] = {-1, -1}, err_pipe[2] = {-1, -1};
    if (stdout_fd < 0 && ::pipe2(out_pipe, O_CLOEXEC) != 0) return Error{"io", "pipe: " + errno_text(errno)};
    Fd out_r(out_pipe[0]);
    std::optional<Fd> out_w(std::in_place, out_pipe[1]);
    if (stderr_fd < 0 && ::pipe2(err_pipe, O_CLOEXEC) != 0) return Error{"io", "pipe: " + errno_text(errno)};
    Fd err_r(err_pipe[0]);
    std::optional<Fd> err_w(std::in_place, err_pipe[1]);

    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&actions, stdout_fd >= 0 ? stdout_fd : out_w->get(), 1);
    posix_spawn_file_actions_adddup2(&actions, stderr_fd >= 0 ? stderr_fd : err_w->get(), 2);
    std::vector<char*> argv;
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    pid_t pid = 0;
    const int rc = ::posix_spawnp(&pid, args[0].c_str(), &actions, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    if (rc != 0)
        return Error{"not_found", args[0] + ": cannot run: " + errno_text(rc) + " (apt-get install runc)"};
    // Only the child writes now: close our copies so EOF comes when it exits.
    out_w.reset();
    err_w.reset();

    Output result;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(kRuncDeadlineMs);
    std::vector<pollfd> fds;
    if (out_r.get() >= 0) fds.push_back({out_r.get(), POLLIN, 0});
    if (err_r.get() >= 0) fds.push_back({err_r.get(), POLLIN, 0});
    bool timed_out = false;
    while (!fds.empty()) {
        const auto left =
            std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now())
                .count();
        if (left <= 0) {
            timed_out = true;
            break;
        }
        const int n = ::poll(fds.data(), fds.size(), static_cast<int>(left));
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) break;
        for (std::size_t i = 0; i < fds.size();) {
            if (fds[i].revents == 0) {
                ++i;
                continue;
            }
            char buf[4096];
            const ssize_t got = ::read(fds[i].fd, buf, sizeof buf);
            if (got > 0) {
                std::string& sink = fds[i].fd == out_r.get() ? result.out : result.err;
                if (sink.size() < kMaxOutputBytes) sink.append(buf, static_cast<std::size_t>(got));
                ++i;
            } else if (got < 0 && errno == EINTR) {
                ++i;
            } else {
                fds.erase(fds.begin() + static_cast<std::ptrdiff_t>(i));
            }
        }
    }
    if (timed_out) ::kill(pid, SIGKILL);
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (timed_out) {
        std::string command;
        for (const auto& a : args) command += (command.empty() ? "" : " ") + a;
        return Error{"timeout",
                     command + ": no answer within " + std::to_string(kRuncDeadlineMs / 1000) + " s; killed"};
    }
    result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    return result;
}

Result<int> Runc::run(const std::string& id, const std::string& bundle, const std::string& stdout_path,
                      const std::string& stderr_path) const {
    Fd out(::open(stdout_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0640));
    if (out.get() < 0)
        return Error{"io", stdout_path + ": cannot open the container's stdout: " + errno_text(errno)};
    Fd err(::open(stderr_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0640));
    if (err.get() < 0)
        return Error{"io", stderr_path + ": cannot open the container's stderr: " + errno_text(errno)};
    const std::string log = bundle + "/runc.log";
    const std::string pid_file = bundle + "/container.pid";
    ::unlink(log.c_str());
    auto args = global_args(log);
    args.insert(args.end(), {"run", "--detach", "--pid-file", pid_file, "--bundle", bundle, id});
    auto r = execute(args, out.get(), err.get());
    if (!r) return r.error();
    if (r.value().exit_code != 0) {
        std::string why = log_tail(log);
        if (why.empty())
            why = "exit status " + std::to_string(r.value().exit_code) + " (see " + stderr_path + ")";
        return Error{"runtime", "runc run " + id + " (bundle " + bundle + "): " + why};
    }
    auto text = read_file(pid_file, 64);
    if (!text) return text.error();
    const std::string pid = trim(text.value());
    char* end = nullptr;
    const long value = std::strtol(pid.c_str(), &end, 10);
    if (pid.empty() || *end != '\0' || value <= 0)
        return Error{"runtime", pid_file + ": \"" + pid + "\" is not a process id"};
    return static_cast<int>(value);
}

Result<RuncState> Runc::state(const std::string& id) const {
    auto args = global_args({});
    args.insert(args.end(), {"state", id});
    auto r = execute(args);
    if (!r) return r.error();
    if (r.value().exit_code != 0) {
        const std::string err = trim(r.value().err);
        if (err.find("container does not exist") != std::string::npos)
            return Error{"not_found", "runc state " + id + ": no such container"};
        return Error{"runtime", "runc state " + id + ": " + err};
    }
    auto j = Json::parse(r.value().out, nullptr, false);
    if (!j.is_object() || !j.contains("status") || !j["status"].is_string())
        return Error{"runtime",
                     "runc state " + id + ": not a state document: " + r.value().out.substr(0, 200)};
    RuncState s;
    s.id = j.value("id", id);
    s.status = j["status"].get<std::string>();
    s.pid = j.contains("pid") && j["pid"].is_number_integer() ? j["pid"].get<int>() : 0;
    s.bundle = j.value("bundle", std::string());
    return s;
}

Status Runc::kill(const std::string& id, int signal) const {
    auto args = global_args({});
    args.insert(args.end(), {"kill", id, std::to_string(signal)});
    auto r = execute(args);
    if (!r) return r.error();
    if (r.value().exit_code != 0) return Error{"runtime", "runc kill " + id + ": " + trim(r.value().err)};
    return Ok{};
}

Status Runc::remove(const std::string& id) const {
    auto args = global_args({});
    args.insert(args.end(), {"delete", "--force", id});
    auto r = execute(args);
    if (!r) return r.error();
    if (r.value().exit_code != 0) {
        const std::string err = trim(r.value().err);
        if (err.find("container does not exist") != std::string::npos) return Ok{};
        return Error{"runtime", "runc delete " + id + ": " + err};
    }
    return Ok{};
}

}  // namespace daemonlet::platform
