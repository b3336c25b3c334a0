#include "platform/dl_library.h"

#include <dlfcn.h>

namespace daemonlet::platform {

void* DlSymbols::find(const char* name) {
    // dlsym on the handle also searches the libraries it brought in
    // (libmbedtls.so.14 brings libmbedx509 and libmbedcrypto).
    void* p = ::dlsym(handle_, name);
    if (!p) {
        ::dlerror();  // not left pending for the next dlerror() of anyone
        if (missing_.empty()) missing_ = name;
    }
    return p;
}

Status dl_load(const DlLibrary& library, const std::function<void(DlSymbols&)>& resolve) {
    // RTLD_NODELETE: a library that lacks a function is closed, but not
    // unloaded, its dependencies' constructors having run (libcurl's GnuTLS,
    // whose start-up curl_api.cpp skips).
    void* h = ::dlopen(library.soname, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
    if (!h) {
        const char* why = ::dlerror();
        return Error{ErrorCode::Unavailable,
                     std::string(why ? why : library.soname) + ": " + library.install};
    }
    DlSymbols symbols(h);
    resolve(symbols);
    if (symbols.missing().empty()) return Ok{};
    ::dlclose(h);
    std::string message = std::string(library.soname) + ": no " + symbols.missing();
    if (library.too_old) message += std::string(": ") + library.too_old;
    return Error{ErrorCode::Unavailable, std::move(message)};
}

}  // namespace daemonlet::platform
