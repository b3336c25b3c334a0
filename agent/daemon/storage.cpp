// The Storage component (storage.h): the store's writes kept and retried
// while the stateDir is full or read-only.
#include "agent/daemon/storage.h"

#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <optional>
#include <type_traits>
#include <utility>
#include <vector>

#include "core/cluster_report.h"
#include "platform/log.h"

namespace daemonlet::agent {

using platform::Level;
using platform::log;

namespace {

// The meta row each retry writes first: a retry that wrote nothing else
// would commit on a disk that is still full (BEGIN and an empty COMMIT
// write nothing), and the storage would flap between the two states.
constexpr const char* kProbeMeta = "storage.checked";
// The kept delete of the queued Events below a seq (one, the newest):
// sorts after every "qev:<seq>" key.
constexpr const char* kQueuedBelowKey = "qev:below";

const char* what_is_wrong(ErrorCode code) {
    return code == ErrorCode::NoSpace    ? "full"
           : code == ErrorCode::ReadOnly ? "read-only"
           : code == ErrorCode::Busy     ? "busy (a checkpoint holds the database)"
                                         : "not writable";
}

std::string seq_key(const char* prefix, std::uint64_t seq) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%020llu", static_cast<unsigned long long>(seq));
    return prefix + std::string(buf);
}

// What the reopen of a database run from a copy (a full stateDir) waits
// for: free space of at least 1 MiB and the database file's size (what its
// migration may write to the -wal). Below it the open is not tried: it
// would run quick_check and the migration on the loop every 2 s for
// nothing, and with a few KiB back it could map a -shm whose pages the
// file system then cannot give blocks to (SIGBUS).
constexpr std::uint64_t kReopenMinFree = 1024 * 1024;

// Empty when `db`'s file system has the room; else why not.
std::string no_room_to_reopen(const std::string& db) {
    struct statvfs fs {};
    struct stat st {};
    if (::statvfs(db.c_str(), &fs) != 0) return {};  // the open says what is wrong
    const std::uint64_t size = ::stat(db.c_str(), &st) == 0 ? static_cast<std::uint64_t>(st.st_size) : 0;
    // Room for the migration, and, should the open find the file bad, for
    // the copy written beside the moved-aside file (Storage::save_copy).
    const std::uint64_t need = std::max(kReopenMinFree, size) + size;
    const std::uint64_t free = static_cast<std::uint64_t>(fs.f_bavail) * fs.f_frsize;
    if (free >= need) return {};
    return "the open waits for " + std::to_string(need / 1024) + " KiB free, " + std::to_string(free / 1024) +
           " KiB now";
}

// The open each retry of a copy tries (Storage::open_later), off the loop:
// once there is room, the file's open, which migrates it, or moves a file
// gone bad meanwhile aside (the recovery's empty database closed here: the
// copy replaces it).
Storage::Reopen reopen_when_room(const std::string& db, const Error& full) {
    return [db, why = full.message](std::int64_t now_ms) {
        Storage::Reopened r;
        if (auto no_room = no_room_to_reopen(db); !no_room.empty()) {
            r.store = Error{ErrorCode::NoSpace, why + " (" + no_room + ")"};
            return r;
        }
        store::OpenReport again;
        r.store = store::Store::open(db, now_ms, &again);
        // Moved aside whether or not the new file then opened (a failed
        // second open leaves an empty file the next try would take unsaid).
        if (again.recovered) {
            r.store = Error{ErrorCode::Corrupt, db + " was moved aside to " + again.moved_to};
            r.moved_to = again.moved_to;
            r.reason = again.reason;
        }
        return r;
    };
}

}  // namespace

Result<std::unique_ptr<Storage>> Storage::open(uv_loop_t* loop, const std::string& state_dir,
                                               const platform::Clock& clock,
                                               std::function<void()> moved_aside) {
    store::OpenReport report;
    const std::string db = state_dir + "/daemonlet.db";
    std::string read_only;
    std::optional<Error> full;
    bool started_empty = false;  // the file is still there, unread (not moved aside)
    Result<std::unique_ptr<store::Store>> st = Error{ErrorCode::ReadOnly, ""};
    // A worn-out card remounted read-only: rather than fail (and have
    // systemd restart the agent into the same failure), run the pods from
    // what the store holds and record nothing until a restart on a writable
    // stateDir (storage.h). A read-only file system is asked first: SQLite
    // would open the file read-only without saying so.
    struct statvfs fs {};
    if (::statvfs(state_dir.c_str(), &fs) == 0 && (fs.f_flag & ST_RDONLY) != 0) {
        read_only = state_dir + " is on a read-only file system";
    } else {
        st = store::Store::open(db, clock.wall_ms(), &report);
        if (!st.ok() && st.error().code == ErrorCode::ReadOnly) read_only = st.error().message;
        // A full stateDir that cannot take what the open writes (an
        // upgrade's migration, the -shm): the pods run from a copy of what
        // the store holds, and the open is retried until it fits (storage.h).
        if (!st.ok() && st.error().code == ErrorCode::NoSpace) {
            full = st.error();
            // The copy needs the file's EXCLUSIVE lock for a moment: a
            // `daemonlet get` reading it holds SHARED. A few tries, 1 s apart.
            st = store::Store::open_copy(db);
            for (int tries = 1; tries < 4 && !st.ok() && st.error().code == ErrorCode::Busy; ++tries) {
                ::sleep(1);
                st = store::Store::open_copy(db);
            }
            if (!st.ok() && (st.error().code == ErrorCode::Corrupt || report.recovered)) {
                // The file fails its check, and the full disk lets the open
                // neither see it (the -shm cannot be made) nor move it aside
                // and make a new one, or it moved it aside (no header: no
                // database) and could not make the new one: the pods run
                // from an empty copy (the agent rebuilds it from the
                // manifests and the running containers), and once there is
                // room the reopen moves the file aside and writes the copy
                // in its place, or makes the new file and writes the copy's
                // changes into it. Said once, with the full disk (open_later).
                const std::string unusable = st.error().message;
                st = store::Store::open_empty_copy(db);
                if (st.ok()) {
                    full->message += "; the file is unusable (" + unusable + "): running from an empty copy";
                    started_empty = !report.recovered;
                }
            }
            if (!st.ok()) st = Error{full->code, full->message + "; and no copy: " + st.error().message};
        }
        // ext4's errors=remount-ro leaves the mount flags as they were:
        // SQLite found out, and opened the file for reading only.
        if (st.ok() && st.value()->read_only()) {
            read_only = db + ": the file system refuses writes (read-only)";
            st = Error{ErrorCode::ReadOnly, read_only};
        }
    }
    if (!read_only.empty()) {
        st = store::Store::open_readonly(db);
        if (st.ok())
            log(Level::Err, "store: " + read_only +
                                ": running the pods from what the store holds; nothing is recorded until "
                                "the agent is restarted on a writable stateDir");
    }
    if (!st.ok()) return st.error();
    if (report.recovered)
        log(Level::Err, db + ": unusable (" + report.reason + "), moved aside to " + report.moved_to +
                            "; rebuilding from the manifest directory and the running containers");
    auto storage = std::make_unique<Storage>(loop, std::move(st).value(), clock, read_only);
    storage->started_empty_ = started_empty;
    if (full) storage->open_later(*full, reopen_when_room(db, *full), db, std::move(moved_aside));
    storage->start_worker_or_say();
    return storage;
}

class Storage::Tx final : public store::Store::Transaction {
  public:
    Tx(Storage& s, std::unique_ptr<Transaction> inner) : s_(s), inner_(std::move(inner)) {
        s_.in_tx_ = true;
        s_.tx_refused_ = !inner_;
        s_.tx_writes_.clear();
    }
    ~Tx() override {
        if (done_) return;
        inner_.reset();  // rolls back
        s_.end_tx(false);
    }
    Status commit() override {
        if (done_) return Error{ErrorCode::Invalid, "commit: the transaction is already finished"};
        done_ = true;
        if (!inner_ || s_.tx_refused_) {
            // The disk refused the transaction or one of its writes: SQLite
            // has rolled it back, or will; none of it lands now, all of it
            // is kept, to land together later.
            inner_.reset();
            s_.end_tx(false);
            return Ok{};
        }
        Status st = inner_->commit();
        inner_.reset();
        if (st.ok() || !store_deferred(st.error())) {
            s_.end_tx(st.ok());
            return st;
        }
        s_.tx_refused_ = true;
        s_.failed(st.error());
        s_.end_tx(false);
        return Ok{};
    }

  private:
    Storage& s_;
    std::unique_ptr<Transaction> inner_;
    bool done_ = false;
};

Storage::Storage(uv_loop_t* loop, std::unique_ptr<store::Store> inner, const platform::Clock& clock,
                 std::string read_only_reason)
    : loop_(loop), inner_(std::move(inner)), clock_(clock) {
    if (!read_only_reason.empty()) {
        opened_read_only_ = true;
        writable_ = false;
        error_code_ = ErrorCode::ReadOnly;
        error_ = std::move(read_only_reason);
        since_ms_ = clock_.wall_ms();
    }
}

struct Storage::DiskWork {
    uv_work_t req{};
    Storage* owner = nullptr;  // none once its end has been handled (close())
    const char* what = "";
    std::function<void()> work;
    std::function<void()> done;
    std::mutex mu;
    std::condition_variable cv;
    bool worked = false;
};

Storage::~Storage() {
    // The timer is the loop's: close() (shutdown) has closed it.
    if (timer_ || worker_done_) std::fprintf(stderr, "daemonlet: storage: destroyed before close()\n");
    if (work_) {
        // Not closed: the work must not end into a Storage that is gone.
        std::unique_lock<std::mutex> lock(work_->mu);
        work_->cv.wait(lock, [this] { return work_->worked; });
        work_->owner = nullptr;
    }
}

void Storage::open_later(const Error& why, Reopen reopen, std::string db, std::function<void()> moved_aside) {
    reopen_ = std::move(reopen);
    db_ = std::move(db);
    moved_aside_ = std::move(moved_aside);
    failed(why);
}

void Storage::off_loop(const char* what, std::function<void()> work, std::function<void()> done) {
    auto hooked = [hook = disk_work_hook_, what, work = std::move(work)] {
        if (hook) hook(what);
        work();
    };
    if (!loop_ || closed_) {
        hooked();
        done();
        return;
    }
    auto* job = new DiskWork;
    job->owner = this;
    job->what = what;
    job->work = std::move(hooked);
    job->done = std::move(done);
    job->req.data = job;
    work_ = job;
    const int rc = uv_queue_work(
        loop_, &job->req,
        [](uv_work_t* req) {
            auto* j = static_cast<DiskWork*>(req->data);
            j->work();
            std::lock_guard<std::mutex> lock(j->mu);
            j->worked = true;
            j->cv.notify_all();
        },
        [](uv_work_t* req, int) {
            std::unique_ptr<DiskWork> j(static_cast<DiskWork*>(req->data));
            if (!j->owner) return;
            j->owner->work_ = nullptr;
            j->done();
        });
    if (rc != 0) {
        // Not queued (it cannot be, on a live loop): done here, as without a loop.
        std::unique_ptr<DiskWork> j(std::exchange(work_, nullptr));
        j->work();
        j->done();
    }
}

Status Storage::start_worker() {
    // A copy's worker would open the file (and checkpoint it) under the old schema.
    if (opened_read_only_ || reopen_ || !loop_ || closed_ || worker_done_) return Ok{};
    worker_done_ = new uv_async_t;
    uv_async_init(loop_, worker_done_, [](uv_async_t* h) {
        if (h->data) static_cast<Storage*>(h->data)->deliver();
    });
    worker_done_->data = this;
    // A flush waited on keeps its client's connection, which keeps the loop.
    uv_unref(reinterpret_cast<uv_handle_t*>(worker_done_));
    uv_async_t* wake = worker_done_;
    auto st = inner_->start_worker([wake] { uv_async_send(wake); }, WorkerOptions{});
    if (!st.ok()) close_worker_handle();
    return st;
}

void Storage::start_worker_or_say() {
    if (auto w = start_worker(); !w.ok())
        log(Level::Warning, "store: " + w.error().message + "; checkpoints and flushes run on the loop");
}

void Storage::close_worker_handle() {
    if (!worker_done_) return;
    worker_done_->data = nullptr;
    uv_close(reinterpret_cast<uv_handle_t*>(worker_done_),
             [](uv_handle_t* h) { delete reinterpret_cast<uv_async_t*>(h); });
    worker_done_ = nullptr;
}

void Storage::close() {
    if (closed_) return;
    closed_ = true;
    bool reopen_tried = false;  // and failed, if writes are still kept: no second open at once
    if (work_) {
        // A reopen or a copy's write in progress is waited for (the stop
        // only) and ended here; its end on the loop then does nothing.
        DiskWork* job = std::exchange(work_, nullptr);
        const bool reopen = std::string_view(job->what) == "reopen";
        if (uv_cancel(reinterpret_cast<uv_req_t*>(&job->req)) == 0) {
            // Not started yet (queued behind runtime jobs on the pool):
            // nothing to wait for; its end, called with UV_ECANCELED,
            // frees it. A copy's write is done here (the stop needs it
            // on the disk); a reopen is the last try's below.
            if (!reopen) {
                job->work();
                job->done();
            }
        } else {
            std::unique_lock<std::mutex> lock(job->mu);
            job->cv.wait(lock, [job] { return job->worked; });
            lock.unlock();
            job->done();
            reopen_tried = reopen;
        }
        job->owner = nullptr;
    }
    // A last try: the disk may have room again since the last retry.
    if (!pending_.empty() && !opened_read_only_ && !reopen_tried) (void)retry();
    // What the worker was asked (the last retry's flush) is done before it
    // stops; the callbacks left run now, then none can come.
    inner_->stop_worker();
    close_worker_handle();
    if (timer_) {
        uv_close(reinterpret_cast<uv_handle_t*>(timer_),
                 [](uv_handle_t* h) { delete reinterpret_cast<uv_timer_t*>(h); });
        timer_ = nullptr;
    }
    if (!pending_.empty())
        log(Level::Warning, std::to_string(pending_.size()) + " changes were not recorded (stateDir " +
                                what_is_wrong(error_code_) + ": " + error_ +
                                "); the next start rebuilds them from the manifests and the running "
                                "containers");
    pending_.clear();
    clear_held();
}

Json Storage::status_json() const {
    // The error and since are the outage's: "" once it is over.
    return Json{{"writable", writable_},
                {"error", writable_ ? std::string() : error_},
                {"since", since_ms_ > 0 && !writable_ ? rfc3339(since_ms_) : std::string()},
                {"pending", pending_.size()}};
}

std::string Storage::status_suffix() const {
    if (writable_) return {};
    if (opened_read_only_) return ", stateDir read-only: nothing is recorded";
    return std::string(", stateDir ") + what_is_wrong(error_code_) + ": " + std::to_string(pending_.size()) +
           " changes not recorded yet";
}

void Storage::failed(const Error& e) {
    error_code_ = e.code;
    error_ = e.message;
    if (!writable_) return;
    writable_ = false;
    since_ms_ = clock_.wall_ms();
    // Once, here: the callers were answered as if their writes had landed.
    log(Level::Err, "store: " + e.message + ": the stateDir is " + what_is_wrong(e.code) +
                        "; the pods run on and are served from memory, what changes is kept and written "
                        "again every " +
                        std::to_string(kRetryMs / 1000) + " s until the disk takes it");
    start_retries();
    if (on_change_) on_change_();
}

void Storage::start_retries() {
    if (opened_read_only_ || !loop_ || closed_) return;
    if (!timer_) {
        timer_ = new uv_timer_t;
        uv_timer_init(loop_, timer_);
        timer_->data = this;
    }
    uv_timer_start(
        timer_, [](uv_timer_t* t) { (void)static_cast<Storage*>(t->data)->retry(); }, kRetryMs, kRetryMs);
}

void Storage::keep(const std::string& key, const std::string& forget, Write w) {
    if (key == kQueuedBelowKey) {
        // `forget` is the first kept row: the rows below it are deleted.
        pending_.erase(pending_.lower_bound("qev:"), pending_.lower_bound(forget));
    } else if (!forget.empty()) {
        for (auto it = pending_.lower_bound(forget); it != pending_.end() && it->first.starts_with(forget);)
            it = pending_.erase(it);
    }
    const bool deletes = !forget.empty();
    if (auto found = pending_.find(key); found == pending_.end()) {
        pending_.emplace(key, Kept{++seq_, {}, std::move(w), deletes});
    } else {
        // The row keeps its place in the replay (a DaemonSet before its
        // revisions), and a put after a DaemonSet's delete keeps the delete
        // before it: the store's cascade removes the old revisions first.
        Kept& k = found->second;
        if (deletes) {
            k.before = {};
        } else if (k.deletes) {
            k.before = std::move(k.write);
        }
        k.write = std::move(w);
        k.deletes = deletes;
    }
    if (!key.starts_with("event:")) return;
    std::size_t events = 0;
    for (auto it = pending_.lower_bound("event:"); it != pending_.end() && it->first.starts_with("event:");
         ++it)
        ++events;
    if (events > kMaxPendingEvents) pending_.erase(pending_.lower_bound("event:"));  // the oldest
}

void Storage::end_tx(bool landed) {
    in_tx_ = false;
    std::vector<TxWrite> writes = std::move(tx_writes_);
    tx_writes_.clear();
    if (landed) {
        for (const auto& w : writes) pending_.erase(w.key);
    } else if (tx_refused_) {
        for (auto& w : writes) keep(w.key, w.forget, std::move(w.write));
    }
    tx_refused_ = false;
}

// What a kept write answers: the caller goes on as if it had landed (its
// state is in memory, the write follows), and says nothing (storage.h).
template <class T>
T kept_answer() {
    if constexpr (std::is_same_v<T, bool>)
        return true;
    else
        return T{};
}

template <class Op>
Storage::Write Storage::as_write(Op op) {
    return [op = std::move(op)](store::Store& s) -> Status {
        auto r = op(s);
        if (!r.ok()) return r.error();
        return Ok{};
    };
}

template <class T, class Op>
Result<T> Storage::write(const std::string& key, Op op, const std::string& forget) {
    return write_lent<T>(
        key, op, [&op] { return as_write(op); }, forget);
}

template <class T, class Op, class MakeKept>
Result<T> Storage::write_lent(const std::string& key, const Op& op, const MakeKept& kept,
                              const std::string& forget) {
    if (in_tx_) {
        if (tx_refused_) {
            tx_writes_.push_back(TxWrite{key, forget, kept()});
            return kept_answer<T>();
        }
        Result<T> r = op(*inner_);
        tx_writes_.push_back(TxWrite{key, forget, kept()});
        if (r.ok() || !store_deferred(r.error())) return r;
        tx_refused_ = true;
        failed(r.error());
        return kept_answer<T>();
    }
    if (!writable_) {
        // Behind what is kept: written after it, in order, by the retry (a
        // revision's DaemonSet may be among the kept writes).
        keep(key, forget, kept());
        return kept_answer<T>();
    }
    Result<T> r = op(*inner_);
    if (r.ok() || !store_deferred(r.error())) return r;
    keep(key, forget, kept());
    failed(r.error());
    return kept_answer<T>();
}

Status Storage::retry() {
    if (opened_read_only_ || in_tx_) return refusal();
    if (reopen_) return reopen_file();
    return write_kept();
}

Status Storage::reopen_file() {
    if (work_)
        return Error{ErrorCode::Busy,
                     (db_.empty() ? std::string("the database") : db_) + ": " + work_->what + " in progress"};
    // Moved aside once: what is kept is not written into the new database
    // (not even by the shutdown's last try).
    if (!moved_to_.empty()) return Error{ErrorCode::Corrupt, db_ + " was moved aside to " + moved_to_};
    auto result = std::make_shared<Reopened>();
    auto status = std::make_shared<Status>(refusal());
    off_loop(
        "reopen", [result, reopen = reopen_, now = clock_.wall_ms()] { *result = reopen(now); },
        [this, result, status] { *status = reopened(std::move(*result)); });
    // Off the loop: its end is handled there, the kept writes then written.
    if (work_) return Error{ErrorCode::Busy, db_ + ": reopen in progress"};
    return *status;
}

Status Storage::reopened(Reopened r) {
    if (!r.moved_to.empty()) {
        // The file went bad while the pods ran from the copy: the open moved
        // it aside and made an empty one (the copy replaces it). The agent
        // stops (exit status 1) and systemd starts it again on that file
        // (docs/operating.md).
        log(Level::Err, db_ + ": unusable (" + r.reason + "), moved aside to " + r.moved_to);
        moved_to_ = r.moved_to;
        failed(r.store.error());
        save_copy();
        return r.store.error();
    }
    if (!r.store.ok()) {
        if (!closed_) failed(r.store.error());
        return r.store.error();
    }
    if (started_empty_) {
        // The copy's check found the file bad, the open with room finds it
        // good: it holds what this agent never loaded. Not written over:
        // the agent stops (exit status 1) and starts again from it.
        log(Level::Err, db_ +
                            ": the file found unusable at the start opens after all; stopping so that the "
                            "agent starts again from it");
        moved_to_ = db_;  // never written into by this agent
        const Error e{ErrorCode::Invalid, db_ + ": to be read by the next start"};
        failed(e);
        if (moved_aside_) moved_aside_();
        return e;
    }
    inner_ = std::move(r.store).value();
    reopen_ = {};
    if (!closed_) start_worker_or_say();
    return write_kept();
}

Status Storage::write_kept() {
    auto tx = inner_->begin();
    if (!tx.ok()) {
        if (store_deferred(tx.error())) failed(tx.error());
        return tx.error();
    }
    if (auto p = inner_->put_meta(kProbeMeta, std::to_string(clock_.wall_ms())); !p.ok()) {
        if (store_deferred(p.error())) failed(p.error());
        return p.error();
    }
    if (auto st = replay(pending_, *inner_); !st.ok()) {
        failed(st.error());
        return st;
    }
    if (auto st = tx.value()->commit(); !st.ok()) {
        if (store_deferred(st.error())) failed(st.error());
        return st;
    }
    const std::size_t landed = pending_.size();
    pending_.clear();
    clear_held();
    // What was kept may include what an operator was told holds across a
    // reboot (a rollback): on the disk, not only in the page cache.
    auto said = [](Status st) {
        if (!st.ok()) log(Level::Warning, "store: " + st.error().message);
    };
    inner_->flush_then(said);
    if (timer_) uv_timer_stop(timer_);
    if (!writable_) {
        writable_ = true;
        log(Level::Notice, "store: the stateDir takes writes again after " +
                               std::to_string((clock_.wall_ms() - since_ms_) / 1000) + " s; " +
                               std::to_string(landed) + " changes kept meanwhile are recorded");
        if (on_change_) on_change_();
    }
    return Ok{};
}

Status Storage::replay(KeptWrites& kept, store::Store& to) {
    std::vector<std::pair<std::uint64_t, std::string>> order;
    for (const auto& [key, k] : kept) order.emplace_back(k.seq, key);
    std::sort(order.begin(), order.end());
    std::vector<std::string> dropped;
    for (const auto& [seq, key] : order) {
        const Kept& k = kept[key];
        Status st = k.before ? k.before(to) : Status(Ok{});
        if (st.ok()) st = k.write(to);
        if (st.ok()) continue;
        if (store_deferred(st.error())) return st;
        // Not the disk: this write would fail again on every retry (said once).
        log(Level::Warning, "store: a change kept while the stateDir was not writable no longer applies (" +
                                st.error().message + "); dropped");
        dropped.push_back(key);
    }
    for (const auto& key : dropped) kept.erase(key);
    return Ok{};
}

void Storage::save_copy() {
    // What is kept so far goes into a snapshot of the copy (on the loop: a
    // copy in memory of memory); the loop reads the copy on meanwhile, and
    // what it writes is kept (and said lost at the stop).
    auto kept = std::make_shared<KeptWrites>(std::move(pending_));
    pending_.clear();
    auto snapshot = inner_->snapshot_copy([kept](store::Store& copy) { return replay(*kept, copy); });
    if (!snapshot.ok()) {
        saved(snapshot.error(), kept->size());
        return;
    }
    std::shared_ptr<store::Store> copy = std::move(snapshot).value();
    auto status = std::make_shared<Status>(Ok{});
    off_loop(
        "save", [copy, status, db = db_] { *status = copy->save_copy_to(db, {}); },
        [this, copy, status, kept]() mutable {
            copy.reset();
            saved(*status, kept->size());
        });
}

void Storage::saved(const Status& st, std::size_t kept) {
    const std::string db = db_;
    if (st.ok()) {
        log(Level::Notice,
            db + ": the copy the agent ran from, with the " + std::to_string(kept) +
                " changes kept, is written there; stopping so that the agent starts again from it");
    } else {
        log(Level::Err, db + ": the copy the agent ran from could not be written there (" +
                            st.error().message +
                            "): what only it held (the API server's DaemonSets, the revision history, the "
                            "Events queued for the cluster, the pods' records) and the " +
                            std::to_string(kept) +
                            " changes kept are lost; stopping so that the agent starts again on an empty "
                            "database and rebuilds from the manifest directory and the running containers");
    }
    if (moved_aside_) moved_aside_();
}

Result<std::unique_ptr<store::Store::Transaction>> Storage::begin() {
    if (in_tx_) return inner_->begin();  // the store's own error: a transaction is open
    // Not writable: the transaction is kept whole, behind what is kept.
    if (!writable_) return std::unique_ptr<Transaction>(new Tx(*this, nullptr));
    auto tx = inner_->begin();
    if (!tx.ok()) {
        if (!store_deferred(tx.error())) return tx.error();
        failed(tx.error());
        // The writes go on into a refused transaction: kept, written later.
        return std::unique_ptr<Transaction>(new Tx(*this, nullptr));
    }
    return std::unique_ptr<Transaction>(new Tx(*this, std::move(tx).value()));
}

Result<bool> Storage::put_daemonset(const store::StoredDaemonSet& ds) {
    auto r = write<bool>("ds:" + ds.namespace_ + "/" + ds.name,
                         [ds](store::Store& s) { return s.put_daemonset(ds); });
    if (!writable_) held_ds_[ds.namespace_ + "/" + ds.name] = ds;
    return r;
}

Result<bool> Storage::delete_daemonset(const std::string& ns, const std::string& name) {
    const std::string key = "ds:" + ns + "/" + name;
    auto r = write<bool>(
        key, [ns, name](store::Store& s) { return s.delete_daemonset(ns, name); }, key + "/");
    if (!writable_) {
        const std::string id = ns + "/" + name;
        held_ds_[id] = std::nullopt;
        held_revisions_.erase(id);
        held_rollbacks_.erase(id);
        held_cascades_.insert(id);
    }
    return r;
}

Result<bool> Storage::put_revision(const RevisionRecord& rev) {
    auto r = write<bool>("ds:" + rev.namespace_ + "/" + rev.daemonset + "/rev/" + rev.hash,
                         [rev](store::Store& s) { return s.put_revision(rev); });
    if (!writable_) held_revisions_[rev.namespace_ + "/" + rev.daemonset][rev.hash] = rev;
    return r;
}

void Storage::clear_held() {
    held_ds_.clear();
    held_revisions_.clear();
    held_rollbacks_.clear();
    held_cascades_.clear();
}

Result<std::optional<store::StoredDaemonSet>> Storage::get_daemonset(const std::string& ns,
                                                                     const std::string& name) {
    if (auto it = held_ds_.find(ns + "/" + name); it != held_ds_.end()) return it->second;
    return inner_->get_daemonset(ns, name);
}

Result<std::vector<store::StoredDaemonSet>> Storage::list_daemonsets() {
    auto stored = inner_->list_daemonsets();
    if (!stored.ok() || held_ds_.empty()) return stored;
    std::map<std::string, store::StoredDaemonSet> by_id;
    for (auto& ds : stored.value()) by_id[ds.namespace_ + "/" + ds.name] = std::move(ds);
    for (const auto& [id, ds] : held_ds_) {
        if (ds)
            by_id[id] = *ds;
        else
            by_id.erase(id);
    }
    std::vector<store::StoredDaemonSet> out;
    for (auto& [id, ds] : by_id) out.push_back(std::move(ds));
    return out;
}

Result<std::vector<RevisionRecord>> Storage::list_revisions(const std::string& ns, const std::string& ds) {
    const std::string id = ns + "/" + ds;
    const auto held = held_revisions_.find(id);
    const bool cascaded = held_cascades_.count(id) > 0;
    if (held == held_revisions_.end() && !cascaded) return inner_->list_revisions(ns, ds);
    std::vector<RevisionRecord> out;
    if (!cascaded) {
        auto stored = inner_->list_revisions(ns, ds);
        if (!stored.ok()) return stored;
        out = std::move(stored).value();
    }
    if (held != held_revisions_.end())
        for (const auto& [hash, rev] : held->second) {
            auto same =
                std::find_if(out.begin(), out.end(), [&](const RevisionRecord& r) { return r.hash == hash; });
            if (same != out.end())
                *same = rev;
            else
                out.push_back(rev);
        }
    std::sort(out.begin(), out.end(),
              [](const RevisionRecord& a, const RevisionRecord& b) { return a.revision < b.revision; });
    return out;
}

Result<std::optional<store::StoredRollback>> Storage::get_rollback(const std::string& ns,
                                                                   const std::string& name) {
    const std::string id = ns + "/" + name;
    if (auto it = held_rollbacks_.find(id); it != held_rollbacks_.end()) return it->second;
    if (held_cascades_.count(id)) return std::optional<store::StoredRollback>();
    return inner_->get_rollback(ns, name);
}

Result<int> Storage::prune_revisions(const std::string& ns, const std::string& ds, int keep,
                                     const std::vector<std::int64_t>& in_use) {
    return write<int>("ds:" + ns + "/" + ds + "/prune", [ns, ds, keep, in_use](store::Store& s) {
        return s.prune_revisions(ns, ds, keep, in_use);
    });
}

Result<bool> Storage::put_rollback(const store::StoredRollback& rb) {
    auto r = write<bool>("ds:" + rb.namespace_ + "/" + rb.name + "/rollback",
                         [rb](store::Store& s) { return s.put_rollback(rb); });
    if (!writable_) held_rollbacks_[rb.namespace_ + "/" + rb.name] = rb;
    return r;
}

Result<bool> Storage::delete_rollback(const std::string& ns, const std::string& name) {
    auto r = write<bool>("ds:" + ns + "/" + name + "/rollback",
                         [ns, name](store::Store& s) { return s.delete_rollback(ns, name); });
    if (!writable_) held_rollbacks_[ns + "/" + name] = std::nullopt;
    return r;
}

Result<bool> Storage::put_pod(const PodRecord& pod) {
    return write<bool>("pod:" + pod.uid, [pod](store::Store& s) { return s.put_pod(pod); });
}

Result<bool> Storage::delete_pod(const std::string& uid) {
    return write<bool>("pod:" + uid, [uid](store::Store& s) { return s.delete_pod(uid); });
}

Result<bool> Storage::put_node(const store::StoredNode& node) {
    return write<bool>("node", [node](store::Store& s) { return s.put_node(node); });
}

Result<bool> Storage::add_event(const store::EventRecord& ev) {
    return write<bool>(seq_key("event:", ++event_seq_), [ev](store::Store& s) { return s.add_event(ev); });
}

Result<bool> Storage::put_manifest_file(const store::StoredManifestFile& file) {
    // The file's text (up to 3 MiB) is written from where it is; it is
    // copied only into a write that is kept (the disk refused it).
    auto now = [&file](store::Store& s) { return s.put_manifest_file(file); };
    return write_lent<bool>("file:" + file.path, now, [&file] {
        return as_write([file](store::Store& s) { return s.put_manifest_file(file); });
    });
}

Result<bool> Storage::delete_manifest_file(const std::string& path) {
    return write<bool>("file:" + path, [path](store::Store& s) { return s.delete_manifest_file(path); });
}

Result<bool> Storage::put_api_daemonset(const store::StoredApiDaemonSet& ds) {
    return write<bool>("api:" + ds.namespace_ + "/" + ds.name,
                       [ds](store::Store& s) { return s.put_api_daemonset(ds); });
}

Result<bool> Storage::delete_api_daemonset(const std::string& ns, const std::string& name) {
    return write<bool>("api:" + ns + "/" + name,
                       [ns, name](store::Store& s) { return s.delete_api_daemonset(ns, name); });
}

Result<bool> Storage::rebase_wall_times(std::int64_t from_ms, std::int64_t to_ms, std::int64_t delta_ms) {
    // Not kept (storage.h): replayed later it would move times recorded since.
    if (!writable_ || (in_tx_ && tx_refused_)) return refusal();
    auto r = inner_->rebase_wall_times(from_ms, to_ms, delta_ms);
    if (!r.ok() && store_deferred(r.error())) failed(r.error());
    return r;
}

Result<bool> Storage::put_queued_event(const QueuedEvent& ev) {
    return write<bool>(seq_key("qev:", static_cast<std::uint64_t>(ev.seq)),
                       [ev](store::Store& s) { return s.put_queued_event(ev); });
}

Result<bool> Storage::delete_queued_event(std::int64_t seq) {
    return write<bool>(seq_key("qev:", static_cast<std::uint64_t>(seq)),
                       [seq](store::Store& s) { return s.delete_queued_event(seq); });
}

Result<bool> Storage::delete_queued_events_below(std::int64_t seq) {
    return write<bool>(
        kQueuedBelowKey, [seq](store::Store& s) { return s.delete_queued_events_below(seq); },
        seq_key("qev:", static_cast<std::uint64_t>(seq)));
}

Result<bool> Storage::put_meta(const std::string& key, const std::string& value) {
    return write<bool>("meta:" + key, [key, value](store::Store& s) { return s.put_meta(key, value); });
}

}  // namespace daemonlet::agent
