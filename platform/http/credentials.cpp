#include "platform/http/credentials.h"

#include <dlfcn.h>
#include <openssl/evp.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "platform/file.h"

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

namespace {

// EVP_DecodeBlock, from libcrypto loaded on first use rather than linked:
// linked, libcrypto costs an idle agent that never talks to an API server
// about 1.4 MiB of RSS (as libcurl, see curl_api.cpp). Its type comes from
// OpenSSL's header, so a changed prototype fails the build, not the board.
// Wrapped in a struct because Result<function pointer> trips gcc's -Wshadow
// (its constructor's parameter `value` would shadow Result::value).
struct Decoder {
    decltype(&EVP_DecodeBlock) decode_block;
};

// Loads `library` and finds EVP_DecodeBlock in it; the handle stays open
// when it is returned.
Result<Decoder> load_decoder(const char* library) {
    void* h = ::dlopen(library, RTLD_NOW | RTLD_LOCAL);
    if (!h)
        return Error{ErrorCode::Unavailable, std::string("base64: ") + library +
                                                 " not available: " + ::dlerror() + " (install libssl3)"};
    void* p = ::dlsym(h, "EVP_DecodeBlock");
    if (!p) {
        ::dlclose(h);
        return Error{ErrorCode::Unavailable,
                     std::string("base64: ") + library + " not available: it has no EVP_DecodeBlock"};
    }
    return Decoder{reinterpret_cast<decltype(&EVP_DecodeBlock)>(p)};
}

// Once per process, as curl_api(): a failure is remembered, not retried.
const Result<Decoder>& decoder() {
    static const Result<Decoder> fn = load_decoder("libcrypto.so.3");
    return fn;
}

}  // namespace

Result<std::string> base64_decode(std::string_view in) {
    std::string clean;
    clean.reserve(in.size());
    for (char ch : in)
        if (ch != '\n' && ch != '\r' && ch != ' ' && ch != '\t') clean += ch;
    if (clean.size() % 4 != 0)
        return Error{ErrorCode::Invalid, "not base64: its length is not a multiple of 4"};
    const auto& lib = decoder();
    if (!lib.ok()) return lib.error();
    std::string out(clean.size() / 4 * 3, '\0');
    int n = lib.value().decode_block(reinterpret_cast<unsigned char*>(out.data()),
                                     reinterpret_cast<const unsigned char*>(clean.data()),
                                     static_cast<int>(clean.size()));
    if (n < 0) return Error{ErrorCode::Invalid, "not base64"};
    // EVP_DecodeBlock counts padding as data: take it off.
    std::size_t pad = 0;
    if (!clean.empty() && clean.back() == '=') ++pad;
    if (clean.size() > 1 && clean[clean.size() - 2] == '=') ++pad;
    out.resize(static_cast<std::size_t>(n) - pad);
    return out;
}

Result<Ok> probe_base64_library(const char* library) {
    auto fn = load_decoder(library);
    if (!fn.ok()) return fn.error();
    return Ok{};
}

}  // namespace daemonlet::platform
