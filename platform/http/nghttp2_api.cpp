#include "platform/http/nghttp2_api.h"

#include <dlfcn.h>

#include <string>
#include <type_traits>

namespace daemonlet::platform {

namespace {

Result<Nghttp2Api> load(const char* library) {
    void* h = ::dlopen(library, RTLD_NOW | RTLD_LOCAL);
    if (!h)
        return Error{ErrorCode::Unavailable, std::string(::dlerror()) + ": install libnghttp2-14 for HTTP/2"};
    Nghttp2Api api{};
    std::string missing;
    auto sym = [&](auto& fn, const char* name) {
        void* p = ::dlsym(h, name);
        if (!p && missing.empty()) missing = name;
        fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(p);
    };
#define DAEMONLET_NGHTTP2_SYM(name) sym(api.name, "nghttp2_" #name)
    DAEMONLET_NGHTTP2_SYM(session_callbacks_new);
    DAEMONLET_NGHTTP2_SYM(session_callbacks_del);
    DAEMONLET_NGHTTP2_SYM(session_callbacks_set_on_header_callback);
    DAEMONLET_NGHTTP2_SYM(session_callbacks_set_on_frame_recv_callback);
    DAEMONLET_NGHTTP2_SYM(session_callbacks_set_on_data_chunk_recv_callback);
    DAEMONLET_NGHTTP2_SYM(session_callbacks_set_on_stream_close_callback);
    DAEMONLET_NGHTTP2_SYM(session_client_new);
    DAEMONLET_NGHTTP2_SYM(session_del);
    DAEMONLET_NGHTTP2_SYM(session_set_local_window_size);
    DAEMONLET_NGHTTP2_SYM(session_mem_recv);
    DAEMONLET_NGHTTP2_SYM(session_mem_send);
    DAEMONLET_NGHTTP2_SYM(session_want_read);
    DAEMONLET_NGHTTP2_SYM(session_want_write);
    DAEMONLET_NGHTTP2_SYM(submit_settings);
    DAEMONLET_NGHTTP2_SYM(submit_request);
    DAEMONLET_NGHTTP2_SYM(submit_rst_stream);
    DAEMONLET_NGHTTP2_SYM(strerror);
    DAEMONLET_NGHTTP2_SYM(http2_strerror);
#undef DAEMONLET_NGHTTP2_SYM
    if (!missing.empty()) {
        ::dlclose(h);
        return Error{ErrorCode::Unavailable, std::string(library) + ": no " + missing};
    }
    return api;
}

}  // namespace

Result<const Nghttp2Api*> nghttp2_api() {
    // Once per process: a failure is remembered, not retried.
    static const Result<Nghttp2Api> api = load("libnghttp2.so.14");
    if (!api.ok()) return api.error();
    return &api.value();
}

}  // namespace daemonlet::platform
