// The store's worker thread (wal_worker.h).
#include "store/wal_worker.h"

#include <algorithm>

#include "store/sqlite_store.h"

namespace daemonlet::store {
Result<std::unique_ptr<WalWorker>> WalWorker::start(const std::string& path, std::function<void()> wake,
                                                    const Store::WorkerOptions& options) {
    auto in_context = [&](const Error& e) { return Error{e.code, path + ": store worker: " + e.message}; };
    sqlite3* raw = nullptr;
    int rc = sqlite3_open_v2(path.c_str(), &raw, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, nullptr);
    sqlite::DbPtr db(raw);
    if (rc != SQLITE_OK) return in_context(sqlite::sqlite_error(db.get(), rc));
    sqlite3_extended_result_codes(db.get(), 1);
    sqlite3_busy_timeout(db.get(), sqlite::kBusyTimeoutMs);
    // It only checkpoints: no page cache to speak of, and never a checkpoint
    // of its own after a commit (it commits nothing). Reading the schema
    // opens its handle on the -wal (flush syncs through it).
    char* msg = nullptr;
    rc = sqlite3_exec(db.get(),
                      "PRAGMA cache_size = -64; PRAGMA wal_autocheckpoint = 0; PRAGMA synchronous = NORMAL;"
                      "SELECT count(*) FROM sqlite_schema;",
                      nullptr, nullptr, &msg);
    std::unique_ptr<char, decltype(&sqlite3_free)> owned(msg, &sqlite3_free);
    if (rc != SQLITE_OK) return in_context(sqlite::sqlite_error(rc, msg ? msg : sqlite3_errstr(rc)));
    std::unique_ptr<WalWorker> w(new WalWorker(path, std::move(db), std::move(wake), options));
    w->thread_ = std::thread([self = w.get()] { self->run(); });
    return w;
}

WalWorker::~WalWorker() { halt(); }

void WalWorker::wal_grew(int wal_pages) {
    std::lock_guard<std::mutex> lock(mu_);
    stats_.wal_pages = wal_pages;
    stats_.wal_pages_max = std::max<std::int64_t>(stats_.wal_pages_max, wal_pages);
    if (stopping_ || wal_pages < options_.checkpoint_pages) return;
    const int mode =
        wal_pages >= options_.restart_pages ? SQLITE_CHECKPOINT_RESTART : SQLITE_CHECKPOINT_PASSIVE;
    checkpoint_mode_ = std::max(checkpoint_mode_, mode);  // RESTART > PASSIVE
    cv_.notify_one();
}

Status WalWorker::flush(Store::FlushDone done) {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) return Error{ErrorCode::Invalid, path_ + ": flush: the store's worker has stopped"};
    flushes_.push_back(std::move(done));
    cv_.notify_one();
    return Ok{};
}

void WalWorker::deliver() {
    std::vector<std::pair<Store::FlushDone, Status>> done;
    {
        std::lock_guard<std::mutex> lock(mu_);
        done.swap(done_);
    }
    for (auto& [f, st] : done)
        if (f) f(st);
}

void WalWorker::finish_flushes() {
    {
        std::unique_lock<std::mutex> lock(mu_);
        flushed_cv_.wait(lock, [this] { return stopped_ || (flushes_.empty() && flushing_ == 0); });
    }
    deliver();
}

Store::WorkerStats WalWorker::stats() const {
    std::lock_guard<std::mutex> lock(mu_);
    return stats_;
}

void WalWorker::run() {
    // The -wal's name: SQLite syncs the directory at the first sync of the
    // handle that created the file (the owner's, which never syncs now);
    // the worker's handle did not create it. Done before any flush is
    // answered.
    sync_directory_of(path_);
    for (;;) {
        std::vector<Store::FlushDone> flushes;
        int mode = -1;
        bool last = false;
        {
            std::unique_lock<std::mutex> lock(mu_);
            cv_.wait(lock, [this] { return stopping_ || checkpoint_mode_ >= 0 || !flushes_.empty(); });
            flushes.swap(flushes_);
            flushing_ = flushes.size();
            mode = checkpoint_mode_;
            checkpoint_mode_ = -1;
            last = stopping_ && flushes.empty() && mode < 0;
        }
        if (last) {
            // The agent stops: the whole -wal into the database, so that the
            // next start reads it from there (and the owner's close, the
            // last, removes the -wal without a copy to make).
            checkpoint(SQLITE_CHECKPOINT_TRUNCATE);
            return;
        }
        // The flushes first: an operator waits on them, nobody on a checkpoint.
        if (!flushes.empty()) {
            Status st = sync_wal();
            {
                std::lock_guard<std::mutex> lock(mu_);
                ++stats_.flushes;
                for (auto& f : flushes) done_.emplace_back(std::move(f), st);
                flushing_ = 0;
            }
            flushed_cv_.notify_all();
            if (wake_) wake_();
        }
        if (mode >= 0) {
            checkpoint(mode);
            if (wake_) wake_();  // nothing to deliver: the owner may look at stats()
        }
    }
}

Status WalWorker::sync_wal() {
    // The worker's own handle on the -wal (its connection opened it when it
    // read the schema): an fdatasync of the file the owner appends to.
    sqlite3_file* wal = nullptr;
    if (sqlite3_file_control(db_.get(), "main", SQLITE_FCNTL_JOURNAL_POINTER, &wal) != SQLITE_OK || !wal ||
        !wal->pMethods)
        return Error{ErrorCode::Sqlite, path_ + ": flush: the store's worker has no handle on the -wal"};
    int rc = wal->pMethods->xSync(wal, SQLITE_SYNC_NORMAL);
    if (rc != SQLITE_OK) {
        Error e = sqlite::sqlite_error(rc, "fdatasync of the -wal failed");
        return Error{e.code, path_ + ": flush: " + e.message};
    }
    return Ok{};
}

void WalWorker::checkpoint(int mode) {
    int log = 0, copied = 0;
    int rc = sqlite3_wal_checkpoint_v2(db_.get(), nullptr, mode, &log, &copied);
    std::lock_guard<std::mutex> lock(mu_);
    ++stats_.checkpoints;
    if (mode == SQLITE_CHECKPOINT_RESTART) ++stats_.restarts;
    // SQLITE_BUSY: a RESTART that could not wait long enough; the next
    // commit asks again. Other errors (a full or read-only disk) are the
    // owner's to see on its next write.
    stats_.last_not_copied = rc == SQLITE_OK && log >= 0 ? log - copied : -1;
}

void WalWorker::stop() {
    halt();
    deliver();
}

void WalWorker::halt() {
    {
        std::lock_guard<std::mutex> lock(mu_);
        if (stopped_) return;
        stopping_ = true;
        stopped_ = true;
        cv_.notify_one();
    }
    if (thread_.joinable()) thread_.join();
    db_.reset();
}

}  // namespace daemonlet::store
