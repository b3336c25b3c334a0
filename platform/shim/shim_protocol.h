// The on-disk protocol between the agent's exec runtime and daemonlet-shim.
// Header-only and dependency-free: both sides include it, and the shim stays
// a small, C-style program.
//
// One directory per container, <stateDir>/containers/<id>/ (id: 32 hex digits):
//
//   config.json  written by the agent before it starts the shim:
//                {"argv": [..], "env": ["K=V", ..], "cwd": "/",
//                 "graceSeconds": 30, "logPath": "/abs/0.log",
//                 "logMaxBytes": 10485760, "logMaxFiles": 5,
//                 "podUid": .., "podName": .., "podNamespace": ..,
//                 "containerName": .., "labels": {"k": "v", ..}}
//   state.json   written by the shim once the container's process runs:
//                {"shimPid": N, "shimStartTime": T, "pid": N,
//                 "pidStartTime": T, "startedAt": ms}
//                T is field 22 of /proc/<pid>/stat (clock ticks since boot):
//                a pid together with it names one process, even after the pid
//                is reused.
//   exit.json    written by the shim when the container has exited (or could
//                not start), just before the shim itself exits:
//                {"exitCode": N, "signal": N, "reason": "..",
//                 "finishedAt": ms}
//                exitCode is 128+N when killed by signal N; reason is
//                "Completed" (0), "Error", the signal's name ("SIGKILL"), or
//                "StartError: ..". The agent writes it instead when it finds
//                the shim gone without one ("ContainerStatusUnknown: ..").
//   shim.log     the shim's own stderr: diagnostics, sanitizer reports.
//   stop_grace   written by the agent just before it asks for a stop whose
//                grace period is not config.json's graceSeconds (what a
//                preStop hook left of it): decimal seconds. The shim reads
//                it when the stop signal comes; absent, graceSeconds holds.
//
// config.json, state.json and exit.json are written atomically (temporary
// file, then rename), so a reader sees all or nothing. They are not synced
// to disk: they describe live processes, which a power cut or kernel crash
// ends anyway, and the agent already treats a record it cannot read as a
// container whose shim is lost. An fsync pair costs 12 ms on the benchmark
// machine's disk (more on SD cards), twice per container start
// (bench/bench_agent), and wears flash for nothing.
//
// The shim is started as `daemonlet-shim <containerDir>` with fd 3 the write
// end of a pipe: it writes one byte there once state.json (kReadyRunning) or
// exit.json (kReadyExited) is in place, then closes it.
#pragma once

#include <cstddef>

namespace daemonlet::shim {

inline constexpr char kConfigFile[] = "config.json";
inline constexpr char kStateFile[] = "state.json";
inline constexpr char kExitFile[] = "exit.json";
inline constexpr char kShimLogFile[] = "shim.log";
inline constexpr char kStopGraceFile[] = "stop_grace";

// config.json
inline constexpr char kArgv[] = "argv";
inline constexpr char kEnv[] = "env";
inline constexpr char kCwd[] = "cwd";
inline constexpr char kGraceSeconds[] = "graceSeconds";
inline constexpr char kLogPath[] = "logPath";
inline constexpr char kLogMaxBytes[] = "logMaxBytes";
inline constexpr char kLogMaxFiles[] = "logMaxFiles";
inline constexpr char kPodUid[] = "podUid";
inline constexpr char kPodName[] = "podName";
inline constexpr char kPodNamespace[] = "podNamespace";
inline constexpr char kContainerName[] = "containerName";
inline constexpr char kLabels[] = "labels";
// state.json
inline constexpr char kShimPid[] = "shimPid";
inline constexpr char kShimStartTime[] = "shimStartTime";
inline constexpr char kPid[] = "pid";
inline constexpr char kPidStartTime[] = "pidStartTime";
inline constexpr char kStartedAt[] = "startedAt";
// exit.json
inline constexpr char kExitCode[] = "exitCode";
inline constexpr char kSignal[] = "signal";
inline constexpr char kReason[] = "reason";
inline constexpr char kFinishedAt[] = "finishedAt";

// argv[0] of a runc container's config.json: the rest is
// {<runc binary>, <runc root>, <bundle>, <id>}, and the shim makes and
// starts the container with `runc create` and `runc start` (shim_runc.h);
// its state.json pid is the container's init.
inline constexpr char kRuncMarker[] = "daemonlet-shim:runc";

inline constexpr int kReadyFd = 3;
inline constexpr char kReadyRunning = 'R';
inline constexpr char kReadyExited = 'X';

// Exit codes of a container that could not be started, as a shell reports
// them (127 not found, 126 found but not executable) and as containerd
// reports any other start failure (128).
inline constexpr int kExitNotFound = 127;
inline constexpr int kExitNotExecutable = 126;
inline constexpr int kExitStartError = 128;

// Limits: config.json (argv and env of a pod spec fit well within it) and
// the longest log line written as one record; longer lines are split into
// partial (P) records, as containerd's default max_container_log_line_size.
inline constexpr std::size_t kMaxConfigBytes = 1024 * 1024;
inline constexpr std::size_t kLogLineMax = 16 * 1024;

// The PATH a container gets when its env has none: runc's and containerd's.
inline constexpr char kDefaultPath[] = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

}  // namespace daemonlet::shim
