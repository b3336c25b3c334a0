#include "platform/http/credentials.h"

#include <dlfcn.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "platform/file.h"
#include "platform/http/mbedtls_api.h"

namespace daemonlet::platform {

Result<Credential> read_credential(const std::string& path, bool secret) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) return Error{ErrorCode::Io, path + ": " + std::strerror(errno)};
    if (!S_ISREG(st.st_mode)) return Error{ErrorCode::Invalid, path + ": not a regular file"};
    char mode[8];
    std::snprintf(mode, sizeof mode, "%03o", st.st_mode & 0777);
    if (st.st_mode & (S_IWGRP | S_IWOTH))
        return Error{ErrorCode::Permissions,
                     path + ": writable by group or others (mode " + mode + "): refusing it; chmod go-w it"};
    if (st.st_uid != 0 && st.st_uid != ::geteuid())
        return Error{ErrorCode::Permissions, path + ": owned by uid " + std::to_string(st.st_uid) +
                                                 ", neither root nor the agent's user: refusing it"};
    auto data = read_file(path, 1024 * 1024);
    if (!data.ok()) return data.error();
    Credential c{std::move(data).value(), {}};
    if (secret && (st.st_mode & (S_IRGRP | S_IROTH)))
        c.warning = path + ": readable by group or others (mode " + mode + "); chmod 600 it";
    return c;
}

Result<std::string> base64_decode(std::string_view in) {
    std::string clean;
    clean.reserve(in.size());
    for (char ch : in)
        if (ch != '\n' && ch != '\r' && ch != ' ' && ch != '\t') clean += ch;
    if (clean.size() % 4 != 0)
        return Error{ErrorCode::Invalid, "not base64: its length is not a multiple of 4"};
    auto api = mbedtls_api();
    if (!api.ok())
        return Error{ErrorCode::Unavailable,
                     "base64: libmbedtls.so.14 not available: " + api.error().message};
    std::string out(clean.size() / 4 * 3, '\0');
    std::size_t n = 0;
    if (api.value()->base64_decode(reinterpret_cast<unsigned char*>(out.data()), out.size(), &n,
                                   reinterpret_cast<const unsigned char*>(clean.data()), clean.size()) != 0)
        return Error{ErrorCode::Invalid, "not base64"};
    out.resize(n);
    return out;
}

Result<Ok> probe_base64_library(const char* library) {
    auto api = probe_mbedtls_library(library);
    if (!api.ok())
        return Error{ErrorCode::Unavailable,
                     std::string("base64: ") + library + " not available: " + api.error().message};
    return Ok{};
}

}  // namespace daemonlet::platform
