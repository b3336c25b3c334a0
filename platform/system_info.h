// Facts about the machine the agent runs on.
#pragma once

#include <cstdint>
#include <string>

namespace daemonlet::platform {

std::string host_name();       // gethostname(), empty on failure
std::string machine();         // uname -m, e.g. "aarch64"
std::int64_t wall_clock_ms();  // CLOCK_REALTIME, for people and timestamps
std::int64_t monotonic_ms();   // CLOCK_MONOTONIC, for durations that drive decisions
std::int64_t online_cpus();    // sysconf(_SC_NPROCESSORS_ONLN), at least 1
std::int64_t memory_bytes();   // physical memory, 0 when unknown

}  // namespace daemonlet::platform
