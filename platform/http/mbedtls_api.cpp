#include "platform/http/mbedtls_api.h"

#include <string>

#include "platform/dl_library.h"

namespace daemonlet::platform {

namespace {

// Loads `library` and resolves the table; the handle stays open when it
// succeeds.
Result<MbedTlsApi> load(const char* library) {
    return dl_load_table<MbedTlsApi>({library, "install libmbedtls14 (the API server client needs it)",
                                      "mbed TLS 2.28 (libmbedtls14) is needed"},
                                     [](DlSymbols& sym, MbedTlsApi& api) {
#define DAEMONLET_MBEDTLS_SYM(name) sym(api.name, "mbedtls_" #name);
                                         DAEMONLET_MBEDTLS_FUNCTIONS(DAEMONLET_MBEDTLS_SYM)
#undef DAEMONLET_MBEDTLS_SYM
                                     });
}

}  // namespace

Result<const MbedTlsApi*> mbedtls_api() {
    // Once per process: a failure is remembered, not retried.
    static const Result<MbedTlsApi> api = load("libmbedtls.so.14");
    return dl_table(api);
}

Result<Ok> probe_mbedtls_library(const char* library) {
    auto api = load(library);
    if (!api.ok()) return api.error();
    return Ok{};
}

std::string mbedtls_error(const MbedTlsApi& api, int code) {
    char buf[160];
    api.strerror(code, buf, sizeof buf);
    return buf;
}

}  // namespace daemonlet::platform
