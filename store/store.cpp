// The store's machinery: building it, transactions, compare-then-write, and
// the meta table. The entities are in desired_state.cpp and local_state.cpp,
// opening the file in open.cpp.
#include <sys/stat.h>

#include <cstdio>
#include <cstdlib>

#include "store/sql.h"
#include "store/sqlite_store.h"
#include "store/testing.h"

namespace daemonlet::store {

Status Statements::prepare(sqlite3* db) {
    using sqlite::Faults;
    struct Entry {
        sqlite::Statement* stmt;
        const char* sql;
        Faults faults = Faults::Inject;
    };
    const Entry entries[] = {
        {&begin, sql::kBeginImmediate},
        {&commit, sql::kCommit},
        {&rollback, sql::kRollback, Faults::Never},
        {&savepoint, sql::kSavepoint},
        {&release, sql::kRelease},
        {&rollback_to, sql::kRollbackToSavepoint, Faults::Never},
        {&release_after_rollback, sql::kRelease, Faults::Never},
        {&ds_compare, sql::kDaemonSetCompare},
        {&ds_upsert, sql::kDaemonSetUpsert},
        {&ds_get, sql::kDaemonSetGet},
        {&ds_list, sql::kDaemonSetList},
        {&ds_delete, sql::kDaemonSetDelete},
        {&rev_compare, sql::kRevisionCompare},
        {&rev_upsert, sql::kRevisionUpsert},
        {&rev_list, sql::kRevisionList},
        {&rev_delete, sql::kRevisionDelete},
        {&rb_compare, sql::kRollbackCompare},
        {&rb_upsert, sql::kRollbackUpsert},
        {&rb_get, sql::kRollbackGet},
        {&rb_delete, sql::kRollbackDelete},
        {&pod_compare, sql::kPodCompare},
        {&pod_upsert, sql::kPodUpsert},
        {&pod_list, sql::kPodList},
        {&pod_delete, sql::kPodDelete},
        {&node_compare, sql::kNodeCompare},
        {&node_upsert, sql::kNodeUpsert},
        {&event_insert, sql::kEventInsert},
        {&event_trim_object, sql::kEventTrimObject},
        {&event_trim_all, sql::kEventTrimAll},
        {&event_list, sql::kEventList},
        {&mf_compare, sql::kManifestFileCompare},
        {&mf_upsert, sql::kManifestFileUpsert},
        {&mf_list, sql::kManifestFileList},
        {&mf_delete, sql::kManifestFileDelete},
        {&api_compare, sql::kApiDaemonSetCompare},
        {&api_upsert, sql::kApiDaemonSetUpsert},
        {&api_list, sql::kApiDaemonSetList},
        {&api_delete, sql::kApiDaemonSetDelete},
        {&meta_compare, sql::kMetaCompare},
        {&meta_upsert, sql::kMetaUpsert},
        {&qev_compare, sql::kQueuedEventCompare},
        {&qev_upsert, sql::kQueuedEventUpsert},
        {&qev_delete, sql::kQueuedEventDelete},
        {&qev_delete_below, sql::kQueuedEventDeleteBelow},
        {&qev_list, sql::kQueuedEventList},
        {&rebase_ds, sql::kRebaseDaemonSets},
        {&rebase_rev, sql::kRebaseRevisions},
        {&rebase_rb, sql::kRebaseRollbacks},
        {&rebase_event, sql::kRebaseEvents},
        {&rebase_mf, sql::kRebaseManifestFiles},
    };
    for (const Entry& e : entries)
        if (auto st = e.stmt->prepare(db, e.sql, e.faults); !st) return st;
    return Ok{};
}

Result<std::unique_ptr<SqliteStore>> SqliteStore::create(std::string path, sqlite::DbPtr db) {
    std::unique_ptr<SqliteStore> store(new SqliteStore(std::move(path), std::move(db)));
    if (auto st = store->s_.prepare(store->db()); !st) return store->fail("open", st.error());
    return store;
}

Store::Stats SqliteStore::stats() const {
    Stats st;
    st.writes = sqlite3_total_changes64(db_.get());
    for (const std::string& f : {path_, path_ + "-wal"}) {
        struct stat sb {};
        if (::stat(f.c_str(), &sb) == 0) st.bytes += sb.st_size;
    }
    return st;
}

Status SqliteStore::flush() {
    // In WAL mode the journal pointer is the -wal (SQLite's own file, synced
    // as a commit with synchronous = FULL would sync it); none before the
    // first write.
    sqlite3_file* wal = nullptr;
    if (sqlite3_file_control(db_.get(), "main", SQLITE_FCNTL_JOURNAL_POINTER, &wal) != SQLITE_OK || !wal ||
        !wal->pMethods)
        return Ok{};
    int rc = wal->pMethods->xSync(wal, SQLITE_SYNC_NORMAL);
    if (rc != SQLITE_OK) return fail("flush", sqlite::sqlite_error(rc, "fdatasync of the -wal failed"));
    return Ok{};
}

namespace {

// sqlite3_wal_hook: after each commit of the owner's connection, on its
// thread, with the pages the -wal now holds.
int on_wal_commit(void* worker, sqlite3*, const char*, int pages) {
    static_cast<WalWorker*>(worker)->wal_grew(pages);
    return SQLITE_OK;
}

}  // namespace

Status SqliteStore::start_worker(std::function<void()> wake, WorkerOptions options) {
    if (worker_) return Error{ErrorCode::Invalid, path_ + ": start_worker: the worker runs already"};
    if (read_only()) return Error{ErrorCode::ReadOnly, path_ + ": start_worker: the database is read-only"};
    auto w = WalWorker::start(path_, std::move(wake), options);
    if (!w) return w.error();
    worker_ = std::move(w).value();
    // Checkpoints are the worker's from now on (sqlite.org/wal.html,
    // "Application-Initiated Checkpoints"); setting the hook replaces
    // SQLite's auto-checkpoint, which is also turned off by name.
    sqlite3_wal_autocheckpoint(db(), 0);
    sqlite3_wal_hook(db(), on_wal_commit, worker_.get());
    return Ok{};
}

Status SqliteStore::flush_async(FlushDone done) {
    if (!worker_) return Error{ErrorCode::Invalid, path_ + ": flush: the store's worker does not run"};
    return worker_->flush(std::move(done));
}

void SqliteStore::deliver() {
    if (worker_) worker_->deliver();
}

void SqliteStore::finish_flushes() {
    if (worker_) worker_->finish_flushes();
}

void SqliteStore::stop_worker() {
    if (!worker_) return;
    // Back to SQLite's own checkpoints on this connection (replaces the hook).
    sqlite3_wal_autocheckpoint(db(), 1000);
    worker_->stop();
    worker_.reset();
}

Store::WorkerStats SqliteStore::worker_stats() const { return worker_ ? worker_->stats() : WorkerStats{}; }

SqliteStore::~SqliteStore() {
    // Without stop_worker: the worker stops, its callbacks dropped.
    if (worker_) {
        sqlite3_wal_autocheckpoint(db(), 1000);
        worker_.reset();
    }
    // A Transaction keeps a pointer to its store: one outliving it is a bug.
    if (in_transaction_) {
        std::fprintf(stderr, "daemonlet: store: %s: destroyed while a transaction is open\n", path_.c_str());
        std::abort();
    }
}

Error SqliteStore::fail(const char* op, const Error& e) const {
    return Error{e.code, path_ + ": " + op + ": " + e.message};
}

Status SqliteStore::check_transaction(const char* op) const {
    if (in_transaction_ && sqlite3_get_autocommit(db_.get()))
        return Error{
            ErrorCode::Sqlite,
            path_ + ": " + op + ": the transaction was rolled back after an earlier error; start a new one"};
    return Ok{};
}

Status SqliteStore::run(sqlite::Statement& stmt) {
    sqlite::Query q(stmt);
    auto r = q.step();
    if (!r) return r.error();
    return Ok{};
}

void SqliteStore::rollback() {
    // SQLite may already have rolled back by itself (after SQLITE_FULL,
    // IOERR, NOMEM): then there is nothing left to undo.
    if (!sqlite3_get_autocommit(db_.get())) (void)run(s_.rollback);
}

Result<bool> SqliteStore::put_row(const char* op, sqlite::Statement& compare, sqlite::Statement& upsert,
                                  const Row& row) {
    if (auto st = check_transaction(op); !st) return st.error();
    {
        sqlite::Query q(compare);
        q.bind_all(1, row.key);
        auto found = q.step();
        if (!found) return fail(op, found.error());
        if (found.value() && q.columns_equal(0, row.compared)) return false;
    }
    sqlite::Query q(upsert);
    int next = q.bind_all(1, row.key);
    next = q.bind_all(next, row.compared);
    q.bind_all(next, row.extra);
    auto done = q.step();
    if (!done) return fail(op, done.error());
    return true;
}

Result<bool> SqliteStore::change(const char* op, sqlite::Statement& stmt,
                                 const std::vector<sqlite::Value>& params) {
    if (auto st = check_transaction(op); !st) return st.error();
    sqlite::Query q(stmt);
    q.bind_all(1, params);
    auto done = q.step();
    if (!done) return fail(op, done.error());
    return sqlite3_changes(db_.get()) > 0;
}

Status SqliteStore::atomically(const char* op, const std::function<Status()>& body) {
    if (auto st = check_transaction(op); !st) return st;
    const bool nested = in_transaction_;
    if (auto st = run(nested ? s_.savepoint : s_.begin); !st) return fail(op, st.error());
    // In our own transaction, the body's statements check it as they do a caller's.
    in_transaction_ = true;
    Status result = body();
    if (result.ok()) {
        auto st = run(nested ? s_.release : s_.commit);
        if (st.ok()) {
            in_transaction_ = nested;
            return result;
        }
        result = fail(op, st.error());
    }
    if (nested) {
        // Undo the savepoint's changes and drop it; the caller's transaction goes on.
        if (!sqlite3_get_autocommit(db_.get())) {
            (void)run(s_.rollback_to);
            (void)run(s_.release_after_rollback);
        }
    } else {
        rollback();
        in_transaction_ = false;
    }
    return result;
}

// ---------------------------------------------------------------------------
// Transactions.

class SqliteTransaction final : public Store::Transaction {
  public:
    explicit SqliteTransaction(SqliteStore* store) : store_(store) {}
    ~SqliteTransaction() override {
        if (!done_) {
            store_->rollback();
            store_->in_transaction_ = false;
        }
    }
    Status commit() override {
        if (done_)
            return Error{ErrorCode::Invalid, store_->path_ + ": commit: the transaction is already finished"};
        if (auto st = store_->check_transaction("commit"); !st) return st;
        if (auto st = store_->run(store_->s_.commit); !st) return store_->fail("commit", st.error());
        done_ = true;
        store_->in_transaction_ = false;
        return Ok{};
    }

  private:
    SqliteStore* store_;
    bool done_ = false;
};

Result<std::unique_ptr<Store::Transaction>> SqliteStore::begin() {
    if (in_transaction_) return Error{ErrorCode::Invalid, path_ + ": begin: a transaction is already open"};
    if (auto st = run(s_.begin); !st) return fail("begin", st.error());
    in_transaction_ = true;
    return std::unique_ptr<Transaction>(new SqliteTransaction(this));
}

// ---------------------------------------------------------------------------
// Meta.

Result<bool> SqliteStore::put_meta(const std::string& key, const std::string& value) {
    return put_row("put_meta", s_.meta_compare, s_.meta_upsert, Row{{key}, {value}, {}});
}

Result<std::optional<std::string>> SqliteStore::get_meta(const std::string& key) {
    sqlite::Query q(s_.meta_compare);
    q.bind(1, key);
    auto found = q.step();
    if (!found) return fail("get_meta", found.error());
    if (!found.value()) return std::optional<std::string>();
    return std::optional<std::string>(q.text(0));
}

// ---------------------------------------------------------------------------
// The Events queued for the cluster: one row each (flash wears out).

Result<bool> SqliteStore::put_queued_event(const QueuedEvent& ev) {
    return put_row("put_queued_event", s_.qev_compare, s_.qev_upsert, Row{{ev.seq}, {ev.json}, {}});
}

Result<bool> SqliteStore::delete_queued_event(std::int64_t seq) {
    return change("delete_queued_event", s_.qev_delete, {seq});
}

Result<bool> SqliteStore::delete_queued_events_below(std::int64_t seq) {
    return change("delete_queued_events_below", s_.qev_delete_below, {seq});
}

Result<std::vector<Store::QueuedEvent>> SqliteStore::list_queued_events() {
    sqlite::Query q(s_.qev_list);
    std::vector<QueuedEvent> out;
    auto st = q.each_row([&](const sqlite::Query& row) { out.push_back({row.int64(0), row.text(1)}); });
    if (!st) return fail("list_queued_events", st.error());
    return out;
}

void testing::set_busy_timeout(Store& store, int ms) {
    sqlite3_busy_timeout(dynamic_cast<SqliteStore&>(store).db(), ms);
}

std::int64_t testing::total_changes(Store& store) {
    return sqlite3_total_changes64(dynamic_cast<SqliteStore&>(store).db());
}

}  // namespace daemonlet::store
