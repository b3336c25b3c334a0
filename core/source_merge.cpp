#include "core/source_merge.h"

#include <algorithm>
#include <numeric>

namespace daemonlet {

namespace {
constexpr const char* kFilePrefix = "file:";
constexpr const char* kApiStored = "api";
}  // namespace

std::string DaemonSetSource::stored() const { return from_api() ? kApiStored : kFilePrefix + path; }

std::optional<DaemonSetSource> DaemonSetSource::parse(const std::string& s) {
    if (s == kApiStored) return api_server();
    if (s.rfind(kFilePrefix, 0) == 0 && s.size() > 5) return file(s.substr(5));
    return std::nullopt;
}

std::string DaemonSetSource::describe() const { return from_api() ? "the API server" : path; }

bool DaemonSetSource::operator<(const DaemonSetSource& o) const {
    if (kind != o.kind) return kind == Kind::File;  // the manifest directory before the API server
    return path < o.path;                           // of two files, the path that sorts first
}

SourceMerge merge_sources(const std::vector<SourceCandidate>& candidates) {
    std::vector<std::size_t> order(candidates.size());
    std::iota(order.begin(), order.end(), std::size_t{0});
    // Stable: within one source, the first document wins.
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
        return candidates[a].source < candidates[b].source;
    });
    SourceMerge out;
    for (std::size_t i : order) {
        const SourceCandidate& c = candidates[i];
        auto [it, inserted] = out.winners.try_emplace(c.key, i);
        if (!inserted) out.conflicts.push_back({c.key, candidates[it->second].source, c.source});
    }
    return out;
}

}  // namespace daemonlet
