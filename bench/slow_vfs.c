/* slow_vfs: an LD_PRELOAD library that registers, as SQLite's default VFS,
 * a shim over the default unix VFS whose xSync of a database or -wal file
 * takes SLOW_VFS_SYNC_MS milliseconds longer: an SD card whose flush takes
 * hundreds of milliseconds (issue 15 §3), for SQLite's flushes only (the
 * other files the agent writes are bench/slow_fsync.c's). When
 * SLOW_VFS_LOG is set it appends one line per sync there:
 * "<pid> <tid> wal|db". bench_stall --sqlite-sync-delay-ms N runs the agent
 * under it. The agent links the shared libsqlite3, so this library's
 * sqlite3_vfs_register reaches the agent's SQLite; the agent itself has no
 * such code. Modelled on SQLite's own shims (src/test_vfstrace.c). */
#define _GNU_SOURCE
#include <fcntl.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

typedef struct SlowFile {
    sqlite3_file base;
    sqlite3_file* real;
    int kind; /* 0: neither, 1: database, 2: -wal */
} SlowFile;

static sqlite3_vfs* g_real;
static long g_delay_ms;
static const char* g_log;

#define REAL(f) (((SlowFile*)(f))->real)

static void slow_down(int kind) {
    if (g_delay_ms > 0) {
        struct timespec ts = {g_delay_ms / 1000, (g_delay_ms % 1000) * 1000000L};
        while (nanosleep(&ts, &ts) != 0) {
        }
    }
    if (!g_log) return;
    int out = open(g_log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (out < 0) return;
    char line[96];
    int len = snprintf(line, sizeof line, "%ld %ld %s\n", (long)getpid(), (long)syscall(SYS_gettid),
                       kind == 2 ? "wal" : "db");
    if (len > 0) (void)!write(out, line, (size_t)len);
    close(out);
}

static int x_close(sqlite3_file* f) { return REAL(f)->pMethods->xClose(REAL(f)); }
static int x_read(sqlite3_file* f, void* b, int n, sqlite3_int64 o) {
    return REAL(f)->pMethods->xRead(REAL(f), b, n, o);
}
static int x_write(sqlite3_file* f, const void* b, int n, sqlite3_int64 o) {
    return REAL(f)->pMethods->xWrite(REAL(f), b, n, o);
}
static int x_truncate(sqlite3_file* f, sqlite3_int64 n) { return REAL(f)->pMethods->xTruncate(REAL(f), n); }
static int x_sync(sqlite3_file* f, int flags) {
    if (((SlowFile*)f)->kind) slow_down(((SlowFile*)f)->kind);
    return REAL(f)->pMethods->xSync(REAL(f), flags);
}
static int x_file_size(sqlite3_file* f, sqlite3_int64* n) { return REAL(f)->pMethods->xFileSize(REAL(f), n); }
static int x_lock(sqlite3_file* f, int l) { return REAL(f)->pMethods->xLock(REAL(f), l); }
static int x_unlock(sqlite3_file* f, int l) { return REAL(f)->pMethods->xUnlock(REAL(f), l); }
static int x_check_reserved(sqlite3_file* f, int* out) {
    return REAL(f)->pMethods->xCheckReservedLock(REAL(f), out);
}
static int x_file_control(sqlite3_file* f, int op, void* arg) {
    return REAL(f)->pMethods->xFileControl(REAL(f), op, arg);
}
static int x_sector_size(sqlite3_file* f) { return REAL(f)->pMethods->xSectorSize(REAL(f)); }
static int x_device(sqlite3_file* f) { return REAL(f)->pMethods->xDeviceCharacteristics(REAL(f)); }
static int x_shm_map(sqlite3_file* f, int pg, int size, int extend, void volatile** out) {
    return REAL(f)->pMethods->xShmMap(REAL(f), pg, size, extend, out);
}
static int x_shm_lock(sqlite3_file* f, int offset, int n, int flags) {
    return REAL(f)->pMethods->xShmLock(REAL(f), offset, n, flags);
}
static void x_shm_barrier(sqlite3_file* f) { REAL(f)->pMethods->xShmBarrier(REAL(f)); }
static int x_shm_unmap(sqlite3_file* f, int del) { return REAL(f)->pMethods->xShmUnmap(REAL(f), del); }
static int x_fetch(sqlite3_file* f, sqlite3_int64 off, int n, void** out) {
    return REAL(f)->pMethods->xFetch(REAL(f), off, n, out);
}
static int x_unfetch(sqlite3_file* f, sqlite3_int64 off, void* p) {
    return REAL(f)->pMethods->xUnfetch(REAL(f), off, p);
}

static const sqlite3_io_methods g_methods = {
    3,          x_close,       x_read,           x_write,        x_truncate,    x_sync,   x_file_size,
    x_lock,     x_unlock,      x_check_reserved, x_file_control, x_sector_size, x_device, x_shm_map,
    x_shm_lock, x_shm_barrier, x_shm_unmap,      x_fetch,        x_unfetch,
};

static int x_open(sqlite3_vfs* vfs, sqlite3_filename name, sqlite3_file* f, int flags, int* out) {
    (void)vfs;
    SlowFile* file = (SlowFile*)f;
    file->real = (sqlite3_file*)(file + 1);
    file->kind = (flags & SQLITE_OPEN_WAL) ? 2 : (flags & SQLITE_OPEN_MAIN_DB) ? 1 : 0;
    int rc = g_real->xOpen(g_real, name, file->real, flags, out);
    /* The unix VFS's methods are version 3: everything above is theirs. */
    file->base.pMethods = file->real->pMethods ? &g_methods : NULL;
    return rc;
}

static int x_delete(sqlite3_vfs* v, const char* n, int s) {
    (void)v;
    return g_real->xDelete(g_real, n, s);
}
static int x_access(sqlite3_vfs* v, const char* n, int fl, int* out) {
    (void)v;
    return g_real->xAccess(g_real, n, fl, out);
}
static int x_full_pathname(sqlite3_vfs* v, const char* n, int len, char* out) {
    (void)v;
    return g_real->xFullPathname(g_real, n, len, out);
}
static void* x_dl_open(sqlite3_vfs* v, const char* n) {
    (void)v;
    return g_real->xDlOpen(g_real, n);
}
static void x_dl_error(sqlite3_vfs* v, int len, char* out) {
    (void)v;
    g_real->xDlError(g_real, len, out);
}
static void (*x_dl_sym(sqlite3_vfs* v, void* h, const char* s))(void) {
    (void)v;
    return g_real->xDlSym(g_real, h, s);
}
static void x_dl_close(sqlite3_vfs* v, void* h) {
    (void)v;
    g_real->xDlClose(g_real, h);
}
static int x_randomness(sqlite3_vfs* v, int n, char* out) {
    (void)v;
    return g_real->xRandomness(g_real, n, out);
}
static int x_sleep(sqlite3_vfs* v, int us) {
    (void)v;
    return g_real->xSleep(g_real, us);
}
static int x_current_time(sqlite3_vfs* v, double* t) {
    (void)v;
    return g_real->xCurrentTime(g_real, t);
}
static int x_last_error(sqlite3_vfs* v, int len, char* out) {
    (void)v;
    return g_real->xGetLastError(g_real, len, out);
}
static int x_current_time64(sqlite3_vfs* v, sqlite3_int64* t) {
    (void)v;
    return g_real->xCurrentTimeInt64(g_real, t);
}

static sqlite3_vfs g_vfs = {
    .iVersion = 2,
    .zName = "slow-sync",
    .xOpen = x_open,
    .xDelete = x_delete,
    .xAccess = x_access,
    .xFullPathname = x_full_pathname,
    .xDlOpen = x_dl_open,
    .xDlError = x_dl_error,
    .xDlSym = x_dl_sym,
    .xDlClose = x_dl_close,
    .xRandomness = x_randomness,
    .xSleep = x_sleep,
    .xCurrentTime = x_current_time,
    .xGetLastError = x_last_error,
    .xCurrentTimeInt64 = x_current_time64,
};

__attribute__((constructor)) static void slow_vfs_register(void) {
    const char* ms = getenv("SLOW_VFS_SYNC_MS");
    g_delay_ms = ms ? atol(ms) : 0;
    g_log = getenv("SLOW_VFS_LOG");
    g_real = sqlite3_vfs_find(NULL);
    if (!g_real) return;
    g_vfs.szOsFile = (int)sizeof(SlowFile) + g_real->szOsFile;
    g_vfs.mxPathname = g_real->mxPathname;
    sqlite3_vfs_register(&g_vfs, 1);
}
