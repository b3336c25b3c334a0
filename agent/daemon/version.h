// daemonlet's version, as compiled in. The only object built per version
// (version.cpp): the agent's other objects are the same for any version, so
// that a second agent of another version (daemonlet-next,
// agent/CMakeLists.txt; the systemd step's upgrade test) is one more link.
#pragma once

namespace daemonlet::agent {

const char* daemonlet_version();

}  // namespace daemonlet::agent
