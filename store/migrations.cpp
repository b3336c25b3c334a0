#include "store/migrations.h"

#include <cstdlib>
#include <string>

#include "store/sql.h"
#include "store/sqlite_handle.h"

namespace daemonlet::store {
namespace {

constexpr bool numbered_from_one() {
    int expected = 1;
    for (const sql::Migration& m : sql::migrations())
        if (m.version != expected++) return false;
    return true;
}
static_assert(numbered_from_one(), "migrations are numbered 1, 2, 3, ... in order");

}  // namespace

Result<int> user_version(sqlite3* db) {
    auto rows = sqlite::query_column(db, sql::kUserVersion);
    if (!rows) return rows.error();
    if (rows.value().size() != 1) return Error{ErrorCode::Sqlite, "PRAGMA user_version returned no value"};
    return static_cast<int>(std::strtol(rows.value().front().c_str(), nullptr, 10));
}

Status migrate(sqlite3* db) {
    auto before = user_version(db);
    if (!before) return before.error();
    auto too_new = [](int v) {
        return Error{ErrorCode::Schema, "the database has schema version " + std::to_string(v) +
                                            ", newer than this daemonlet knows (" +
                                            std::to_string(sql::kSchemaVersion) +
                                            "); refusing to change it (was daemonlet downgraded?)"};
    };
    if (before.value() > sql::kSchemaVersion) return too_new(before.value());
    if (before.value() == sql::kSchemaVersion) return Ok{};

    if (auto st = sqlite::exec(db, sql::kBeginImmediate); !st) return st;
    auto apply = [&]() -> Status {
        // Again under the write lock: another process may have migrated meanwhile.
        auto current = user_version(db);
        if (!current) return current.error();
        if (current.value() > sql::kSchemaVersion) return too_new(current.value());
        for (const sql::Migration& m : sql::migrations()) {
            if (m.version <= current.value()) continue;
            if (auto st = sqlite::exec(db, m.sql); !st)
                return Error{st.error().code,
                             "migration " + std::to_string(m.version) + ": " + st.error().message};
        }
        const std::string set = "PRAGMA user_version = " + std::to_string(sql::kSchemaVersion);
        if (auto st = sqlite::exec(db, set.c_str()); !st) return st;
        return sqlite::exec(db, sql::kCommit);
    };
    Status st = apply();
    if (!st && !sqlite3_get_autocommit(db)) sqlite3_exec(db, sql::kRollback, nullptr, nullptr, nullptr);
    return st;
}

}  // namespace daemonlet::store
