#include "tests/platform/image/image_fixture.h"

#include <archive.h>
#include <archive_entry.h>

#include <cassert>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>

#include "platform/image/sha256.h"

// CppUTest last: its leak-detection macros redefine new.
#include <CppUTest/TestHarness.h>

namespace daemonlet::test {

namespace {

la_ssize_t append(archive*, void* out, const void* buf, size_t n) {
    static_cast<std::string*>(out)->append(static_cast<const char*>(buf), n);
    return static_cast<la_ssize_t>(n);
}

void write_file(const std::string& path, const std::string& data) {
    std::ofstream f(path, std::ios::binary);
    f << data;
    assert(f.good());
}

std::string blob_name(const std::string& digest) { return "blobs/sha256/" + digest.substr(7); }

// `data` through libarchive's `filter` as one raw stream.
std::string compress(const std::string& data, int (*filter)(archive*)) {
    std::string out;
    std::unique_ptr<archive, int (*)(archive*)> a(archive_write_new(), archive_write_free);
    archive_write_set_format_raw(a.get());
    filter(a.get());
    archive_write_set_bytes_in_last_block(a.get(), 1);
    archive_write_open(a.get(), &out, nullptr, append, nullptr);
    std::unique_ptr<archive_entry, void (*)(archive_entry*)> e(archive_entry_new(), archive_entry_free);
    archive_entry_set_filetype(e.get(), AE_IFREG);
    archive_entry_set_size(e.get(), static_cast<la_int64_t>(data.size()));
    archive_write_header(a.get(), e.get());
    archive_write_data(a.get(), data.data(), data.size());
    archive_write_close(a.get());
    return out;
}

}  // namespace

std::string slurp(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    std::stringstream s;
    s << f.rdbuf();
    return s.str();
}

std::string make_tar(const std::vector<TarEntry>& entries, bool gzip) {
    std::string out;
    std::unique_ptr<archive, int (*)(archive*)> a(archive_write_new(), archive_write_free);
    archive_write_set_format_pax_restricted(a.get());
    archive_write_set_bytes_in_last_block(a.get(), 1);
    archive_write_open(a.get(), &out, nullptr, append, nullptr);
    for (const TarEntry& e : entries) {
        std::unique_ptr<archive_entry, void (*)(archive_entry*)> entry(archive_entry_new(),
                                                                       archive_entry_free);
        archive_entry_set_pathname(entry.get(), e.name.c_str());
        archive_entry_set_perm(entry.get(), static_cast<mode_t>(e.mode));
        archive_entry_set_mtime(entry.get(), 1700000000, 0);
        switch (e.type) {
        case TarEntry::kFile:
            archive_entry_set_filetype(entry.get(), AE_IFREG);
            archive_entry_set_size(entry.get(), static_cast<la_int64_t>(e.content.size()));
            break;
        case TarEntry::kDir: archive_entry_set_filetype(entry.get(), AE_IFDIR); break;
        case TarEntry::kSymlink:
            archive_entry_set_filetype(entry.get(), AE_IFLNK);
            archive_entry_set_symlink(entry.get(), e.link.c_str());
            break;
        case TarEntry::kHardlink:
            archive_entry_set_filetype(entry.get(), AE_IFREG);
            archive_entry_set_hardlink(entry.get(), e.link.c_str());
            break;
        }
        archive_write_header(a.get(), entry.get());
        if (e.type == TarEntry::kFile && !e.content.empty())
            archive_write_data(a.get(), e.content.data(), e.content.size());
    }
    archive_write_close(a.get());
    return gzip ? compress(out, archive_write_add_filter_gzip) : out;
}

std::string digest_of(const std::string& data) {
    auto h = platform::Sha256::create();
    assert(h.ok());
    h.value().update(data.data(), data.size());
    return h.value().finish();
}

TestImage make_image(const std::vector<std::string>& layer_tars, const std::vector<Compression>& compression,
                     const std::string& arch) {
    using nlohmann::json;
    TestImage img;
    for (std::size_t i = 0; i < layer_tars.size(); ++i) {
        img.diff_ids.push_back(digest_of(layer_tars[i]));
        std::string blob = layer_tars[i];
        std::string media = "application/vnd.oci.image.layer.v1.tar";
        if (compression[i] == Compression::kGzip) {
            blob = compress(blob, archive_write_add_filter_gzip);
            media += "+gzip";
        } else if (compression[i] == Compression::kZstd) {
            blob = compress(blob, archive_write_add_filter_zstd);
            media += "+zstd";
        }
        img.layers.push_back(blob);
        img.layer_media_types.push_back(media);
    }
    json config = {{"architecture", arch},
                   {"os", "linux"},
                   {"config", {{"Cmd", {"/bin/tool"}}, {"Env", {"PATH=/bin"}}, {"WorkingDir", "/etc"}}},
                   {"rootfs", {{"type", "layers"}, {"diff_ids", img.diff_ids}}}};
    img.config = config.dump();
    rebuild_manifest(img);
    return img;
}

void rebuild_manifest(TestImage& img) {
    using nlohmann::json;
    json layers = json::array();
    for (std::size_t i = 0; i < img.layers.size(); ++i)
        layers.push_back({{"mediaType", img.layer_media_types[i]},
                          {"digest", digest_of(img.layers[i])},
                          {"size", img.layers[i].size()}});
    json manifest = {{"schemaVersion", 2},
                     {"mediaType", "application/vnd.oci.image.manifest.v1+json"},
                     {"config",
                      {{"mediaType", "application/vnd.oci.image.config.v1+json"},
                       {"digest", digest_of(img.config)},
                       {"size", img.config.size()}}},
                     {"layers", layers}};
    img.manifest = manifest.dump();
    img.manifest_digest = digest_of(img.manifest);
}

namespace {

// index.json of an OCI layout of `image` named `name`.
std::string oci_index(const TestImage& image, const std::string& name) {
    nlohmann::json index = {{"schemaVersion", 2},
                            {"manifests",
                             {{{"mediaType", "application/vnd.oci.image.manifest.v1+json"},
                               {"digest", image.manifest_digest},
                               {"size", image.manifest.size()},
                               {"annotations", {{"io.containerd.image.name", name}}}}}}};
    return index.dump();
}

}  // namespace

void write_oci_archive(const std::string& path, const TestImage& image, const std::string& name,
                       const std::vector<TarEntry>& extra) {
    const std::string index = oci_index(image, name);
    std::vector<TarEntry> entries = {
        {TarEntry::kFile, "oci-layout", R"({"imageLayoutVersion":"1.0.0"})", "", 0644},
        {TarEntry::kFile, "index.json", index, "", 0644},
        {TarEntry::kDir, "blobs", "", "", 0755},
        {TarEntry::kDir, "blobs/sha256", "", "", 0755},
        {TarEntry::kFile, blob_name(image.manifest_digest), image.manifest, "", 0644},
        {TarEntry::kFile, blob_name(digest_of(image.config)), image.config, "", 0644},
    };
    for (const std::string& layer : image.layers)
        entries.push_back({TarEntry::kFile, blob_name(digest_of(layer)), layer, "", 0644});
    for (const TarEntry& e : extra) entries.push_back(e);
    write_file(path, make_tar(entries));
}

void write_oci_layout(const std::string& dir, const TestImage& image, const std::string& name) {
    std::filesystem::create_directories(dir + "/blobs/sha256");
    write_file(dir + "/oci-layout", R"({"imageLayoutVersion":"1.0.0"})");
    write_file(dir + "/index.json", oci_index(image, name));
    write_file(dir + "/" + blob_name(image.manifest_digest), image.manifest);
    write_file(dir + "/" + blob_name(digest_of(image.config)), image.config);
    for (const std::string& layer : image.layers) write_file(dir + "/" + blob_name(digest_of(layer)), layer);
}

void write_multi_platform_archive(const std::string& path, const std::vector<TestImage>& images,
                                  const std::string& name) {
    using nlohmann::json;
    json manifests = json::array();
    std::vector<TarEntry> entries = {
        {TarEntry::kFile, "oci-layout", R"({"imageLayoutVersion":"1.0.0"})", "", 0644}};
    for (const TestImage& image : images) {
        json config = json::parse(image.config);
        json platform = {{"os", "linux"}, {"architecture", config["architecture"]}};
        manifests.push_back({{"mediaType", "application/vnd.oci.image.manifest.v1+json"},
                             {"digest", image.manifest_digest},
                             {"size", image.manifest.size()},
                             {"platform", platform}});
        entries.push_back({TarEntry::kFile, blob_name(image.manifest_digest), image.manifest, "", 0644});
        entries.push_back({TarEntry::kFile, blob_name(digest_of(image.config)), image.config, "", 0644});
        for (const std::string& layer : image.layers)
            entries.push_back({TarEntry::kFile, blob_name(digest_of(layer)), layer, "", 0644});
    }
    std::string inner = json{
        {"schemaVersion", 2},
        {"mediaType", "application/vnd.oci.image.index.v1+json"},
        {"manifests",
         manifests}}.dump();
    json index = {{"schemaVersion", 2},
                  {"manifests",
                   {{{"mediaType", "application/vnd.oci.image.index.v1+json"},
                     {"digest", digest_of(inner)},
                     {"size", inner.size()},
                     {"annotations", {{"org.opencontainers.image.ref.name", name}}}}}}};
    entries.push_back({TarEntry::kFile, blob_name(digest_of(inner)), inner, "", 0644});
    entries.push_back({TarEntry::kFile, "index.json", index.dump(), "", 0644});
    write_file(path, make_tar(entries));
}

void write_docker_archive(const std::string& path, const TestImage& image, const std::string& repo_tag,
                          bool linked) {
    using nlohmann::json;
    std::string config_name = digest_of(image.config).substr(7) + ".json";
    std::vector<TarEntry> entries = {{TarEntry::kFile, config_name, image.config, "", 0644}};
    json layers = json::array();
    for (std::size_t i = 0; i < image.layers.size(); ++i) {
        std::string dir = "layer" + std::to_string(i);
        entries.push_back({TarEntry::kDir, dir, "", "", 0755});
        if (linked) {
            entries.push_back({TarEntry::kDir, "first" + std::to_string(i), "", "", 0755});
            entries.push_back(
                {TarEntry::kFile, "first" + std::to_string(i) + "/layer.tar", image.layers[i], "", 0644});
            entries.push_back({TarEntry::kSymlink, dir + "/layer.tar", "",
                               "../first" + std::to_string(i) + "/layer.tar", 0777});
        } else {
            entries.push_back({TarEntry::kFile, dir + "/layer.tar", image.layers[i], "", 0644});
        }
        layers.push_back(dir + "/layer.tar");
    }
    json manifest = json::array({{{"Config", config_name}, {"RepoTags", {repo_tag}}, {"Layers", layers}}});
    entries.push_back({TarEntry::kFile, "manifest.json", manifest.dump(), "", 0644});
    write_file(path, make_tar(entries));
}

std::vector<std::string> whiteout_layers() {
    std::string one = make_tar({
        {TarEntry::kDir, "etc", "", "", 0755},
        {TarEntry::kFile, "etc/keep", "keep", "", 0644},
        {TarEntry::kFile, "etc/gone", "gone", "", 0600},
        {TarEntry::kDir, "opq", "", "", 0750},
        {TarEntry::kFile, "opq/a", "a", "", 0644},
        {TarEntry::kDir, "opq/sub", "", "", 0755},
        {TarEntry::kFile, "opq/sub/b", "b", "", 0644},
        {TarEntry::kDir, "bin", "", "", 0755},
        {TarEntry::kFile, "bin/tool", "#!/bin/sh\necho tool\n", "", 0755},
        {TarEntry::kSymlink, "bin/link", "", "tool", 0777},
        {TarEntry::kHardlink, "bin/tool2", "", "bin/tool", 0755},
        {TarEntry::kSymlink, "bin/abs", "", "/bin/tool", 0777},
    });
    std::string two = make_tar({
        {TarEntry::kDir, "etc", "", "", 0755},
        {TarEntry::kFile, "etc/.wh.gone", "", "", 0644},
        {TarEntry::kFile, "etc/added", "added", "", 0640},
        {TarEntry::kDir, "opq", "", "", 0750},
        {TarEntry::kFile, "opq/.wh..wh..opq", "", "", 0644},
        {TarEntry::kFile, "opq/new", "new", "", 0644},
        {TarEntry::kFile, "bin/link", "now a file", "", 0644},
    });
    return {one, two};
}

Result<platform::ImportedImage> import_plain_image(platform::ImageStore& store, const std::string& dir,
                                                   const std::vector<std::string>& layer_tars,
                                                   const std::string& name) {
    std::vector<Compression> plain(layer_tars.size(), Compression::kPlain);
    write_oci_archive(dir + "/" + name + ".tar", make_image(layer_tars, plain), name);
    auto imported = store.import_archive(dir + "/" + name + ".tar");
    if (!imported.ok()) return imported.error();
    return imported.value().at(0);
}

platform::ImageStore open_store(const std::string& root) {
    auto s = platform::ImageStore::open(root, kAmd64);
    CHECK_TEXT(s.ok(), s.ok() ? "" : s.error().message.c_str());
    return std::move(s).value();
}

platform::ImportedImage import_plain(platform::ImageStore& store, const std::string& dir,
                                     const std::vector<std::string>& layer_tars, const std::string& name) {
    auto imported = import_plain_image(store, dir, layer_tars, name);
    CHECK_TEXT(imported.ok(), imported.ok() ? "" : imported.error().message.c_str());
    return imported.value();
}

}  // namespace daemonlet::test
