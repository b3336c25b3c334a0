// A container's end by the OOM killer, from its memory cgroup's counters.
// Rows are real file contents: cgroup v1 memory.oom_control (Linux
// mm/memcontrol.c mem_cgroup_oom_control_read; oom_kill since 4.13) and
// cgroup v2 memory.events (memory_events_show; oom_group_kill since 5.17),
// as runc's libcontainer reads them for `runc events` (cgroups/fs
// memory.go and cgroups/fs2 memory.go: the "oom_kill" key). The reason rows
// pin containerd's CRI plugin (pkg/cri/server/events.go TaskOOM:
// status.Reason = oomExitReason; container_status.go toCRIContainerStatus:
// no reason -> Completed for 0, Error otherwise).
#include <cstdint>
#include <optional>
#include <string>

#include "core/cgroup_oom.h"

// CppUTest last: its leak-detection macros redefine new.
#include <CppUTest/TestHarness.h>

using namespace daemonlet;

namespace {

struct CounterRow {
    const char* name;
    const char* text;
    std::optional<std::uint64_t> expected;
};

const CounterRow kCounterRows[] = {
    {"v1 memory.oom_control after one OOM kill (this machine, runc 1.1.5, kernel 6.18)",
     "oom_kill_disable 0\nunder_oom 0\noom_kill 1\n", 1},
    {"v1 memory.oom_control of a cgroup that never hit its limit",
     "oom_kill_disable 0\nunder_oom 0\noom_kill 0\n", 0},
    {"v1 with the OOM killer disabled and the cgroup under OOM: oom_kill_disable and under_oom are no kills",
     "oom_kill_disable 1\nunder_oom 1\noom_kill 0\n", 0},
    {"v1 before Linux 4.13: no oom_kill line, nothing to tell", "oom_kill_disable 0\nunder_oom 0\n",
     std::nullopt},
    {"v2 memory.events after OOM kills: oom (OOM events) and oom_group_kill are other keys",
     "low 0\nhigh 0\nmax 37\noom 2\noom_kill 3\noom_group_kill 0\n", 3},
    {"v2 memory.events before 5.17 (no oom_group_kill line)", "low 0\nhigh 0\nmax 0\noom 0\noom_kill 0\n", 0},
    {"v2 memory.events with oom_group_kill counted but the key itself absent", "oom 1\noom_group_kill 1\n",
     std::nullopt},
    {"the last line without its newline", "oom_kill_disable 0\nunder_oom 0\noom_kill 12", 12},
    {"a counter beyond 32 bits", "oom_kill 4294967296\n", 4294967296ULL},
    {"a value that is not a number is no count", "oom_kill many\n", std::nullopt},
    {"trailing garbage after the value is no count", "oom_kill 1x\n", std::nullopt},
    {"a key with no value is no count", "oom_kill \n", std::nullopt},
    {"an empty file", "", std::nullopt},
};

struct ReasonRow {
    const char* name;
    int exit_code;
    std::uint64_t oom_kills;
    const char* runtime_reason;
    const char* expected;
};

const ReasonRow kReasonRows[] = {
    {"TaskOOM then exit 137 (the main process SIGKILLed by the OOM killer): OOMKilled", 137, 1, "Error",
     "OOMKilled"},
    {"TaskOOM of a child, then the shell exits 1: OOMKilled, as containerd keeps the OOM reason", 1, 1,
     "Error", "OOMKilled"},
    {"a container that exited by the signal itself (no runc in between) reports SIGKILL without OOM", 137, 0,
     "SIGKILL", "SIGKILL"},
    {"kill -9 from outside, no OOM in the cgroup: Error (no false OOMKilled)", 137, 0, "Error", "Error"},
    {"a child OOM-killed but the container completed: Completed (daemonlet asks for a failed exit)", 0, 1,
     "Completed", "Completed"},
    {"no OOM and exit 0: Completed", 0, 0, "Completed", "Completed"},
};

}  // namespace

TEST_GROUP(CgroupOom){};

TEST(CgroupOom, OomKillCountReadsTheOomKillLineOfBothCgroupVersions) {
    for (const auto& row : kCounterRows) {
        const auto got = oom_kill_count(row.text);
        const std::string what = std::string(row.name) + ": got " + (got ? std::to_string(*got) : "none") +
                                 ", expected " + (row.expected ? std::to_string(*row.expected) : "none");
        CHECK_TEXT(got == row.expected, what.c_str());
    }
}

TEST(CgroupOom, AFailedExitAfterAnOomKillIsOomKilledAndNothingElseIs) {
    for (const auto& row : kReasonRows) {
        const char* got =
            ended_by_oom_kill(row.exit_code, row.oom_kills) ? kOomKilledReason : row.runtime_reason;
        STRCMP_EQUAL_TEXT(row.expected, got, row.name);
    }
}
