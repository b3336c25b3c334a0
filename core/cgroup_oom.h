// Whether the kernel's OOM killer ended a container, from its memory
// cgroup's counters: what containerd's CRI plugin learns from the shim's
// TaskOOM event (runc's `runc events` watches the same counters) and turns
// into the container's reason "OOMKilled" (pkg/cri/server/events.go
// handleEvent TaskOOM: status.Reason = oomExitReason). The kubelet keeps
// the runtime's reason (kuberuntime_container.go toKubeContainerStatus).
//
// The counters, read by platform/ before `runc delete` removes the cgroup:
//   cgroup v1  memory.oom_control  "oom_kill_disable 0\nunder_oom 0\noom_kill N\n"
//              (the oom_kill line since Linux 4.13)
//   cgroup v2  memory.events       "low 0\nhigh 0\nmax N\noom N\noom_kill N\noom_group_kill N\n"
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace daemonlet {

// The value of the "oom_kill" line of memory.oom_control (v1) or
// memory.events (v2): how many processes of the cgroup the OOM killer
// killed. None when the text has no such line (a kernel before 4.13) or its
// value is not a decimal number. Other keys ("oom_kill_disable", "oom",
// "oom_group_kill") never count.
std::optional<std::uint64_t> oom_kill_count(std::string_view counters);

inline constexpr char kOomKilledReason[] = "OOMKilled";

// Whether a container that exited with `exit_code` (128+N for signal N)
// after `oom_kills` OOM kills in its cgroup ended by the OOM killer: it
// exited non-zero and the cgroup saw at least one kill. Its reason is then
// kOomKilledReason; otherwise the runtime's ("Error", "SIGKILL", ...)
// stands. containerd marks any container whose cgroup saw an OOM event;
// daemonlet asks for a failed exit too, so a container that survived the
// kill of one of its children and then completed says Completed, as it did.
bool ended_by_oom_kill(int exit_code, std::uint64_t oom_kills);

}  // namespace daemonlet
