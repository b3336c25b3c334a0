// Taints and tolerations as Kubernetes 1.25 to 1.30 match them:
//   Toleration.ToleratesTaint, MatchToleration, Taint.ToString
//     (k8s.io/api/core/v1/toleration.go, taint.go);
//   TolerationsTolerateTaint, FindMatchingUntoleratedTaint
//     (k8s.io/component-helpers/scheduling/corev1/helpers.go and
//      pkg/apis/core/v1/helper/helpers.go, identical);
//   AddOrUpdateTolerationInPodSpec (pkg/apis/core/v1/helper/helpers.go);
//   AddOrUpdateDaemonPodTolerations (pkg/controller/daemon/util/daemonset_util.go).
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/model.h"

namespace daemonlet {

// ToleratesTaint:
//  1. a toleration with an effect only matches taints of that effect; an
//     empty effect matches every effect;
//  2. a toleration with a key only matches taints of that key; an empty key
//     (valid only with Exists) matches every key;
//  3. operator "" or Equal: values must be equal; Exists: any value;
//     anything else tolerates nothing (Gt and Lt come after 1.30, behind
//     the TaintTolerationComparisonOperators gate).
// tolerationSeconds plays no part.
bool tolerates_taint(const Toleration& toleration, const Taint& taint);

// TolerationsTolerateTaint: any one toleration suffices.
bool tolerations_tolerate_taint(const std::vector<Toleration>& tolerations, const Taint& taint);

// Which taints FindMatchingUntoleratedTaint looks at; an empty filter is
// upstream's nil filter and takes every taint.
using TaintFilter = std::function<bool(const Taint&)>;
bool is_no_schedule_or_no_execute(const Taint& taint);  // the DaemonSet placement filter
bool is_no_execute(const Taint& taint);                 // the keep-running filter

// FindMatchingUntoleratedTaint: the first taint, in node order, that passes
// the filter and that no toleration tolerates.
std::optional<Taint> find_matching_untolerated_taint(const std::vector<Taint>& taints,
                                                     const std::vector<Toleration>& tolerations,
                                                     const TaintFilter& filter = {});
// All of them, in node order, for reasons.
std::vector<Taint> untolerated_taints(const std::vector<Taint>& taints,
                                      const std::vector<Toleration>& tolerations,
                                      const TaintFilter& filter = {});

// Taint.ToString: "key=value:effect", or "key:effect" without a value.
std::string taint_to_string(const Taint& taint);

// MatchToleration: same key, operator, value and effect (tolerationSeconds
// is not compared). Tolerations are unique by these four upstream.
bool match_toleration(const Toleration& a, const Toleration& b);

// AddOrUpdateTolerationInPodSpec: every toleration of the spec that
// MatchToleration-matches `toleration` is replaced in place by it (so a
// matching toleration with tolerationSeconds loses them, and duplicates stay
// duplicates); when none matches, it is appended. Upstream's "already equal,
// nothing to do" early return compares a *Toleration with a Toleration and so
// never fires; the result is the same list either way.
void add_or_update_toleration(PodSpec& spec, const Toleration& toleration);

// AddOrUpdateDaemonPodTolerations, in upstream's order:
//   node.kubernetes.io/not-ready         Exists NoExecute
//   node.kubernetes.io/unreachable       Exists NoExecute
//   node.kubernetes.io/disk-pressure     Exists NoSchedule
//   node.kubernetes.io/memory-pressure   Exists NoSchedule
//   node.kubernetes.io/pid-pressure      Exists NoSchedule
//   node.kubernetes.io/unschedulable     Exists NoSchedule
//   node.kubernetes.io/network-unavailable Exists NoSchedule (hostNetwork pods only)
// none with tolerationSeconds, so DaemonSet pods survive taint-based eviction.
void add_daemon_tolerations(PodSpec& spec);

}  // namespace daemonlet
