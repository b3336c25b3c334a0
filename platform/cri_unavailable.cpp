// make_cri_runtime without DAEMONLET_CRI (armhf, the aarch64 cross build):
// the agent refuses runtime.type cri with an error that says why.
#include "platform/cri_runtime.h"

namespace daemonlet::platform {

Result<std::unique_ptr<Runtime>> make_cri_runtime(uv_loop_s* /*loop*/, CriRuntimeOptions /*options*/) {
    return Error{"unsupported",
                 "runtime.type cri: this daemonlet was built without CRI support (cmake -DDAEMONLET_CRI=ON, "
                 "with libgrpc++-dev and libprotobuf-dev); use runtime.type runc or exec"};
}

}  // namespace daemonlet::platform
