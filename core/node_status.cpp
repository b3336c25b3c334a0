#include "core/node_status.h"

#include <algorithm>

#include "core/cluster_report.h"
#include "core/json_diff.h"

namespace daemonlet {

namespace {

// evictionapi.GetThresholdQuantity for a percentage: int64(capacity *
// float64(percentage)), the percentage a float32 as in the kubelet.
std::int64_t percent_of(std::int64_t capacity, float percentage) {
    return static_cast<std::int64_t>(static_cast<double>(capacity) * static_cast<double>(percentage));
}

// A measured value below a threshold; unmeasured values never are.
bool below(std::int64_t measured, std::int64_t threshold) { return measured >= 0 && measured < threshold; }

void observed(bool met, std::int64_t now_ms, std::optional<std::int64_t>& last) {
    if (met) last = now_ms;
}

bool within(const std::optional<std::int64_t>& last, std::int64_t now_ms, std::int64_t period_ms) {
    return last && now_ms - *last < period_ms;
}

// A string field of an object from the server; "" when absent or not a
// string (Json::value would throw on another type).
std::string text(const Json& o, const char* key) {
    if (!o.is_object()) return {};
    auto it = o.find(key);
    return it != o.end() && it->is_string() ? it->get<std::string>() : std::string();
}

const Json* find_condition(const Json* node, const std::string& type) {
    if (!node || !node->is_object() || !node->contains("status")) return nullptr;
    const Json& st = (*node)["status"];
    if (!st.is_object() || !st.contains("conditions") || !st["conditions"].is_array()) return nullptr;
    for (const Json& c : st["conditions"])
        if (text(c, "type") == type) return &c;
    return nullptr;
}

// A condition as the setters write it: lastTransitionTime kept while the
// status is the one the server has, now when it changes.
Json condition(const Json* current, const char* type, bool is_true, const char* reason,
               const std::string& message, const std::string& now) {
    const std::string status = is_true ? "True" : "False";
    std::string transition = now;
    if (const Json* old = find_condition(current, type); old && text(*old, "status") == status &&
                                                         old->contains("lastTransitionTime") &&
                                                         (*old)["lastTransitionTime"].is_string())
        transition = (*old)["lastTransitionTime"].get<std::string>();
    return Json{{"type", type},
                {"status", status},
                {"lastHeartbeatTime", now},
                {"lastTransitionTime", transition},
                {"reason", reason},
                {"message", message}};
}

Json strip_heartbeats(Json status) {
    if (!status.is_object() || !status.contains("conditions") || !status["conditions"].is_array())
        return status;
    Json& cs = status["conditions"];
    for (Json& c : cs)
        if (c.is_object()) c.erase("lastHeartbeatTime");
    std::sort(cs.begin(), cs.end(),
              [](const Json& a, const Json& b) { return text(a, "type") < text(b, "type"); });
    return status;
}

}  // namespace

NodePressure observe_pressure(const NodeMeasurements& m, const EvictionThresholds& t, std::int64_t now_ms,
                              PressureObservations& seen) {
    // thresholdsMet: memory.available, nodefs.available, nodefs.inodesFree,
    // imagefs.available, pid.available against their thresholds.
    const bool memory = below(m.memory_available, t.memory_available);
    const bool disk = below(m.nodefs_available, percent_of(m.nodefs_capacity, t.nodefs_available)) ||
                      below(m.nodefs_inodes_free, percent_of(m.nodefs_inodes, t.nodefs_inodes_free)) ||
                      below(m.imagefs_available, percent_of(m.imagefs_capacity, t.imagefs_available));
    const bool pid = t.pid_available && m.pids >= 0 && m.pid_max > 0 && m.pid_max - m.pids < *t.pid_available;
    observed(memory, now_ms, seen.memory);
    observed(disk, now_ms, seen.disk);
    observed(pid, now_ms, seen.pid);
    const std::int64_t p = t.pressure_transition_period_ms;
    return {within(seen.memory, now_ms, p), within(seen.disk, now_ms, p), within(seen.pid, now_ms, p)};
}

std::string kubelet_version_string(const std::string& daemonlet_version) {
    return "v1.30.0-daemonlet-" + daemonlet_version;
}

std::string binary_quantity(std::int64_t bytes) {
    if (bytes <= 0) return "0";
    static const char* const kSuffixes[] = {"Ki", "Mi", "Gi", "Ti", "Pi", "Ei"};
    int n = -1;
    while (n < 5 && bytes % 1024 == 0) {
        bytes /= 1024;
        ++n;
    }
    return std::to_string(bytes) + (n >= 0 ? kSuffixes[n] : "");
}

Json node_status(const NodeStatusInput& in, const Json* current, std::int64_t now_wall_ms) {
    const std::string now = rfc3339(now_wall_ms);
    const NodeMeasurements& m = in.measurements;
    // setters.go order: MemoryPressure, DiskPressure, PIDPressure, Ready.
    Json conditions = Json::array();
    conditions.push_back(in.pressure.memory
                             ? condition(current, "MemoryPressure", true, "KubeletHasInsufficientMemory",
                                         "kubelet has insufficient memory available", now)
                             : condition(current, "MemoryPressure", false, "KubeletHasSufficientMemory",
                                         "kubelet has sufficient memory available", now));
    conditions.push_back(in.pressure.disk
                             ? condition(current, "DiskPressure", true, "KubeletHasDiskPressure",
                                         "kubelet has disk pressure", now)
                             : condition(current, "DiskPressure", false, "KubeletHasNoDiskPressure",
                                         "kubelet has no disk pressure", now));
    conditions.push_back(in.pressure.pid
                             ? condition(current, "PIDPressure", true, "KubeletHasInsufficientPID",
                                         "kubelet has insufficient PID available", now)
                             : condition(current, "PIDPressure", false, "KubeletHasSufficientPID",
                                         "kubelet has sufficient PID available", now));
    conditions.push_back(
        in.runtime_ready
            ? condition(current, "Ready", true, "KubeletReady", "kubelet is posting ready status", now)
            : condition(current, "Ready", false, "KubeletNotReady",
                        in.runtime_message.empty() ? "container runtime is down" : in.runtime_message, now));

    // NodeAddress: the node IPs as InternalIP, then the Hostname.
    Json addresses = Json::array();
    for (const auto& ip : in.ips) addresses.push_back({{"type", "InternalIP"}, {"address", ip}});
    if (!in.hostname.empty()) addresses.push_back({{"type", "Hostname"}, {"address", in.hostname}});

    // MachineInfo: capacity from the machine, allocatable = capacity minus
    // the hard eviction thresholds (GetNodeAllocatableReservation; no
    // kube-reserved or system-reserved on a board).
    Json capacity = {{"cpu", std::to_string(m.cpus)},
                     {"memory", binary_quantity(m.memory_capacity)},
                     {"pods", std::to_string(in.max_pods)}};
    Json allocatable = {{"cpu", std::to_string(m.cpus)},
                        {"memory", binary_quantity(std::max<std::int64_t>(
                                       0, m.memory_capacity - in.thresholds.memory_available))},
                        {"pods", std::to_string(in.max_pods)}};
    if (m.nodefs_capacity > 0) {
        capacity["ephemeral-storage"] = binary_quantity(m.nodefs_capacity);
        allocatable["ephemeral-storage"] = binary_quantity(std::max<std::int64_t>(
            0, m.nodefs_capacity - percent_of(m.nodefs_capacity, in.thresholds.nodefs_available)));
    }

    // VersionInfo and MachineInfo's nodeInfo fields.
    Json info = Json::object();
    const NodeFacts& f = in.facts;
    for (auto [key, value] :
         {std::pair{"machineID", &f.machine_id}, std::pair{"systemUUID", &f.system_uuid},
          std::pair{"bootID", &f.boot_id}, std::pair{"kernelVersion", &f.kernel_version},
          std::pair{"osImage", &f.os_image},
          std::pair{"containerRuntimeVersion", &f.container_runtime_version},
          std::pair{"kubeletVersion", &f.kubelet_version}, std::pair{"operatingSystem", &f.operating_system},
          std::pair{"architecture", &f.architecture}})
        if (!value->empty()) info[key] = *value;

    return Json{{"conditions", std::move(conditions)},
                {"addresses", std::move(addresses)},
                {"capacity", std::move(capacity)},
                {"allocatable", std::move(allocatable)},
                {"nodeInfo", std::move(info)}};
}

Json registration_node(const Json& local_object, const Json& status) {
    Json node = local_object;
    node["status"] = status;
    return node;
}

Json node_status_patch(const Json& old_node, const Json& status, const Labels& reconcile) {
    Json patch = Json::object();
    const Json empty = Json::object();
    const Json& old_meta =
        old_node.is_object() && old_node.contains("metadata") ? old_node["metadata"] : empty;
    const Json& old_labels =
        old_meta.is_object() && old_meta.contains("labels") && old_meta["labels"].is_object()
            ? old_meta["labels"]
            : empty;
    for (const auto& [k, v] : reconcile)
        if (!old_labels.contains(k) || !json_same(old_labels[k], Json(v))) patch["metadata"]["labels"][k] = v;

    const Json& old_status =
        old_node.is_object() && old_node.contains("status") && old_node["status"].is_object()
            ? old_node["status"]
            : empty;
    Json st = Json::object();
    for (auto it = status.begin(); it != status.end(); ++it) {
        const std::string& key = it.key();
        const Json* have = old_status.contains(key) ? &old_status[key] : nullptr;
        if (have && json_same(*have, it.value())) continue;
        if (key == "conditions") {
            // patchMergeKey type: only the conditions that differ, and the
            // order of them all.
            Json changed = Json::array(), order = Json::array();
            for (const Json& c : it.value()) {
                order.push_back({{"type", c["type"]}});
                const Json* o = find_condition(&old_node, c["type"].get<std::string>());
                if (!o || !json_same(*o, c)) changed.push_back(c);
            }
            if (changed.empty()) continue;
            st["$setElementOrder/conditions"] = std::move(order);
            st["conditions"] = std::move(changed);
        } else if (key == "addresses") {
            // fixupPatchForNodeStatusAddresses: the list replaced whole once
            // the server has addresses (patchStrategy merge on type is wrong
            // for them: several InternalIPs).
            Json list = it.value();
            if (have && have->is_array() && !have->empty()) list.push_back({{"$patch", "replace"}});
            st["addresses"] = std::move(list);
        } else if (have && have->is_object() && it.value().is_object()) {
            Json d = json_merge_diff(*have, it.value());
            if (!d.empty()) st[key] = std::move(d);
        } else {
            st[key] = it.value();
        }
    }
    if (!st.empty()) patch["status"] = std::move(st);
    return patch;
}

bool node_status_changed(const Json& last_posted, const Json& status) {
    return !json_same(strip_heartbeats(last_posted), strip_heartbeats(status));
}

bool status_report_due(bool changed, std::optional<std::int64_t> last_report_ms, std::int64_t now_ms) {
    return changed || !last_report_ms || now_ms - *last_report_ms >= kNodeStatusReportFrequencyMs;
}

bool lease_gap_reposts_status(std::optional<std::int64_t> previous_ms, std::int64_t now_ms,
                              std::int64_t renew_interval_ms) {
    return previous_ms && now_ms - *previous_ms > renew_interval_ms + renew_interval_ms / 2;
}

}  // namespace daemonlet
