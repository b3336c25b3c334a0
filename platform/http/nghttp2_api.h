// nghttp2 1.52 (Debian 12's libnghttp2-14), loaded when first needed
// (dlopen of libnghttp2.so.14) rather than linked, as mbed TLS is
// (mbedtls_api.h): the API server client (api_http_client.h) speaks HTTP/2
// with it when the server takes h2 over TLS (ALPN), and loads it only then
// (+300 KiB of VmRSS, the library paged in whole: an HTTP/1.1 server costs
// nothing). Missing, the client connects again offering http/1.1 only: an
// optional library, not an error.
//
// The functions daemonlet calls, resolved once; their types come from
// libnghttp2-dev's header, so a changed prototype fails the build.
#pragma once

#include <nghttp2/nghttp2.h>

#include "core/result.h"

namespace daemonlet::platform {

// The functions, once: the table below and its loader (nghttp2_api.cpp).
#define DAEMONLET_NGHTTP2_FUNCTIONS(X)                   \
    X(session_callbacks_new)                             \
    X(session_callbacks_del)                             \
    X(session_callbacks_set_on_header_callback)          \
    X(session_callbacks_set_on_frame_recv_callback)      \
    X(session_callbacks_set_on_data_chunk_recv_callback) \
    X(session_callbacks_set_on_stream_close_callback)    \
    X(session_client_new)                                \
    X(session_del)                                       \
    X(session_set_local_window_size)                     \
    X(session_mem_recv)                                  \
    X(session_mem_send)                                  \
    X(session_want_read)                                 \
    X(session_want_write)                                \
    X(submit_settings)                                   \
    X(submit_request)                                    \
    X(submit_rst_stream)                                 \
    X(strerror)                                          \
    X(http2_strerror)

struct Nghttp2Api {
#define DAEMONLET_NGHTTP2_FN(name) decltype(&nghttp2_##name) name;
    DAEMONLET_NGHTTP2_FUNCTIONS(DAEMONLET_NGHTTP2_FN)
#undef DAEMONLET_NGHTTP2_FN
};

// The loaded library (loaded on the first call), or why it cannot be.
Result<const Nghttp2Api*> nghttp2_api();

}  // namespace daemonlet::platform
