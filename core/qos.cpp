#include "core/qos.h"
#include "core/quantity.h"

#include <algorithm>
#include <limits>
#include <map>
#include <set>
#include <string>

namespace daemonlet {

namespace {

// isSupportedQoSComputeResource: cpu and memory.
bool qos_resource(const std::string& name) { return name == "cpu" || name == "memory"; }

// A container's requests as the API server's defaulting leaves them: a
// limit without a request is the request too (SetDefaults_Pod).
std::map<std::string, Quantity> defaulted_requests(const Container& c) {
    std::map<std::string, Quantity> r = c.resources.requests;
    for (const auto& [name, q] : c.resources.limits) r.emplace(name, q);
    return r;
}

std::int64_t memory_request_bytes(const Container& c) {
    auto r = defaulted_requests(c);
    auto m = r.find("memory");
    return m == r.end() ? 0 : std::max<std::int64_t>(0, m->second.value());
}

bool is_sidecar(const PodSpec& spec, const Container& c) {
    for (const auto& ic : spec.init_containers)
        if (&ic == &c || ic.name == c.name) return ic.restart_policy == "Always";
    return false;
}

}  // namespace

const char* to_string(QOSClass c) {
    switch (c) {
    case QOSClass::Guaranteed: return "Guaranteed";
    case QOSClass::Burstable: return "Burstable";
    case QOSClass::BestEffort: return "BestEffort";
    }
    return "BestEffort";
}

QOSClass pod_qos_class(const PodSpec& spec) {
    std::map<std::string, std::int64_t> requests;  // milli-units, summed
    std::map<std::string, std::int64_t> limits;
    bool guaranteed = true;
    auto add = [](const std::map<std::string, Quantity>& from, std::map<std::string, std::int64_t>& to,
                  std::set<std::string>* found) {
        for (const auto& [name, q] : from) {
            if (!qos_resource(name) || q.milli <= 0) continue;
            to[name] = saturating_add(to[name], q.milli);
            if (found) found->insert(name);
        }
    };
    auto each = [&](const Container& c) {
        add(defaulted_requests(c), requests, nullptr);
        std::set<std::string> limits_found;
        add(c.resources.limits, limits, &limits_found);
        if (!limits_found.count("cpu") || !limits_found.count("memory")) guaranteed = false;
    };
    for (const auto& c : spec.init_containers) each(c);
    for (const auto& c : spec.containers) each(c);
    if (requests.empty() && limits.empty()) return QOSClass::BestEffort;
    if (!guaranteed) return QOSClass::Burstable;
    for (const auto& [name, req] : requests) {
        auto l = limits.find(name);
        if (l == limits.end() || l->second != req) return QOSClass::Burstable;
    }
    return requests.size() == limits.size() ? QOSClass::Guaranteed : QOSClass::Burstable;
}

bool is_node_critical_pod(const PodSpec& spec) { return spec.priority_class_name == "system-node-critical"; }

int container_oom_score_adj(const PodSpec& spec, const Container& container,
                            std::int64_t memory_capacity_bytes) {
    if (is_node_critical_pod(spec)) return kGuaranteedOOMScoreAdj;
    switch (pod_qos_class(spec)) {
    case QOSClass::Guaranteed: return kGuaranteedOOMScoreAdj;
    case QOSClass::BestEffort: return kBestEffortOOMScoreAdj;
    case QOSClass::Burstable: break;
    }
    const std::int64_t capacity = std::max<std::int64_t>(1, memory_capacity_bytes);
    // 1000 * request / capacity: a request beyond the node's memory is the
    // floor below anyway, and one below it (a node's memory, well under
    // 2^53 bytes) times 1000 stays within int64.
    auto adjust = [&](std::int64_t request) -> std::int64_t {
        if (request >= capacity) return 0;
        return 1000 - (1000 * request) / capacity;
    };
    std::int64_t score = adjust(memory_request_bytes(container));
    // The sidecar rule (SidecarContainers): no higher than the pod's
    // regular container with the smallest memory request.
    if (is_sidecar(spec, container) && !spec.containers.empty()) {
        std::int64_t min_request = std::numeric_limits<std::int64_t>::max();
        for (const auto& c : spec.containers) min_request = std::min(min_request, memory_request_bytes(c));
        score = std::min(score, adjust(min_request));
    }
    // Burstable above Guaranteed (a Guaranteed pod using all the memory
    // scores 10), and below BestEffort.
    if (score < 1000 + kGuaranteedOOMScoreAdj) return 1000 + kGuaranteedOOMScoreAdj;
    if (score == kBestEffortOOMScoreAdj) return static_cast<int>(score - 1);
    return static_cast<int>(score);
}

int restrict_oom_score_adj(int wanted, std::optional<int> floor) {
    return floor ? std::max(wanted, *floor) : wanted;
}

}  // namespace daemonlet
