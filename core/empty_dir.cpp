// A Memory emptyDir's tmpfs size: see empty_dir.h.
#include "core/empty_dir.h"
#include "core/quantity.h"

#include <algorithm>
#include <limits>

namespace daemonlet {
namespace {

std::int64_t memory_limit(const Container& c) {
    auto it = c.resources.limits.find("memory");
    return it == c.resources.limits.end() ? 0 : std::max<std::int64_t>(0, it->second.value());
}

}  // namespace

std::optional<std::int64_t> pod_memory_limit(const PodSpec& spec) {
    bool declared = true;  // memoryLimitsDeclared: ContainerFn saw no zero
    std::int64_t sum = 0;
    for (const auto& c : spec.containers) {
        const std::int64_t m = memory_limit(c);
        if (m == 0) declared = false;
        sum = saturating_add(sum, m);
    }
    // InitContainerUse(i) = the sidecars before i + the i-th init container.
    std::int64_t sidecars = 0, init_max = 0;
    for (const auto& c : spec.init_containers) {
        const std::int64_t m = memory_limit(c);
        std::int64_t use = 0;
        if (c.restart_policy == "Always") {
            sum = saturating_add(sum, m);
            sidecars = saturating_add(sidecars, m);
            use = sidecars;
        } else {
            use = saturating_add(m, sidecars);
        }
        if (use == 0) declared = false;
        init_max = std::max(init_max, use);
    }
    if (!declared) return std::nullopt;
    return std::max(sum, init_max);
}

std::optional<std::int64_t> empty_dir_memory_size(const Volume& v, const PodSpec& spec,
                                                  std::optional<std::int64_t> node_allocatable_memory) {
    if (v.source != Volume::Source::EmptyDir || v.empty_dir_medium != "Memory") return std::nullopt;
    std::optional<std::int64_t> size = node_allocatable_memory;
    // "ensure 0 < value < size" (Cmp < 1: not above it); no size known: any.
    auto lower_to = [&](std::optional<std::int64_t> bound) {
        if (bound && *bound > 0 && (!size || *bound <= *size)) size = bound;
    };
    lower_to(pod_memory_limit(spec));
    if (v.empty_dir_size_limit) lower_to(v.empty_dir_size_limit->value());
    if (!size || *size <= 0) return std::nullopt;  // setupTmpfs: no size= option
    return size;
}

}  // namespace daemonlet
