// Runs a command to completion: see run_command.h.
#include "platform/run_command.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <optional>

#include "platform/fd.h"

extern char** environ;

namespace daemonlet::platform {
namespace {

constexpr std::size_t kMaxOutputBytes = 1 << 20;

std::string errno_text(int err) { return std::strerror(err); }

}  // namespace

Result<CommandOutput> run_command(const std::vector<std::string>& args, int deadline_ms, int stdout_fd,
                                  int stderr_fd) {
    int out_pipe[2] = {-1, -1}, err_pipe[2] = {-1, -1};
    if (stdout_fd < 0 && ::pipe2(out_pipe, O_CLOEXEC) != 0)
        return Error{ErrorCode::Io, "pipe: " + errno_text(errno)};
    Fd out_r(out_pipe[0]);
    std::optional<Fd> out_w(std::in_place, out_pipe[1]);
    if (stderr_fd < 0 && ::pipe2(err_pipe, O_CLOEXEC) != 0)
        return Error{ErrorCode::Io, "pipe: " + errno_text(errno)};
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
    if (rc != 0) return Error{ErrorCode::NotFound, args[0] + ": cannot run: " + errno_text(rc)};
    // Only the child writes now: close our copies so EOF comes when it exits.
    out_w.reset();
    err_w.reset();

    CommandOutput result;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(deadline_ms);
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
        return Error{ErrorCode::Timeout,
                     command + ": no answer within " + std::to_string(deadline_ms / 1000) + " s; killed"};
    }
    result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    return result;
}

}  // namespace daemonlet::platform
