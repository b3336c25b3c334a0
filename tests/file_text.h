// Reading a file's bytes and mode in tests: "<missing>" and -1 when absent
// (following symlinks, as a container reads a mounted volume).
#pragma once

#include <sys/stat.h>

#include <fstream>
#include <sstream>
#include <string>

namespace daemonlet::testing {

inline std::string slurp(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) return "<missing>";
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

inline int mode_of(const std::string& path) {
    struct stat st {};
    return ::stat(path.c_str(), &st) == 0 ? static_cast<int>(st.st_mode & 07777) : -1;
}

}  // namespace daemonlet::testing
