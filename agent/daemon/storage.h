// The Storage component: the store as the agent uses it, on a board whose
// stateDir can fill up or be remounted read-only (a worn-out SD card).
//
// The store is the agent's memory across restarts, not its working state:
// the pods, the DaemonSets in force and the manifests' last good versions
// live in the agent's memory, as the kubelet's do. So a store that cannot be
// written does not stop the agent: the pods run on, `get` and `status` are
// served, and the writes that failed are kept here, the newest per row, and
// written again (in one transaction, with a probe row that proves the disk
// takes writes) every kRetryMs until they land. Storage forwards every call
// to the SQLite store and watches the writes:
//
// - a write that fails with no_space or read_only (ErrorCode) is kept and
//   answers as if it had landed (the caller's state is in memory; the write
//   follows), the storage becomes not writable, and that is said once: a
//   log line, the systemd STATUS line (status_suffix) and `daemonlet
//   status`'s "storage" (status_json);
// - while it is not writable, every write (and transaction) is kept without
//   being tried, so that the retry writes them all in their order (a
//   revision after its DaemonSet);
// - a transaction that fails so keeps all its writes (SQLite rolled them
//   back together: nothing is half-written), replayed in their order;
// - a delete of a DaemonSet drops the kept writes of its revisions and
//   rollback (the store's ON DELETE CASCADE);
// - Events kept are bounded (kMaxPendingEvents, the oldest dropped); the
//   queued cluster Events' rows kept are bounded by their queue (a delete
//   of the rows below a seq forgets the kept writes of those rows);
//   a wall-clock re-base is not kept (its times are rewritten again by the
//   next step);
// - writes that fail for another reason are returned as before and not kept.
//
// What is kept lives in memory only: an agent stopped while its stateDir is
// not writable loses it, and the next one rebuilds it from the manifests and
// the running containers (adoption), as after a power cut.
#pragma once

#include <uv.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>

#include "core/json.h"
#include "core/result.h"
#include "platform/clock.h"
#include "store/store.h"

namespace daemonlet::agent {

// Whether a store error is the disk's: full or read-only.
inline bool store_deferred(const Error& e) {
    // Busy: the store's worker holds the -wal for a RESTART checkpoint longer
    // than the busy timeout (a card far behind the loop's commits); kept and
    // written again as for a full disk, never dropped.
    return e.code == ErrorCode::NoSpace || e.code == ErrorCode::ReadOnly || e.code == ErrorCode::Busy;
}

class Storage final : public store::Store {
  public:
    static constexpr std::int64_t kRetryMs = 2000;
    static constexpr std::size_t kMaxPendingEvents = 64;

    // `read_only_reason` non-empty: the database could only be opened
    // read-only (an agent started on a read-only stateDir); nothing is
    // written until a restart on a writable one.
    Storage(uv_loop_t* loop, std::unique_ptr<store::Store> inner, const platform::Clock& clock,
            std::string read_only_reason = {});
    ~Storage() override;
    Storage(const Storage&) = delete;
    Storage& operator=(const Storage&) = delete;

    // The agent's store, on `state_dir`/daemonlet.db, in one of three modes:
    // - Normal: the file, opened (a bad one moved aside and an empty one
    //   made: said, the agent rebuilds it from the manifests and the running
    //   containers);
    // - ReadOnly: the stateDir refuses writes (a worn-out card remounted
    //   read-only): the file read as it is, nothing recorded until a restart
    //   on a writable stateDir (said);
    // - Copy: the stateDir is too full for what the open writes (an
    //   upgrade's migration, the -shm): a copy in memory (Store::open_copy,
    //   tried up to 4 times 1 s apart while a reader holds the file; an
    //   empty one when the file fails its check: the full disk lets the
    //   open neither see that nor move it aside), and each retry opens the
    //   file again (open_later) once there is room for it.
    // `moved_aside`: that reopen found the file gone bad and moved it aside
    // (said) and wrote the copy, with the writes kept, into a new file in
    // its place (or said what was lost when it could not); the agent stops
    // so that its next start opens that file. Called on the loop once that
    // write is over (from inside retry() without a loop), once. The worker
    // is started (or its failure said).
    //
    // The reopen (open, quick_check, migration) and the copy's write (a
    // backup of up to 32 MiB and its fsyncs) run off the loop, on libuv's
    // thread pool, one at a time; their end is handled on the loop. The
    // reopen uses a connection of its own; the copy's write a snapshot of
    // the copy (Store::snapshot_copy), so the loop reads the copy on
    // meanwhile and keeps its writes as on a full disk. Without a loop
    // (tests) they run in the caller.
    enum class Mode { Normal, ReadOnly, Copy };
    static Result<std::unique_ptr<Storage>> open(uv_loop_t* loop, const std::string& state_dir,
                                                 const platform::Clock& clock,
                                                 std::function<void()> moved_aside);
    Mode mode() const { return opened_read_only_ ? Mode::ReadOnly : reopen_ ? Mode::Copy : Mode::Normal; }

    // What a reopen found: the store opened, or why not. `moved_to`: the
    // file was bad, the open moved it aside there (`reason`) and made an
    // empty one, closed (the copy is written in its place).
    struct Reopened {
        Result<std::unique_ptr<store::Store>> store = Error{ErrorCode::Io, "not opened"};
        std::string moved_to;
        std::string reason;
    };
    // Runs off the loop: the file system and a connection of its own only.
    using Reopen = std::function<Reopened(std::int64_t now_ms)>;
    // The database could be read only from a copy (Store::open_readonly):
    // its upgrade's migration did not fit on the full stateDir (`why`).
    // Every write is kept as on a full disk, and each retry first opens the
    // database again with `reopen` (which migrates it); once it opens, the
    // store is the file's, its worker starts and what was kept is written.
    // A file `reopen` moved aside gets the copy written at `db`, then
    // `moved_aside` is called (open).
    void open_later(const Error& why, Reopen reopen, std::string db = {},
                    std::function<void()> moved_aside = {});
    // For tests: runs on the thread doing the disk work above ("reopen",
    // "save"), before it.
    void set_disk_work_hook(std::function<void(const char*)> hook) { disk_work_hook_ = std::move(hook); }
    // Whether a reopen or a copy's write runs off the loop now.
    bool disk_work_running() const { return work_ != nullptr; }

    // Starts the store's worker (store/wal_worker.h: checkpoints and
    // flushes off the loop), its results handed to the loop through a
    // uv_async_t. Without it (it could not start: said in the error) the
    // store checkpoints and flushes on the loop as SQLite does by default.
    Status start_worker();
    // Called when writable() changes (the agent updates its STATUS line).
    void set_on_change(std::function<void()> f) { on_change_ = std::move(f); }
    // Stops the retries (shutdown); says what was not recorded; stops the
    // worker (what it was asked is done, the -wal checkpointed).
    void close();

    bool writable() const { return writable_; }
    std::size_t pending() const { return pending_.size(); }
    // {"writable", "error", "since", "pending"}: `daemonlet status`'s "storage".
    Json status_json() const;
    // "" when writable; else ", stateDir not writable (...)" for the STATUS line.
    std::string status_suffix() const;
    // Writes what is kept, in one transaction; ok when it all landed (and
    // the storage is writable again). Run by the retry timer.
    Status retry();

    Result<std::unique_ptr<Transaction>> begin() override;
    Result<bool> put_daemonset(const store::StoredDaemonSet& ds) override;
    Result<bool> delete_daemonset(const std::string& ns, const std::string& name) override;
    // The reads below that the agent's own decisions rest on (a revision's
    // number, a DaemonSet's generation, a rollback in force) see the writes
    // kept meanwhile, as if they had landed.
    Result<std::optional<store::StoredDaemonSet>> get_daemonset(const std::string& ns,
                                                                const std::string& name) override;
    Result<std::vector<store::StoredDaemonSet>> list_daemonsets() override;
    Result<bool> put_revision(const RevisionRecord& rev) override;
    Result<std::vector<RevisionRecord>> list_revisions(const std::string& ns, const std::string& ds) override;
    Result<int> prune_revisions(const std::string& ns, const std::string& ds, int keep,
                                const std::vector<std::int64_t>& in_use) override;
    Result<bool> put_rollback(const store::StoredRollback& rb) override;
    Result<std::optional<store::StoredRollback>> get_rollback(const std::string& ns,
                                                              const std::string& name) override;
    Result<bool> delete_rollback(const std::string& ns, const std::string& name) override;
    Result<bool> put_pod(const PodRecord& pod) override;
    Result<bool> delete_pod(const std::string& uid) override;
    Result<std::vector<PodRecord>> list_pods() override { return inner_->list_pods(); }
    Result<bool> put_node(const store::StoredNode& node) override;
    Result<std::optional<store::StoredNode>> get_node() override { return inner_->get_node(); }
    Result<bool> add_event(const store::EventRecord& ev) override;
    Result<std::vector<store::EventRecord>> list_events(const std::string& ns, const std::string& object,
                                                        int limit) override {
        return inner_->list_events(ns, object, limit);
    }
    Result<bool> put_manifest_file(const store::StoredManifestFile& file) override;
    Result<bool> delete_manifest_file(const std::string& path) override;
    Result<std::vector<store::StoredManifestFile>> list_manifest_files() override {
        return inner_->list_manifest_files();
    }
    Result<bool> put_api_daemonset(const store::StoredApiDaemonSet& ds) override;
    Result<bool> delete_api_daemonset(const std::string& ns, const std::string& name) override;
    Result<std::vector<store::StoredApiDaemonSet>> list_api_daemonsets() override {
        return inner_->list_api_daemonsets();
    }
    Result<bool> rebase_wall_times(std::int64_t from_ms, std::int64_t to_ms, std::int64_t delta_ms) override;
    // The Events queued for the cluster: a row's writes kept as any other
    // row's (the newest), and a delete of the rows below a seq drops the
    // kept writes of those rows, so that what is kept stays within the
    // queue's bound however many Events are sent during an outage.
    Result<bool> put_queued_event(const QueuedEvent& ev) override;
    Result<bool> delete_queued_event(std::int64_t seq) override;
    Result<bool> delete_queued_events_below(std::int64_t seq) override;
    Result<std::vector<QueuedEvent>> list_queued_events() override { return inner_->list_queued_events(); }
    Result<bool> put_meta(const std::string& key, const std::string& value) override;
    Result<std::optional<std::string>> get_meta(const std::string& key) override {
        return inner_->get_meta(key);
    }
    Stats stats() const override { return inner_->stats(); }
    bool read_only() const override { return inner_->read_only(); }
    // While writes are held (not writable) nothing can be made durable:
    // what is held is in memory until the retry lands (and is flushed then).
    Status flush() override {
        if (writable_) return inner_->flush();
        return Error{ErrorCode::Io, "the stateDir takes no writes: kept in memory until it does"};
    }
    // The same on the store's worker: `done` runs on the loop once the
    // flush is done. Fails at once (no callback) while not writable, or
    // when the worker does not run.
    Status flush_async(FlushDone done) override {
        if (!writable_) return flush();
        return inner_->flush_async(std::move(done));
    }
    void deliver() override { inner_->deliver(); }
    // The agent's stop, before the control socket closes: the flushes asked
    // (an undo's) done and their answers given; the worker runs on for the
    // pods' last saves until close().
    void finish_flushes() override { inner_->finish_flushes(); }
    WorkerStats worker_stats() const override { return inner_->worker_stats(); }

  private:
    class Tx;
    using Write = std::function<Status(store::Store&)>;
    struct Kept {
        std::uint64_t seq = 0;  // of the row's first kept write: its place in the replay
        Write before;           // a DaemonSet's delete that a put of it follows (the cascade)
        Write write;
        bool deletes = false;  // `write` is a DaemonSet's delete
    };

    struct TxWrite {
        std::string key;
        std::string forget;  // a DaemonSet's delete: the prefix of its revisions' and rollback's keys
        Write write;
    };

    // Runs `op` on the store, or only records it in a transaction the disk
    // has refused; keeps it (under `key`) when the disk refuses it.
    template <class T, class Op>
    Result<T> write(const std::string& key, Op op, const std::string& forget = {});
    // The same, `op` run on the caller's data (not copied); `kept()` makes
    // the Write to keep, owning its data, only when one is kept.
    template <class T, class Op, class MakeKept>
    Result<T> write_lent(const std::string& key, const Op& op, const MakeKept& kept,
                         const std::string& forget = {});
    template <class Op>
    static Write as_write(Op op);
    void keep(const std::string& key, const std::string& forget, Write w);
    void end_tx(bool landed);
    using KeptWrites = std::map<std::string, Kept>;
    // Applies `kept` to `to`, in its order; drops (said) what no longer
    // applies. The disk's refusal (store_deferred) is returned.
    static Status replay(KeptWrites& kept, store::Store& to);
    Status write_kept();  // what is kept, in one transaction (retry)
    // The reopen of a copy's file (off the loop), and its end on the loop.
    Status reopen_file();
    Status reopened(Reopened r);
    // The copy's file was moved aside (it went bad): the copy, with what is
    // kept applied, becomes the new file at db_ (Store::save_copy_to, off
    // the loop), or, when it cannot be written, what is lost is said. Once;
    // then moved_aside_.
    void save_copy();
    void saved(const Status& st, std::size_t kept);
    // `work` on libuv's thread pool, then `done` on the loop; both in the
    // caller without a loop, or once closed.
    struct DiskWork;
    void off_loop(const char* what, std::function<void()> work, std::function<void()> done);
    void failed(const Error& e);
    Error refusal() const { return Error{error_code_, error_}; }
    void start_retries();
    void start_worker_or_say();  // start_worker(), its failure said
    void close_worker_handle();

    uv_loop_t* loop_;
    std::unique_ptr<store::Store> inner_;
    const platform::Clock& clock_;
    std::function<void()> on_change_;
    uv_timer_t* timer_ = nullptr;
    uv_async_t* worker_done_ = nullptr;  // the worker's wake-up: deliver() on the loop
    bool closed_ = false;
    bool opened_read_only_ = false;
    Reopen reopen_;   // set while the store is a copy (open_later)
    std::string db_;  // the copy's file
    std::function<void()> moved_aside_;
    std::string moved_to_;  // where the reopen moved the copy's file aside: never reopened
    // Started from an empty copy with the file still there (its check
    // failed for want of room): a reopen that finds it good restarts on it.
    bool started_empty_ = false;
    std::function<void(const char*)> disk_work_hook_;
    DiskWork* work_ = nullptr;  // the reopen or the copy's write running off the loop
    bool writable_ = true;
    ErrorCode error_code_ = ErrorCode::NoSpace;
    std::string error_;
    std::int64_t since_ms_ = 0;
    std::uint64_t seq_ = 0;
    std::uint64_t event_seq_ = 0;
    KeptWrites pending_;  // by row ("ds:ns/name", "pod:uid", ...)
    // What the kept writes say, for the reads above, by "ns/name": a
    // DaemonSet (none: deleted), its revisions by hash, its rollback (none:
    // deleted); DaemonSets whose stored revisions a kept delete removes.
    // Cleared when the kept writes land (or are given up).
    std::map<std::string, std::optional<store::StoredDaemonSet>> held_ds_;
    std::map<std::string, std::map<std::string, RevisionRecord>> held_revisions_;
    std::map<std::string, std::optional<store::StoredRollback>> held_rollbacks_;
    std::set<std::string> held_cascades_;
    void clear_held();
    // The open transaction's writes, in order, and whether the disk refused one.
    bool in_tx_ = false;
    bool tx_refused_ = false;
    std::vector<TxWrite> tx_writes_;
};

}  // namespace daemonlet::agent
