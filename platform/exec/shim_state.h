// The agent's side of the on-disk protocol with daemonlet-shim (described in
// shim_protocol.h): where a container's files live, the config.json the agent
// writes, and the state.json / exit.json the shim writes, read back into one
// record. No libuv here: the exec runtime does the watching.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <string>

#include "core/result.h"
#include "platform/runtime.h"

namespace daemonlet::platform::exec {

// <stateDir>/containers
std::string containers_dir(const std::string& state_dir);
// <stateDir>/containers/<id>
std::string container_dir(const std::string& state_dir, const std::string& id);
// <stateDir>/logs/<namespace>_<pod>_<uid>/<container>/<restartCount>.log, as
// kubelet's /var/log/pods.
std::string log_path(const std::string& state_dir, const ContainerLaunch& launch);

// A fresh container id: 32 random hex digits.
std::string new_container_id();
// True for what new_container_id() makes, so that an id is never a path.
bool is_container_id(const std::string& id);

// Rejects what the exec runtime cannot run or store: no command, names that
// are not one path component, env names with '=', NUL bytes, a relative
// working directory, a config over kMaxConfigBytes.
Status validate_launch(const ContainerLaunch& launch);

// config.json for `launch`: the env as "K=V" with PATH defaulted
// (kDefaultPath), the working directory defaulted to "/".
std::string config_json(const ContainerLaunch& launch, const std::string& log_path);

// Everything the files of one container say.
struct ShimRecord {
    std::string id;
    std::string pod_uid;
    std::string container_name;
    std::string pod_name;
    std::string pod_namespace;
    std::map<std::string, std::string> labels;
    std::string log_path;
    bool has_state = false;  // state.json: the container was started
    pid_t shim_pid = 0;
    std::uint64_t shim_start_time = 0;
    pid_t pid = 0;
    std::uint64_t pid_start_time = 0;
    std::int64_t started_at_ms = 0;
    bool has_exit = false;  // exit.json: the container has exited
    int exit_code = 0;
    std::string reason;
    std::int64_t finished_at_ms = 0;
};

// Reads the container's files. Fails with code "not_found" when there is no
// such container, "corrupt" when a file is not what the protocol says.
Result<ShimRecord> read_record(const std::string& state_dir, const std::string& id);

// The record as the Runtime interface reports it. A container without
// exit.json that is not running lost its shim: reported as kubelet reports a
// container it cannot find (137, ContainerStatusUnknown).
ContainerInfo to_info(const ShimRecord& record, bool running);

// For a container whose shim is gone without writing exit.json (killed, or
// never started it): kills what is left of the container if it is still the
// recorded process, and writes exit.json (137, "ContainerStatusUnknown: <why>").
Status record_lost_exit(const std::string& state_dir, const ShimRecord& record, const std::string& why);

// Writes `path` atomically: temporary file, then rename. Not synced to disk:
// see shim_protocol.h for why the container records need not be.
Status write_file_atomic(const std::string& path, const std::string& data);

// Opens a pidfd on `pid` if it is still the process that started at
// `start_time`; -1 otherwise (gone, zombie, or its pid reused).
int open_verified_pidfd(pid_t pid, std::uint64_t start_time);

}  // namespace daemonlet::platform::exec
