// Int-or-percent values and the DaemonSet rolling-update budgets, as
// Kubernetes 1.25 to 1.30 compute them:
//   intstr.GetScaledValueFromIntOrPercent (k8s.io/apimachinery/pkg/util/intstr);
//   SurgeCount, UnavailableCount (pkg/controller/daemon/util/daemonset_util.go);
//   the tail of DaemonSetsController.updatedDesiredNodeCounts (update.go).
// The DaemonSet controller rounds percentages UP for both maxSurge and
// maxUnavailable, so "10%" of one node is 1, not 0. On a single board the
// number of nodes to schedule is 1 when the DaemonSet should run here.
#pragma once

#include <cstdint>
#include <optional>

#include "core/model.h"
#include "core/result.h"

namespace daemonlet {

// GetScaledValueFromIntOrPercent: an int is itself; a string must be an
// integer followed by '%' (parsed like strconv.Atoi) and scales `total`,
// ceil when round_up, floor otherwise. Errors, with upstream's texts:
//   nullopt:   "nil value for IntOrString"
//   "90":      "invalid value for IntOrString: invalid type: string is not a percentage"
//   "#%":      "invalid value for IntOrString: invalid value \"#%\": strconv.Atoi: parsing \"#\": invalid
//   syntax"
Result<std::int64_t> scaled_value_from_int_or_percent(const std::optional<IntOrString>& value,
                                                      std::int64_t total, bool round_up);

// SurgeCount: 0 unless updateStrategy.type is RollingUpdate with a
// rollingUpdate and a maxSurge; then maxSurge scaled, rounded up.
Result<std::int64_t> surge_count(const DaemonSet& ds, std::int64_t number_to_schedule);

// UnavailableCount: 0 unless updateStrategy.type is RollingUpdate with a
// rollingUpdate; then maxUnavailable scaled, rounded up (an unset
// maxUnavailable there is the "nil value" error; defaulting sets it to 1).
Result<std::int64_t> unavailable_count(const DaemonSet& ds, std::int64_t number_to_schedule);

// The budgets a rolling update works with (updatedDesiredNodeCounts): both
// counts, and when the DaemonSet is wanted somewhere but allows neither surge
// nor unavailability, maxUnavailable = 1 so the update can progress. Errors
// are prefixed "invalid value for MaxUnavailable: " / "... for MaxSurge: ".
struct RollingUpdateBudget {
    std::int64_t max_surge = 0;
    std::int64_t max_unavailable = 0;
};
Result<RollingUpdateBudget> rolling_update_budget(const DaemonSet& ds, std::int64_t desired_number_scheduled);

}  // namespace daemonlet
