// Layers of an image: unpacking a layer tarball into its own directory, and
// applying unpacked layers in order onto a root filesystem with the OCI
// whiteouts (image-spec layer.md). Used by platform/image/image_store.cpp.
#pragma once

#include <string>

#include "core/oci_image.h"
#include "core/result.h"

namespace daemonlet::platform {

// The member name of a tar entry, cleaned ("./a/b/" -> "a/b"), or an error
// for an absolute name, a ".." component, or an empty one. "" is the root.
Result<std::string> clean_member_name(const std::string& name);

// `target`, a relative link in the directory `dir` (a cleaned member name),
// as a member name; an error when it is absolute or leads above the root.
Result<std::string> resolve_member_link(const std::string& dir, const std::string& target);

// Unpacks the layer tarball `blob` into `dir` (which must not exist). The
// uncompressed stream's sha256 must be `diff_id` (config.md rootfs.diff_ids);
// for an uncompressed layer the caller has checked that its digest is.
// Refused, naming `what` and the member: absolute or ".." names, a member
// under a symlink of the layer, a hard link to a name outside the layer, a
// relative symlink whose target climbs above the layer's root. Whiteout
// files (".wh.*") are kept as empty files for apply_layer.
Status unpack_layer(const std::string& blob, LayerCompression compression, const std::string& diff_id,
                    const std::string& dir, const std::string& what);

// Copies the unpacked layer `layer_dir` onto `target_dir`: first, in each
// directory, ".wh..wh..opq" empties the target's directory and ".wh.<name>"
// removes <name>; then each entry replaces what is there (a directory merges
// into a directory). Symlinks in the target are never followed. Modes and
// times kept; owners kept when running as root; hard links within the layer
// kept.
Status apply_layer(const std::string& layer_dir, const std::string& target_dir);

// Makes `target_dir` (which must not exist) the overlayfs form of the
// unpacked layer `layer_dir`, as containerd converts a layer for its
// overlayfs snapshotter (archive/tar_opts_linux.go, OverlayConvertWhiteout):
// ".wh.<name>" becomes a character device 0/0 named <name>; a directory
// holding ".wh..wh..opq" gets the xattr trusted.overlay.opaque="y".
// Directories are made anew with the layer's owners, modes and times; other
// entries are hard links to the layer's (which nothing writes: overlay
// copies a file up before it changes), copies where a link cannot be made.
// Needs root (mknod, trusted.* xattrs).
Status make_overlay_layer(const std::string& layer_dir, const std::string& target_dir);

}  // namespace daemonlet::platform
