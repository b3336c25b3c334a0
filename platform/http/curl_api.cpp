#include "platform/http/curl_api.h"

#include <dlfcn.h>

#include <mutex>

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

Result<const CurlApi*> curl_api() {
    static CurlApi api{};
    static std::string error;
    static std::once_flag once;
    std::call_once(once, [] {
        void* h = ::dlopen("libcurl.so.4", RTLD_NOW | RTLD_LOCAL);
        if (!h) {
            error = std::string(::dlerror()) + ": install libcurl4 (httpGet and grpc probes need it)";
            return;
        }
        bool ok = true;
        auto sym = [&](auto& fn, const char* name) {
            void* p = ::dlsym(h, name);
            if (!p) {
                error = std::string("libcurl.so.4: no ") + name + ": libcurl 7.85 or later is needed";
                ok = false;
            }
            fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(p);
        };
        sym(api.global_init, "curl_global_init");
        sym(api.easy_init, "curl_easy_init");
        sym(api.easy_setopt, "curl_easy_setopt");
        sym(api.easy_perform, "curl_easy_perform");
        sym(api.easy_getinfo, "curl_easy_getinfo");
        sym(api.easy_cleanup, "curl_easy_cleanup");
        sym(api.easy_strerror, "curl_easy_strerror");
        sym(api.multi_init, "curl_multi_init");
        sym(api.multi_setopt, "curl_multi_setopt");
        sym(api.multi_add_handle, "curl_multi_add_handle");
        sym(api.multi_remove_handle, "curl_multi_remove_handle");
        sym(api.multi_assign, "curl_multi_assign");
        sym(api.multi_socket_action, "curl_multi_socket_action");
        sym(api.multi_info_read, "curl_multi_info_read");
        sym(api.multi_cleanup, "curl_multi_cleanup");
        sym(api.multi_strerror, "curl_multi_strerror");
        sym(api.slist_append, "curl_slist_append");
        sym(api.slist_free_all, "curl_slist_free_all");
        sym(api.version_info, "curl_version_info");
        if (ok && api.global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
            error = "curl_global_init failed";
            ok = false;
        }
        if (!ok) api.easy_init = nullptr;
    });
    if (!api.easy_init) return Error{ErrorCode::Unavailable, error};
    return &api;
}

}  // namespace daemonlet::platform
