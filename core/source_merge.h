// Where a DaemonSet comes from, and the rule that merges the sources into
// one desired set (the kubelet's pkg/kubelet/config mux: each source's
// objects merged in one place, a conflict settled by one rule).
//
// The sources, in order of precedence:
//   1. the manifest directory: one source per file; the same namespace/name
//      in two files is a conflict the file whose path sorts first wins (and
//      within one file, the first document);
//   2. the API server: a file's DaemonSet of the same namespace/name wins.
// Pure: no I/O, no logging; the caller logs the conflicts it is given.
#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace daemonlet {

// One representation of a DaemonSet's source, everywhere: in memory, in the
// store ("file:<path>" or "api") and in what the CLI prints.
struct DaemonSetSource {
    enum class Kind { File, ApiServer };
    Kind kind = Kind::File;
    std::string path;  // the manifest file; empty for the API server

    static DaemonSetSource file(std::string p) { return {Kind::File, std::move(p)}; }
    static DaemonSetSource api_server() { return {Kind::ApiServer, {}}; }
    bool from_api() const { return kind == Kind::ApiServer; }
    // The store's column: "file:<path>" or "api".
    std::string stored() const;
    // The store's column back; nullopt for a value this build does not know.
    static std::optional<DaemonSetSource> parse(const std::string& stored);
    // For people: the path, or "the API server".
    std::string describe() const;
    // Precedence: a source that orders first wins a conflict.
    bool operator<(const DaemonSetSource& o) const;
    bool operator==(const DaemonSetSource&) const = default;
};

// One DaemonSet a source offers: its "namespace/name" and where it came from.
struct SourceCandidate {
    std::string key;
    DaemonSetSource source;
};

// A DaemonSet offered by two sources: the winner's is in force.
struct SourceConflict {
    std::string key;
    DaemonSetSource winner;
    DaemonSetSource loser;
    bool operator==(const SourceConflict&) const = default;
};

struct SourceMerge {
    std::map<std::string, std::size_t> winners;  // key -> index of the candidate in force
    std::vector<SourceConflict> conflicts;       // in the order the losers were met
};

// Merges the candidates (in any order; within one source, in document
// order) by the precedence above.
SourceMerge merge_sources(const std::vector<SourceCandidate>& candidates);

}  // namespace daemonlet
