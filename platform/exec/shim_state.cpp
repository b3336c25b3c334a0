#include "platform/exec/shim_state.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/random.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "core/io_error.h"
#include "platform/file.h"
#include "platform/proc_stat.h"
#include "platform/shim/shim_protocol.h"

namespace daemonlet::platform::exec {
namespace {

using nlohmann::json;

constexpr std::size_t kMaxStateBytes = 64 * 1024;
constexpr std::size_t kMaxNameLength = 253;

Error corrupt(const std::string& path, const std::string& what) {
    return Error{ErrorCode::Corrupt, path + ": " + what};
}

bool has_nul(const std::string& s) { return s.find('\0') != std::string::npos; }

// A name that becomes one path component under the state directory.
Status check_component(const char* field, const std::string& value) {
    if (value.empty() || value == "." || value == ".." || value.size() > kMaxNameLength ||
        value.find('/') != std::string::npos || has_nul(value))
        return Error{ErrorCode::Invalid,
                     std::string(field) + " \"" + value +
                         "\": must be 1 to 253 bytes, not \".\" or \"..\", without '/' or NUL"};
    return Ok{};
}

Result<std::int64_t> int_field(const json& doc, const char* key, const std::string& path) {
    auto it = doc.find(key);
    if (it == doc.end() || !it->is_number_integer())
        return corrupt(path, std::string("\"") + key + "\" is not an integer");
    return it->get<std::int64_t>();
}

std::string string_field(const json& doc, const char* key) {
    auto it = doc.find(key);
    return it != doc.end() && it->is_string() ? it->get<std::string>() : std::string();
}

// Reads and parses a JSON object; "not_found" when the file does not exist.
Result<json> read_json(const std::string& path, std::size_t max_bytes) {
    if (::access(path.c_str(), F_OK) != 0)
        return Error{ErrorCode::NotFound, path + ": " + std::strerror(errno)};
    auto text = read_file(path, max_bytes);
    if (!text) return text.error();
    json doc = json::parse(text.value(), nullptr, /*allow_exceptions=*/false);
    if (doc.is_discarded() || !doc.is_object()) return corrupt(path, "not a JSON object");
    return doc;
}

}  // namespace

std::string containers_dir(const std::string& state_dir) { return state_dir + "/containers"; }

std::string container_dir(const std::string& state_dir, const std::string& id) {
    return containers_dir(state_dir) + "/" + id;
}

std::string log_path(const std::string& state_dir, const ContainerLaunch& launch) {
    return state_dir + "/logs/" + launch.pod_namespace + "_" + launch.pod_name + "_" + launch.pod_uid + "/" +
           launch.container_name + "/" + std::to_string(launch.restart_count) + ".log";
}

std::string new_container_id() {
    unsigned char bytes[16];
    std::size_t got = 0;
    while (got < sizeof bytes) {
        ssize_t n = ::getrandom(bytes + got, sizeof bytes - got, 0);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
            // getrandom cannot fail on Linux >= 3.17 once the pool is ready;
            // fall back on the clock and pid rather than fail a start.
            auto t = static_cast<std::uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
            for (std::size_t i = got; i < sizeof bytes; ++i)
                bytes[i] =
                    static_cast<unsigned char>((t >> (8 * (i % 8))) ^ static_cast<std::uint64_t>(::getpid()));
            break;
        }
        got += static_cast<std::size_t>(n);
    }
    static const char hex[] = "0123456789abcdef";
    std::string id;
    for (unsigned char b : bytes) {
        id += hex[b >> 4];
        id += hex[b & 15];
    }
    return id;
}

bool is_container_id(const std::string& id) {
    if (id.size() != 32) return false;
    for (char c : id)
        if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
    return true;
}

Status validate_launch(const ContainerLaunch& launch) {
    for (auto [field, value] : {std::pair{"podUID", &launch.pod_uid}, std::pair{"pod name", &launch.pod_name},
                                std::pair{"pod namespace", &launch.pod_namespace},
                                std::pair{"container name", &launch.container_name}}) {
        if (auto s = check_component(field, *value); !s) return s;
    }
    if (launch.argv.empty() || launch.argv[0].empty())
        return Error{ErrorCode::Invalid,
                     "container " + launch.container_name +
                         ": the exec runtime needs a command (command or args with an executable)"};
    for (const auto& arg : launch.argv)
        if (has_nul(arg))
            return Error{ErrorCode::Invalid,
                         "container " + launch.container_name + ": an argument holds NUL"};
    for (const auto& [name, value] : launch.env)
        if (name.empty() || name.find('=') != std::string::npos || has_nul(name) || has_nul(value))
            return Error{ErrorCode::Invalid, "container " + launch.container_name + ": env name \"" + name +
                                                 "\" must be non-empty, without '=' or NUL"};
    if (!launch.working_dir.empty() && (launch.working_dir[0] != '/' || has_nul(launch.working_dir)))
        return Error{ErrorCode::Invalid, "container " + launch.container_name + ": workingDir \"" +
                                             launch.working_dir + "\" must be an absolute path"};
    std::size_t size = launch.working_dir.size();
    for (const auto& arg : launch.argv) size += arg.size() + 8;
    for (const auto& [name, value] : launch.env) size += name.size() + value.size() + 8;
    for (const auto& [name, value] : launch.labels) size += name.size() + value.size() + 8;
    if (size > shim::kMaxConfigBytes / 2)
        return Error{ErrorCode::Invalid, "container " + launch.container_name +
                                             ": command, args and env take " + std::to_string(size) +
                                             " bytes, over the limit of " +
                                             std::to_string(shim::kMaxConfigBytes / 2)};
    return Ok{};
}

std::string config_json(const ContainerLaunch& launch, const std::string& log_path) {
    json env = json::array();
    bool has_path = false;
    for (const auto& [name, value] : launch.env) {
        env.push_back(name + "=" + value);
        has_path = has_path || name == "PATH";
    }
    if (!has_path) env.push_back(std::string("PATH=") + shim::kDefaultPath);
    json doc = {
        {shim::kArgv, launch.argv},
        {shim::kEnv, env},
        {shim::kCwd, launch.working_dir.empty() ? std::string("/") : launch.working_dir},
        {shim::kGraceSeconds, launch.grace_seconds < 0 ? 0 : launch.grace_seconds},
        {shim::kLogPath, log_path},
        {shim::kLogMaxBytes, launch.log_max_bytes},
        {shim::kLogMaxFiles, launch.log_max_files < 1 ? 1u : launch.log_max_files},
        {shim::kPodUid, launch.pod_uid},
        {shim::kPodName, launch.pod_name},
        {shim::kPodNamespace, launch.pod_namespace},
        {shim::kContainerName, launch.container_name},
        {shim::kLabels, launch.labels},
    };
    // Invalid UTF-8 in a manifest's strings is replaced rather than thrown on.
    return doc.dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
}

Result<ShimRecord> read_record(const std::string& state_dir, const std::string& id) {
    std::string dir = container_dir(state_dir, id);
    ShimRecord r;
    r.id = id;
    auto config = read_json(dir + "/" + shim::kConfigFile, shim::kMaxConfigBytes);
    if (!config) {
        if (config.error().code == ErrorCode::NotFound && ::access(dir.c_str(), F_OK) != 0)
            return Error{ErrorCode::NotFound, "no container " + id + " in " + containers_dir(state_dir)};
        return config.error();
    }
    r.pod_uid = string_field(config.value(), shim::kPodUid);
    r.container_name = string_field(config.value(), shim::kContainerName);
    r.pod_name = string_field(config.value(), shim::kPodName);
    r.pod_namespace = string_field(config.value(), shim::kPodNamespace);
    // Containers started before labels existed have none: that is fine.
    if (auto it = config.value().find(shim::kLabels); it != config.value().end() && it->is_object())
        for (const auto& [k, v] : it->items())
            if (v.is_string()) r.labels[k] = v.get<std::string>();
    r.log_path = string_field(config.value(), shim::kLogPath);

    std::string state_path = dir + "/" + shim::kStateFile;
    auto state = read_json(state_path, kMaxStateBytes);
    if (state) {
        const json& s = state.value();
        auto shim_pid = int_field(s, shim::kShimPid, state_path);
        auto shim_start = int_field(s, shim::kShimStartTime, state_path);
        auto pid = int_field(s, shim::kPid, state_path);
        auto pid_start = int_field(s, shim::kPidStartTime, state_path);
        auto started = int_field(s, shim::kStartedAt, state_path);
        for (const auto* f : {&shim_pid, &shim_start, &pid, &pid_start, &started})
            if (!*f) return f->error();
        r.has_state = true;
        r.shim_pid = static_cast<pid_t>(shim_pid.value());
        r.shim_start_time = static_cast<std::uint64_t>(shim_start.value());
        r.pid = static_cast<pid_t>(pid.value());
        r.pid_start_time = static_cast<std::uint64_t>(pid_start.value());
        r.started_at_ms = started.value();
    } else if (state.error().code != ErrorCode::NotFound) {
        return state.error();
    }

    std::string exit_path = dir + "/" + shim::kExitFile;
    auto exit = read_json(exit_path, kMaxStateBytes);
    if (exit) {
        auto code = int_field(exit.value(), shim::kExitCode, exit_path);
        auto finished = int_field(exit.value(), shim::kFinishedAt, exit_path);
        if (!code) return code.error();
        if (!finished) return finished.error();
        r.has_exit = true;
        r.exit_code = static_cast<int>(code.value());
        r.finished_at_ms = finished.value();
        r.reason = string_field(exit.value(), shim::kReason);
    } else if (exit.error().code != ErrorCode::NotFound) {
        return exit.error();
    }
    return r;
}

ContainerInfo to_info(const ShimRecord& record, bool running) {
    ContainerInfo info;
    info.id = record.id;
    info.pod_uid = record.pod_uid;
    info.container_name = record.container_name;
    info.pod_name = record.pod_name;
    info.pod_namespace = record.pod_namespace;
    info.labels = record.labels;
    info.pid = record.pid;
    info.started_at_ms = record.started_at_ms;
    info.log_path = record.log_path;
    info.running = running && !record.has_exit;
    if (record.has_exit) {
        info.exit_code = record.exit_code;
        info.reason = record.reason;
        info.finished_at_ms = record.finished_at_ms;
    } else if (!info.running) {
        info.exit_code = 137;
        info.reason = "ContainerStatusUnknown";
    }
    return info;
}

Status record_lost_exit(const std::string& state_dir, const ShimRecord& record, const std::string& why) {
    // Unsupervised, the container's output would go nowhere and its exit
    // unseen: it goes, as it would with its pid namespace.
    if (record.has_state && proc::is_same_process(record.pid, record.pid_start_time)) {
        if (::kill(-record.pid, SIGKILL) != 0) ::kill(record.pid, SIGKILL);
    }
    auto now = std::chrono::duration_cast<std::chrono::milliseconds>(
                   std::chrono::system_clock::now().time_since_epoch())
                   .count();
    json doc = {{shim::kExitCode, 137},
                {shim::kSignal, 0},
                {shim::kReason, "ContainerStatusUnknown: " + why},
                {shim::kFinishedAt, static_cast<std::int64_t>(now)}};
    return write_file_atomic(container_dir(state_dir, record.id) + "/" + shim::kExitFile,
                             doc.dump(-1, ' ', false, json::error_handler_t::replace) + "\n");
}

Status write_file_atomic(const std::string& path, const std::string& data) {
    std::string tmp = path + ".tmp";
    int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) return io_error(tmp, {}, errno);
    std::size_t done = 0;
    int err = 0;
    while (done < data.size()) {
        ssize_t n = ::write(fd, data.data() + done, data.size() - done);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) {
            err = errno;
            break;
        }
        done += static_cast<std::size_t>(n);
    }
    if (::close(fd) != 0 && err == 0) err = errno;
    if (err == 0 && ::rename(tmp.c_str(), path.c_str()) != 0) err = errno;
    if (err != 0) {
        ::unlink(tmp.c_str());
        return io_error(path, {}, err);
    }
    return Ok{};
}

int open_verified_pidfd(pid_t pid, std::uint64_t start_time) {
    if (pid <= 0) return -1;
    int fd = proc::pidfd_open(pid);
    if (fd < 0) return -1;
    // Checked after the pidfd is open: if the pid named our process then,
    // the pidfd refers to it, whatever happens to the pid afterwards.
    if (!proc::is_same_process(pid, start_time)) {
        ::close(fd);
        return -1;
    }
    return fd;
}

}  // namespace daemonlet::platform::exec
