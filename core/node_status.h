// The board as a Node of the cluster (apiServer.registerNode): what the
// kubelet posts for its node, computed from the board's own measurements.
// Pure: measurements, facts and times come in as values.
//
// - node_conditions: Ready, MemoryPressure, DiskPressure, PIDPressure as
//   pkg/kubelet/nodestatus/setters.go ReadyCondition, MemoryPressureCondition,
//   DiskPressureCondition and PIDPressureCondition write them (reasons and
//   messages verbatim), the pressures from the eviction manager's signals
//   (pkg/kubelet/eviction) against the kubelet's default hard thresholds
//   (defaults_linux.go DefaultEvictionHard: memory.available<100Mi,
//   nodefs.available<10%, nodefs.inodesFree<5%, imagefs.available<15%;
//   pid.available has no default, so PIDPressure is True only with one set)
//   and its evictionPressureTransitionPeriod (5 min): a pressure stays True
//   until its threshold has been unmet that long.
// - node_status: the whole v1 NodeStatus (conditions, addresses, capacity,
//   allocatable, nodeInfo) as the setters fill it; lastTransitionTime is
//   kept from the Node as the API server has it while the status holds.
// - node_status_patch: the strategic-merge patch nodeutil.PatchNodeStatus
//   sends (CreateTwoWayMergePatch of the old and new Node, spec excluded,
//   addresses replaced whole with "$patch": "replace" when they changed).
// - node_status_changed / status_report_due: kubelet_node_status.go
//   nodeStatusHasChanged (heartbeat times ignored) and the
//   nodeStatusReportFrequency (5 min) rule of tryUpdateNodeStatus.
// - lease_gap_reposts_status: where the agent departs from
//   tryUpdateNodeStatus (it does not GET the Node every 10 s) and makes up
//   for the node lifecycle controller's tryUpdateNodeHealth /
//   doNoExecuteTaintingPass (Ready Unknown, unreachable taints) on a Lease
//   renewed late.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/json.h"
#include "core/model.h"

namespace daemonlet {

// What the board measured; -1 where a measurement failed (no pressure is
// concluded from what was not measured).
struct NodeMeasurements {
    std::int64_t cpus = 1;
    std::int64_t memory_capacity = 0;    // bytes, /proc/meminfo MemTotal
    std::int64_t memory_available = -1;  // bytes, MemAvailable
    // nodefs: the filesystem of the agent's state directory (kubelet's root dir).
    std::int64_t nodefs_capacity = 0, nodefs_available = -1;
    std::int64_t nodefs_inodes = 0, nodefs_inodes_free = -1;
    // imagefs: the filesystem of the image store.
    std::int64_t imagefs_capacity = 0, imagefs_available = -1;
    std::int64_t pid_max = 0, pids = -1;  // kernel.pid_max, processes running
};

// The kubelet's hard eviction thresholds (only the defaults are used).
struct EvictionThresholds {
    std::int64_t memory_available = 100 << 20;  // bytes
    // Fractions of capacity, float32 as the kubelet's ThresholdValue.Percentage.
    float nodefs_available = 0.10f;
    float nodefs_inodes_free = 0.05f;
    float imagefs_available = 0.15f;
    std::optional<std::int64_t> pid_available;  // processes; none by default
    // evictionPressureTransitionPeriod
    std::int64_t pressure_transition_period_ms = 5 * 60'000;
};

// When each pressure's threshold was last met (monotonic ms; none: never).
struct PressureObservations {
    std::optional<std::int64_t> memory, disk, pid;
};

struct NodePressure {
    bool memory = false, disk = false, pid = false;
    bool operator==(const NodePressure&) const = default;
};

// The eviction manager's synchronize step for node conditions:
// thresholdsMet, then nodeConditionsObservedSince over the transition period.
NodePressure observe_pressure(const NodeMeasurements& m, const EvictionThresholds& t, std::int64_t now_ms,
                              PressureObservations& seen);

// Facts for status.nodeInfo (empty strings are left out).
struct NodeFacts {
    std::string machine_id, system_uuid, boot_id, kernel_version, os_image;
    std::string operating_system = "linux";
    std::string architecture;  // GOARCH
    std::string container_runtime_version;
    std::string kubelet_version;
};

// "v1.30.0-daemonlet-<version>": the Kubernetes semantics followed, and daemonlet.
std::string kubelet_version_string(const std::string& daemonlet_version);

struct NodeStatusInput {
    NodeMeasurements measurements;
    NodePressure pressure;
    NodeFacts facts;
    std::vector<std::string> ips;  // the node's IPs, the primary first (InternalIP)
    std::string hostname;          // Hostname address
    bool runtime_ready = true;
    std::string runtime_message;  // why not ready
    std::int64_t max_pods = 110;  // kubelet's maxPods default
    EvictionThresholds thresholds;
};

// A v1 resource quantity as the API server prints it: the largest binary
// suffix (Ki, Mi, Gi, Ti) that divides the bytes, else plain bytes.
std::string binary_quantity(std::int64_t bytes);

// The v1 NodeStatus; `current`: the Node as the API server has it (for
// lastTransitionTime), or null.
Json node_status(const NodeStatusInput& in, const Json* current, std::int64_t now_wall_ms);

// The Node the board registers (tryRegisterWithAPIServer's POST body):
// `local` (make_local_node: the automatic labels, nodeLabels, the
// registration taints) with `status`.
Json registration_node(const Json& local_object, const Json& status);

// The patch of PatchNodeStatus from `old_node` (as the server has it) to
// `status`, plus the labels the kubelet reconciles on an existing Node
// (updateDefaultLabels at registration; kubernetes.io/os and arch on every
// update): labels of `reconcile` whose value differs. {} when nothing
// differs. Spec is never in it, nor any other label: what an admin set stays.
Json node_status_patch(const Json& old_node, const Json& status, const Labels& reconcile);

// nodeStatusHasChanged: the statuses differ other than in lastHeartbeatTime.
bool node_status_changed(const Json& last_posted, const Json& status);

// tryUpdateNodeStatus: post when the status changed or
// nodeStatusReportFrequency (5 min) has passed since the last post.
inline constexpr std::int64_t kNodeStatusReportFrequencyMs = 5 * 60'000;
bool status_report_due(bool changed, std::optional<std::int64_t> last_report_ms, std::int64_t now_ms);

// The kubelet's tryUpdateNodeStatus GETs the Node every 10 s and posts when
// the server's status differs, so a Node the node lifecycle controller set
// Ready=Unknown and tainted unreachable (tryUpdateNodeHealth,
// doNoExecuteTaintingPass: the Lease not renewed for its grace) is posted
// Ready again at once. The agent compares against its own last post (no
// idle GET); instead, a Lease renewal that succeeds more than 1.5 renew
// intervals after the previous successful one (the agent or its board was
// paused, or the renewals failed: the controller may have seen the Lease
// stale) reads and posts the Node's status at once. `previous_ms` and
// `now_ms` on the monotonic clock (it goes on during a pause); no previous
// renewal: false (the first post follows registration anyway).
bool lease_gap_reposts_status(std::optional<std::int64_t> previous_ms, std::int64_t now_ms,
                              std::int64_t renew_interval_ms);

}  // namespace daemonlet
