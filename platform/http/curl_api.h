// libcurl, loaded when first needed (dlopen of libcurl.so.4) rather than
// linked: measured on x86-64, linking libcurl made an idle agent's RSS grow
// by about 5 MiB, nearly all of it the constructors and relocations of the
// libraries libcurl pulls in (libcrypto, GnuTLS through librtmp, p11-kit,
// Kerberos), before a single request. An agent whose pods have no httpGet
// probe and that follows no API server never loads it. Loaded, GnuTLS is
// kept from initialising itself (curl_api.cpp).
//
// The functions daemonlet calls, resolved once; the headers still come from
// libcurl4-openssl-dev, the library from Debian's libcurl4 at run time.
#pragma once

#define CURL_DISABLE_TYPECHECK 1  // curl_easy_setopt is called through a pointer
#include <curl/curl.h>

#include <string>

#include "core/result.h"

namespace daemonlet::platform {

struct CurlApi {
    CURLcode (*global_init)(long);
    CURL* (*easy_init)();
    CURLcode (*easy_setopt)(CURL*, CURLoption, ...);
    CURLcode (*easy_perform)(CURL*);  // daemonlet-image's registry pulls (image/registry_client.cpp)
    CURLcode (*easy_getinfo)(CURL*, CURLINFO, ...);
    void (*easy_cleanup)(CURL*);
    const char* (*easy_strerror)(CURLcode);
    CURLM* (*multi_init)();
    CURLMcode (*multi_setopt)(CURLM*, CURLMoption, ...);
    CURLMcode (*multi_add_handle)(CURLM*, CURL*);
    CURLMcode (*multi_remove_handle)(CURLM*, CURL*);
    CURLMcode (*multi_assign)(CURLM*, curl_socket_t, void*);
    CURLMcode (*multi_socket_action)(CURLM*, curl_socket_t, int, int*);
    CURLMsg* (*multi_info_read)(CURLM*, int*);
    CURLMcode (*multi_cleanup)(CURLM*);
    const char* (*multi_strerror)(CURLMcode);
    curl_slist* (*slist_append)(curl_slist*, const char*);
    void (*slist_free_all)(curl_slist*);
    curl_version_info_data* (*version_info)(CURLversion);
};

// The loaded library (loaded and curl_global_init'ed on the first call), or
// why it cannot be ("libcurl.so.4: cannot open shared object file ...:
// install libcurl4").
Result<const CurlApi*> curl_api();

}  // namespace daemonlet::platform
