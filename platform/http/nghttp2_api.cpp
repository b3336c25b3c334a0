#include "platform/http/nghttp2_api.h"

#include "platform/dl_library.h"

namespace daemonlet::platform {

Result<const Nghttp2Api*> nghttp2_api() {
    // Once per process: a failure is remembered, not retried.
    static const Result<Nghttp2Api> api = dl_load_table<Nghttp2Api>(
        {"libnghttp2.so.14", "install libnghttp2-14 for HTTP/2", nullptr}, [](DlSymbols& sym, Nghttp2Api& t) {
#define DAEMONLET_NGHTTP2_SYM(name) sym(t.name, "nghttp2_" #name);
            DAEMONLET_NGHTTP2_FUNCTIONS(DAEMONLET_NGHTTP2_SYM)
#undef DAEMONLET_NGHTTP2_SYM
        });
    return dl_table(api);
}

}  // namespace daemonlet::platform
