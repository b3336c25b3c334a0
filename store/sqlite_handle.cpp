#include "store/sqlite_handle.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "store/testing.h"

namespace daemonlet::store {
namespace {

// Fault injection state (store/testing.h). The store is used from one
// thread; so are its tests.
std::int64_t g_countdown = 0;
bool g_persistent = false;
bool g_fired = false;

}  // namespace

void testing::fail_after(std::int64_t n, bool persistent) {
    g_countdown = n < 0 ? 0 : n;
    g_persistent = persistent;
    g_fired = false;
}

bool testing::fault_fired() { return g_fired; }

namespace sqlite {

bool inject_fault() {
    if (g_countdown == 0) return false;
    if (g_countdown > 1) {
        --g_countdown;
        return false;
    }
    g_fired = true;
    if (!g_persistent) g_countdown = 0;
    return true;
}

Error injected_error() {
    return Error{ErrorCode::Sqlite, "disk I/O error (injected by store::testing::fail_after)"};
}

void DbClose::operator()(sqlite3* db) const {
    // sqlite3_close fails only while statements are open: the store's
    // statements are members declared after the connection, so they are
    // finalised first. Anything else is a bug.
    if (sqlite3_close(db) != SQLITE_OK) {
        std::fprintf(stderr, "daemonlet: store: closing the database: %s\n", sqlite3_errmsg(db));
        std::abort();
    }
}

Error sqlite_error(int rc, std::string message) {
    switch (rc & 0xff) {
    case SQLITE_FULL: return Error{ErrorCode::NoSpace, std::move(message)};
    case SQLITE_READONLY: return Error{ErrorCode::ReadOnly, std::move(message)};
    case SQLITE_BUSY:
    case SQLITE_LOCKED: return Error{ErrorCode::Busy, std::move(message)};
    case SQLITE_CORRUPT:
    case SQLITE_NOTADB: return Error{ErrorCode::Corrupt, std::move(message)};
    default: return Error{ErrorCode::Sqlite, std::move(message)};
    }
}

Error sqlite_error(sqlite3* db, int rc) {
    // sqlite3_errmsg describes the most recent failure on the connection;
    // after a prepare or step that returned rc, that is this one.
    Error e = sqlite_error(rc, db ? sqlite3_errmsg(db) : sqlite3_errstr(rc));
    // "disk I/O error" alone does not say whether the card is full, was
    // remounted read-only or is failing: the system's errno does, and the
    // agent keeps running on the first two (agent/daemon/storage.h).
    const int primary = rc & 0xff;
    if (primary != SQLITE_IOERR && primary != SQLITE_CANTOPEN) return e;
    int sys = db ? sqlite3_system_errno(db) : 0;
    // SQLite reads errno late (unixGetLastError): often 0 by then. A file
    // system the kernel has made read-only under us (ext4's errors=
    // remount-ro) says so to an open for writing, which writes nothing.
    const char* file = db ? sqlite3_db_filename(db, "main") : nullptr;
    if (sys == 0 && file && *file) {
        int fd = ::open(file, O_RDWR | O_CLOEXEC | O_NOCTTY);
        if (fd >= 0)
            ::close(fd);
        else if (errno == EROFS)
            sys = EROFS;
    }
    if (sys == 0) return e;
    e.message += std::string(" (") + std::strerror(sys) + ")";
    if (sys == ENOSPC || sys == EDQUOT) e.code = ErrorCode::NoSpace;
    if (sys == EROFS) e.code = ErrorCode::ReadOnly;
    return e;
}

Status Statement::prepare(sqlite3* db, const char* sql, Faults faults) {
    sqlite3_stmt* raw = nullptr;
    int rc = sqlite3_prepare_v3(db, sql, -1, SQLITE_PREPARE_PERSISTENT, &raw, nullptr);
    stmt_.reset(raw);
    faults_ = faults;
    if (rc != SQLITE_OK) {
        Error e = sqlite_error(db, rc);
        e.message += " (preparing \"" + std::string(sql).substr(0, 60) + "\")";
        return e;
    }
    return Ok{};
}

Query::~Query() {
    // The result of reset repeats the last step's error, already reported.
    sqlite3_reset(stmt_);
    sqlite3_clear_bindings(stmt_);
}

Query& Query::bind(int index, std::int64_t v) {
    int rc = sqlite3_bind_int64(stmt_, index, v);
    if (bind_rc_ == SQLITE_OK) bind_rc_ = rc;
    return *this;
}

Query& Query::bind(int index, std::string_view v) {
    // An empty view may have a null data(), which SQLite would bind as NULL.
    const char* data = v.data() ? v.data() : "";
    int rc = sqlite3_bind_text64(stmt_, index, data, v.size(), SQLITE_STATIC, SQLITE_UTF8);
    if (bind_rc_ == SQLITE_OK) bind_rc_ = rc;
    return *this;
}

Query& Query::bind(int index, const Value& v) {
    if (const auto* i = std::get_if<std::int64_t>(&v)) return bind(index, *i);
    if (const auto* view = std::get_if<std::string_view>(&v)) return bind(index, *view);
    return bind(index, std::string_view(std::get<std::string>(v)));
}

int Query::bind_all(int first, const std::vector<Value>& values) {
    for (const Value& v : values) bind(first++, v);
    return first;
}

Result<bool> Query::step() {
    sqlite3* db = sqlite3_db_handle(stmt_);
    if (bind_rc_ != SQLITE_OK) return sqlite_error(bind_rc_, sqlite3_errstr(bind_rc_));
    if (faultable_ && inject_fault()) return injected_error();
    int rc = sqlite3_step(stmt_);
    if (rc == SQLITE_ROW) return true;
    if (rc == SQLITE_DONE) return false;
    return sqlite_error(db, rc);
}

std::string Query::text(int col) const {
    const unsigned char* p = sqlite3_column_text(stmt_, col);
    int n = sqlite3_column_bytes(stmt_, col);
    if (!p || n <= 0) return {};
    return std::string(reinterpret_cast<const char*>(p), static_cast<std::size_t>(n));
}

bool Query::columns_equal(int first, const std::vector<Value>& values) const {
    int col = first;
    for (const Value& v : values) {
        if (const auto* i = std::get_if<std::int64_t>(&v)) {
            if (sqlite3_column_type(stmt_, col) != SQLITE_INTEGER || sqlite3_column_int64(stmt_, col) != *i)
                return false;
        } else {
            const auto* view = std::get_if<std::string_view>(&v);
            const std::string_view s = view ? *view : std::string_view(std::get<std::string>(v));
            if (sqlite3_column_type(stmt_, col) != SQLITE_TEXT) return false;
            const unsigned char* p = sqlite3_column_text(stmt_, col);
            int n = sqlite3_column_bytes(stmt_, col);
            if (!p || n < 0 || static_cast<std::size_t>(n) != s.size()) return false;
            if (n > 0 && std::memcmp(p, s.data(), s.size()) != 0) return false;
        }
        ++col;
    }
    return true;
}

Status exec(sqlite3* db, const char* sql) {
    if (inject_fault()) return injected_error();
    char* msg = nullptr;
    int rc = sqlite3_exec(db, sql, nullptr, nullptr, &msg);
    std::unique_ptr<char, decltype(&sqlite3_free)> owned(msg, &sqlite3_free);
    if (rc != SQLITE_OK) return sqlite_error(rc, msg ? msg : sqlite3_errstr(rc));
    return Ok{};
}

Result<std::vector<std::string>> query_column(sqlite3* db, const char* sql) {
    Statement stmt;
    if (auto st = stmt.prepare(db, sql); !st) return st.error();
    Query q(stmt);
    std::vector<std::string> rows;
    if (auto st = q.each_row([&](const Query& r) { rows.push_back(r.text(0)); }); !st) return st.error();
    return rows;
}

}  // namespace sqlite
}  // namespace daemonlet::store
