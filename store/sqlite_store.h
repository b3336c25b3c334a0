// The SQLite implementation of Store: one connection, every statement
// prepared once when the store is built. Internal to store/.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "store/sqlite_handle.h"
#include "store/store.h"
#include "store/wal_worker.h"

namespace daemonlet::store {

// A row as a put writes it: the key, the values compared with what is
// stored, and the values written but not compared (the time a DaemonSet was
// updated or a revision created is not a change by itself).
struct Row {
    std::vector<sqlite::Value> key;
    std::vector<sqlite::Value> compared;
    std::vector<sqlite::Value> extra;
};

// Every statement the store runs, prepared once (SQL text in store/sql.h).
struct Statements {
    sqlite::Statement begin, commit, rollback, savepoint, release, rollback_to, release_after_rollback;
    sqlite::Statement ds_compare, ds_upsert, ds_get, ds_list, ds_delete;
    sqlite::Statement rev_compare, rev_upsert, rev_list, rev_delete;
    sqlite::Statement rb_compare, rb_upsert, rb_get, rb_delete;
    sqlite::Statement pod_compare, pod_upsert, pod_list, pod_delete;
    sqlite::Statement node_compare, node_upsert;
    sqlite::Statement event_insert, event_trim_object, event_trim_all, event_list;
    sqlite::Statement mf_compare, mf_upsert, mf_list, mf_delete;
    sqlite::Statement api_compare, api_upsert, api_list, api_delete;
    sqlite::Statement meta_compare, meta_upsert;
    sqlite::Statement qev_compare, qev_upsert, qev_delete, qev_delete_below, qev_list;
    sqlite::Statement rebase_ds, rebase_rev, rebase_rb, rebase_event, rebase_mf;

    Status prepare(sqlite3* db);
};

// fsync(2) of the directory holding `path`, best effort: makes a file
// created or renamed there durable by name (open.cpp).
void sync_directory_of(const std::string& path);

class SqliteStore final : public Store {
  public:
    // Prepares every statement on an open, migrated connection.
    static Result<std::unique_ptr<SqliteStore>> create(std::string path, sqlite::DbPtr db);
    ~SqliteStore() override;

    Result<std::unique_ptr<Transaction>> begin() override;

    Result<bool> put_daemonset(const StoredDaemonSet& ds) override;
    Result<bool> delete_daemonset(const std::string& ns, const std::string& name) override;
    Result<std::optional<StoredDaemonSet>> get_daemonset(const std::string& ns,
                                                         const std::string& name) override;
    Result<std::vector<StoredDaemonSet>> list_daemonsets() override;

    Result<bool> put_revision(const RevisionRecord& rev) override;
    Result<std::vector<RevisionRecord>> list_revisions(const std::string& ns, const std::string& ds) override;
    Result<int> prune_revisions(const std::string& ns, const std::string& ds, int keep,
                                const std::vector<std::int64_t>& in_use) override;

    Result<bool> put_rollback(const StoredRollback& rb) override;
    Result<std::optional<StoredRollback>> get_rollback(const std::string& ns,
                                                       const std::string& name) override;
    Result<bool> delete_rollback(const std::string& ns, const std::string& name) override;

    Result<bool> put_pod(const PodRecord& pod) override;
    Result<bool> delete_pod(const std::string& uid) override;
    Result<std::vector<PodRecord>> list_pods() override;

    Result<bool> put_node(const StoredNode& node) override;
    Result<std::optional<StoredNode>> get_node() override;

    Result<bool> add_event(const EventRecord& ev) override;
    Result<std::vector<EventRecord>> list_events(const std::string& ns, const std::string& object,
                                                 int limit) override;

    Result<bool> put_manifest_file(const StoredManifestFile& file) override;
    Result<bool> delete_manifest_file(const std::string& path) override;
    Result<std::vector<StoredManifestFile>> list_manifest_files() override;

    Result<bool> put_api_daemonset(const StoredApiDaemonSet& ds) override;
    Result<bool> delete_api_daemonset(const std::string& ns, const std::string& name) override;
    Result<std::vector<StoredApiDaemonSet>> list_api_daemonsets() override;

    Result<bool> rebase_wall_times(std::int64_t from_ms, std::int64_t to_ms, std::int64_t delta_ms) override;

    Result<bool> put_queued_event(const QueuedEvent& ev) override;
    Result<bool> delete_queued_event(std::int64_t seq) override;
    Result<bool> delete_queued_events_below(std::int64_t seq) override;
    Result<std::vector<QueuedEvent>> list_queued_events() override;

    Result<bool> put_meta(const std::string& key, const std::string& value) override;
    Result<std::optional<std::string>> get_meta(const std::string& key) override;

    Stats stats() const override;
    bool read_only() const override { return sqlite3_db_readonly(db_.get(), "main") == 1; }
    Status flush() override;
    Status start_worker(std::function<void()> wake, WorkerOptions options) override;
    Status flush_async(FlushDone done) override;
    void deliver() override;
    void finish_flushes() override;
    void stop_worker() override;
    WorkerStats worker_stats() const override;

    Status save_copy_to(const std::string& path, const std::function<Status(Store&)>& first) override;
    Result<std::unique_ptr<Store>> snapshot_copy(const std::function<Status(Store&)>& first) override;

    sqlite3* db() const { return db_.get(); }

  private:
    friend class SqliteTransaction;

    SqliteStore(std::string path, sqlite::DbPtr db) : path_(std::move(path)), db_(std::move(db)) {}

    // "<path>: <op>: <message>", keeping the error's code.
    Error fail(const char* op, const Error& e) const;
    // Refuses to write when SQLite has ended the caller's transaction by
    // itself after an error (SQLITE_FULL, IOERR, ...): later statements
    // would otherwise each commit on their own, half a change.
    Status check_transaction(const char* op) const;
    // Writes `row` unless the stored row already holds the compared values.
    Result<bool> put_row(const char* op, sqlite::Statement& compare, sqlite::Statement& upsert,
                         const Row& row);
    // Runs one statement that changes rows; returns whether it changed any.
    Result<bool> change(const char* op, sqlite::Statement& stmt, const std::vector<sqlite::Value>& params);
    // Runs `body` atomically: inside the caller's transaction as a savepoint,
    // otherwise in its own BEGIN IMMEDIATE ... COMMIT.
    Status atomically(const char* op, const std::function<Status()>& body);
    Status run(sqlite::Statement& stmt);  // a statement without parameters or rows
    void rollback();                      // of the open transaction, if SQLite has not already

    std::string path_;
    sqlite::DbPtr db_;  // declared before the statements: closed after they are finalised
    Statements s_;
    bool in_transaction_ = false;
    // Declared last: stopped (joined) first, while the connection is open.
    std::unique_ptr<WalWorker> worker_;
};

}  // namespace daemonlet::store
