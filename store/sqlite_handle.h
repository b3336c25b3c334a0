// RAII over SQLite's C handles, and the statement guard. A connection is a
// unique_ptr that closes it; a prepared statement is a unique_ptr that
// finalises it; a Query is one use of a prepared statement that resets it
// and clears its bindings when it goes out of scope, on every path (the
// discipline of fluent-bit's tail_db.c, where every early return must
// remember sqlite3_reset: here the destructor remembers).
//
// Every step goes through Query::step (or exec), which consults the fault
// injection counter of store/testing.h first.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "core/result.h"

namespace daemonlet::store::sqlite {

// How long a statement waits for another connection's lock
// (sqlite3_busy_timeout): a CLI reader checkpointing, a second agent
// starting; the WAL worker's connection for the owner's transaction in
// progress (a RESTART checkpoint waits for it).
inline constexpr int kBusyTimeoutMs = 5000;

struct DbClose {
    void operator()(sqlite3* db) const;  // crashes if a statement is still open: a broken invariant
};
using DbPtr = std::unique_ptr<sqlite3, DbClose>;

struct StmtFinalize {
    void operator()(sqlite3_stmt* stmt) const { sqlite3_finalize(stmt); }
};
using StmtPtr = std::unique_ptr<sqlite3_stmt, StmtFinalize>;

// Turns an SQLite result code and message into an Error. The code says what
// a caller can do about it: "busy" (locked: retry later), "corrupt" (the
// file is damaged or not a database: recovery moves it aside), "no_space"
// and "read_only" (the file system is full or read-only, SQLITE_FULL,
// SQLITE_READONLY or an I/O error whose errno says so: the agent runs on and
// writes again later), "sqlite" (anything else). The message is SQLite's; the store adds path and operation.
Error sqlite_error(int rc, std::string message);
// The error SQLite last reported on `db` for result code `rc`.
Error sqlite_error(sqlite3* db, int rc);

// Whether the next step is to fail (store/testing.h); consumed by the call.
bool inject_fault();
Error injected_error();

// Cleanup statements (ROLLBACK) are never failed by injection: the
// invariants under test are about what happens after a failure.
enum class Faults { Inject, Never };

// A statement prepared once (SQLITE_PREPARE_PERSISTENT) and reused.
class Statement {
  public:
    Statement() = default;
    Status prepare(sqlite3* db, const char* sql, Faults faults = Faults::Inject);

    sqlite3_stmt* get() const { return stmt_.get(); }
    bool faultable() const { return faults_ == Faults::Inject; }

  private:
    StmtPtr stmt_;
    Faults faults_ = Faults::Inject;
};

// A value bound to or read from a column: SQLite's INTEGER or TEXT.
// A string_view is bound without a copy: a manifest file's text (up to
// 3 MiB) copied into a Row had the agent OOM-killed in 32 MiB.
using Value = std::variant<std::int64_t, std::string, std::string_view>;

// One use of a Statement: binds, steps, reads. Binding errors are kept and
// reported by the first step, so that binds can be chained.
class Query {
  public:
    explicit Query(Statement& s) : stmt_(s.get()), faultable_(s.faultable()) {}
    ~Query();
    Query(const Query&) = delete;
    Query& operator=(const Query&) = delete;

    Query& bind(int index, std::int64_t v);
    Query& bind(int index, std::string_view v);
    Query& bind(int index, const std::string& v) { return bind(index, std::string_view(v)); }
    Query& bind(int index, const char* v) { return bind(index, std::string_view(v)); }
    Query& bind(int index, const Value& v);
    // Binds values to ?first, ?first+1, ...; returns the next index.
    int bind_all(int first, const std::vector<Value>& values);

    // true: a row is available; false: done.
    Result<bool> step();
    // Steps through every row, calling `row` on each (read the columns
    // from the Query it is given); stops at the first error.
    template <class F>
    Status each_row(F&& row) {
        for (;;) {
            auto more = step();
            if (!more) return more.error();
            if (!more.value()) return Ok{};
            row(static_cast<const Query&>(*this));
        }
    }

    std::int64_t int64(int col) const { return sqlite3_column_int64(stmt_, col); }
    std::string text(int col) const;
    // Whether the current row's columns first, first+1, ... hold exactly `values`.
    bool columns_equal(int first, const std::vector<Value>& values) const;

  private:
    sqlite3_stmt* stmt_;
    bool faultable_;
    int bind_rc_ = SQLITE_OK;
};

// Runs SQL text that returns no rows (migrations, pragmas set at open).
Status exec(sqlite3* db, const char* sql);
// Runs a statement once and returns every row's first column as text
// (PRAGMA quick_check, journal_mode, user_version). Not kept prepared: for open only.
Result<std::vector<std::string>> query_column(sqlite3* db, const char* sql);

}  // namespace daemonlet::store::sqlite
