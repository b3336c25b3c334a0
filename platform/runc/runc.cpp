// Drives the runc binary: see runc.h.
#include "platform/runc/runc.h"

#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "core/cgroup_oom.h"
#include "core/oci_spec.h"
#include "core/strings.h"
#include "platform/fd.h"
#include "platform/file.h"

namespace daemonlet::platform {
namespace {

// runc's answers are a state document or a line of error; more is cut.
constexpr std::size_t kMaxReadBytes = 1 << 20;

}  // namespace

Result<std::uint64_t> container_oom_kills(const std::string& runc_root, const std::string& id) {
    const std::string state_path = runc_root + "/" + id + "/state.json";
    auto state = read_file(state_path, kMaxReadBytes);
    if (!state) return state.error();
    const Json st = Json::parse(state.value(), nullptr, false);
    const Json paths = st.is_object() ? st.value("cgroup_paths", Json::object()) : Json::object();
    std::string counters;
    if (paths.is_object() && paths.contains("memory") && paths["memory"].is_string())
        counters = paths["memory"].get<std::string>() + "/memory.oom_control";
    else if (paths.is_object() && paths.contains("") && paths[""].is_string())
        counters = paths[""].get<std::string>() + "/memory.events";
    else
        return Error{ErrorCode::Runtime, state_path + ": cgroup_paths names no memory cgroup"};
    auto text = read_file(counters, 4096);
    if (!text) return text.error();
    auto kills = oom_kill_count(text.value());
    if (!kills)
        return Error{ErrorCode::Unsupported, counters + ": no oom_kill counter (Linux 4.13 or later has it)"};
    return *kills;
}

Result<std::vector<std::string>> current_capabilities() {
    auto status = read_file("/proc/self/status", kMaxReadBytes);
    if (!status) return status.error();
    const std::string& t = status.value();
    const auto at = t.find("\nCapEff:");
    if (at == std::string::npos) return Error{ErrorCode::Io, "/proc/self/status: no CapEff line"};
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
    if (ec) return Error{ErrorCode::Io, bundle + ": cannot create the bundle directory: " + ec.message()};
    // Its process's env may hold Secret values: the owner's alone.
    return replace_file(bundle + "/config.json", spec.dump(2) + "\n", "bundle", 0600);
}

std::vector<std::string> Runc::global_args() const {
    std::vector<std::string> args = {options_.binary, "--root", options_.root};
    if (options_.systemd_cgroup) args.emplace_back("--systemd-cgroup");
    return args;
}

Result<Runc::Output> Runc::execute(const std::vector<std::string>& args) const {
    auto r = run_command(args, kRuncDeadlineMs);
    if (!r && r.error().code == ErrorCode::NotFound)
        return Error{ErrorCode::NotFound, r.error().message + " (apt-get install runc)"};
    return r;
}

Status Runc::remove(const std::string& id) const {
    auto args = global_args();
    args.insert(args.end(), {"delete", "--force", id});
    auto r = execute(args);
    if (!r) return r.error();
    if (r.value().exit_code != 0) {
        const std::string err = trim(r.value().err);
        if (err.find("container does not exist") != std::string::npos) return Ok{};
        return Error{ErrorCode::Runtime, "runc delete " + id + ": " + err};
    }
    return Ok{};
}

}  // namespace daemonlet::platform
