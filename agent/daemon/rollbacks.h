// The Rollbacks component: `rollout undo` for DaemonSets defined by
// manifest files.
//
// Upstream, kubectl's DaemonSetRollbacker (k8s.io/kubectl/pkg/polymorphichelpers
// rollback.go) patches the DaemonSet's template with a ControllerRevision's,
// and the controller then renumbers that revision to max+1 (update.go
// dedupCurHistories / constructHistory). Here the file is the DaemonSet's
// source, so an undo cannot edit it: the store keeps the restored template
// as a rollback, together with the hash of the file's DaemonSet it was made
// against. While the file's DaemonSet stays that one, the rollback's
// template is in force, across agent restarts; when the file changes, the
// file wins again (logged, and an event). Undoing to the file's own template
// removes the rollback.
//
// What it owns: the rollback rows of the store (put, get, delete) and the
// undo's decisions. The DaemonSets in force are DesiredDaemonSets'
// (desired_daemonsets.h), whose rebuild asks apply() for each new or changed
// one; the files' DaemonSets are the Sources' (sources.h).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "agent/daemon/desired_daemonsets.h"
#include "core/model.h"
#include "core/result.h"
#include "platform/clock.h"
#include "store/store.h"

namespace daemonlet::agent {

class Rollbacks {
  public:
    // What an undo reads of the agent, and what it asks of it.
    class Host {
      public:
        virtual ~Host() = default;
        // An Event on the DaemonSet (RollbackDone, RollbackSuperseded).
        virtual void record_rollback_event(const std::string& ns, const std::string& daemonset,
                                           const char* type, const char* reason,
                                           const std::string& message) = 0;
        // The DaemonSet in force by "namespace/name"; null: none.
        virtual const DesiredDaemonSets::Desired* daemonset_in_force(const std::string& key) const = 0;
        // The DaemonSet `path` defines as last read; null: none.
        virtual std::shared_ptr<const DaemonSet> manifest_daemonset(const std::string& path,
                                                                    const std::string& ns,
                                                                    const std::string& name) const = 0;
        // The rollback changed what applies to `key`: applied again now
        // (DesiredDaemonSets::reapply, then a rebuild).
        virtual void rollback_changed(const std::string& key) = 0;
    };

    using Reply = std::function<void(Result<std::string>)>;

    Rollbacks(Host& host, store::Store& store, const platform::Clock& clock)
        : host_(host), store_(store), clock_(clock) {}
    Rollbacks(const Rollbacks&) = delete;
    Rollbacks& operator=(const Rollbacks&) = delete;

    // For each DaemonSet as read from its file, before it is stored
    // (DesiredDaemonSets::Host::apply_rollback): sets d.file_hash, and, while
    // the file is the one the stored rollback was made against, the
    // rollback's template in force (d.object, d.hash, d.rolled_back).
    void apply(DesiredDaemonSets::Desired& d);
    // kubectl's DaemonSetRollbacker.Rollback: "rolled back" or
    // "skipped rollback (...)" (kubectl prints it after daemonset.apps/NAME),
    // answered through `reply` once the rollback is on the disk (or at once).
    void undo(const std::string& ns, const std::string& name, std::int64_t to_revision, Reply reply);
    // The undo's decision and writes; *wrote: a rollback was written (or removed).
    Result<std::string> undo_in_memory(const std::string& ns, const std::string& name,
                                       std::int64_t to_revision, bool* wrote);

  private:
    Host& host_;
    store::Store& store_;
    const platform::Clock& clock_;
};

}  // namespace daemonlet::agent
