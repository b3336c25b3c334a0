// The merge of the DaemonSet sources into one desired set (core/source_merge.h),
// after the kubelet's pkg/kubelet/config mux: every source's objects in one
// place, conflicts settled by one rule. Each row names the rule it pins.
#include <string>
#include <vector>

#include "core/source_merge.h"

// CppUTest last: its leak-detection macros redefine new.
#include <CppUTest/TestHarness.h>

using namespace daemonlet;

namespace {

DaemonSetSource F(const char* p) { return DaemonSetSource::file(p); }
DaemonSetSource A() { return DaemonSetSource::api_server(); }

struct Winner {
    const char* key;
    DaemonSetSource source;
};

struct MergeRow {
    const char* name;
    std::vector<SourceCandidate> candidates;
    std::vector<Winner> winners;
    std::vector<SourceConflict> conflicts;
};

const MergeRow kRows[] = {
    {"no sources: nothing desired", {}, {}, {}},
    {"distinct keys from files and the API server are all in force",
     {{"it/a", F("/m/a.yaml")}, {"it/b", A()}, {"kube-system/a", A()}},
     {{"it/a", F("/m/a.yaml")}, {"it/b", A()}, {"kube-system/a", A()}},
     {}},
    {"the same namespace/name in two files: the path that sorts first wins, whatever the order met",
     {{"it/a", F("/m/b.yaml")}, {"it/a", F("/m/a.yaml")}},
     {{"it/a", F("/m/a.yaml")}},
     {{"it/a", F("/m/a.yaml"), F("/m/b.yaml")}}},
    {"a file's DaemonSet overrides the API server's of the same namespace/name (LocalManifestOverrides)",
     {{"it/a", A()}, {"it/a", F("/m/z.yaml")}},
     {{"it/a", F("/m/z.yaml")}},
     {{"it/a", F("/m/z.yaml"), A()}}},
    {"the same name in another namespace is no conflict",
     {{"it/a", F("/m/a.yaml")}, {"other/a", A()}},
     {{"it/a", F("/m/a.yaml")}, {"other/a", A()}},
     {}},
    {"twice in one file: its first document wins (reported as a conflict of the file with itself)",
     {{"it/a", F("/m/a.yaml")}, {"it/a", F("/m/a.yaml")}},
     {{"it/a", F("/m/a.yaml")}},
     {{"it/a", F("/m/a.yaml"), F("/m/a.yaml")}}},
    {"three-way: the first path wins over the second file and the API server, both reported",
     {{"it/a", A()}, {"it/a", F("/m/b.yaml")}, {"it/a", F("/m/a.yaml")}},
     {{"it/a", F("/m/a.yaml")}},
     {{"it/a", F("/m/a.yaml"), F("/m/b.yaml")}, {"it/a", F("/m/a.yaml"), A()}}},
};

std::string show(const DaemonSetSource& s) { return s.stored(); }

}  // namespace

TEST_GROUP(SourceMerge){};

TEST(SourceMerge, FilesWinByPathThenOverTheApiServer) {
    for (const auto& row : kRows) {
        const SourceMerge got = merge_sources(row.candidates);
        const std::string what = std::string(row.name);
        LONGS_EQUAL_TEXT(row.winners.size(), got.winners.size(), what.c_str());
        for (const auto& w : row.winners) {
            auto it = got.winners.find(w.key);
            CHECK_TEXT(it != got.winners.end(), (what + ": " + w.key + " not in force").c_str());
            STRCMP_EQUAL_TEXT(show(w.source).c_str(), show(row.candidates[it->second].source).c_str(),
                              (what + ": " + w.key).c_str());
        }
        LONGS_EQUAL_TEXT(row.conflicts.size(), got.conflicts.size(), what.c_str());
        for (std::size_t i = 0; i < row.conflicts.size(); ++i) {
            CHECK_TEXT(row.conflicts[i] == got.conflicts[i],
                       (what + ": conflict " + std::to_string(i) + " is " + show(got.conflicts[i].winner) +
                        " over " + show(got.conflicts[i].loser))
                           .c_str());
        }
    }
}

struct StoredRow {
    const char* name;
    const char* stored;
    bool known;
    DaemonSetSource source;
};

const StoredRow kStoredRows[] = {
    {"a manifest file is stored as file:<path>", "file:/etc/daemonlet/manifests/a.yaml", true,
     DaemonSetSource::file("/etc/daemonlet/manifests/a.yaml")},
    {"the API server's cache is stored as api", "api", true, DaemonSetSource::api_server()},
    {"file: without a path is not a source", "file:", false, {}},
    {"a value this build does not know is not a source", "configmap:x", false, {}},
};

TEST(SourceMerge, TheStoredSourceReadsBackAsTheSame) {
    for (const auto& row : kStoredRows) {
        auto got = DaemonSetSource::parse(row.stored);
        CHECK_EQUAL_TEXT(row.known, got.has_value(), row.name);
        if (!got) continue;
        CHECK_TEXT(*got == row.source, row.name);
        STRCMP_EQUAL_TEXT(row.stored, got->stored().c_str(), row.name);
    }
}
