// The image store's index, images.json: which names point at which manifest
// digests, and when each name was imported (image_store.h). Shared by the
// import (image_store.cpp) and the removal (image_gc.cpp) of images.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/result.h"

namespace daemonlet::platform {

struct IndexEntry {
    std::string name;  // empty for an image without a name (found by digest)
    std::string digest;
    // Seconds since the epoch of the import or pull that recorded this entry;
    // 0 in an index written before the field existed (taken as long ago).
    std::int64_t imported = 0;
};

// What a reference (as ImageStore::find reads it) matches in the index:
// a normalised name ("busybox" is docker.io/library/busybox:latest), or a
// manifest digest (name@sha256:..., or a bare sha256:...).
struct IndexKey {
    std::string name;
    std::string digest;
    static Result<IndexKey> of(const std::string& reference);
    bool matches(const IndexEntry& e) const {
        return (!name.empty() && e.name == name) || (!digest.empty() && e.digest == digest);
    }
};

// The index at `path`; empty when the file does not exist. Errors name the
// file and the entry that is not {name, digest}.
Result<std::vector<IndexEntry>> read_index(const std::string& path);

// Written whole to <root>/images.json.tmp, synced, and renamed over
// <root>/images.json: a reader or a crash sees the old index or the new one.
Status write_index(const std::string& root, const std::vector<IndexEntry>& entries);

// Writes `text` as the file `path` (replaced if there), synced when asked.
Status write_whole(const std::string& path, const std::string& text, bool sync);

}  // namespace daemonlet::platform
