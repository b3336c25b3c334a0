// Revision numbering (core/revision_history.h), as the DaemonSet
// controller's history (pkg/controller/daemon/update.go constructHistory,
// dedupCurHistories; rows after its update_test.go and the rollout undo
// behaviour kubectl documents: the restored template becomes the newest
// revision).
#include <cstdint>
#include <string>
#include <vector>

#include "core/revision_history.h"

// CppUTest last: its leak-detection macros redefine new.
#include <CppUTest/TestHarness.h>

using namespace daemonlet;

namespace {

struct Rev {
    std::int64_t revision;
    const char* hash;
};

struct NumberRow {
    const char* name;
    std::vector<Rev> history;
    const char* hash;
    RevisionNumber expected;
};

const NumberRow kNumberRows[] = {
    {"constructHistory: no history, the first snapshot is revision 1", {}, "a", {1, true, 0}},
    {"constructHistory: a new template is maxRevision(old) + 1", {{1, "a"}, {2, "b"}}, "c", {3, true, 0}},
    {"constructHistory: the current template keeps its number", {{1, "a"}, {2, "b"}}, "b", {2, false, 0}},
    {"constructHistory: an older template back (rollout undo) is renumbered to maxRevision(old) + 1",
     {{1, "a"}, {2, "b"}, {3, "c"}},
     "a",
     {4, false, 1}},
    {"dedupCurHistories: of duplicates of the template, the highest number is kept",
     {{1, "a"}, {2, "b"}, {3, "a"}},
     "a",
     {3, false, 0}},
    {"dedupCurHistories then constructHistory: the highest duplicate, below another, is renumbered",
     {{1, "a"}, {2, "a"}, {3, "b"}},
     "a",
     {4, false, 2}},
    {"constructHistory: numbers with gaps (pruned history) continue from the highest",
     {{5, "a"}, {9, "b"}},
     "c",
     {10, true, 0}},
    {"constructHistory: cur.Revision < currRevision, a tie with an old one is renumbered too",
     {{2, "a"}, {2, "b"}},
     "a",
     {3, false, 2}},
};

}  // namespace

TEST_GROUP(RevisionHistory){};

TEST(RevisionHistory, NumbersAsTheDaemonSetControllersHistory) {
    for (const auto& row : kNumberRows) {
        std::vector<RevisionRecord> history;
        for (const auto& r : row.history) {
            RevisionRecord rec;
            rec.revision = r.revision;
            rec.hash = r.hash;
            history.push_back(rec);
        }
        const RevisionNumber got = number_revision(history, row.hash);
        CHECK_EQUAL_TEXT(row.expected.revision, got.revision, row.name);
        CHECK_EQUAL_TEXT(row.expected.is_new, got.is_new, row.name);
        CHECK_EQUAL_TEXT(row.expected.renumbered_from, got.renumbered_from, row.name);
    }
}
