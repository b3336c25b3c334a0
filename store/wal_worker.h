// The store's worker thread: the WAL's checkpoints and the flushes an
// operator waits on, off the owner's thread (the agent's loop), as
// sqlite.org/wal.html ("Application-Initiated Checkpoints", "Avoiding
// Excessively Large WAL Files") recommends. Internal to store/.
//
// In WAL mode with synchronous = NORMAL a commit writes its pages to the
// -wal without a flush; the flushes happen at checkpoints (the -wal before
// its pages are copied into the database, the database after) and when
// the store is asked to make its commits durable (flush). On an SD card a
// flush takes hundreds of milliseconds: here they are made by one thread
// with its own connection to the database, so that the loop never waits on
// one.
//
// - The owner's connection has SQLite's auto-checkpoint off
//   (sqlite3_wal_autocheckpoint 0) and a sqlite3_wal_hook that, after each
//   commit, asks for a checkpoint once the -wal holds checkpoint_pages or
//   more (checkpoint()).
// - A checkpoint is PASSIVE: it copies what no reader still needs and
//   never waits for a lock, so the owner's writes are never held up. It can
//   fall behind only while the owner commits during it (the owner is the
//   only other user, its read transactions last one statement), and the
//   -wal then grows. Once it holds restart_pages, the checkpoint is a
//   RESTART: it waits for the owner's transaction in progress, keeps the
//   owner's next one waiting (its busy timeout) until every frame is in the
//   database, and the owner's next commit starts the -wal over. So the
//   -wal holds at most restart_pages plus what the owner commits while the
//   worker finishes the step it is in.
// - flush(done): an fdatasync of the -wal through the worker's connection's
//   own handle on it (SQLITE_FCNTL_JOURNAL_POINTER: the same file, so every
//   commit the owner made before asking is on the disk after it); `done`
//   then runs on the owner's thread, from deliver(). A flush asked while a
//   checkpoint runs waits for it.
// - `wake` is called on the worker thread after each flush (deliver() has
//   callbacks to run) and each checkpoint; it must be safe from any thread
//   (uv_async_send).
// - stop() finishes what was asked, checkpoints the whole -wal and joins;
//   the callbacks of flushes done by then run from it, on the caller's
//   thread. After it, flush() fails and wal_grew() does nothing. The
//   destructor stops it too, but drops the callbacks left (their owners may
//   be gone).
// - finish_flushes() waits, on the owner's thread, for the flushes asked so
//   far and runs their callbacks; the worker runs on (the agent's stop:
//   the answers first, then the pods' last saves, then stop()).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "store/sqlite_handle.h"
#include "store/store.h"

namespace daemonlet::store {

class WalWorker {
  public:
    // Opens the worker's connection to `path` (a WAL database the owner has
    // open) on the caller's thread, then starts the thread.
    static Result<std::unique_ptr<WalWorker>> start(const std::string& path, std::function<void()> wake,
                                                    const Store::WorkerOptions& options);
    ~WalWorker();
    WalWorker(const WalWorker&) = delete;
    WalWorker& operator=(const WalWorker&) = delete;

    // The owner's thread: the -wal holds `wal_pages` after a commit.
    void wal_grew(int wal_pages);
    Status flush(Store::FlushDone done);
    void deliver();
    void finish_flushes();
    void stop();
    Store::WorkerStats stats() const;

  private:
    WalWorker(std::string path, sqlite::DbPtr db, std::function<void()> wake, Store::WorkerOptions options)
        : path_(std::move(path)), db_(std::move(db)), wake_(std::move(wake)), options_(options) {}

    void halt();  // stop() without deliver()
    void run();
    Status sync_wal();
    void checkpoint(int mode);

    const std::string path_;
    sqlite::DbPtr db_;  // the worker thread's alone once it runs
    const std::function<void()> wake_;
    const Store::WorkerOptions options_;
    std::thread thread_;

    mutable std::mutex mu_;
    std::condition_variable cv_;
    std::condition_variable flushed_cv_;  // finish_flushes(): a batch of flushes is done
    bool stopping_ = false;
    bool stopped_ = false;
    int checkpoint_mode_ = -1;  // asked: SQLITE_CHECKPOINT_PASSIVE or _RESTART; -1: none
    std::vector<Store::FlushDone> flushes_;
    std::size_t flushing_ = 0;                               // taken from flushes_, not in done_ yet
    std::vector<std::pair<Store::FlushDone, Status>> done_;  // for deliver()
    Store::WorkerStats stats_;
};

}  // namespace daemonlet::store
