// OCI image documents: the image index, the image manifest, the image
// config, and docker-archive's manifest.json, parsed from bytes and
// validated (opencontainers/image-spec: descriptor.md, image-index.md,
// manifest.md, config.md, layer.md; Docker's image manifest v2 schema 2 and
// manifest list, which the spec names as compatible). Pure: the image store
// (platform/image/image_store.h) reads the bytes and verifies digests against them.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"

namespace daemonlet {

namespace media_type {
inline constexpr std::string_view kOciIndex = "application/vnd.oci.image.index.v1+json";
inline constexpr std::string_view kOciManifest = "application/vnd.oci.image.manifest.v1+json";
inline constexpr std::string_view kOciConfig = "application/vnd.oci.image.config.v1+json";
inline constexpr std::string_view kOciLayer = "application/vnd.oci.image.layer.v1.tar";
inline constexpr std::string_view kOciLayerGzip = "application/vnd.oci.image.layer.v1.tar+gzip";
inline constexpr std::string_view kOciLayerZstd = "application/vnd.oci.image.layer.v1.tar+zstd";
inline constexpr std::string_view kDockerManifestList =
    "application/vnd.docker.distribution.manifest.list.v2+json";
inline constexpr std::string_view kDockerManifest = "application/vnd.docker.distribution.manifest.v2+json";
inline constexpr std::string_view kDockerConfig = "application/vnd.docker.container.image.v1+json";
inline constexpr std::string_view kDockerLayerGzip = "application/vnd.docker.image.rootfs.diff.tar.gzip";
}  // namespace media_type

// Every JSON document is at most this big (the registries' manifest limit
// is 4 MiB: distribution's maxManifestBodySize).
inline constexpr std::size_t kMaxImageJsonBytes = 4 * 1024 * 1024;
// At most this many layers (Docker refuses more than 127; overlayfs stacks
// at most about 128 lower directories).
inline constexpr std::size_t kMaxImageLayers = 128;
// At most this many manifests in one index.
inline constexpr std::size_t kMaxIndexManifests = 1024;

struct Platform {
    std::string os;            // GOOS: "linux"
    std::string architecture;  // GOARCH: "amd64", "arm64", "arm"
    std::string variant;       // "v7" for arm, "v8" for arm64; may be empty
};

// descriptor.md: mediaType, digest (sha256 only here), size >= 0.
struct Descriptor {
    std::string media_type;
    std::string digest;
    std::int64_t size = 0;
    std::optional<Platform> platform;  // index entries only
    std::map<std::string, std::string> annotations;
};

struct ImageIndex {
    std::string media_type;  // as written, or inferred
    std::vector<Descriptor> manifests;
};

enum class LayerCompression { kNone, kGzip, kZstd };

struct ImageManifest {
    std::string media_type;
    Descriptor config;
    std::vector<Descriptor> layers;
};

// config.md: what a runtime needs from the image.
struct ImageConfig {
    Platform platform;
    std::string user;
    std::vector<std::string> env;  // "NAME=value"
    std::vector<std::string> entrypoint;
    std::vector<std::string> cmd;
    std::string working_dir;
    std::vector<std::string> diff_ids;  // rootfs.diff_ids, one per layer
};

// One entry of docker-archive's manifest.json (docker save): the config's
// and the layers' member paths inside the archive, and the RepoTags.
struct DockerArchiveImage {
    std::string config;
    std::vector<std::string> repo_tags;
    std::vector<std::string> layers;
};

// Each parser names `what` (e.g. "busybox.tar: blobs/sha256/ab..") in its
// errors, followed by the field and the reason.

// image-index.md (and Docker's manifest list): schemaVersion 2, manifests[]
// of valid descriptors whose mediaType is a manifest or an index.
Result<ImageIndex> parse_image_index(std::string_view json, const std::string& what);

// manifest.md (and Docker v2 schema 2): schemaVersion 2, a config descriptor
// of an image config media type, layers of a layer media type this store
// can unpack (see layer_compression). A manifest whose mediaType differs
// from `expected_media_type` (when given, from the descriptor that pointed
// at it) is refused, as image-spec asks.
Result<ImageManifest> parse_image_manifest(std::string_view json, const std::string& what,
                                           std::string_view expected_media_type = {});

// config.md: architecture and os required; config.Env entries must contain
// '='; rootfs.type "layers" with sha256 diff_ids.
Result<ImageConfig> parse_image_config(std::string_view json, const std::string& what);

// docker-archive manifest.json: a non-empty array of {Config, RepoTags, Layers}.
Result<std::vector<DockerArchiveImage>> parse_docker_archive_manifest(std::string_view json,
                                                                      const std::string& what);

// How a layer of this media type is compressed; an error for a media type
// this store does not unpack (non-distributable layers, unknown types).
Result<LayerCompression> layer_compression(std::string_view layer_media_type);

bool is_manifest_media_type(std::string_view media_type);
bool is_index_media_type(std::string_view media_type);

// The platform of this machine for `goarch` (core/local_node.h
// goarch_from_machine) and `uname -m`: arm gets its variant from the machine
// name (armv6l -> v6, armv7l -> v7, armv8l -> v8; v7 when unknown), arm64 is v8.
Platform host_platform(const std::string& goarch, const std::string& uname_machine);

// Chooses the manifest of `index` for `want`, as containerd's platform
// matcher does (platforms.Only): os and architecture equal; variant
// normalised (arm64: "" is "v8"; arm: "" is "v7"); arm accepts an older
// variant when no exact one is there (v7 runs v6 and v5 images), the newest
// first. Entries without a platform match no platform. The error lists what
// the index has.
Result<Descriptor> select_platform(const ImageIndex& index, const Platform& want, const std::string& what);

std::string platform_string(const Platform& p);

}  // namespace daemonlet
