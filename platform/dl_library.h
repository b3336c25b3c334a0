// A shared library loaded when first needed (dlopen) rather than linked, and
// the table of its functions that daemonlet calls: libcurl
// (http/curl_api.h), mbed TLS (http/mbedtls_api.h), nghttp2
// (http/nghttp2_api.h), libcrypto (image/sha256.cpp). Each header says why
// its library is loaded and not linked; tests/needed_libs.sh keeps them out
// of the agent's DT_NEEDED. Not linked into the shim, which has no dlopen
// (shim/shim_static.cpp).
#pragma once

#include <functional>
#include <string>
#include <type_traits>

#include "core/result.h"

namespace daemonlet::platform {

// What a caller says of its library, for the errors.
struct DlLibrary {
    const char* soname;   // "libcurl.so.4"
    const char* install;  // after dlerror()'s text when it cannot be opened: "install libcurl4"
    const char* too_old;  // after a missing symbol's name, or nullptr: "libcurl 7.85 or later is needed"
};

// Resolves the functions of one opened library into a caller's table, and
// remembers the first name it did not find.
class DlSymbols {
  public:
    explicit DlSymbols(void* handle) : handle_(handle) {}
    // fn = the library's `name`, or nullptr.
    template <class Fn>
    void operator()(Fn& fn, const char* name) {
        static_assert(std::is_function_v<std::remove_pointer_t<Fn>>, "a table of function pointers");
        fn = reinterpret_cast<Fn>(find(name));
    }
    const std::string& missing() const { return missing_; }

  private:
    void* find(const char* name);
    void* handle_;
    std::string missing_;
};

// Opens library.soname (RTLD_NOW | RTLD_LOCAL) and lets `resolve` fill its
// table. The handle stays open for the life of the process when every
// function was found; otherwise it is closed and the error (Unavailable) says
// why: "libcurl.so.4: cannot open shared object file: No such file or
// directory: install libcurl4", or "libcurl.so.4: no curl_multi_assign:
// libcurl 7.85 or later is needed" naming the first missing function. Not
// cached: each caller loads once (a function-local static) and remembers a
// failure.
Status dl_load(const DlLibrary& library, const std::function<void(DlSymbols&)>& resolve);

// dl_load into a zeroed Table: resolve(symbols, table).
template <class Table, class Resolve>
Result<Table> dl_load_table(const DlLibrary& library, Resolve&& resolve) {
    Table table{};
    auto loaded = dl_load(library, [&](DlSymbols& symbols) { resolve(symbols, table); });
    if (!loaded.ok()) return loaded.error();
    return table;
}

// A table loaded once (a function-local static of the caller's) as its
// callers get it: a pointer to it, or the remembered error.
template <class Table>
Result<const Table*> dl_table(const Result<Table>& loaded) {
    if (!loaded.ok()) return loaded.error();
    return &loaded.value();
}
template <class Table>
Result<const Table*> dl_table(const Result<Table>&&) = delete;  // it would point into a temporary

}  // namespace daemonlet::platform
