// An SQLite VFS that fails the n-th write, sync or truncate of a database or
// -wal file with SQLITE_IOERR, as SQLite's own crash and I/O-error tests do
// (src/test_devsym.c, test6.c): the errors come from below SQLite, so its own
// recovery runs (an I/O error in a write statement rolls the whole
// transaction back). Everything else is passed to the default VFS. Installed
// as the default VFS for the life of a FaultyVfs.
// No CppUTest here: the test files include it before CppUTest's headers.
#pragma once

#include <sqlite3.h>

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <utility>

namespace daemonlet::testing {

class FaultyVfs {
  public:
    FaultyVfs() {
        state().real = sqlite3_vfs_find(nullptr);
        state().countdown = 0;
        state().full = false;
        state().shm_full = false;
        sqlite3_vfs* real = state().real;
        vfs_ = sqlite3_vfs{};
        vfs_.iVersion = 2;
        vfs_.szOsFile = static_cast<int>(sizeof(File)) + real->szOsFile;
        vfs_.mxPathname = real->mxPathname;
        vfs_.zName = "daemonlet-faulty";
        vfs_.xOpen = &open;
        vfs_.xDelete = [](sqlite3_vfs*, const char* n, int sync) { return r()->xDelete(r(), n, sync); };
        vfs_.xAccess = [](sqlite3_vfs*, const char* n, int f, int* out) {
            return r()->xAccess(r(), n, f, out);
        };
        vfs_.xFullPathname = [](sqlite3_vfs*, const char* n, int len, char* out) {
            return r()->xFullPathname(r(), n, len, out);
        };
        vfs_.xDlOpen = [](sqlite3_vfs*, const char* n) { return r()->xDlOpen(r(), n); };
        vfs_.xDlError = [](sqlite3_vfs*, int len, char* out) { r()->xDlError(r(), len, out); };
        vfs_.xDlSym = [](sqlite3_vfs*, void* h, const char* s) { return r()->xDlSym(r(), h, s); };
        vfs_.xDlClose = [](sqlite3_vfs*, void* h) { r()->xDlClose(r(), h); };
        vfs_.xRandomness = [](sqlite3_vfs*, int n, char* out) { return r()->xRandomness(r(), n, out); };
        vfs_.xSleep = [](sqlite3_vfs*, int us) { return r()->xSleep(r(), us); };
        vfs_.xCurrentTime = [](sqlite3_vfs*, double* t) { return r()->xCurrentTime(r(), t); };
        vfs_.xGetLastError = [](sqlite3_vfs*, int len, char* out) {
            return r()->xGetLastError(r(), len, out);
        };
        vfs_.xCurrentTimeInt64 = [](sqlite3_vfs*, sqlite3_int64* t) {
            return r()->xCurrentTimeInt64(r(), t);
        };
        sqlite3_vfs_register(&vfs_, /*makeDflt=*/1);
    }
    ~FaultyVfs() {
        state().on_sync = nullptr;
        sqlite3_vfs_unregister(&vfs_);
        sqlite3_vfs_register(state().real, 1);
    }
    FaultyVfs(const FaultyVfs&) = delete;
    FaultyVfs& operator=(const FaultyVfs&) = delete;

    // The n-th write, sync or truncate from now fails (0: none); persistent:
    // every later one too.
    static void fail_after(std::int64_t n, bool persistent = false) {
        state().countdown = n;
        state().persistent = persistent;
        state().fired = false;
    }
    static bool fired() { return state().fired; }
    // A full disk: every write that would grow a database or WAL file fails
    // with SQLITE_FULL (as the unix VFS reports ENOSPC); writes within a
    // file's size (a WAL reused after a checkpoint) still land.
    static void set_full(bool full) { state().full = full; }
    // A full disk that cannot take a -shm either (none was left by the
    // last agent's clean stop): every map of a -shm fails as the unix VFS
    // fails it on ENOSPC (SQLITE_IOERR_SHMSIZE).
    static void set_shm_full(bool full) { state().shm_full = full; }
    // Called before each sync of a database or -wal file, on the thread
    // that syncs (the store's worker), with whether it is the -wal; it may
    // block (a slow card). Set it before a second thread can sync.
    static void on_sync(std::function<void(bool wal)> f) { state().on_sync = std::move(f); }

  private:
    struct State {
        sqlite3_vfs* real = nullptr;
        std::int64_t countdown = 0;
        bool persistent = false;
        bool fired = false;
        bool full = false;
        bool shm_full = false;
        std::function<void(bool wal)> on_sync;
    };
    static State& state() {
        static State s;
        return s;
    }
    static sqlite3_vfs* r() { return state().real; }

    static bool fail_now() {
        State& s = state();
        if (s.countdown == 0) return false;
        if (s.countdown > 1) {
            --s.countdown;
            return false;
        }
        s.fired = true;
        if (!s.persistent) s.countdown = 0;
        return true;
    }

    struct File {
        sqlite3_file base;
        sqlite3_file* real;
        bool faulty;  // a database or WAL file (not the -shm or a temp file)
        bool wal;
    };
    static sqlite3_file* inner(sqlite3_file* f) { return reinterpret_cast<File*>(f)->real; }
    static bool faulty(sqlite3_file* f) { return reinterpret_cast<File*>(f)->faulty; }

    static int open(sqlite3_vfs*, sqlite3_filename name, sqlite3_file* f, int flags, int* out) {
        File* file = reinterpret_cast<File*>(f);
        file->real = reinterpret_cast<sqlite3_file*>(file + 1);
        file->faulty = (flags & (SQLITE_OPEN_MAIN_DB | SQLITE_OPEN_WAL)) != 0;
        file->wal = (flags & SQLITE_OPEN_WAL) != 0;
        int rc = r()->xOpen(r(), name, file->real, flags, out);
        file->base.pMethods = file->real->pMethods ? &methods() : nullptr;
        return rc;
    }

    static const sqlite3_io_methods& methods() {
        static const sqlite3_io_methods m = [] {
            sqlite3_io_methods io{};
            io.iVersion = 3;
            io.xClose = [](sqlite3_file* f) { return inner(f)->pMethods->xClose(inner(f)); };
            io.xRead = [](sqlite3_file* f, void* buf, int n, sqlite3_int64 off) {
                return inner(f)->pMethods->xRead(inner(f), buf, n, off);
            };
            io.xWrite = [](sqlite3_file* f, const void* buf, int n, sqlite3_int64 off) {
                if (faulty(f) && fail_now()) return SQLITE_IOERR_WRITE;
                if (faulty(f) && state().full) {
                    sqlite3_int64 size = 0;
                    if (inner(f)->pMethods->xFileSize(inner(f), &size) != SQLITE_OK || off + n > size)
                        return SQLITE_FULL;
                }
                return inner(f)->pMethods->xWrite(inner(f), buf, n, off);
            };
            io.xTruncate = [](sqlite3_file* f, sqlite3_int64 size) {
                if (faulty(f) && fail_now()) return SQLITE_IOERR_TRUNCATE;
                return inner(f)->pMethods->xTruncate(inner(f), size);
            };
            io.xSync = [](sqlite3_file* f, int flags) {
                if (faulty(f) && fail_now()) return SQLITE_IOERR_FSYNC;
                if (faulty(f) && state().on_sync) state().on_sync(reinterpret_cast<File*>(f)->wal);
                return inner(f)->pMethods->xSync(inner(f), flags);
            };
            io.xFileSize = [](sqlite3_file* f, sqlite3_int64* size) {
                return inner(f)->pMethods->xFileSize(inner(f), size);
            };
            io.xLock = [](sqlite3_file* f, int l) { return inner(f)->pMethods->xLock(inner(f), l); };
            io.xUnlock = [](sqlite3_file* f, int l) { return inner(f)->pMethods->xUnlock(inner(f), l); };
            io.xCheckReservedLock = [](sqlite3_file* f, int* out) {
                return inner(f)->pMethods->xCheckReservedLock(inner(f), out);
            };
            io.xFileControl = [](sqlite3_file* f, int op, void* arg) {
                return inner(f)->pMethods->xFileControl(inner(f), op, arg);
            };
            io.xSectorSize = [](sqlite3_file* f) { return inner(f)->pMethods->xSectorSize(inner(f)); };
            io.xDeviceCharacteristics = [](sqlite3_file* f) {
                return inner(f)->pMethods->xDeviceCharacteristics(inner(f));
            };
            io.xShmMap = [](sqlite3_file* f, int pg, int size, int extend, void volatile** out) {
                if (state().shm_full) {
                    errno = ENOSPC;
                    return SQLITE_IOERR_SHMSIZE;
                }
                return inner(f)->pMethods->xShmMap(inner(f), pg, size, extend, out);
            };
            io.xShmLock = [](sqlite3_file* f, int offset, int n, int flags) {
                return inner(f)->pMethods->xShmLock(inner(f), offset, n, flags);
            };
            io.xShmBarrier = [](sqlite3_file* f) { inner(f)->pMethods->xShmBarrier(inner(f)); };
            io.xShmUnmap = [](sqlite3_file* f, int del) {
                return inner(f)->pMethods->xShmUnmap(inner(f), del);
            };
            // No xFetch: without memory-mapped reads every access goes through xRead.
            io.xFetch = [](sqlite3_file*, sqlite3_int64, int, void** out) {
                *out = nullptr;
                return SQLITE_OK;
            };
            io.xUnfetch = [](sqlite3_file*, sqlite3_int64, void*) { return SQLITE_OK; };
            return io;
        }();
        return m;
    }

    sqlite3_vfs vfs_{};
};

}  // namespace daemonlet::testing
