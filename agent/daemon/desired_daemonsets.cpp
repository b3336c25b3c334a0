// The DesiredDaemonSets component (desired_daemonsets.h): the rebuild's
// decision and its store writes, and the revision history.
#include "agent/daemon/desired_daemonsets.h"

#include "core/decode.h"
#include "core/revision_history.h"
#include "core/template_hash.h"
#include "platform/log.h"

namespace daemonlet::agent {

using platform::Level;
using platform::log;

DesiredDaemonSets::Changes DesiredDaemonSets::rebuild(const std::map<std::string, SourcedDaemonSet>& merged) {
    store::Store& store = host_.desired_store();
    std::map<std::string, Desired> next;
    for (const auto& [key, s] : merged) {
        Desired& d = next[key];
        d.object = s.object;
        d.from = s.object;
        d.source = s.source;
        d.hash = template_hash(d.ds().object["spec"]["template"], d.ds().status.collision_count);
    }
    // What goes: the DaemonSets in force that no source offers now, and at
    // the first rebuild the store's rows that none offers (their source went
    // while the agent was down).
    struct Gone {
        DaemonSetSource source;
        std::string ns, name;
    };
    std::map<std::string, Gone> gone;
    for (const auto& [key, d] : desired_)
        if (!next.count(key)) gone[key] = Gone{d.source, d.ds().metadata.namespace_, d.ds().metadata.name};
    if (!store_swept_) {
        auto rows = store.list_daemonsets();
        if (!rows.ok()) log(Level::Err, "store: " + rows.error().message);
        for (const auto& row : rows.ok() ? rows.value() : std::vector<store::StoredDaemonSet>{}) {
            const std::string key = row.namespace_ + "/" + row.name;
            if (next.count(key)) continue;
            auto source = DaemonSetSource::parse(row.source).value_or(DaemonSetSource::file(row.source));
            gone.try_emplace(key, Gone{source, row.namespace_, row.name});
        }
    }
    Changes changes;
    auto tx = store.begin();
    if (!tx.ok()) {
        log(Level::Err, "store: " + tx.error().message);
        return changes;
    }
    changes.applied = true;
    for (auto& [key, d] : next) {
        auto prev = desired_.find(key);
        if (prev != desired_.end() && prev->second.from == d.from && prev->second.source == d.source) {
            d = prev->second;  // the same object from the same source: nothing to apply or store
            continue;
        }
        changes.changed.push_back(key);
        host_.apply_rollback(d);  // a rollout undo's template, while the file is unchanged
        if (prev != desired_.end() && prev->second.hash == d.hash) d.revision = prev->second.revision;
        if (auto s = record_revision(d); !s.ok()) log(Level::Err, "store: " + s.error().message);
        if (prev == desired_.end() || prev->second.hash != d.hash) host_.template_in_force(key, d);
    }
    for (const auto& [key, g] : gone) {
        changes.removed.push_back(key);
        log(Level::Notice,
            "DaemonSet " + key + " removed (" +
                (g.source.from_api() ? std::string("the API server no longer has it")
                                     : "its file " + g.source.describe() + " no longer defines it") +
                ")");
        if (auto s = store.delete_daemonset(g.ns, g.name); !s.ok())
            log(Level::Err, "store: " + s.error().message);
    }
    if (auto s = tx.value()->commit(); !s.ok())
        log(Level::Err, "store: " + s.error().message);
    else
        store_swept_ = true;
    desired_ = std::move(next);
    return changes;
}

void DesiredDaemonSets::reapply(const std::string& key) {
    if (auto it = desired_.find(key); it != desired_.end()) it->second.from.reset();
}

const DesiredDaemonSets::Desired* DesiredDaemonSets::find(const std::string& key) const {
    auto it = desired_.find(key);
    return it == desired_.end() ? nullptr : &it->second;
}

const DesiredDaemonSets::Desired* DesiredDaemonSets::for_pod(const PodRecord& rec) const {
    if (rec.is_static()) return nullptr;
    return find(rec.namespace_ + "/" + rec.daemonset);
}

// Stores the DaemonSet and makes sure its template has a revision number:
// the one already recorded for this hash, or the next one (as upstream's
// ControllerRevisions). The history is pruned to revisionHistoryLimit.
Status DesiredDaemonSets::record_revision(Desired& d) {
    store::Store& store = host_.desired_store();
    const auto& md = d.ds().metadata;
    auto stored = store.get_daemonset(md.namespace_, md.name);
    if (!stored.ok()) return stored.error();
    store::StoredDaemonSet row;
    row.namespace_ = md.namespace_;
    row.name = md.name;
    row.source = d.source.stored();
    row.object_json = d.ds().object.dump();
    row.template_hash = d.hash;
    row.generation = 1;
    row.updated_at_ms = clock_.wall_ms();
    if (stored.value()) {
        const auto& old = *stored.value();
        bool same = old.object_json == row.object_json && old.source == row.source;
        row.generation = old.generation + (old.object_json == row.object_json ? 0 : 1);
        if (same) row.updated_at_ms = old.updated_at_ms;  // nothing changed: nothing written
    }
    if (auto w = store.put_daemonset(row); !w.ok()) return w.error();

    auto revs = store.list_revisions(md.namespace_, md.name);
    if (!revs.ok()) return revs.error();
    // core/revision_history.h: upstream's constructHistory numbering.
    const RevisionNumber number = number_revision(revs.value(), d.hash);
    if (number.renumbered_from != 0) {
        // Back to an older template (an undo, or a file edited back): its
        // revision is renumbered and the pods running it follow.
        for (const auto& r : revs.value()) {
            if (r.hash != d.hash) continue;
            RevisionRecord bumped = r;
            bumped.revision = number.revision;
            if (auto w = store.put_revision(bumped); !w.ok()) return w.error();
        }
        for (auto& [uid, p] : pods_)
            if (p.rec.namespace_ == md.namespace_ && p.rec.daemonset == md.name &&
                p.rec.revision_hash == d.hash) {
                p.rec.revision = number.revision;
                pods_.save(p);
            }
        log(Level::Info, "DaemonSet " + md.namespace_ + "/" + md.name + ": revision " +
                             std::to_string(number.renumbered_from) + " (" + d.hash + ") is revision " +
                             std::to_string(number.revision) + " now");
        host_.revision_reported();
    }
    if (!number.is_new) {
        d.revision = number.revision;
        return Ok{};
    }
    RevisionRecord rev;
    rev.namespace_ = md.namespace_;
    rev.daemonset = md.name;
    rev.revision = number.revision;
    rev.hash = d.hash;
    rev.template_json = canonical_json(d.ds().object["spec"]["template"]);
    rev.created_at_ms = clock_.wall_ms();
    if (auto w = store.put_revision(rev); !w.ok()) return w.error();
    d.revision = rev.revision;
    log(Level::Info, "DaemonSet " + md.namespace_ + "/" + md.name + ": revision " +
                         std::to_string(rev.revision) + " (" + d.hash + ")");
    host_.revision_reported();  // `rollout history` shows it: it holds across a power cut

    std::vector<std::int64_t> in_use{rev.revision};
    for (const auto& [uid, p] : pods_)
        if (p.rec.namespace_ == md.namespace_ && p.rec.daemonset == md.name) in_use.push_back(p.rec.revision);
    const int keep = d.ds().spec.revision_history_limit.value_or(10);  // old revisions, the current one aside
    if (auto pr = store.prune_revisions(md.namespace_, md.name, keep, in_use); !pr.ok()) return pr.error();
    return Ok{};
}

static std::string pod_revision_key(const PodRecord& rec) {
    return rec.namespace_ + "/" + rec.daemonset + "/" + rec.revision_hash;
}

const DaemonSet* DesiredDaemonSets::cached_pod_revision(const PodRecord& rec) const {
    auto it = pod_revisions_.find(pod_revision_key(rec));
    return it == pod_revisions_.end() ? nullptr : &it->second;
}

const DaemonSet* DesiredDaemonSets::pod_revision(const PodRecord& rec, const Json& object) {
    const std::string key = pod_revision_key(rec);
    if (auto it = pod_revisions_.find(key); it != pod_revisions_.end()) return &it->second;
    auto revs = host_.desired_store().list_revisions(rec.namespace_, rec.daemonset);
    if (!revs) return nullptr;
    for (const auto& rev : revs.value()) {
        if (rev.hash != rec.revision_hash) continue;
        Json obj = object;
        Json tmpl = Json::parse(rev.template_json, nullptr, false);
        if (tmpl.is_discarded() || !tmpl.is_object()) return nullptr;
        obj["spec"]["template"] = std::move(tmpl);
        DaemonSet old;
        if (!decode_daemonset(obj, old).empty()) return nullptr;
        // Bounded: revisions are pruned to revisionHistoryLimit, and this
        // cache starts over rather than grow.
        if (pod_revisions_.size() >= 32) pod_revisions_.clear();
        return &pod_revisions_.emplace(key, std::move(old)).first->second;
    }
    return nullptr;
}

}  // namespace daemonlet::agent
