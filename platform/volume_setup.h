// What the kubelet's volume plugins do on the host before a container
// starts, for the volumes both image runtimes (runc, CRI) mount themselves:
// a hostPath's type checked or created (core/host_path.h), a Memory
// emptyDir mounted as a tmpfs. In runtime_base, for the CRI module too.
#pragma once

#include <map>
#include <optional>
#include <string>

#include "core/model.h"
#include "core/result.h"

namespace daemonlet::platform {

// hostPath `type` (pkg/volume/hostpath): checks, or creates what is
// missing (a directory 0755, a file 0644 with its parents). A mismatch:
// error code "volume_setup", message as the kubelet's FailedMount event
// ("MountVolume.SetUp failed for volume \"x\" : hostPath type check
// failed: /x is not a directory"). Symbolic links are followed (os.Stat).
// Without a type, a missing path is made a directory, as containerd makes
// a missing bind-mount source.
Status set_up_host_path(const Volume& v);

// An emptyDir's host directory `dir`, made (0777 as the kubelet's
// emptyDir, pkg/volume/emptydir): for medium Memory, a tmpfs mounted on it
// unless one is, size=`tmpfs_size` bytes when given (the kubelet's
// SizeMemoryBackedVolumes: core/empty_dir.h empty_dir_memory_size), else
// the kernel's default. With the pod's fsGroup, the volume's files are the
// group's, group read-write, and its directories setgid
// (pkg/volume/volume_linux.go SetVolumeOwnership). Errors name the directory.
Status set_up_empty_dir(const Volume& v, const std::string& dir, std::optional<std::int64_t> fs_group,
                        std::optional<std::int64_t> tmpfs_size);

// The launch's size for emptyDir `name` (ContainerLaunch::memory_volume_bytes), if any.
std::optional<std::int64_t> tmpfs_size_of(const std::map<std::string, std::int64_t>& sizes,
                                          const std::string& name);

// SetVolumeOwnership (pkg/volume/volume_linux.go): `dir` and everything
// below it (symbolic links not followed) made the group `fs_group`'s, with
// the modes core/volume_payload.h volume_ownership_mode gives (read-only:
// configMap, secret, downwardAPI, projected; read-write: emptyDir). What
// fails is left as it is and the walk goes on, as upstream logs and goes
// on; the first refusal (a file system that takes no chown or chmod) is
// returned, naming the path and the call.
Status set_volume_ownership(const std::string& dir, std::int64_t fs_group, bool read_only);

// Unmounts every tmpfs below `dir` (a pod's volumes directory) before it
// is deleted: a Memory emptyDir's. Best effort.
void tear_down_empty_dirs(const std::string& dir);

}  // namespace daemonlet::platform
