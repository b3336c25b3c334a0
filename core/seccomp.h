// A seccomp profile file turned into the OCI spec's linux.seccomp, as
// containerd (contrib/seccomp) and moby (profiles/seccomp setupSeccomp)
// load one: the docker format that Debian's containers-common ships as
// /usr/share/containers/seccomp.json (defaultAction, archMap, syscalls
// with includes / excludes by capability and architecture), or a profile
// already in the OCI format (architectures, syscalls). Pure: the caller
// reads the file and says the machine.
//
//   architectures  archMap's entry for the machine: it and its
//                  subArchitectures; else "architectures" as written.
//   syscalls       a rule is kept when every capability of includes.caps
//                  is the container's, none of excludes.caps is, and the
//                  machine's architecture is in includes.arches (when
//                  given) and not in excludes.arches (by its Go name,
//                  runtime.GOARCH: "amd64", "arm64", "arm"); minKernel is taken
//                  as met (a board's kernel is recent: Debian 12's 6.1).
//                  "name" is taken as "names": [name].
#pragma once

#include <string>
#include <vector>

#include "core/json.h"
#include "core/result.h"

namespace daemonlet {

// "x86_64" -> "SCMP_ARCH_X86_64", "aarch64" -> "SCMP_ARCH_AARCH64", "armv7l"
// (any "arm...") -> "SCMP_ARCH_ARM"; the uname machine in upper case with
// that prefix otherwise.
std::string seccomp_arch(const std::string& machine);

// linux.seccomp for `profile` (the file's text; `source` names it in
// errors), for a container with capabilities `caps` ("CAP_..."), on
// `arch` (seccomp_arch). Errors (code "invalid"): not JSON, no
// defaultAction, a malformed rule.
Result<Json> seccomp_to_oci(const std::string& profile, const std::string& source,
                            const std::vector<std::string>& caps, const std::string& arch);

}  // namespace daemonlet
