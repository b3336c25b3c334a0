// What the store layer links against, for `daemonlet version`.
#pragma once
#include <string>

namespace daemonlet::store {
std::string sqlite_version();
}  // namespace daemonlet::store
