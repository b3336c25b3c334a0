// The local image store: content-addressed blobs, unpacked layers and an
// index of image names, under one root directory (stateDir/images).
// Images arrive as archives (OCI image-layout tarballs, docker-archive
// tarballs from `docker save`); every blob is verified against its digest
// and size on import, and a failed import leaves the store as it was.
//
//   <root>/blobs/sha256/<hex>          manifests, configs, layer tarballs as imported
//   <root>/layers/sha256/<diff_id>/    each layer unpacked, whiteout files kept as files
//   <root>/overlay/sha256/<diff_id>/   its overlayfs form (whiteouts converted, files
//                                      hard-linked to layers/), made on first overlay use
//   <root>/images.json                 [{name, digest, imported}] (written whole, then renamed)
//   <root>/tmp/                        staging of imports in progress
//
// Built as its own static library (image_store) that links libarchive, used
// by the daemonlet-image executable only (platform/image/image_main.cpp), never
// by the agent. Not thread-safe; one process imports into a root at a time
// (Mode).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/oci_image.h"
#include "core/result.h"

namespace daemonlet::platform {

struct IndexEntry;    // image_index.h
struct StagedImport;  // image_store.cpp: the members of an archive or a layout, staged

struct ImportedImage {
    std::string name;             // normalised reference ("docker.io/library/busybox:latest"); empty when
                                  // the archive names none
    std::string manifest_digest;  // sha256 of the manifest blob
    ImageManifest manifest;
    ImageConfig config;  // the runtime's defaults: Entrypoint, Cmd, Env, WorkingDir, User
    // An OCI layout's name as the archive writes it (its annotation), which
    // containerd's `ctr images import` keeps unnormalised ("busybox:1"
    // where the name is docker.io/library/busybox:1); empty otherwise.
    std::string archive_name;
    // Seconds since the epoch when this name was imported or pulled (0: an
    // index older than the field); image GC's minimum age counts from it.
    std::int64_t imported = 0;
};

// What a removal or a prune did (image_gc.cpp).
struct Collection {
    struct Removed {
        std::string name;  // empty for an image without a name
        std::string digest;
        std::int64_t bytes = 0;  // freed by the files only this image had
    };
    std::vector<Removed> removed;
    std::int64_t bytes_freed = 0;  // every file deleted, leftovers of earlier removals included
    // Layers no image needs that stay because an overlay mount (a running
    // container's rootfs) has them as a lower directory: a later prune
    // deletes them.
    std::vector<std::string> kept_mounted;
};

class ImageStore {
  public:
    // kImport: the process that imports or removes, alone (daemonlet-image
    // holds a lock on the store for it). kRead: find, list and assemble_rootfs while an
    // import may run in another process (images.json is replaced whole, and
    // blobs and layers are in place before a name points at them).
    enum class Mode { kImport, kRead };

    // Opens (creating) the store under `root`. `platform` chooses the
    // manifest of a multi-platform index (core select_platform). With
    // kImport, leftovers of an import that was interrupted are removed.
    static Result<ImageStore> open(std::string root, Platform platform, Mode mode = Mode::kImport);

    // Imports every image of the archive at `path` (an OCI image-layout
    // tarball: oci-layout, index.json, blobs/; or a docker-archive: a
    // manifest.json). Compression of the archive itself (gzip, zstd, xz) is
    // detected. For each image: the manifest, config and layers are
    // verified (sha256 and size as the descriptors say; layers' uncompressed
    // sha256 as the config's diff_ids say), layers unpacked with their
    // members checked (no absolute paths, no "..", no links leaving the
    // layer), then the images' names are recorded. Names: RepoTags for a
    // docker-archive; for OCI, the annotation io.containerd.image.name, or
    // org.opencontainers.image.ref.name when it is a full reference. An
    // image already present is imported again at no cost (blobs and layers
    // are content-addressed) and its name moved to the new digest.
    // Errors name the archive, the member and the reason; on error nothing
    // of this archive is left in the store.
    Result<std::vector<ImportedImage>> import_archive(const std::string& path);

    // import_archive for an OCI image layout already unpacked in the
    // directory `dir` (a pull's staging, image_pull.cpp): the same checks on
    // its files as on an archive's members (names, links and devices refused,
    // every digest and size), without an archive written and read back. Its
    // files are moved into the store: `dir` is spent.
    Result<std::vector<ImportedImage>> import_layout(const std::string& dir);

    // Every check of import_archive on the archive at `path` (each layer
    // unpacked and its diff_id checked, whether or not the store has it),
    // in the store's staging directory, and nothing kept: the images it
    // holds, one per name. For an archive another image store imports
    // (containerd's), so that a damaged one is refused with our error.
    Result<std::vector<ImportedImage>> verify_archive(const std::string& path);

    // The image named `reference` (normalised: "busybox" finds
    // docker.io/library/busybox:latest; name@sha256:... finds by manifest
    // digest, as does a bare "sha256:..."). Error "not_found" when absent.
    Result<ImportedImage> find(const std::string& reference) const;

    // Every image recorded, in name order.
    Result<std::vector<ImportedImage>> list() const;

    // Makes `target_dir` (created, must be empty or absent) the image's root
    // filesystem: its layers copied in order, OCI whiteouts applied (layer.md:
    // ".wh.<name>" removes <name> of the layers below; ".wh..wh..opq" empties
    // its directory of what the layers below put there), whiteout files not
    // copied. Owners are kept when running as root.
    Status assemble_rootfs(const ImportedImage& image, const std::string& target_dir) const;

    // Mounts the image's root filesystem on `target_dir` (created, must be
    // empty or absent) as an overlay: lower directories the layers' overlay
    // forms (made first for a layer that has none: a store unpacked before
    // overlays were used, or a new layer), the top layer first, a layer
    // listed twice only at its top place; upper and work directories made
    // in `overlay_dir`, which must be on one file system. Same tree as
    // assemble_rootfs. Needs root. Error "too_long" when the layers' names
    // do not fit overlay's options (about 60 layers), "no_layer" for an
    // image of none: the caller copies instead.
    Status mount_rootfs(const ImportedImage& image, const std::string& target_dir,
                        const std::string& overlay_dir) const;

    // Removes the images `references` name (as find() reads them; a digest
    // removes every name of it), then the files that no remaining image
    // needs (collect_garbage). Error "not_found" naming the reference when
    // one is not in the store, before anything is removed. Needs kImport.
    Result<Collection> remove_images(const std::vector<std::string>& references);

    // Removes every image that none of `in_use` names (references as
    // find() reads them; an image with one name in use keeps all its
    // names), then the files no remaining image needs.
    Result<Collection> prune(const std::vector<std::string>& in_use);

    // Deletes the blobs, unpacked layers and overlay forms that no image of
    // the index needs, except a layer whose overlay form is a lower
    // directory of a mount (/proc/self/mountinfo). Crash-safe by order: the
    // index entry goes first (remove_images, prune), then the files, each
    // layer renamed out of its place whole before it is deleted, so that an
    // interrupted removal never leaves a named image missing files, nor a
    // half-deleted layer that an import would take as present; the next
    // collection finishes the job. Never crosses a mount while deleting.
    Result<Collection> collect_garbage();

    // Fault injection for tests: the next collections stop with error
    // "interrupted" after `n` deletions (-1: never).
    void set_deletion_budget(int n) { deletion_budget_ = n; }

    const std::string& root() const { return root_; }
    std::string blob_path(const std::string& digest) const;
    std::string layer_path(const std::string& diff_id) const;
    std::string overlay_layer_path(const std::string& diff_id) const;

  private:
    ImageStore(std::string root, Platform platform)
        : root_(std::move(root)), platform_(std::move(platform)) {}
    Result<ImportedImage> load(const std::string& name, const std::string& digest) const;
    // What import_archive and import_layout share once the members are staged.
    Result<std::vector<ImportedImage>> import_staged(const StagedImport& staged, const std::string& stage);
    Result<Collection> drop_entries(const std::vector<IndexEntry>& index, const std::vector<bool>& drop);

    std::string root_;
    Platform platform_;
    int deletion_budget_ = -1;
};

}  // namespace daemonlet::platform
