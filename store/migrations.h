// Schema migrations keyed on PRAGMA user_version (the list is in store/sql.h).
#pragma once

#include <sqlite3.h>

#include "core/result.h"

namespace daemonlet::store {

Result<int> user_version(sqlite3* db);

// Brings the database to sql::kSchemaVersion, all pending migrations in one
// BEGIN IMMEDIATE transaction. A database newer than this build knows is
// refused with code "schema" and left untouched. Messages carry no path.
Status migrate(sqlite3* db);

}  // namespace daemonlet::store
