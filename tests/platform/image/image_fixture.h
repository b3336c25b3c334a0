// Test images, built at test time with libarchive's writer: layer tarballs,
// OCI image-layout archives and docker-archives, written as real files.
#pragma once

#include <string>
#include <vector>

#include "platform/image/image_store.h"

namespace daemonlet::test {

struct TarEntry {
    enum Type { kFile, kDir, kSymlink, kHardlink } type = kFile;
    std::string name;
    std::string content;  // a file's bytes
    std::string link;     // a symlink's target or a hard link's member
    int mode = 0644;
};

// A tar (gzip-compressed when asked) of `entries`, as bytes.
std::string make_tar(const std::vector<TarEntry>& entries, bool gzip = false);

// The bytes of the file `path` ("" when it cannot be read).
std::string slurp(const std::string& path);

// "sha256:<hex>" of `data`.
std::string digest_of(const std::string& data);

enum class Compression { kPlain, kGzip, kZstd };

struct TestImage {
    std::vector<std::string> layers;  // layer blobs as stored (compressed or not)
    std::vector<std::string> layer_media_types;
    std::vector<std::string> diff_ids;
    std::string config;
    std::string manifest;
    std::string manifest_digest;
};

// An image of `layer_tars` (plain tar bytes, layer i compressed as
// compression[i]) with the config's Cmd ["/bin/tool"], Env PATH,
// WorkingDir /etc.
TestImage make_image(const std::vector<std::string>& layer_tars, const std::vector<Compression>& compression,
                     const std::string& arch = "amd64");

// Remakes `image.manifest` (and its digest) from its layers and config, after
// a test changed them.
void rebuild_manifest(TestImage& image);

// Writes an OCI image-layout tarball of `image` named `name` (annotation
// io.containerd.image.name) to `path`. `extra` members are added as they are
// (for broken archives).
void write_oci_archive(const std::string& path, const TestImage& image, const std::string& name,
                       const std::vector<TarEntry>& extra = {});

// Writes the same OCI image layout as files into the directory `dir`
// (created), as a registry pull stages it (ImageStore::import_layout).
void write_oci_layout(const std::string& dir, const TestImage& image, const std::string& name);

// Writes an OCI image-layout tarball whose index.json points at an image
// index (a multi-platform image) of `images`, each for its config's
// architecture.
void write_multi_platform_archive(const std::string& path, const std::vector<TestImage>& images,
                                  const std::string& name);

// Writes a docker-archive (docker save's layout: <id>.json, <n>/layer.tar,
// manifest.json with RepoTags) of `image` to `path`. With `linked`, each
// <n>/layer.tar is a symlink to the layer stored elsewhere in the archive,
// as docker save writes a layer it has written before.
void write_docker_archive(const std::string& path, const TestImage& image, const std::string& repo_tag,
                          bool linked = false);

// Writes an OCI archive of `layer_tars` (uncompressed) named `name` to
// <dir>/<name>.tar and imports it into `store`: its first image.
Result<platform::ImportedImage> import_plain_image(platform::ImageStore& store, const std::string& dir,
                                                   const std::vector<std::string>& layer_tars,
                                                   const std::string& name);

// The platform the test images are made for.
inline const Platform kAmd64{"linux", "amd64", ""};

// ImageStore::open(root, kAmd64); fails the current test with the reason.
platform::ImageStore open_store(const std::string& root);

// import_plain_image; fails the current test with the reason.
platform::ImportedImage import_plain(platform::ImageStore& store, const std::string& dir,
                                     const std::vector<std::string>& layer_tars, const std::string& name);

// The layers of the whiteout test image: layer 1 lays out etc/, opq/, bin/;
// layer 2 whites out etc/gone and makes opq/ opaque.
std::vector<std::string> whiteout_layers();

}  // namespace daemonlet::test
