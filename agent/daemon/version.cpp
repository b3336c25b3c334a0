#include "agent/daemon/version.h"

namespace daemonlet::agent {

const char* daemonlet_version() { return DAEMONLET_VERSION; }

}  // namespace daemonlet::agent
