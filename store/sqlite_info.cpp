#include "store/sqlite_info.h"

#include <sqlite3.h>

namespace daemonlet::store {
std::string sqlite_version() { return sqlite3_libversion(); }
}  // namespace daemonlet::store
