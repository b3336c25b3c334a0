// Opening the database file: creating it 0600, configuring the connection,
// checking it, migrating it, and moving a bad one aside.
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "core/io_error.h"
#include "store/migrations.h"
#include "store/sql.h"
#include "store/sqlite_store.h"

namespace daemonlet::store {
namespace {

// The most a copy in memory (open_copy, an older schema read by the CLI)
// may take (docs/operating.md's bounds): a board's database is far smaller.
constexpr std::uint64_t kMaxCopyBytes = 32ULL << 20;
constexpr mode_t kMode = 0600;  // the node's state is root's business

// A file the recovery must move aside, with the reason.
Error unusable(const std::string& why) { return Error{ErrorCode::Corrupt, why}; }

bool exists(const std::string& path) {
    struct stat st {};
    return ::lstat(path.c_str(), &st) == 0;
}

// Narrows a file's permissions to 0600 if it exists.
Status restrict_mode(const std::string& path, const char* op) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) {
        if (errno == ENOENT) return Ok{};
        return io_error(path, std::string(op) + ": stat");
    }
    if ((st.st_mode & 07777) != kMode && ::chmod(path.c_str(), kMode) != 0)
        return io_error(path, std::string(op) + ": chmod 0600");
    return Ok{};
}

}  // namespace

void sync_directory_of(const std::string& path) {
    const auto slash = path.rfind('/');
    const std::string dir = slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
    int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return;  // best effort: the rename itself has happened
    (void)::fsync(fd);
    ::close(fd);
}

namespace {

// Makes sure a regular file is at `path`, created 0600 if there was none.
// Sets *created when there was no database (no file, or an empty one).
Status prepare_file(const std::string& path, bool* created) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) {
        if (errno != ENOENT) return io_error(path, "open: stat");
        // A -wal without its database belongs to some other database:
        // SQLite would replay it into the new one.
        if (exists(path + "-wal"))
            return unusable("the database file is missing but " + path + "-wal exists");
        int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, kMode);
        if (fd < 0 && errno != EEXIST) return io_error(path, "open: create");
        if (fd >= 0) {
            // The umask may have narrowed 0600 further; make it exactly 0600.
            int rc = ::fchmod(fd, kMode);
            ::close(fd);
            if (rc != 0) return io_error(path, "open: chmod 0600");
            sync_directory_of(path);
        }
        *created = true;
    } else if (S_ISDIR(st.st_mode)) {
        return unusable(path + " is a directory, not a database file");
    } else if (!S_ISREG(st.st_mode)) {
        return unusable(path + " is not a regular file");
    } else if (st.st_size == 0) {
        *created = true;
    }
    // SQLite creates -wal and -shm with the database file's mode.
    for (const char* suffix : {"", "-wal", "-shm"})
        if (auto r = restrict_mode(path + suffix, "open"); !r) return r;
    return Ok{};
}

// <path>.corrupt-<now_ms>, or with .1, .2, ... if that is taken.
Result<std::string> move_aside(const std::string& path, std::int64_t now_ms) {
    std::string target = path + ".corrupt-" + std::to_string(now_ms);
    for (int n = 1; exists(target) || exists(target + "-wal") || exists(target + "-shm"); ++n)
        target = path + ".corrupt-" + std::to_string(now_ms) + "." + std::to_string(n);
    // The database first: if we stop half-way, a -wal left alone is seen as
    // an orphan at the next open and moved aside then.
    for (const char* suffix : {"", "-wal", "-shm"}) {
        const std::string from = path + suffix;
        if (::rename(from.c_str(), (target + suffix).c_str()) != 0 && errno != ENOENT)
            return io_error(from, "open: moving aside to " + target + suffix);
    }
    sync_directory_of(path);
    return target;
}

Result<sqlite::DbPtr> connect(const std::string& path, int flags) {
    sqlite3* raw = nullptr;
    int rc = sqlite3_open_v2(path.c_str(), &raw, flags | SQLITE_OPEN_NOMUTEX, nullptr);
    sqlite::DbPtr db(raw);  // closed on every path, even when the open failed
    if (rc != SQLITE_OK) return sqlite::sqlite_error(db.get(), rc);
    sqlite3_extended_result_codes(db.get(), 1);
    sqlite3_busy_timeout(db.get(), sqlite::kBusyTimeoutMs);
    return db;
}

// PRAGMA quick_check: a damaged file is Corrupt (moved aside by the open).
Status quick_check(sqlite3* db) {
    auto check = sqlite::query_column(db, sql::kQuickCheck);
    if (!check) return check.error();
    if (check.value() != std::vector<std::string>{"ok"}) {
        std::string why = "quick_check:";
        for (std::size_t i = 0; i < check.value().size() && i < 3; ++i) why += " " + check.value()[i];
        return unusable(why);
    }
    return Ok{};
}

// Checks, configures and migrates. Errors carry no path.
Status set_up(sqlite3* db) {
    // Until the file has passed the check, closing must not write to it: no
    // checkpoint of its -wal into it, no truncating the -wal (both are kept
    // as they are for inspection when the file is moved aside).
    sqlite3_db_config(db, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, nullptr);
    if (auto st = quick_check(db); !st) return st;
    auto mode = sqlite::query_column(db, sql::kJournalModeWal);
    if (!mode) return mode.error();
    if (mode.value().size() != 1 || mode.value().front() != "wal")
        return Error{ErrorCode::Sqlite,
                     "cannot switch to WAL (journal_mode is " +
                         (mode.value().empty() ? std::string("unknown") : mode.value().front()) + ")"};
    if (auto st = sqlite::exec(db, sql::kConfigure); !st) return st;
    if (auto st = migrate(db); !st) return st;
    sqlite3_db_config(db, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 0, nullptr);
    return Ok{};
}

Result<std::unique_ptr<Store>> open_once(const std::string& path, OpenReport& report) {
    auto in_context = [&](const Error& e) { return Error{e.code, path + ": open: " + e.message}; };
    if (auto st = prepare_file(path, &report.created); !st) return in_context(st.error());
    // A copy's write (save_copy_to) a crash left behind: never renamed, so
    // never the database; up to 32 MiB on a stateDir that was full.
    for (const char* suffix : {".saving", ".saving-journal"}) (void)::unlink((path + suffix).c_str());
    auto db = connect(path, SQLITE_OPEN_READWRITE);
    if (!db) return in_context(db.error());
    if (auto st = set_up(db.value().get()); !st) return in_context(st.error());
    for (const char* suffix : {"-wal", "-shm"})
        if (auto st = restrict_mode(path + suffix, "open"); !st) return st.error();
    auto store = SqliteStore::create(path, std::move(db).value());
    if (!store) return store.error();
    return std::unique_ptr<Store>(std::move(store).value());
}

}  // namespace

Result<std::unique_ptr<Store>> Store::open(const std::string& path, std::int64_t now_ms, OpenReport* report) {
    OpenReport ignored;
    OpenReport& rep = report ? *report : ignored;
    rep = OpenReport{};
    auto first = open_once(path, rep);
    if (first.ok() || first.error().code != ErrorCode::Corrupt) return first;

    // open_once has closed the connection (it is gone with the Result):
    // only now may the files be renamed.
    auto moved = move_aside(path, now_ms);
    if (!moved) return moved.error();
    rep = OpenReport{};
    rep.recovered = true;
    rep.moved_to = moved.value();
    rep.reason = first.error().message;
    return open_once(path, rep);
}

namespace {

// Whether the file system holding `path` is mounted read-only.
bool on_read_only_fs(const std::string& path) {
    struct statvfs vfs {};
    return ::statvfs(path.c_str(), &vfs) == 0 && (vfs.f_flag & ST_RDONLY) != 0;
}

// `path` as an SQLite URI that opens it immutable (sqlite.org/uri.html).
std::string immutable_uri(const std::string& path) {
    std::string uri = "file:";
    for (char c : path) {
        if (c == '%' || c == '?' || c == '#') {
            char buf[4];
            std::snprintf(buf, sizeof buf, "%%%02X", static_cast<unsigned char>(c));
            uri += buf;
        } else {
            uri += c;
        }
    }
    return uri + "?immutable=1";
}

// Whether a reader's connection may map a -shm the file system cannot
// back: SQLite (re)grows the -shm in 32 KiB regions by writing into the
// mapping, which raises SIGBUS when the file system has no block for it.
// That can only happen with less than a region free, on a file system
// whose blocks are smaller than a page (a full small ext4: 1 KiB blocks).
bool unmappable_shm(const std::string& path) {
    struct statvfs vfs {};
    if (::statvfs(path.c_str(), &vfs) != 0) return false;
    return vfs.f_bsize < 4096 && static_cast<std::uint64_t>(vfs.f_bavail) * vfs.f_frsize < 32 * 1024;
}

Error unreadable_version(int version) {
    return Error{ErrorCode::Schema, "the database has schema version " + std::to_string(version) +
                                        ", this daemonlet reads versions 1 to " +
                                        std::to_string(sql::kSchemaVersion) +
                                        " (the agent creates and migrates it)"};
}

// A database in memory holding what `from` holds (SQLite's online backup,
// every page).
Result<sqlite::DbPtr> copy_into_memory(sqlite3* from) {
    auto mem = connect(":memory:", SQLITE_OPEN_READWRITE);
    if (!mem) return mem.error();
    sqlite3* copy = mem.value().get();
    sqlite3_backup* backup = sqlite3_backup_init(copy, "main", from, "main");
    if (!backup) return sqlite::sqlite_error(copy, sqlite3_errcode(copy));
    const int rc = sqlite3_backup_step(backup, -1);
    sqlite3_backup_finish(backup);
    if (rc != SQLITE_DONE)
        return sqlite::sqlite_error(rc, std::string("copying into memory: ") + sqlite3_errstr(rc));
    return mem;
}

// A copy in memory of the database `file` holds at schema `version`,
// migrated there, read-only (query_only): for a database of an older schema
// (the agent of a newer build has not migrated it yet: not started, or its
// stateDir too full to write the migration). The file is left as it is; the
// copy is a snapshot (a board's database is a few hundred KiB).
Result<sqlite::DbPtr> migrated_copy(sqlite3* file, int version) {
    if (version < 1 || version > sql::kSchemaVersion) return unreadable_version(version);
    // Every page, free ones too: the backup copies the file's pages whole.
    auto pages = sqlite::query_column(file, "PRAGMA page_count");
    auto page_size = sqlite::query_column(file, "PRAGMA page_size");
    if (!pages) return pages.error();
    if (!page_size) return page_size.error();
    if (pages.value().size() == 1 && page_size.value().size() == 1) {
        const auto bytes = std::stoull(pages.value()[0]) * std::stoull(page_size.value()[0]);
        if (bytes > kMaxCopyBytes)
            return Error{ErrorCode::TooLarge,
                         "the database holds " + std::to_string(bytes >> 20) + " MiB, more than the " +
                             std::to_string(kMaxCopyBytes >> 20) + " MiB a copy in memory may take"};
    }
    auto mem = copy_into_memory(file);
    if (!mem) return mem.error();
    sqlite3* copy = mem.value().get();
    if (auto st = migrate(copy); !st) return st.error();
    if (auto st = sqlite::exec(copy, "PRAGMA query_only = 1"); !st) return st.error();
    return mem;
}

template <class InContext>
Result<std::unique_ptr<Store>> readable(const std::string& path, sqlite::DbPtr db, int version,
                                        const InContext& in_context) {
    if (version != sql::kSchemaVersion) {
        auto copy = migrated_copy(db.get(), version);
        if (!copy) return in_context(copy.error());
        db = std::move(copy).value();
    }
    auto store = SqliteStore::create(path, std::move(db));
    if (!store) return store.error();
    return std::unique_ptr<Store>(std::move(store).value());
}

}  // namespace

Result<std::unique_ptr<Store>> Store::open_readonly(const std::string& path) {
    auto in_context = [&](const Error& e) { return Error{e.code, path + ": open_readonly: " + e.message}; };
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) return io_error(path, "open_readonly: stat");
    if (unmappable_shm(path)) {
        // A live holder of the lock (the agent) has the -shm's pages: the
        // ordinary read-only open below is safe beside it.
        auto copy = open_copy(path);
        if (copy.ok() || copy.error().code != ErrorCode::Busy) return copy;
    }
    auto db = connect(path, SQLITE_OPEN_READONLY);
    if (!db) return in_context(db.error());
    auto version = user_version(db.value().get());
    if (!version && on_read_only_fs(path)) {
        // A WAL database on a read-only file system whose -wal and -shm an
        // agent's clean stop removed: SQLite can neither make them nor read
        // without them (SQLITE_CANTOPEN), except immutable, which nothing
        // can change there anyway.
        auto immutable = connect(immutable_uri(path), SQLITE_OPEN_READONLY | SQLITE_OPEN_URI);
        if (immutable) {
            if (auto v = user_version(immutable.value().get()); v) {
                db = std::move(immutable);
                version = v;
            }
        }
    }
    if (!version) return in_context(version.error());
    return readable(path, std::move(db).value(), version.value(), in_context);
}

Result<std::unique_ptr<Store>> Store::open_copy(const std::string& path) {
    auto in_context = [&](const Error& e) { return Error{e.code, path + ": open_copy: " + e.message}; };
    auto db = connect(path, SQLITE_OPEN_READWRITE);
    if (!db) return in_context(db.error());
    sqlite3* file = db.value().get();
    // Nothing written to the file, not even a checkpoint at the close.
    sqlite3_db_config(file, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, nullptr);
    // The -shm a failed open left on a full file system may have pages the
    // kernel could not give blocks to: reading them through its mapping
    // raises SIGBUS. In exclusive locking mode SQLite keeps the wal-index in
    // heap memory and never maps the -shm (sqlite.org/wal.html, "Use of WAL
    // Without Shared-Memory"); the lock is held for the copy only.
    if (auto st = sqlite::exec(file, "PRAGMA locking_mode = EXCLUSIVE"); !st) return in_context(st.error());
    // Held by another connection: Busy at once, not after the 5 s timeout
    // (the caller falls back or retries).
    sqlite3_busy_timeout(file, 0);
    // A damaged file fails here as it fails Store::open: the copy of it
    // would run the pods from damaged rows until the open moves it aside.
    if (auto st = quick_check(file); !st) return in_context(st.error());
    auto version = user_version(file);
    if (!version) return in_context(version.error());
    auto copy = migrated_copy(file, version.value());
    if (!copy) return in_context(copy.error());
    return readable(path, std::move(copy).value(), sql::kSchemaVersion, in_context);
}

namespace {

bool is_copy(sqlite3* db) {
    const char* file = sqlite3_db_filename(db, "main");
    return !file || !*file;
}

// Runs `first` on `copy` in one transaction: the copy is read-only
// (query_only) for the agent's loop; here, once, it takes the writes the
// file refused.
Status apply_to_copy(SqliteStore& copy, const std::function<Status(Store&)>& first) {
    if (!first) return Ok{};
    if (auto st = sqlite::exec(copy.db(), "PRAGMA query_only = 0"); !st) return st;
    Status applied = [&]() -> Status {
        auto tx = copy.begin();
        if (!tx) return tx.error();
        if (auto st = first(copy); !st) return st;
        return tx.value()->commit();
    }();
    (void)sqlite::exec(copy.db(), "PRAGMA query_only = 1");
    return applied;
}

}  // namespace

Result<std::unique_ptr<Store>> SqliteStore::snapshot_copy(const std::function<Status(Store&)>& first) {
    auto in_context = [&](const Error& e) { return Error{e.code, path_ + ": snapshot_copy: " + e.message}; };
    if (!is_copy(db_.get()))
        return in_context(Error{ErrorCode::Invalid, "this store is not a copy in memory"});
    auto mem = copy_into_memory(db_.get());
    if (!mem) return in_context(mem.error());
    if (auto st = sqlite::exec(mem.value().get(), "PRAGMA query_only = 1"); !st)
        return in_context(st.error());
    auto snapshot = SqliteStore::create(path_, std::move(mem).value());
    if (!snapshot) return snapshot.error();
    if (auto st = apply_to_copy(*snapshot.value(), first); !st) return in_context(st.error());
    return std::unique_ptr<Store>(std::move(snapshot).value());
}

Result<std::unique_ptr<Store>> Store::open_empty_copy(const std::string& path) {
    auto in_context = [&](const Error& e) { return Error{e.code, path + ": open_empty_copy: " + e.message}; };
    auto mem = connect(":memory:", SQLITE_OPEN_READWRITE);
    if (!mem) return in_context(mem.error());
    if (auto st = migrate(mem.value().get()); !st) return in_context(st.error());
    if (auto st = sqlite::exec(mem.value().get(), "PRAGMA query_only = 1"); !st)
        return in_context(st.error());
    return readable(path, std::move(mem).value(), sql::kSchemaVersion, in_context);
}

Status SqliteStore::save_copy_to(const std::string& path, const std::function<Status(Store&)>& first) {
    auto in_context = [&](const Error& e) { return Error{e.code, path + ": save_copy_to: " + e.message}; };
    sqlite3* copy = db_.get();
    if (!is_copy(copy)) return in_context(Error{ErrorCode::Invalid, "this store is not a copy in memory"});
    if (auto st = apply_to_copy(*this, first); !st) return in_context(st.error());
    const std::string tmp = path + ".saving";
    auto remove_tmp = [&] {
        for (const char* suffix : {"", "-journal"}) (void)::unlink((tmp + suffix).c_str());
    };
    auto failed = [&](const Error& e) {
        remove_tmp();
        return in_context(e);
    };
    remove_tmp();  // a crash's
    int fd = ::open(tmp.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, kMode);
    if (fd < 0) return failed(io_error(tmp, "create"));
    if (::fchmod(fd, kMode) != 0) {
        auto e = io_error(tmp, "chmod 0600");
        ::close(fd);
        return failed(e);
    }
    ::close(fd);
    {
        auto dest = connect(tmp, SQLITE_OPEN_READWRITE);
        if (!dest) return failed(dest.error());
        // No journal: the file is nothing until it is renamed whole.
        if (auto st = sqlite::exec(dest.value().get(), "PRAGMA journal_mode = OFF"); !st)
            return failed(st.error());
        sqlite3_backup* backup = sqlite3_backup_init(dest.value().get(), "main", copy, "main");
        if (!backup)
            return failed(sqlite::sqlite_error(dest.value().get(), sqlite3_errcode(dest.value().get())));
        const int step = sqlite3_backup_step(backup, -1);
        const int rc = sqlite3_backup_finish(backup);
        if (step != SQLITE_DONE || rc != SQLITE_OK) {
            const int why = step != SQLITE_DONE ? step : rc;
            return failed(sqlite::sqlite_error(why, std::string("writing the copy: ") + sqlite3_errstr(why)));
        }
    }
    fd = ::open(tmp.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0 || ::fsync(fd) != 0) {
        auto e = io_error(tmp, "fsync");
        if (fd >= 0) ::close(fd);
        return failed(e);
    }
    ::close(fd);
    // The empty database's -wal would be replayed into the copy.
    for (const char* suffix : {"-wal", "-shm"})
        if (::unlink((path + suffix).c_str()) != 0 && errno != ENOENT)
            return failed(io_error(path + suffix, "remove"));
    if (::rename(tmp.c_str(), path.c_str()) != 0) return failed(io_error(tmp, "rename to " + path));
    sync_directory_of(path);
    return Ok{};
}

}  // namespace daemonlet::store
