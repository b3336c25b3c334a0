#include "platform/http/curl_api.h"

#include "platform/dl_library.h"

// GnuTLS comes with libcurl (through librtmp and LDAP, protocols the agent
// never enables: CURLOPT_PROTOCOLS_STR is http,https) and initialises itself
// in its library constructor: its priority strings, its crypto back end, its
// CPU detection, 0.75 MiB more of the agent's VmRSS (x86-64, figures.md),
// for a library nothing here calls. This is GnuTLS's own switch for a
// program that does not want that (gnutls.h's GNUTLS_SKIP_GLOBAL_INIT; the
// environment's GNUTLS_NO_IMPLICIT_INIT=1 does the same, but the agent's
// environment is its children's): the constructor asks for it by name, so
// the agent exports it (agent/CMakeLists.txt). A libcurl with GnuTLS as its
// TLS back end still initialises it, in curl_global_init.
extern "C" __attribute__((visibility("default"), used)) int _gnutls_global_init_skip() { return 1; }

namespace daemonlet::platform {

namespace {

// A member added to CurlApi without its line below would stay null.
static_assert(sizeof(CurlApi) == 19 * sizeof(void*), "every CurlApi member is resolved in load()");

Result<CurlApi> load() {
    auto api = dl_load_table<CurlApi>({"libcurl.so.4", "install libcurl4 (httpGet and grpc probes need it)",
                                       "libcurl 7.85 or later is needed"},
                                      [](DlSymbols& sym, CurlApi& t) {
                                          sym(t.global_init, "curl_global_init");
                                          sym(t.easy_init, "curl_easy_init");
                                          sym(t.easy_setopt, "curl_easy_setopt");
                                          sym(t.easy_perform, "curl_easy_perform");
                                          sym(t.easy_getinfo, "curl_easy_getinfo");
                                          sym(t.easy_cleanup, "curl_easy_cleanup");
                                          sym(t.easy_strerror, "curl_easy_strerror");
                                          sym(t.multi_init, "curl_multi_init");
                                          sym(t.multi_setopt, "curl_multi_setopt");
                                          sym(t.multi_add_handle, "curl_multi_add_handle");
                                          sym(t.multi_remove_handle, "curl_multi_remove_handle");
                                          sym(t.multi_assign, "curl_multi_assign");
                                          sym(t.multi_socket_action, "curl_multi_socket_action");
                                          sym(t.multi_info_read, "curl_multi_info_read");
                                          sym(t.multi_cleanup, "curl_multi_cleanup");
                                          sym(t.multi_strerror, "curl_multi_strerror");
                                          sym(t.slist_append, "curl_slist_append");
                                          sym(t.slist_free_all, "curl_slist_free_all");
                                          sym(t.version_info, "curl_version_info");
                                      });
    if (api.ok() && api.value().global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
        return Error{ErrorCode::Unavailable, "curl_global_init failed"};
    return api;
}

}  // namespace

Result<const CurlApi*> curl_api() {
    // Once per process (thread-safe, as a function-local static is): a
    // failure is remembered, not retried.
    static const Result<CurlApi> api = load();
    return dl_table(api);
}

}  // namespace daemonlet::platform
