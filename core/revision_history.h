// A DaemonSet's revision numbers, as the DaemonSet controller's history
// gives them (pkg/controller/daemon/update.go constructHistory and
// dedupCurHistories): pure over the recorded history; the agent
// (agent/daemon/desired_daemonsets.cpp record_revision) writes what this says to the store.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/pod.h"

namespace daemonlet {

// The revision number of the template `hash` given the history:
//   - no record has the template: a new one, numbered 1 + the highest of
//     the others (constructHistory: snapshot(ds, maxRevision(old) + 1));
//   - records have it (dedupCurHistories keeps the highest of them) and that
//     number is below 1 + the highest of the others: the template is back
//     (an undo, or a file edited back), and its records, and the pods that
//     run it, are renumbered to that (constructHistory's Update of
//     cur.Revision); upstream deletes the duplicates, the store keeps them,
//     renumbered alike;
//   - else its number stands.
struct RevisionNumber {
    std::int64_t revision = 0;         // the template's number now
    bool is_new = false;               // record a new revision numbered `revision`
    std::int64_t renumbered_from = 0;  // nonzero: the records of `hash` had this number
};
RevisionNumber number_revision(const std::vector<RevisionRecord>& history, const std::string& hash);

}  // namespace daemonlet
