// Test hooks for the store, compiled into every build: they cost one branch
// per SQLite step. Not for the agent.
//
// Fault injection as SQLite tests itself (src/test_malloc.c fails the n-th
// malloc, then the n+1-th, ...): fail_after(n) makes the n-th SQLite step
// from now fail with SQLITE_IOERR, before SQLite runs it. Steps are every
// sqlite3_step of a store statement (BEGIN, COMMIT and SAVEPOINT included)
// and every migration or pragma run at open; a ROLLBACK is never failed.
#pragma once

#include <cstdint>

#include "store/store.h"

namespace daemonlet::store::testing {

// n >= 1: the n-th step from now fails (1: the next one). persistent: that
// step and every later one fail, until the next call. n = 0: no faults.
void fail_after(std::int64_t n, bool persistent = false);
// Whether an injected fault fired since the last fail_after.
bool fault_fired();

// The store's connection waits at most `ms` for another's lock (open.cpp's
// busy timeout is 5 s): a test of SQLITE_BUSY need not wait that long.
void set_busy_timeout(Store& store, int ms);

// sqlite3_total_changes() of the store's connection: rows it has written.
std::int64_t total_changes(Store& store);

}  // namespace daemonlet::store::testing
