// The kubelet's atomic writer (pkg/volume/util/atomic_writer.go), which
// puts configMap, secret, downwardAPI and projected volumes on disk so that
// a reader never sees half an update:
//
//   <target>/..2026_11_26_07_01_02.AbC123/   the payload, a new dir per write
//   <target>/..data -> ..2026_11_26_07_01_02.AbC123
//   <target>/<name> -> ..data/<name>         one per top-level payload entry
//
// A write makes the new timestamped dir, points `..data_tmp` at it and
// renames that over `..data` (one rename(2): the switch is atomic), then
// adds the user-visible links that are new, removes those the payload no
// longer has, and removes the old dir. When the payload on disk is already
// the same (content and mode), nothing is written: flash wears out.
//
// Blocking file I/O on small payloads (a few KiB); the agent calls it at a
// container's start and after a ConfigMap or Secret change.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "core/result.h"
#include "core/volume_payload.h"

namespace daemonlet::platform {

// Writes `payload` under `target_dir` (which must exist). Returns true when
// something changed on disk, false when the payload was already there.
// Paths must be relative, without ".." elements, and not start with "..";
// otherwise nothing is written and the error names the path.
// With the pod's `fs_group`, what it writes is that group's, with the modes
// of a read-only volume (volume_ownership_mode: a file 0644 stays 0644,
// 0400 becomes 0440, 0600 0640; directories setgid): the new timestamped
// dir before it is swapped in, so a reader never sees a file not yet the
// group's, then `target_dir` and its links (SetVolumeOwnership, which the
// kubelet's plugins run after the writer). A file system that refuses the
// chown or chmod does not fail the write (the payload is there, as
// upstream's SetVolumeOwnership logs and goes on): the first refusal is
// put in `ownership` (Ok otherwise), and a payload whose files lack only
// the group or its modes is not written again for it (a rewrite at every
// sync would wear the flash and be refused again).
Result<bool> atomic_write(const std::string& target_dir, const VolumePayload& payload,
                          std::optional<std::int64_t> fs_group = std::nullopt, Status* ownership = nullptr);

// A volume directory for secret data: `dir` (made if missing) with a tmpfs
// mounted on it (nosuid, nodev, noexec, mode 0755), so that secrets never
// reach the flash. True when it is a tmpfs (mounted now or before); false
// when this process may not mount one (not root, no CAP_SYS_ADMIN): then
// `dir` is a plain directory of mode 0700.
Result<bool> make_secret_dir(const std::string& dir);

// Removes a volume directory made by make_secret_dir or for atomic_write:
// unmounts a tmpfs on it first.
Status remove_volume_dir(const std::string& dir);

}  // namespace daemonlet::platform
