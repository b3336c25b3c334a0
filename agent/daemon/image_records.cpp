// What the import directory's archives gave, kept across restarts (images.cpp
// imports them). Without it every start ran daemonlet-image on every archive
// again: minutes of reading, hashing and unpacking on an SD card for images
// the store already holds. One meta key of the store holds, for each archive
// of runtime.imageImportDir, the version imported (mtime in ns, size) and the
// outcome:
//
//   images.imports = {"<path>": {"mtimeNs": N, "size": N, "outcome": "imported",
//                                "images": [{"name": "...", "digest": "sha256:..."}]}, ...}
//
// At a start, an archive is skipped when its version is the one recorded,
// its import succeeded, and its images are still in the image store
// (`daemonlet-image list`, run on the loop): a name still there, even moved
// to another digest by a later import, counts, so that a restart never moves
// a name back to an older archive's image. Everything else is imported again:
// a changed archive, one whose images went (a store deleted or rebuilt), and
// one that failed (after a restart the failure may be gone: a full disk, a
// killed import), once per start. But an archive whose images image GC
// removed ("collected": true, image_gc.cpp) is not: importing it at every
// start would fill the disk again for images nothing needs. It comes back
// when it changes, or when a pod waits for one of its images
// (reimport_collected).
#include <algorithm>

#include "agent/daemon/images.h"
#include "core/image_reference.h"
#include "core/json.h"
#include "platform/log.h"

namespace daemonlet::agent {

using platform::Level;
using platform::log;

namespace {

const std::string kImportsMeta = "images.imports";

// The meta value is ours, but a database edited by hand must not stop the
// agent: a field of the wrong type reads as absent (nlohmann's value()
// would throw).
std::string string_field(const Json& o, const char* key) {
    auto it = o.find(key);
    return it != o.end() && it->is_string() ? it->get<std::string>() : std::string();
}
std::int64_t int_field(const Json& o, const char* key) {
    auto it = o.find(key);
    return it != o.end() && it->is_number_integer() ? it->get<std::int64_t>() : -1;
}

struct StoredImages {
    std::set<std::string> names;
    std::set<std::string> digests;
    bool has(const Json& image) const {
        const std::string name = string_field(image, "name");
        return name.empty() ? digests.count(string_field(image, "digest")) > 0 : names.count(name) > 0;
    }
};

// `daemonlet-image list`: one JSON array of {name, digest}.
StoredImages parse_list(const std::string& output) {
    StoredImages s;
    Json arr = Json::parse(output, nullptr, false);
    if (!arr.is_array()) return s;
    for (const Json& image : arr) {
        if (!image.is_object()) continue;
        if (const std::string name = string_field(image, "name"); !name.empty()) s.names.insert(name);
        if (const std::string digest = string_field(image, "digest"); !digest.empty())
            s.digests.insert(digest);
    }
    return s;
}

}  // namespace

void Images::recall_imports() {
    if (imports_recalled_ || recalling_imports_) return;
    auto saved = store_.get_meta(kImportsMeta);
    if (!saved.ok())
        log(Level::Warning, "store: " + saved.error().message + "; every archive is imported again");
    if (saved.ok() && saved.value()) {
        Json records = Json::parse(*saved.value(), nullptr, false);
        if (records.is_object())
            import_records_ = std::move(records);
        else
            log(Level::Warning,
                "store: meta " + kImportsMeta + " is not a JSON object; every archive is imported again");
    }
    if (import_records_.empty()) {
        // Nothing imported before (a first start): nothing to check.
        imports_recalled_ = true;
        import_images();
        return;
    }
    platform::ProbeAction a;
    a.type = platform::ProbeAction::Type::Exec;
    a.command = image_tool_command(image_tool_, config_, "list");
    a.timeout_ms = kListDeadlineMs;
    auto id = jobs_->run(a, [this](platform::ProbeResult r) { on_images_listed(r); });
    if (!id) {
        platform::ProbeResult failed;
        failed.outcome = ProbeOutcome::Failure;
        failed.output = "cannot run daemonlet-image: " + id.error().message;
        on_images_listed(failed);
        return;
    }
    recalling_imports_ = true;
}

void Images::on_images_listed(const platform::ProbeResult& r) {
    recalling_imports_ = false;
    if (r.outcome != ProbeOutcome::Success && is_runtime_unavailable(r.output)) {
        // containerd is down (cri): what it holds is unknown, and nothing
        // can be imported into it. The next look at the import directory
        // asks again.
        if (!import_runtime_down_)
            log(Level::Warning, "image import: " + r.output.substr(0, r.output.find_last_not_of('\n') + 1) +
                                    "; the import directory is looked at again at its next check");
        import_runtime_down_ = true;
        return;
    }
    imports_recalled_ = true;
    StoredImages stored;
    if (r.outcome == ProbeOutcome::Success) {
        import_runtime_down_ = false;
        stored = parse_list(r.output);
    } else {
        std::string why = r.output;
        while (!why.empty() && why.back() == '\n') why.pop_back();
        log(Level::Warning, "image import: cannot list the image store: " + why +
                                "; the archives imported before are imported again");
    }
    std::vector<std::string> recalled;
    for (const auto& [path, rec] : import_records_.items()) {
        if (!rec.is_object() || string_field(rec, "outcome") != "imported") continue;
        auto images = rec.find("images");
        if (images == rec.end() || !images->is_array()) continue;
        bool all = true;
        for (const Json& image : *images) all = all && image.is_object() && stored.has(image);
        auto collected = rec.find("collected");
        if (!all && !(collected != rec.end() && collected->is_boolean() && collected->get<bool>())) continue;
        // As if imported in this run: import_images() compares the file's
        // version with this one, and queues it only when it changed.
        import_seen_[path] = {int_field(rec, "mtimeNs"), int_field(rec, "size")};
        recalled.push_back(path);
    }
    import_images();
    std::sort(recalled.begin(), recalled.end());
    std::string skipped;
    for (const std::string& path : recalled)
        if (import_seen_.count(path) &&
            std::find(import_queue_.begin(), import_queue_.end(), path) == import_queue_.end() &&
            importing_ != path)
            skipped += (skipped.empty() ? "" : ", ") + path;
    if (!skipped.empty())
        log(Level::Info,
            "image import: unchanged since imported, with their images in the store, not imported again: " +
                skipped);
}

void Images::record_import(const std::string& path, std::pair<std::int64_t, std::int64_t> version,
                           bool imported, const Json& images) {
    import_records_[path] = {{"mtimeNs", version.first},
                             {"size", version.second},
                             {"outcome", imported ? "imported" : "failed"},
                             {"images", images}};
    save_import_records();
}

// The records of archives no longer in the directory go: a file put back
// later is imported as a new one.
void Images::forget_removed_imports(
    const std::map<std::string, std::pair<std::int64_t, std::int64_t>>& present) {
    bool changed = false;
    for (auto it = import_records_.begin(); it != import_records_.end();) {
        if (!present.count(it.key()) && !(importing_ && *importing_ == it.key())) {
            it = import_records_.erase(it);
            changed = true;
        } else {
            ++it;
        }
    }
    if (changed) save_import_records();
}

void Images::mark_collected_imports(const std::string& digest, const std::set<std::string>& names) {
    bool changed = false;
    for (auto& [path, rec] : import_records_.items()) {
        if (!rec.is_object() || string_field(rec, "outcome") != "imported") continue;
        auto images = rec.find("images");
        if (images == rec.end() || !images->is_array()) continue;
        for (const Json& image : *images) {
            if (!image.is_object()) continue;
            const std::string name = string_field(image, "name");
            if (string_field(image, "digest") == digest || (!name.empty() && names.count(name))) {
                rec["collected"] = true;
                changed = true;
                break;
            }
        }
    }
    if (changed) save_import_records();
}

// A pod waits for `image` (as its spec names it, normalised here): an
// archive still in the import directory whose image GC removed it is
// imported again, as if it had changed.
void Images::reimport_collected(const std::string& image) {
    auto ref = normalize_image_reference(image);
    if (!ref.ok()) return;
    bool queued = false;
    for (const auto& [path, rec] : import_records_.items()) {
        auto collected = rec.find("collected");
        if (!rec.is_object() || collected == rec.end() || !collected->is_boolean() || !collected->get<bool>())
            continue;
        auto images = rec.find("images");
        if (images == rec.end() || !images->is_array()) continue;
        for (const Json& i : *images) {
            if (!i.is_object()) continue;
            const bool match = ref.value().digest.empty() ? string_field(i, "name") == ref.value().str()
                                                          : string_field(i, "digest") == ref.value().digest;
            if (!match || importing_ == path ||
                std::find(import_queue_.begin(), import_queue_.end(), path) != import_queue_.end())
                continue;
            log(Level::Notice,
                "image " + image + ": removed by image GC and needed again; importing " + path + " again");
            import_seen_.erase(path);
            queued = true;
            break;
        }
    }
    if (queued) import_images();
}

void Images::save_import_records() {
    if (auto w = store_.put_meta(kImportsMeta, import_records_.dump()); !w.ok())
        log(Level::Warning, "store: what was imported is not kept (" + w.error().message +
                                "); the archives are imported again at the next start");
}

}  // namespace daemonlet::agent
