#include "core/revision_history.h"

#include <algorithm>

namespace daemonlet {

RevisionNumber number_revision(const std::vector<RevisionRecord>& history, const std::string& hash) {
    std::int64_t max_old = 0;  // maxRevision(old)
    std::int64_t cur = 0;      // dedupCurHistories: the highest record of the template
    for (const auto& r : history) {
        if (r.hash == hash)
            cur = std::max(cur, r.revision);
        else
            max_old = std::max(max_old, r.revision);
    }
    RevisionNumber out;
    out.revision = max_old + 1;
    if (cur == 0) {
        out.is_new = true;
        return out;
    }
    if (cur < out.revision) {
        out.renumbered_from = cur;
        return out;
    }
    out.revision = cur;
    return out;
}

}  // namespace daemonlet
