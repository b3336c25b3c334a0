// Taint / toleration matching and the DaemonSet controller's default
// tolerations, Kubernetes 1.25 to 1.30. See taints.h for the upstream files.
#include "core/taints.h"

#include <algorithm>

namespace daemonlet {
namespace {

using taints::kNoExecute;
using taints::kNoSchedule;

bool passes(const TaintFilter& filter, const Taint& taint) { return !filter || filter(taint); }

Toleration exists_toleration(const char* key, const char* effect) {
    Toleration t;
    t.key = key;
    t.op = "Exists";
    t.effect = effect;
    return t;
}

}  // namespace

bool tolerates_taint(const Toleration& toleration, const Taint& taint) {
    if (!toleration.effect.empty() && toleration.effect != taint.effect) return false;
    if (!toleration.key.empty() && toleration.key != taint.key) return false;
    // Operator defaulting happens here rather than in the API, as upstream's
    // TODO says: empty means Equal.
    if (toleration.op.empty() || toleration.op == "Equal") return toleration.value == taint.value;
    return toleration.op == "Exists";
}

bool tolerations_tolerate_taint(const std::vector<Toleration>& tolerations, const Taint& taint) {
    return std::any_of(tolerations.begin(), tolerations.end(),
                       [&](const Toleration& t) { return tolerates_taint(t, taint); });
}

bool is_no_schedule_or_no_execute(const Taint& taint) {
    return taint.effect == kNoSchedule || taint.effect == kNoExecute;
}

bool is_no_execute(const Taint& taint) { return taint.effect == kNoExecute; }

std::optional<Taint> find_matching_untolerated_taint(const std::vector<Taint>& taints,
                                                     const std::vector<Toleration>& tolerations,
                                                     const TaintFilter& filter) {
    for (const auto& taint : taints)
        if (passes(filter, taint) && !tolerations_tolerate_taint(tolerations, taint)) return taint;
    return std::nullopt;
}

std::vector<Taint> untolerated_taints(const std::vector<Taint>& taints,
                                      const std::vector<Toleration>& tolerations, const TaintFilter& filter) {
    std::vector<Taint> out;
    for (const auto& taint : taints)
        if (passes(filter, taint) && !tolerations_tolerate_taint(tolerations, taint)) out.push_back(taint);
    return out;
}

std::string taint_to_string(const Taint& taint) {
    if (taint.value.empty()) return taint.key + ":" + taint.effect;
    return taint.key + "=" + taint.value + ":" + taint.effect;
}

bool match_toleration(const Toleration& a, const Toleration& b) {
    return a.key == b.key && a.effect == b.effect && a.op == b.op && a.value == b.value;
}

void add_or_update_toleration(PodSpec& spec, const Toleration& toleration) {
    bool updated = false;
    for (auto& t : spec.tolerations) {
        if (match_toleration(toleration, t)) {
            t = toleration;
            updated = true;
        }
    }
    if (!updated) spec.tolerations.push_back(toleration);
}

void add_daemon_tolerations(PodSpec& spec) {
    // Not-ready and unreachable NoExecute taints would otherwise evict the
    // pod when the node has problems: DaemonSet pods must stay.
    add_or_update_toleration(spec, exists_toleration(taints::kNotReady, kNoExecute));
    add_or_update_toleration(spec, exists_toleration(taints::kUnreachable, kNoExecute));
    // TaintNodesByCondition: DaemonSet pods tolerate the condition taints and
    // cordoning.
    add_or_update_toleration(spec, exists_toleration(taints::kDiskPressure, kNoSchedule));
    add_or_update_toleration(spec, exists_toleration(taints::kMemoryPressure, kNoSchedule));
    add_or_update_toleration(spec, exists_toleration(taints::kPIDPressure, kNoSchedule));
    add_or_update_toleration(spec, exists_toleration(taints::kUnschedulable, kNoSchedule));
    // Only a pod on the host network can work while the pod network is down.
    if (spec.host_network)
        add_or_update_toleration(spec, exists_toleration(taints::kNetworkUnavailable, kNoSchedule));
}

}  // namespace daemonlet
