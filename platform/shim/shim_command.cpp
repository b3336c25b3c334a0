#include "platform/shim/shim_command.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "platform/shim/shim_protocol.h"

namespace daemonlet::shim {
namespace {

// 0 if `path` is an executable regular file, else an errno (EACCES for a
// directory or a file without execute permission).
int check_executable(const char* path) {
    struct stat st {};
    if (::stat(path, &st) != 0) return errno;
    if (!S_ISREG(st.st_mode) || ::access(path, X_OK) != 0) return EACCES;
    return 0;
}

// "<base>/<name>" (base relative to cwd when it is not absolute).
bool join(const char* cwd, const char* base, std::size_t base_len, const char* name, char* out,
          std::size_t cap) {
    Text t(out, cap);
    if (base_len == 0 || base[0] != '/') {
        t.str(cwd);
        if (base_len != 0) t.ch('/');
    }
    t.mem(base, base_len).ch('/').str(name);
    return !t.truncated();
}

}  // namespace

int check_cwd(const char* cwd, Text* reason) {
    struct stat st {};
    int err = ::stat(cwd, &st) != 0 ? errno : (S_ISDIR(st.st_mode) ? 0 : ENOTDIR);
    if (err == 0) return 0;
    reason->str("StartError: chdir to cwd (").json(cwd).str(") failed: ").str(error_text(err));
    return kExitStartError;
}

int resolve_command(const char* name, char* const* env, const char* cwd, char* out, std::size_t cap,
                    Text* reason) {
    reason->str("StartError: exec: ").json(name).str(": ");
    if (std::strchr(name, '/') != nullptr) {
        Text t(out, cap);
        if (name[0] != '/') t.str(cwd).ch('/');
        bool fits = !t.str(name).truncated();
        int err = fits ? check_executable(out) : ENAMETOOLONG;
        if (err == 0) {
            reason->clear();
            return 0;
        }
        if (err == EACCES) {
            reason->str("permission denied");
            return kExitNotExecutable;
        }
        reason->str("stat ").str(name).str(": ").str(error_text(err));
        return kExitNotFound;
    }
    const char* path = kDefaultPath;
    for (char* const* e = env; e != nullptr && *e != nullptr; ++e)
        if (std::strncmp(*e, "PATH=", 5) == 0) path = *e + 5;
    bool denied = false;
    for (const char* p = path;; ++p) {
        const char* end = std::strchr(p, ':');
        std::size_t len = end != nullptr ? static_cast<std::size_t>(end - p) : std::strlen(p);
        if (join(cwd, p, len, name, out, cap)) {
            int err = check_executable(out);
            if (err == 0) {
                reason->clear();
                return 0;
            }
            denied = denied || err == EACCES;
        }
        if (end == nullptr) break;
        p = end;
    }
    if (denied) {
        reason->str("permission denied");
        return kExitNotExecutable;
    }
    reason->str("executable file not found in $PATH");
    return kExitNotFound;
}

}  // namespace daemonlet::shim
