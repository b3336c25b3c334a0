// The desired state: what the sources (sources.h) merge to, with rollbacks
// applied, in the store with its revision history.
//
// The store follows the merged set: new and changed DaemonSets are written
// (only when they changed), removed ones deleted. At the first rebuild after
// a start the rows the store still holds and no source offers any more (a
// file removed while the agent was down) are deleted as a removal seen while
// running would be.
#include <algorithm>

#include "agent/daemon/agent.h"
#include "core/pod_network.h"
#include "core/revision_history.h"
#include "core/template_hash.h"
#include "platform/log.h"
#include "platform/system_info.h"

namespace daemonlet::agent {

using platform::Level;
using platform::log;

void Agent::rescan_manifests() {
    if (stopping_) return;
    Sources::Changes changes = sources_->rescan(config_.manifest_dir);
    if (changes.daemonsets) rebuild_desired();
    if (changes.config_objects) on_config_objects_changed();
}

void Agent::schedule_rebuild() {
    if (!rebuild_timer_ || stopping_) return;
    uv_timer_start(
        rebuild_timer_, [](uv_timer_t* t) { static_cast<Agent*>(t->data)->rebuild_desired(); }, 0, 0);
}

void Agent::rebuild_desired() {
    // First: a store that fails below must not leave the static pods
    // without their files (the reconcile would stop them all).
    static_pods_.rebuild(sources_->static_pods(), node_.metadata.name, config_.runtime_type);
    std::map<std::string, Desired> next;
    for (auto& [key, s] : sources_->merge(node_.metadata.name)) {
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
        auto rows = store_->list_daemonsets();
        if (!rows.ok()) log(Level::Err, "store: " + rows.error().message);
        for (const auto& row : rows.ok() ? rows.value() : std::vector<store::StoredDaemonSet>{}) {
            const std::string key = row.namespace_ + "/" + row.name;
            if (next.count(key)) continue;
            auto source = DaemonSetSource::parse(row.source).value_or(DaemonSetSource::file(row.source));
            gone.try_emplace(key, Gone{source, row.namespace_, row.name});
        }
    }
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
        // Once per template: hostPorts the runtime cannot map.
        if (prev == desired_.end() || prev->second.hash != d.hash)
            if (auto why = unmapped_host_ports(d.ds().spec.template_.spec, config_.runtime_type);
                !why.empty())
                log(Level::Warning, "DaemonSet " + key + ": " + why);
    }
    for (const auto& [key, g] : gone) {
        log(Level::Notice,
            "DaemonSet " + key + " removed (" +
                (g.source.from_api() ? std::string("the API server no longer has it")
                                     : "its file " + g.source.describe() + " no longer defines it") +
                ")");
        if (auto s = store_->delete_daemonset(g.ns, g.name); !s.ok())
            log(Level::Err, "store: " + s.error().message);
    }
    if (auto s = tx.value()->commit(); !s.ok())
        log(Level::Err, "store: " + s.error().message);
    else
        store_swept_ = true;
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
    if (auto w = store_->put_daemonset(row); !w.ok()) return w.error();

    auto revs = store_->list_revisions(md.namespace_, md.name);
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
            if (auto w = store_->put_revision(bumped); !w.ok()) return w.error();
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
        queued_events_.flush_reported();
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
    if (auto w = store_->put_revision(rev); !w.ok()) return w.error();
    d.revision = rev.revision;
    log(Level::Info, "DaemonSet " + md.namespace_ + "/" + md.name + ": revision " +
                         std::to_string(rev.revision) + " (" + d.hash + ")");
    queued_events_.flush_reported();  // `rollout history` shows it: it holds across a power cut

    std::vector<std::int64_t> in_use{rev.revision};
    for (const auto& [uid, p] : pods_)
        if (p.rec.namespace_ == md.namespace_ && p.rec.daemonset == md.name) in_use.push_back(p.rec.revision);
    int keep = d.ds().spec.revision_history_limit.value_or(10) + 1;  // the live revision plus the history
    if (auto pr = store_->prune_revisions(md.namespace_, md.name, keep, in_use); !pr.ok()) return pr.error();
    return Ok{};
}

}  // namespace daemonlet::agent
