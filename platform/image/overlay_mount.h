// Overlayfs for the runc runtime's root filesystems (issue 5): whether this
// node can mount one, the mount itself, and the unmount-then-delete of a
// bundle that never reaches through a mount into the image store's layers.
//
// The layers are the image store's read-only lower directories, shared by
// every container of the image; each container's writes go to the upper
// directory in its own bundle (containerd's overlayfs snapshotter does the
// same: snapshots/overlay/overlay.go).
#pragma once

#include <string>
#include <vector>

#include "core/result.h"

namespace daemonlet::platform {

// The mount options overlay takes fit in a page: the kernel copies at most
// one (PAGE_SIZE; 4096 on the boards we run on) of mount(2)'s data.
inline constexpr std::size_t kMaxMountOptionBytes = 4096;

// Whether the node can mount an overlay: we are root, and a trial mount
// (which loads the overlay module if needed) works whose lower
// directory is in `lower_parent` (the image store) and whose upper and work
// directories are in `upper_parent` (where the bundles are). The first
// call's answer is kept for the process's life: the kernel, our privileges
// and the file systems do not change under a running agent. An error says
// why not (for the agent's log).
Status probe_overlay(const std::string& lower_parent, const std::string& upper_parent);

// runtime.rootfs ("auto", "overlay" or "copy") and the probe's answer:
// whether containers get an overlay. "overlay" with the probe failed is an
// error naming the field and the probe's reason; "auto" takes what works.
Result<bool> use_overlay(const std::string& setting, const Status& probe);

// Mounts an overlay on `target` (an existing, empty directory): `lowers`
// are directory names in `lower_base`, the top layer first; `upper` and
// `work` directories on one file system. Each lower is named relative to
// `lower_base`, the calling thread's working directory during mount(2)
// (its own: safe from any thread; restored after): containerd's trick (mount_linux.go, compactLowerdirOption)
// to fit about 60 layers of 64-hex names in a page where absolute paths
// would fit 30. Errors: "too_long" when the options still exceed
// kMaxMountOptionBytes (the caller copies instead), "invalid" for a path
// with ',' or ':' (which the option syntax cannot hold), "io" for the mount.
Status mount_overlay(const std::string& lower_base, const std::vector<std::string>& lowers,
                     const std::string& upper, const std::string& work, const std::string& target);

// What `daemonlet-image prepare --overlay` does for an image whose layers
// all have their overlay form in the image store at `store` (made by the
// image's first prepare): finds `reference` there (images.json), mounts
// its layers on `rootfs` (made; must be absent or empty) with the upper
// and work directories in `overlay_dir`, as ImageStore::mount_rootfs does,
// and returns the image's config blob (JSON). In the caller's process: a
// mount costs what the mount costs, not a process that loads the image
// store's libraries (libarchive, libcurl). Errors: "image_not_found";
// "fallback" when the store must first make a layer's overlay form, the
// image has no layer, or the options do not fit a page: `daemonlet-image
// prepare` does those (or copies); others for a store it cannot read or a
// mount that failed.
Result<std::string> mount_stored_image(const std::string& store, const std::string& reference,
                                       const std::string& rootfs, const std::string& overlay_dir);

// True when `path` is the root of a mount (an overlay, a bind mount).
bool is_mount_point(const std::string& path);

// Unmounts `path` when something is mounted on it: umount2, and when it is
// busy (a process left in the container's mount), a lazy MNT_DETACH as the
// last resort, which takes the mount out of the tree at once. Ok when
// nothing was mounted or the path does not exist.
Status unmount_if_mounted(const std::string& path);

// Deletes the tree `path` (absent: Ok) without ever crossing into another
// file system: a mount found under it (a rootfs overlay not unmounted) is
// left alone and the deletion fails, naming it, rather than deleting the
// image store's layers through it.
Status remove_tree_on_one_fs(const std::string& path);

}  // namespace daemonlet::platform
