// Facts about the machine the agent runs on.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace daemonlet::platform {

std::string host_name();       // gethostname(), empty on failure
std::string machine();         // uname -m, e.g. "aarch64"
std::int64_t wall_clock_ms();  // CLOCK_REALTIME, for people and timestamps
std::int64_t monotonic_ms();   // CLOCK_MONOTONIC, for durations that drive decisions
std::int64_t online_cpus();    // sysconf(_SC_NPROCESSORS_ONLN), at least 1
std::int64_t memory_bytes();   // physical memory, 0 when unknown
// The lowest oom_score_adj this process can give its children: none when
// it has CAP_SYS_RESOURCE (any score), else its own /proc/self/oom_score_adj
// (the kernel refuses a lower one without the capability); 0 when that
// cannot be read.
std::optional<int> oom_score_adj_floor();

}  // namespace daemonlet::platform
