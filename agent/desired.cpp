// The manifest directory as the source of DaemonSets.
//
// Each file is re-read only when its size or mtime changed, and acted on
// only when its content changed. A file that no longer parses or validates
// keeps its last good version in force (its errors are logged once per
// version); a removed file removes its DaemonSets. The same namespace/name
// in two files is a conflict: the file whose path sorts first wins, and the
// conflict is logged. DaemonSets from the API server (cluster.cpp) come
// after the files: a file's DaemonSet of the same namespace/name wins, and
// the conflict is logged and reported to the cluster as an event.
#include <algorithm>

#include "agent/agent.h"
#include "core/template_hash.h"
#include "platform/file.h"
#include "platform/log.h"
#include "platform/system_info.h"

namespace daemonlet::agent {

using platform::Level;
using platform::log;

void Agent::rescan_manifests() {
    if (stopping_) return;
    std::string list_error;
    auto entries = platform::list_manifest_files(config_.manifest_dir, &list_error);
    if (!list_error.empty() && files_.empty()) {
        // Logged once per state: an absent directory is normal on a fresh board.
        static std::string last;
        if (last != list_error) log(Level::Warning, "manifest directory: " + list_error);
        last = list_error;
    }
    bool changed = false;
    std::set<std::string> seen;
    for (const auto& e : entries) {
        seen.insert(e.path);
        FileState& fs = files_[e.path];
        if (fs.mtime_ns == e.mtime_ns && fs.size == e.size) continue;
        fs.mtime_ns = e.mtime_ns;
        fs.size = e.size;
        ManifestLimits limits;
        auto data = platform::read_file(e.path, limits.max_bytes);
        if (!data.ok()) {
            fs.errors = {data.error().message};
            log(Level::Err,
                data.error().message + (fs.good.empty() ? "" : "; keeping its last good version"));
            continue;
        }
        std::uint64_t h = fnv1a64(data.value());
        if (h == fs.content_hash && fs.errors.empty()) continue;  // touched, not changed
        fs.content_hash = h;
        LoadedManifest m = load_manifest(data.value(), e.path, limits);
        for (const auto& w : m.warnings) log(Level::Warning, w);
        if (!m.errors.empty()) {
            fs.errors.clear();
            for (const auto& err : m.errors) {
                fs.errors.push_back(err.to_string());
                log(Level::Err, err.to_string(), {{"DAEMONLET_FILE", e.path}});
            }
            if (!fs.good.empty())
                log(Level::Warning, e.path + ": keeping its last good version in force until it is fixed");
            continue;
        }
        fs.errors.clear();
        fs.good.clear();
        for (auto& o : m.objects) {
            if (auto* ds = std::get_if<DaemonSet>(&o.object))
                fs.good.push_back(std::make_shared<const DaemonSet>(std::move(*ds)));
            else
                log(Level::Warning, e.path + ": " + o.where +
                                        ": a Node in the manifest directory is ignored; "
                                        "the node comes from the configuration");
        }
        changed = true;
    }
    for (auto it = files_.begin(); it != files_.end();) {
        if (!seen.count(it->first)) {
            log(Level::Notice, it->first + ": removed; its DaemonSets go");
            it = files_.erase(it);
            changed = true;
        } else {
            ++it;
        }
    }
    if (changed) rebuild_desired();
}

void Agent::schedule_rebuild() {
    if (!rebuild_timer_ || stopping_) return;
    uv_timer_start(
        rebuild_timer_, [](uv_timer_t* t) { static_cast<Agent*>(t->data)->rebuild_desired(); }, 0, 0);
}

void Agent::rebuild_desired() {
    std::map<std::string, Desired> next;
    for (const auto& [path, fs] : files_) {  // sorted by path: the first file wins a conflict
        for (const auto& shared : fs.good) {
            const DaemonSet& ds = *shared;
            std::string key = ds.metadata.namespace_ + "/" + ds.metadata.name;
            auto [it, inserted] = next.try_emplace(key);
            if (!inserted) {
                std::string c = key + "|" + it->second.source + "|" + path;
                if (reported_conflicts_.insert(c).second)
                    log(Level::Warning, "DaemonSet " + key + " is defined in both " + it->second.source +
                                            " and " + path + "; using " + it->second.source +
                                            " (its path sorts first)");
                continue;
            }
            it->second.object = shared;
            it->second.from = shared;
            it->second.source = path;
            it->second.hash = template_hash(ds.object["spec"]["template"], ds.status.collision_count);
        }
    }
    for (const auto& [key, a] : api_ds_) {
        auto [it, inserted] = next.try_emplace(key);
        if (!inserted) {
            if (reported_conflicts_.insert(key + "|api|" + it->second.source).second) {
                const std::string msg = "DaemonSet " + key + " is also defined by the manifest file " +
                                        it->second.source + " on node " + node_.metadata.name +
                                        "; the local file wins";
                log(Level::Warning, msg);
                send_cluster_event(a.object->metadata.namespace_, a.object->metadata.name, "Warning",
                                   "LocalManifestOverrides", msg);
            }
            continue;
        }
        it->second.object = a.object;
        it->second.from = a.object;
        it->second.source = kApiSource;
        it->second.hash =
            template_hash(a.object->object["spec"]["template"], a.object->status.collision_count);
    }
    // The store follows: new and changed DaemonSets written (only when they
    // changed), removed ones deleted, all in one transaction.
    auto tx = store_->begin();
    if (!tx.ok()) {
        log(Level::Err, "store: " + tx.error().message);
        return;
    }
    for (auto& [key, d] : next) {
        auto prev = desired_.find(key);
        if (prev != desired_.end() && prev->second.from == d.from && prev->second.source == d.source) {
            d = prev->second;  // the same object from the same source: nothing to apply or store
            continue;
        }
        apply_rollback(d);  // a rollout undo's template, while the file is unchanged
        if (prev != desired_.end() && prev->second.hash == d.hash) d.revision = prev->second.revision;
        if (auto s = record_revision(d); !s.ok()) log(Level::Err, "store: " + s.error().message);
    }
    for (const auto& [key, d] : desired_) {
        if (next.count(key)) continue;
        log(Level::Notice, "DaemonSet " + key + " removed (" +
                               (d.from_api() ? std::string("the API server no longer has it")
                                             : "its file " + d.source + " no longer defines it") +
                               ")");
        if (auto s = store_->delete_daemonset(d.ds().metadata.namespace_, d.ds().metadata.name); !s.ok())
            log(Level::Err, "store: " + s.error().message);
    }
    if (auto s = tx.value()->commit(); !s.ok()) log(Level::Err, "store: " + s.error().message);
    desired_ = std::move(next);
    schedule_reconcile();
}

// Stores the DaemonSet and makes sure its template has a revision number:
// the one already recorded for this hash, or the next one (as upstream's
// ControllerRevisions). The history is pruned to revisionHistoryLimit.
Status Agent::record_revision(Desired& d) {
    const auto& md = d.ds().metadata;
    auto stored = store_->get_daemonset(md.namespace_, md.name);
    if (!stored.ok()) return stored.error();
    store::StoredDaemonSet row;
    row.namespace_ = md.namespace_;
    row.name = md.name;
    row.source = d.from_api() ? std::string("api") : "file:" + d.source;
    row.object_json = d.ds().object.dump();
    row.template_hash = d.hash;
    row.generation = 1;
    row.updated_at_ms = platform::wall_clock_ms();
    if (stored.value()) {
        const auto& old = *stored.value();
        bool same = old.object_json == row.object_json && old.source == row.source;
        row.generation = old.generation + (old.object_json == row.object_json ? 0 : 1);
        if (same) row.updated_at_ms = old.updated_at_ms;  // nothing changed: nothing written
    }
    if (auto w = store_->put_daemonset(row); !w.ok()) return w.error();

    auto revs = store_->list_revisions(md.namespace_, md.name);
    if (!revs.ok()) return revs.error();
    std::int64_t max_rev = 0;
    std::int64_t found = 0;
    for (const auto& r : revs.value()) {
        max_rev = std::max(max_rev, r.revision);
        if (r.hash == d.hash) found = std::max(found, r.revision);
    }
    if (found != 0 && found < max_rev) {
        // Back to an older template (an undo, or a file edited back): as
        // upstream's constructHistory, its revision is renumbered to max+1
        // and the pods running it follow.
        for (const auto& r : revs.value()) {
            if (r.hash != d.hash) continue;
            RevisionRecord bumped = r;
            bumped.revision = max_rev + 1;
            if (auto w = store_->put_revision(bumped); !w.ok()) return w.error();
        }
        for (auto& [uid, p] : pods_)
            if (p.rec.namespace_ == md.namespace_ && p.rec.daemonset == md.name &&
                p.rec.revision_hash == d.hash) {
                p.rec.revision = max_rev + 1;
                save_pod(p);
            }
        log(Level::Info, "DaemonSet " + md.namespace_ + "/" + md.name + ": revision " +
                             std::to_string(found) + " (" + d.hash + ") is revision " +
                             std::to_string(max_rev + 1) + " now");
        found = max_rev + 1;
    }
    if (found != 0) {
        d.revision = found;
        return Ok{};
    }
    RevisionRecord rev;
    rev.namespace_ = md.namespace_;
    rev.daemonset = md.name;
    rev.revision = max_rev + 1;
    rev.hash = d.hash;
    rev.template_json = canonical_json(d.ds().object["spec"]["template"]);
    rev.created_at_ms = platform::wall_clock_ms();
    if (auto w = store_->put_revision(rev); !w.ok()) return w.error();
    d.revision = rev.revision;
    log(Level::Info, "DaemonSet " + md.namespace_ + "/" + md.name + ": revision " +
                         std::to_string(rev.revision) + " (" + d.hash + ")");

    std::vector<std::int64_t> in_use{rev.revision};
    for (const auto& [uid, p] : pods_)
        if (p.rec.namespace_ == md.namespace_ && p.rec.daemonset == md.name) in_use.push_back(p.rec.revision);
    int keep = d.ds().spec.revision_history_limit.value_or(10) + 1;  // the live revision plus the history
    if (auto pr = store_->prune_revisions(md.namespace_, md.name, keep, in_use); !pr.ok()) return pr.error();
    return Ok{};
}

}  // namespace daemonlet::agent
