// The store: the agent's state in one SQLite database (stateDir/daemonlet.db).
//
// - One connection per process, opened after any fork. WAL, foreign_keys=ON,
//   a busy timeout, file mode 0600, schema migrations keyed on
//   PRAGMA user_version.
// - Every multi-row change in one BEGIN IMMEDIATE ... COMMIT through a
//   Transaction that rolls back unless committed.
// - Flash wears out: every put_* compares with what is stored and writes
//   nothing when nothing changed; it returns whether it wrote.
// - On open, PRAGMA quick_check. A database that cannot be opened, is not a
//   database or fails the check is closed, moved aside with its -wal and
//   -shm (kept for inspection, never copied while open) and created anew:
//   the agent then rebuilds it from the manifest directory and re-adopts
//   its running containers.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/model.h"
#include "core/pod.h"
#include "core/result.h"

namespace daemonlet::store {

struct StoredDaemonSet {
    std::string namespace_;
    std::string name;
    std::string source;           // "file:<path>" for the manifest directory, "api" for the cluster (issue 4)
    std::int64_t generation = 1;  // incremented by the agent when the spec changes
    std::string object_json;      // the full defaulted object, unknown fields kept
    std::string template_hash;
    std::int64_t updated_at_ms = 0;
    bool operator==(const StoredDaemonSet&) const = default;
};

struct StoredNode {
    Labels labels;
    std::vector<Taint> taints;
    bool unschedulable = false;
    bool operator==(const StoredNode&) const = default;
};

struct EventRecord {
    std::int64_t id = 0;  // assigned by the store
    std::string namespace_;
    std::string object;  // "DaemonSet/<name>" or "Pod/<name>"
    std::string type;    // Normal, Warning
    std::string reason;  // SuccessfulCreate, FailedPlacement, BackOff, ...
    std::string message;
    std::int64_t time_ms = 0;
};

// A rollback in force over a manifest file's template (rollout undo).
struct StoredRollback {
    std::string namespace_;
    std::string name;
    std::string file_hash;      // the file's DaemonSet it was made against
    std::string revision_hash;  // the restored template's hash
    std::string template_json;  // the restored template
    std::int64_t created_at_ms = 0;
    bool operator==(const StoredRollback&) const = default;
};

// A manifest file as the agent last read it, for a restart to answer as
// the running agent did.
struct StoredManifestFile {
    std::string path;
    std::string good_content;  // the last version that loaded without errors; "" when none has
    bool broken = false;       // the version on disk now fails to read, parse or validate
    std::string error;         // why, one error a line; "" unless broken
    std::int64_t updated_at_ms = 0;
    bool operator==(const StoredManifestFile&) const = default;
};

// A DaemonSet from the API server as the agent last received it, kept
// whichever source's version is in force (a manifest file may override it).
struct StoredApiDaemonSet {
    std::string namespace_;
    std::string name;
    std::string object_json;  // the defaulted object as received (no rollback applied)
    bool operator==(const StoredApiDaemonSet&) const = default;
};

struct OpenReport {
    bool created = false;    // no database existed
    bool recovered = false;  // a bad database was moved aside
    std::string moved_to;    // where it went
    std::string reason;      // why (SQLite's message or the quick_check result)
};

class Store {
  public:
    // Opens or creates the database at `path` (its directory must exist).
    // `now_ms` names a database moved aside: <path>.corrupt-<now_ms>.
    static Result<std::unique_ptr<Store>> open(const std::string& path, std::int64_t now_ms,
                                               OpenReport* report);
    // For the CLI while the agent runs: read-only, no migration, no recovery.
    // A database of an older schema is read from a copy migrated in memory
    // (a snapshot; the file is left as it is): the CLI of a new build before
    // its agent has migrated the file, an agent whose full stateDir cannot
    // take the migration.
    static Result<std::unique_ptr<Store>> open_readonly(const std::string& path);
    // For the agent whose open failed on a full stateDir: a copy in memory
    // (migrated there), read-only, made without the -shm (the open may have
    // left one that cannot be mapped) under an exclusive lock held for the
    // copy only (another connection's lock: Busy at once). Nothing is
    // written to the file. A file failing quick_check is Corrupt; one of
    // more than 32 MiB of pages in use is TooLarge.
    static Result<std::unique_ptr<Store>> open_copy(const std::string& path);
    // For the agent whose open failed on a full stateDir and whose file
    // fails its check (open_copy: Corrupt): an empty copy in memory at the
    // latest schema, read-only as open_copy's, standing for `path`.
    static Result<std::unique_ptr<Store>> open_empty_copy(const std::string& path);
    // Of a copy (open_copy) whose file went bad and was moved aside: runs
    // `first` on the copy in one transaction (the writes the agent kept),
    // then writes the copy with SQLite's online backup into <path>.saving
    // (0600, no journal), fsyncs it, removes <path>-wal and -shm and renames
    // it to `path`: a crash leaves either the old `path` or the whole copy
    // there, never half of it. `path` is replaced, so it may only name a
    // file known to be worth nothing (the empty database the recovery
    // made). On failure (no room, an I/O error) <path>.saving is removed
    // and `path` left as it was. Invalid on a store that is not a copy.
    virtual Status save_copy_to(const std::string& path, const std::function<Status(Store&)>& first) {
        (void)first;
        return Error{ErrorCode::Invalid, path + ": save_copy_to: this store is not a copy in memory"};
    }
    // Of a copy (open_copy): another copy in memory, a snapshot of this one
    // with `first` applied to it (in one transaction), read-only as the
    // copy is. For save_copy_to on another thread (a connection is used by
    // one thread at a time) while this one is read on (the agent's loop).
    virtual Result<std::unique_ptr<Store>> snapshot_copy(const std::function<Status(Store&)>& first) {
        (void)first;
        return Error{ErrorCode::Invalid, "snapshot_copy: this store is not a copy in memory"};
    }

    virtual ~Store() = default;

    class Transaction {
      public:
        virtual ~Transaction() = default;  // rolls back unless committed
        virtual Status commit() = 0;
    };
    virtual Result<std::unique_ptr<Transaction>> begin() = 0;

    virtual Result<bool> put_daemonset(const StoredDaemonSet& ds) = 0;
    virtual Result<bool> delete_daemonset(const std::string& ns, const std::string& name) = 0;
    virtual Result<std::optional<StoredDaemonSet>> get_daemonset(const std::string& ns,
                                                                 const std::string& name) = 0;
    virtual Result<std::vector<StoredDaemonSet>> list_daemonsets() = 0;

    virtual Result<bool> put_revision(const RevisionRecord& rev) = 0;
    virtual Result<std::vector<RevisionRecord>> list_revisions(const std::string& ns,
                                                               const std::string& ds) = 0;
    // cleanupHistory: of the old revisions (all but the current one, which
    // is stored and in `in_use`), deletes the oldest beyond `keep`, never
    // one in `in_use` (which count all the same).
    virtual Result<int> prune_revisions(const std::string& ns, const std::string& ds, int keep,
                                        const std::vector<std::int64_t>& in_use) = 0;

    // At most one per DaemonSet, which must be stored; deleted with it.
    virtual Result<bool> put_rollback(const StoredRollback& rb) = 0;
    virtual Result<std::optional<StoredRollback>> get_rollback(const std::string& ns,
                                                               const std::string& name) = 0;
    virtual Result<bool> delete_rollback(const std::string& ns, const std::string& name) = 0;

    virtual Result<bool> put_pod(const PodRecord& pod) = 0;
    virtual Result<bool> delete_pod(const std::string& uid) = 0;
    virtual Result<std::vector<PodRecord>> list_pods() = 0;

    virtual Result<bool> put_node(const StoredNode& node) = 0;
    virtual Result<std::optional<StoredNode>> get_node() = 0;

    // Recent events, bounded per object (oldest dropped).
    virtual Result<bool> add_event(const EventRecord& ev) = 0;
    virtual Result<std::vector<EventRecord>> list_events(const std::string& ns, const std::string& object,
                                                         int limit) = 0;

    // The manifest directory's files (compared without updated_at_ms).
    virtual Result<bool> put_manifest_file(const StoredManifestFile& file) = 0;
    virtual Result<bool> delete_manifest_file(const std::string& path) = 0;
    virtual Result<std::vector<StoredManifestFile>> list_manifest_files() = 0;

    // The API server's DaemonSets as last received (the API source's set):
    // a row per DaemonSet it has, whether or not a file overrides it.
    virtual Result<bool> put_api_daemonset(const StoredApiDaemonSet& ds) = 0;
    virtual Result<bool> delete_api_daemonset(const std::string& ns, const std::string& name) = 0;
    virtual Result<std::vector<StoredApiDaemonSet>> list_api_daemonsets() = 0;

    // A step of the wall clock (core/wall_clock.h): every time recorded in
    // [from_ms, to_ms] (DaemonSets, revisions, rollbacks, Events, manifest
    // files) moves by delta_ms, in one transaction. Pods are the caller's.
    virtual Result<bool> rebase_wall_times(std::int64_t from_ms, std::int64_t to_ms,
                                           std::int64_t delta_ms) = 0;

    // The Events queued for the cluster and not sent yet, one row each,
    // keyed by its place in the queue (seq, ascending): a put compares and
    // writes that row only; the deletes take one row, or every row below
    // `seq` (the front of the queue, sent).
    struct QueuedEvent {
        std::int64_t seq = 0;
        std::string json;
        bool operator==(const QueuedEvent&) const = default;
    };
    virtual Result<bool> put_queued_event(const QueuedEvent& ev) = 0;
    virtual Result<bool> delete_queued_event(std::int64_t seq) = 0;
    virtual Result<bool> delete_queued_events_below(std::int64_t seq) = 0;
    virtual Result<std::vector<QueuedEvent>> list_queued_events() = 0;

    // Small named values (the Node from the cluster, ...).
    virtual Result<bool> put_meta(const std::string& key, const std::string& value) = 0;
    virtual Result<std::optional<std::string>> get_meta(const std::string& key) = 0;

    // For the agent's metrics: rows written since open (inserted, updated,
    // deleted) and the bytes of the database and its -wal on disk.
    struct Stats {
        std::int64_t writes = 0;
        std::int64_t bytes = 0;
    };
    virtual Stats stats() const { return {}; }

    // Whether the database can only be read: opened read-only, or SQLite
    // fell back to reading it because the file system refused writing
    // (a stateDir remounted read-only).
    virtual bool read_only() const { return false; }

    // Makes every commit so far durable: an fdatasync of the -wal, on the
    // caller's thread. Commits do not flush (synchronous = NORMAL in WAL
    // mode: a power cut may undo the last ones, never half of one); what the
    // agent acknowledges to an operator (a rollout undo) is flushed before
    // it answers, with flush_async once the worker runs.
    virtual Status flush() { return Ok{}; }

    // The store's worker thread (store/wal_worker.h): checkpoints and
    // flushes off the caller's thread (the agent's loop), with a connection
    // of its own. Without it the store checkpoints as SQLite does by
    // default (on the committing thread, every 1000 pages).
    struct WorkerOptions {
        int checkpoint_pages = 1000;  // a PASSIVE checkpoint once the -wal holds this many
        int restart_pages = 4000;     // a RESTART one (the owner's writes wait) from this many
    };
    struct WorkerStats {
        std::int64_t checkpoints = 0;      // run (PASSIVE or RESTART)
        std::int64_t restarts = 0;         // of them RESTART
        std::int64_t flushes = 0;          // fdatasyncs of the -wal made for flush_async
        std::int64_t wal_pages = 0;        // in the -wal after the last commit (the owner's view)
        std::int64_t wal_pages_max = 0;    // the most it held after a commit
        std::int64_t last_not_copied = 0;  // frames the last checkpoint left in the -wal
    };
    using FlushDone = std::function<void(Status)>;
    // Starts it (a writable store only). `wake` is called on the worker
    // thread whenever deliver() may have callbacks to run (after each flush
    // and checkpoint): it must be safe from any thread (uv_async_send).
    virtual Status start_worker(std::function<void()> wake, WorkerOptions options) {
        (void)wake;
        (void)options;
        return Error{ErrorCode::Invalid, "this store has no worker"};
    }
    // Makes every commit so far durable on the worker; `done` then runs on
    // the caller's thread from deliver(), with the flush's result. Fails
    // synchronously (and never calls `done`) when no worker runs.
    virtual Status flush_async(FlushDone done) {
        (void)done;
        return Error{ErrorCode::Invalid, "this store has no worker"};
    }
    // flush_async, or where it fails at once (no worker; a store that takes
    // no writes) flush() on the caller's thread, `done` called before this
    // returns: `done` runs exactly once, with the flush's result.
    void flush_then(const FlushDone& done) {
        if (!flush_async(done).ok()) done(flush());
    }
    // Runs the callbacks of the flushes done (on the thread that asked).
    virtual void deliver() {}
    // Waits for the flushes asked so far and runs their callbacks (as
    // deliver()); the worker runs on.
    virtual void finish_flushes() {}
    // Finishes what the worker was asked, checkpoints, joins it and runs the
    // callbacks left; the store then works without it.
    virtual void stop_worker() {}
    virtual WorkerStats worker_stats() const { return {}; }
};

}  // namespace daemonlet::store
