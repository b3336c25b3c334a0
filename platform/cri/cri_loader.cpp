// make_cri_runtime: loads daemonlet-cri.so (platform/cri/cri_runtime.h says
// why the CRI runtime is a module) and asks it for the runtime. Without
// DAEMONLET_CRI there is no module: runtime.type cri is refused, saying so.
#include <dlfcn.h>

#include "platform/cri/cri_runtime.h"

namespace daemonlet::platform {

Result<std::unique_ptr<Runtime>> make_cri_runtime(uv_loop_s* loop, CriRuntimeOptions options) {
#if DAEMONLET_CRI_BUILT
    // Never closed: the runtime's code is the module's until the process ends.
    void* h = ::dlopen(options.module.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        const char* why = ::dlerror();
        return Error{ErrorCode::NotFound, "runtime.type cri: cannot load " + options.module + ": " +
                                              (why ? why : "unknown error") +
                                              " (it is installed with the agent in libexec/daemonlet)"};
    }
    using Export = CriRuntimeFactory (*)();
    auto* factory = reinterpret_cast<Export>(::dlsym(h, "daemonlet_cri_factory"));
    if (!factory)
        return Error{ErrorCode::Invalid,
                     "runtime.type cri: " + options.module + " exports no daemonlet_cri_factory"};
    return factory()(loop, std::move(options));
#else
    (void)loop;
    (void)options;
    return Error{ErrorCode::Unsupported,
                 "runtime.type cri: this daemonlet was built without CRI support (cmake -DDAEMONLET_CRI=ON, "
                 "with libgrpc++-dev and libprotobuf-dev); use runtime.type runc or exec"};
#endif
}

}  // namespace daemonlet::platform
