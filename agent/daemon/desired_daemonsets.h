// The DesiredDaemonSets component: the DaemonSets in force, what the
// sources (sources.h) merge to with rollbacks applied, and their store rows
// with the revision history. The kubelet has no such thing; the model is
// the DaemonSet controller's history handling (pkg/controller/daemon/
// update.go constructHistory, dedupCurHistories, cleanupHistory over
// ControllerRevisions): a template gets a revision number once, the same
// template back again gets its old number (renumbered to the next, as
// upstream), and the history is pruned to revisionHistoryLimit.
//
// What it owns: the DaemonSets in force by "namespace/name", and whether
// the store has been swept. A rebuild follows the merged set: new and
// changed DaemonSets are written (only when they changed), removed ones
// deleted, all in one store transaction. At the first rebuild after a
// start the rows the store still holds and no source offers any more (a
// file removed while the agent was down) are deleted as a removal seen
// while running would be. The agent schedules its reconcile after a
// rebuild.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "agent/daemon/pod_table.h"
#include "agent/daemon/sources.h"
#include "core/model.h"
#include "core/source_merge.h"
#include "platform/clock.h"
#include "store/store.h"

namespace daemonlet::agent {

class DesiredDaemonSets {
  public:
    // A DaemonSet in force.
    struct Desired {
        std::shared_ptr<const DaemonSet> object;  // the file's (shared with files_) or a rollback's
        std::shared_ptr<const DaemonSet> from;    // the source's (file or API server), before any rollback
        const DaemonSet& ds() const { return *object; }
        DaemonSetSource source;
        bool from_api() const { return source.from_api(); }
        std::string hash;
        std::int64_t revision = 0;
        std::string file_hash;     // of the file's DaemonSet: what a rollback applies to
        bool rolled_back = false;  // a rollback's template is in force, not the file's
    };

    // What a rebuild reaches, asked at each rebuild: the agent opens its
    // store after the component exists.
    class Host {
      public:
        virtual ~Host() = default;
        virtual store::Store& desired_store() = 0;
        // A new or changed DaemonSet, before it is stored: a rollout undo's
        // template replaces the source's while the file is unchanged
        // (Rollbacks::apply, rollbacks.h). Sets d.object, d.hash, d.file_hash, d.rolled_back.
        virtual void apply_rollback(Desired& d) = 0;
        // `d`'s template is in force for the first time (once per
        // template): what the agent says of it (hostPorts it cannot map).
        virtual void template_in_force(const std::string& key, const Desired& d) = 0;
        // A revision was recorded or renumbered: `rollout history` shows
        // it, so it is made durable soon (QueuedEvents::flush_reported).
        virtual void revision_reported() = 0;
    };

    // What a rebuild did.
    struct Changes {
        // false: the store's transaction did not begin and the set in force
        // is unchanged; true: it is replaced, even where a write below failed
        // (logged; the next rebuild writes again).
        bool applied = false;
        std::vector<std::string> changed;  // new or changed ("namespace/name"): their writes asked
        std::vector<std::string> removed;  // no source offers them: their deletes asked
    };

    // `pods`: the pods a renumbered revision's pods follow, and whose
    // revisions the history keeps.
    DesiredDaemonSets(PodTable& pods, Host& host, const platform::Clock& clock)
        : pods_(pods), host_(host), clock_(clock) {}
    DesiredDaemonSets(const DesiredDaemonSets&) = delete;
    DesiredDaemonSets& operator=(const DesiredDaemonSets&) = delete;

    // The merged set (Sources::merge) made the DaemonSets in force.
    Changes rebuild(const std::map<std::string, SourcedDaemonSet>& merged);
    // The next rebuild applies `key` again (a rollback changed what applies).
    void reapply(const std::string& key);

    // The DaemonSet in force by "namespace/name"; null: none.
    const Desired* find(const std::string& key) const;
    // The DaemonSet pod `rec` belongs to; null: none, or a static pod.
    const Desired* for_pod(const PodRecord& rec) const;
    // The DaemonSet `object` with the template of pod `rec`'s own revision,
    // from the store's history: what a pod of an older revision (a rollout
    // in progress, OnDelete, an agent restart in between) is probed, hooked
    // and reported by, as the kubelet runs each pod by its own spec. Cached
    // by "namespace/name/hash" (at most 32; the cache starts over rather
    // than grow); null: the history has it no more, or it does not decode.
    const DaemonSet* pod_revision(const PodRecord& rec, const Json& object);
    // The same, only if it is cached (no store read).
    const DaemonSet* cached_pod_revision(const PodRecord& rec) const;
    std::size_t size() const { return desired_.size(); }
    std::map<std::string, Desired>::const_iterator begin() const { return desired_.begin(); }
    std::map<std::string, Desired>::const_iterator end() const { return desired_.end(); }

  private:
    Status record_revision(Desired& d);

    PodTable& pods_;
    Host& host_;
    const platform::Clock& clock_;
    std::map<std::string, Desired> desired_;          // by "namespace/name"
    bool store_swept_ = false;                        // the store's DaemonSets no source offers are deleted
    std::map<std::string, DaemonSet> pod_revisions_;  // "ns/name/hash" -> the DaemonSet with that template
};

}  // namespace daemonlet::agent
