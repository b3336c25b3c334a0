#include "platform/image/image_store.h"

#include <archive.h>
#include <archive_entry.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <utility>

#include "core/image_reference.h"
#include "core/io_error.h"
#include "platform/fd.h"
#include "platform/file.h"
#include "platform/image/image_index.h"
#include "platform/image/image_layer.h"
#include "platform/image/overlay_mount.h"
#include "platform/image/sha256.h"

namespace daemonlet::platform {

namespace {

using UnorderedJson = nlohmann::json;

// An archive with more members than this is refused (a real image has a
// few per layer; the layers' own files are inside the layer tarballs).
constexpr std::size_t kMaxArchiveMembers = 100000;
constexpr int kMaxLinkHops = 8;

// Removes a directory tree when it goes out of scope: the staging directory
// of an import, whatever path the import leaves by.
struct RemoveOnExit {
    std::string path;
    ~RemoveOnExit() {
        std::error_code ec;
        std::filesystem::remove_all(path, ec);
    }
};

}  // namespace

// The archive's members, copied into the staging directory as they stream
// by (an archive cannot be read twice cheaply, and blobs come in any order);
// or a layout directory's files, where they are.
struct StagedImport {
    struct Member {
        std::string file;  // the staged copy
        std::int64_t size = 0;
        std::string digest;
    };
    std::string archive;
    std::map<std::string, Member> files;
    std::map<std::string, std::string> links;  // member -> the member it links to

    const Member* find(std::string name) const {
        for (int hop = 0; hop <= kMaxLinkHops; ++hop) {
            if (auto f = files.find(name); f != files.end()) return &f->second;
            auto l = links.find(name);
            if (l == links.end()) return nullptr;
            name = l->second;
        }
        return nullptr;
    }
    Error error(const std::string& member, const std::string& reason) const {
        return Error{ErrorCode::Invalid, archive + ": " + member + ": " + reason};
    }
};

namespace {

using Staged = StagedImport;
using Member = StagedImport::Member;

Status stage_member_data(archive* a, const std::string& file, Member& m, const Staged& s,
                         const std::string& name) {
    Fd fd(::open(file.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644));
    if (fd.get() < 0) return io_error(file, "create");
    auto hasher = Sha256::create();
    if (!hasher.ok()) return hasher.error();
    std::vector<char> buf(256 * 1024);
    while (true) {
        la_ssize_t n = archive_read_data(a, buf.data(), buf.size());
        if (n < 0) return s.error(name, std::string("cannot read: ") + archive_error_string(a));
        if (n == 0) break;
        hasher.value().update(buf.data(), static_cast<std::size_t>(n));
        for (la_ssize_t done = 0; done < n;) {
            ssize_t w = ::write(fd.get(), buf.data() + done, static_cast<std::size_t>(n - done));
            if (w < 0 && errno == EINTR) continue;
            if (w < 0) return io_error(file, "write");
            done += w;
        }
        m.size += n;
    }
    m.file = file;
    m.digest = hasher.value().finish();
    return Ok{};
}

Result<Staged> stage_archive(const std::string& path, const std::string& stage_dir) {
    Staged s;
    s.archive = path;
    std::unique_ptr<archive, int (*)(archive*)> a(archive_read_new(), archive_read_free);
    archive_read_support_filter_all(a.get());
    archive_read_support_format_tar(a.get());
    if (archive_read_open_filename(a.get(), path.c_str(), 64 * 1024) != ARCHIVE_OK)
        return Error{ErrorCode::Io, path + ": cannot read: " + archive_error_string(a.get())};
    archive_entry* entry = nullptr;
    std::size_t count = 0;
    while (true) {
        int r = archive_read_next_header(a.get(), &entry);
        if (r == ARCHIVE_EOF) break;
        if (r < ARCHIVE_WARN)
            return Error{ErrorCode::Invalid, path + ": not a tar archive: " + archive_error_string(a.get())};
        if (++count > kMaxArchiveMembers)
            return Error{ErrorCode::Invalid,
                         path + ": more than " + std::to_string(kMaxArchiveMembers) + " members"};
        const char* raw = archive_entry_pathname(entry);
        std::string member = raw ? raw : "";
        auto name = clean_member_name(member);
        if (!name.ok()) return s.error(member, name.error().message + ": refused");
        std::string dir = name.value().substr(
            0, name.value().rfind('/') == std::string::npos ? 0 : name.value().rfind('/'));
        if (const char* hard = archive_entry_hardlink(entry)) {
            auto target = clean_member_name(hard);
            if (!target.ok()) return s.error(member, std::string("hard link to \"") + hard + "\": refused");
            s.links[name.value()] = target.value();
            continue;
        }
        auto type = archive_entry_filetype(entry);
        if (type == AE_IFLNK) {
            // docker save links a layer seen twice to its first copy.
            const char* t = archive_entry_symlink(entry);
            auto target = resolve_member_link(dir, t ? t : "");
            if (!target.ok())
                return s.error(member, std::string("symlink to \"") + (t ? t : "") +
                                           "\": " + target.error().message + ": refused");
            s.links[name.value()] = target.value();
        } else if (type == AE_IFREG) {
            Member m;
            std::string file = stage_dir + "/m" + std::to_string(count);
            if (auto st = stage_member_data(a.get(), file, m, s, member); !st.ok()) return st.error();
            s.files[name.value()] = std::move(m);
        }
    }
    return s;
}

// Hashes the file at `path` as it is: a member of a layout directory.
Status hash_member(const std::string& path, Member& m) {
    Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
    if (fd.get() < 0) return io_error(path, "open");
    auto hasher = Sha256::create();
    if (!hasher.ok()) return hasher.error();
    std::vector<char> buf(256 * 1024);
    while (true) {
        ssize_t n = ::read(fd.get(), buf.data(), buf.size());
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) return io_error(path, "read");
        if (n == 0) break;
        hasher.value().update(buf.data(), static_cast<std::size_t>(n));
        m.size += n;
    }
    m.file = path;
    m.digest = hasher.value().finish();
    return Ok{};
}

// The files of an OCI layout directory (a pull's staging), each a member
// named by its path under `dir` with the checks stage_archive makes: a
// bounded count, clean names, regular files only (a link or a device is
// refused, as nothing a pull writes is one). The files are hashed where
// they are, not copied: the import moves them into the store.
Result<Staged> stage_directory(const std::string& dir) {
    Staged s;
    s.archive = dir;
    std::error_code ec;
    std::filesystem::recursive_directory_iterator it(dir, ec), end;
    if (ec) return Error{ErrorCode::Io, dir + ": cannot read: " + ec.message()};
    std::size_t count = 0;
    for (; it != end; it.increment(ec)) {
        if (ec) return Error{ErrorCode::Io, dir + ": cannot read: " + ec.message()};
        if (++count > kMaxArchiveMembers)
            return Error{ErrorCode::Invalid,
                         dir + ": more than " + std::to_string(kMaxArchiveMembers) + " members"};
        const std::string member = it->path().lexically_relative(dir).string();
        auto name = clean_member_name(member);
        if (!name.ok()) return s.error(member, name.error().message + ": refused");
        auto status = it->symlink_status(ec);
        if (ec) return Error{ErrorCode::Io, it->path().string() + ": " + ec.message()};
        if (std::filesystem::is_directory(status)) continue;
        if (!std::filesystem::is_regular_file(status)) return s.error(member, "not a regular file: refused");
        Member m;
        if (auto st = hash_member(it->path().string(), m); !st.ok()) return st.error();
        s.files[name.value()] = std::move(m);
    }
    return s;
}

// What an import will add to the store, all verified, before anything is.
struct Plan {
    struct Layer {
        std::string blob_file;
        LayerCompression compression;
        std::string diff_id;
        std::string what;
    };
    std::map<std::string, std::string> blobs;  // digest -> staged file
    std::vector<Layer> layers;
    std::vector<std::pair<std::vector<std::string>, ImportedImage>> images;  // names, image
};

Result<std::string> read_member(const Staged& s, const Member& m, const std::string& name) {
    auto data = read_file(m.file, kMaxImageJsonBytes);
    if (!data.ok()) return s.error(name, "larger than " + std::to_string(kMaxImageJsonBytes) + " bytes");
    return data;
}

// The staged blob `name` for descriptor `d`, its size and digest checked.
Result<std::string> verified_blob(const Staged& s, const std::string& name, const Descriptor& d) {
    const Member* m = s.find(name);
    if (!m) return s.error(name, "missing (the blob of " + d.digest + ")");
    if (m->size != d.size)
        return s.error(name, "size is " + std::to_string(m->size) + " bytes, the descriptor says " +
                                 std::to_string(d.size));
    if (m->digest != d.digest)
        return s.error(
            name, "digest mismatch: the content's is " + m->digest + ", the descriptor says " + d.digest);
    return m->file;
}

std::string oci_blob_name(const std::string& digest) { return "blobs/sha256/" + hex_of(digest); }

// Adds the manifest `d` (a blob of the OCI layout), its config and layers.
Status plan_manifest(const Staged& s, const Descriptor& d, const std::string& manifest_file,
                     std::vector<std::string> names, Plan& plan,
                     const std::function<std::string(const Descriptor&)>& member_of) {
    std::string what = s.archive + ": " + member_of(d);
    auto bytes = read_file(manifest_file, kMaxImageJsonBytes);
    if (!bytes.ok()) return s.error(member_of(d), bytes.error().message);
    auto manifest = parse_image_manifest(bytes.value(), what, d.media_type);
    if (!manifest.ok()) return manifest.error();
    const ImageManifest& m = manifest.value();
    auto config_file = verified_blob(s, member_of(m.config), m.config);
    if (!config_file.ok()) return config_file.error();
    auto config_bytes = read_file(config_file.value(), kMaxImageJsonBytes);
    if (!config_bytes.ok()) return s.error(member_of(m.config), config_bytes.error().message);
    auto config = parse_image_config(config_bytes.value(), s.archive + ": " + member_of(m.config));
    if (!config.ok()) return config.error();
    if (config.value().diff_ids.size() != m.layers.size())
        return s.error(member_of(m.config),
                       "rootfs.diff_ids has " + std::to_string(config.value().diff_ids.size()) +
                           " entries, the manifest has " + std::to_string(m.layers.size()) + " layers");
    plan.blobs[d.digest] = manifest_file;
    plan.blobs[m.config.digest] = config_file.value();
    for (std::size_t i = 0; i < m.layers.size(); ++i) {
        auto file = verified_blob(s, member_of(m.layers[i]), m.layers[i]);
        if (!file.ok()) return file.error();
        LayerCompression compression = layer_compression(m.layers[i].media_type).value();
        // An uncompressed layer is its own diff: unpack_layer checks only the others.
        if (compression == LayerCompression::kNone && m.layers[i].digest != config.value().diff_ids[i])
            return s.error(member_of(m.layers[i]),
                           "an uncompressed layer whose digest is not rootfs.diff_ids[" + std::to_string(i) +
                               "] " + config.value().diff_ids[i] + " of the image config");
        plan.blobs[m.layers[i].digest] = file.value();
        plan.layers.push_back({file.value(), compression, config.value().diff_ids[i],
                               s.archive + ": " + member_of(m.layers[i])});
    }
    plan.images.push_back({std::move(names), ImportedImage{"", d.digest, m, config.value(), ""}});
    return Ok{};
}

// `written`: the name as the archive writes it, which containerd's `ctr
// images import` keeps as it is.
Result<std::vector<std::string>> oci_names(const Staged& s, const Descriptor& d, std::string& written) {
    std::vector<std::string> names;
    std::string text;
    if (auto it = d.annotations.find("io.containerd.image.name"); it != d.annotations.end()) {
        text = it->second;
    } else if (auto ref = d.annotations.find("org.opencontainers.image.ref.name");
               ref != d.annotations.end()) {
        // Often only a tag ("latest"), which names no repository.
        if (ref->second.find_first_of("/:@") != std::string::npos) text = ref->second;
    }
    if (text.empty()) return names;
    written = text;
    auto ref = normalize_image_reference(text);
    if (!ref.ok()) return s.error("index.json", "annotations: " + ref.error().message);
    names.push_back(ref.value().str());
    return names;
}

Status plan_oci(const Staged& s, const Platform& platform, Plan& plan) {
    const Member* layout = s.find("oci-layout");
    auto layout_bytes = read_member(s, *layout, "oci-layout");
    if (!layout_bytes.ok()) return layout_bytes.error();
    UnorderedJson l = UnorderedJson::parse(layout_bytes.value(), nullptr, false);
    if (!l.is_object() || !l.contains("imageLayoutVersion") || !l["imageLayoutVersion"].is_string())
        return s.error("oci-layout", "not an OCI layout file (no imageLayoutVersion)");
    if (l["imageLayoutVersion"].get<std::string>().rfind("1.", 0) != 0)
        return s.error("oci-layout", "imageLayoutVersion " + l["imageLayoutVersion"].get<std::string>() +
                                         " is not supported (1.x is)");
    auto index_bytes = read_member(s, *s.find("index.json"), "index.json");
    if (!index_bytes.ok()) return index_bytes.error();
    auto index = parse_image_index(index_bytes.value(), s.archive + ": index.json");
    if (!index.ok()) return index.error();
    if (index.value().manifests.empty()) return s.error("index.json", "manifests: no image in the archive");
    auto member_of = [](const Descriptor& x) { return oci_blob_name(x.digest); };
    for (const Descriptor& top : index.value().manifests) {
        std::string written;
        auto names = oci_names(s, top, written);
        if (!names.ok()) return names.error();
        Descriptor d = top;
        // A multi-platform image: its index, then this machine's manifest.
        for (int depth = 0; is_index_media_type(d.media_type); ++depth) {
            if (depth == 2) return s.error(member_of(d), "image indexes nested more than 2 deep");
            auto file = verified_blob(s, member_of(d), d);
            if (!file.ok()) return file.error();
            auto bytes = read_file(file.value(), kMaxImageJsonBytes);
            if (!bytes.ok()) return s.error(member_of(d), bytes.error().message);
            auto sub = parse_image_index(bytes.value(), s.archive + ": " + member_of(d));
            if (!sub.ok()) return sub.error();
            auto chosen = select_platform(sub.value(), platform, s.archive + ": " + member_of(d));
            if (!chosen.ok()) return chosen.error();
            plan.blobs[d.digest] = file.value();
            d = chosen.value();
        }
        if (!is_manifest_media_type(d.media_type))
            return s.error(member_of(d),
                           "unsupported media type " + d.media_type + " (not an image manifest)");
        auto file = verified_blob(s, member_of(d), d);
        if (!file.ok()) return file.error();
        if (auto st = plan_manifest(s, d, file.value(), std::move(names).value(), plan, member_of); !st.ok())
            return st;
        plan.images.back().second.archive_name = written;
    }
    return Ok{};
}

// gzip and zstd by their magic numbers; anything else is taken as a tar.
Result<LayerCompression> sniff_compression(const std::string& file) {
    unsigned char magic[4] = {};
    Fd fd(::open(file.c_str(), O_RDONLY | O_CLOEXEC));
    if (fd.get() < 0) return io_error(file, "open");
    ssize_t n = ::read(fd.get(), magic, sizeof magic);
    if (n >= 2 && magic[0] == 0x1f && magic[1] == 0x8b) return LayerCompression::kGzip;
    if (n == 4 && magic[0] == 0x28 && magic[1] == 0xb5 && magic[2] == 0x2f && magic[3] == 0xfd)
        return LayerCompression::kZstd;
    return LayerCompression::kNone;
}

// docker-archive: manifest.json names the config and layer members; the
// digests are those of their content. An OCI manifest is made for each
// image so that the store holds one kind of image.
Status plan_docker(const Staged& s, const std::string& stage_dir, Plan& plan) {
    auto bytes = read_member(s, *s.find("manifest.json"), "manifest.json");
    if (!bytes.ok()) return bytes.error();
    auto images = parse_docker_archive_manifest(bytes.value(), s.archive + ": manifest.json");
    if (!images.ok()) return images.error();
    std::map<std::string, std::string> member_by_digest;
    for (std::size_t i = 0; i < images.value().size(); ++i) {
        const DockerArchiveImage& img = images.value()[i];
        std::vector<std::string> names;
        for (const std::string& tag : img.repo_tags) {
            auto ref = normalize_image_reference(tag);
            if (!ref.ok()) return s.error("manifest.json", "RepoTags: " + ref.error().message);
            names.push_back(ref.value().str());
        }
        auto describe = [&](const std::string& member, std::string_view media) -> Result<Descriptor> {
            auto name = clean_member_name(member);
            if (!name.ok()) return s.error(member, name.error().message + ": refused");
            const Member* m = s.find(name.value());
            if (!m) return s.error(member, "missing (named by manifest.json)");
            member_by_digest[m->digest] = name.value();
            return Descriptor{std::string(media), m->digest, m->size, std::nullopt, {}};
        };
        UnorderedJson manifest = {{"schemaVersion", 2}, {"mediaType", media_type::kOciManifest}};
        auto config = describe(img.config, media_type::kOciConfig);
        if (!config.ok()) return config.error();
        manifest["config"] = {{"mediaType", config.value().media_type},
                              {"digest", config.value().digest},
                              {"size", config.value().size}};
        manifest["layers"] = UnorderedJson::array();
        for (const std::string& layer : img.layers) {
            auto d = describe(layer, media_type::kOciLayer);
            if (!d.ok()) return d.error();
            auto c = sniff_compression(s.find(member_by_digest[d.value().digest])->file);
            if (!c.ok()) return c.error();
            std::string_view media = c.value() == LayerCompression::kGzip   ? media_type::kOciLayerGzip
                                     : c.value() == LayerCompression::kZstd ? media_type::kOciLayerZstd
                                                                            : media_type::kOciLayer;
            manifest["layers"].push_back(
                {{"mediaType", media}, {"digest", d.value().digest}, {"size", d.value().size}});
        }
        std::string text = manifest.dump();
        auto hasher = Sha256::create();
        if (!hasher.ok()) return hasher.error();
        hasher.value().update(text.data(), text.size());
        Descriptor md{std::string(media_type::kOciManifest),
                      hasher.value().finish(),
                      static_cast<std::int64_t>(text.size()),
                      std::nullopt,
                      {}};
        std::string file = stage_dir + "/manifest" + std::to_string(i);
        if (auto st = write_whole(file, text, false); !st.ok()) return st;
        auto member_of = [&](const Descriptor& x) {
            auto it = member_by_digest.find(x.digest);
            return it == member_by_digest.end() ? std::string("manifest.json[" + std::to_string(i) + "]")
                                                : it->second;
        };
        if (auto st = plan_manifest(s, md, file, std::move(names), plan, member_of); !st.ok()) return st;
    }
    return Ok{};
}

bool exists(const std::string& path) {
    struct stat st {};
    return ::lstat(path.c_str(), &st) == 0;
}

// An empty directory at `dir` (created when absent), for a root filesystem.
Status empty_dir(const std::string& dir) {
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec) return Error{ErrorCode::Io, dir + ": " + ec.message()};
    if (!std::filesystem::is_empty(dir, ec) || ec)
        return Error{ErrorCode::Invalid,
                     dir + ": not empty: a root filesystem is assembled into an empty directory"};
    return Ok{};
}

}  // namespace

Result<ImageStore> ImageStore::open(std::string root, Platform platform, Mode mode) {
    std::error_code ec;
    for (const char* sub : {"/blobs/sha256", "/layers/sha256", "/tmp"}) {
        std::filesystem::create_directories(root + sub, ec);
        if (ec) return Error{ErrorCode::Io, root + sub + ": " + ec.message()};
    }
    // An import interrupted by a crash left only its staging directory. A
    // reader leaves it: it may be an import in progress.
    if (mode == Mode::kImport)
        for (const auto& e : std::filesystem::directory_iterator(root + "/tmp", ec)) {
            std::error_code rm;
            std::filesystem::remove_all(e.path(), rm);
        }
    return ImageStore(std::move(root), std::move(platform));
}

std::string ImageStore::blob_path(const std::string& digest) const {
    return root_ + "/blobs/sha256/" + hex_of(digest);
}
std::string ImageStore::layer_path(const std::string& diff_id) const {
    return root_ + "/layers/sha256/" + hex_of(diff_id);
}
std::string ImageStore::overlay_layer_path(const std::string& diff_id) const {
    return root_ + "/overlay/sha256/" + hex_of(diff_id);
}

namespace {

// Plans the images of the staged members `s` and unpacks their layers in
// `stage`, every digest checked: what an import moves into the store, or a
// verification throws away. Layers whose directory `have_layer` finds are
// not unpacked again (their diff_id was checked when they were).
Status prepare_import(const Staged& s, const std::string& stage, const Platform& platform,
                      const std::function<bool(const std::string&)>& have_layer, Plan& plan,
                      std::map<std::string, std::string>& unpacked) {
    const std::string& path = s.archive;
    if (s.find("oci-layout") && s.find("index.json")) {
        if (auto st = plan_oci(s, platform, plan); !st.ok()) return st.error();
    } else if (s.find("manifest.json")) {
        if (auto st = plan_docker(s, stage, plan); !st.ok()) return st.error();
    } else {
        return Error{ErrorCode::Invalid,
                     path +
                         ": neither an OCI image layout (oci-layout and index.json) nor a "
                         "docker-archive (manifest.json)"};
    }
    // Unpack the layers the store does not have yet, still in staging.
    for (const Plan::Layer& l : plan.layers) {
        if (unpacked.count(l.diff_id) || have_layer(l.diff_id)) continue;
        std::string dir = stage + "/layer-" + hex_of(l.diff_id);
        if (auto st = unpack_layer(l.blob_file, l.compression, l.diff_id, dir, l.what); !st.ok())
            return st.error();
        unpacked[l.diff_id] = dir;
    }
    return Ok{};
}

}  // namespace

Result<std::vector<ImportedImage>> ImageStore::verify_archive(const std::string& path) {
    std::string stage = root_ + "/tmp/verify-XXXXXX";
    if (!::mkdtemp(stage.data())) return io_error(root_ + "/tmp", "mkdtemp");
    RemoveOnExit cleanup{stage};
    Plan plan;
    std::map<std::string, std::string> unpacked;
    auto staged = stage_archive(path, stage);
    if (!staged.ok()) return staged.error();
    // Every layer, even one the store has: the archive is checked, not the store.
    if (auto st = prepare_import(
            staged.value(), stage, platform_, [](const std::string&) { return false; }, plan, unpacked);
        !st.ok())
        return st.error();
    std::vector<ImportedImage> out;
    for (auto& [names, image] : plan.images) {
        if (names.empty()) out.push_back(image);
        for (const std::string& name : names) {
            out.push_back(image);
            out.back().name = name;
        }
    }
    return out;
}

Result<std::vector<ImportedImage>> ImageStore::import_archive(const std::string& path) {
    std::string stage = root_ + "/tmp/import-XXXXXX";
    if (!::mkdtemp(stage.data())) return io_error(root_ + "/tmp", "mkdtemp");
    RemoveOnExit cleanup{stage};
    auto staged = stage_archive(path, stage);
    if (!staged.ok()) return staged.error();
    return import_staged(staged.value(), stage);
}

Result<std::vector<ImportedImage>> ImageStore::import_layout(const std::string& dir) {
    std::string stage = root_ + "/tmp/import-XXXXXX";
    if (!::mkdtemp(stage.data())) return io_error(root_ + "/tmp", "mkdtemp");
    RemoveOnExit cleanup{stage};
    auto staged = stage_directory(dir);
    if (!staged.ok()) return staged.error();
    return import_staged(staged.value(), stage);
}

Result<std::vector<ImportedImage>> ImageStore::import_staged(const StagedImport& staged,
                                                             const std::string& stage) {
    Plan plan;
    std::map<std::string, std::string> unpacked;  // diff_id -> staged directory
    if (auto st = prepare_import(
            staged, stage, platform_, [this](const std::string& d) { return exists(layer_path(d)); }, plan,
            unpacked);
        !st.ok())
        return st.error();
    auto index = read_index(root_ + "/images.json");
    if (!index.ok()) return index.error();

    // Everything is verified: move it in. Blobs and layers first, so that an
    // image in the index always has all of its content; a crash before the
    // index is written leaves only unreferenced, content-addressed files.
    for (const auto& [digest, file] : plan.blobs)
        if (!exists(blob_path(digest)) && ::rename(file.c_str(), blob_path(digest).c_str()) != 0)
            return io_error(blob_path(digest), "rename");
    for (const auto& [diff_id, dir] : unpacked)
        if (!exists(layer_path(diff_id)) && ::rename(dir.c_str(), layer_path(diff_id).c_str()) != 0)
            return io_error(layer_path(diff_id), "rename");

    // The content reaches the disk before an index that names it: one
    // syncfs for every blob and layer file rather than an fsync of each.
    {
        Fd fs_fd(::open(root_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
        if (fs_fd.get() < 0 || ::syncfs(fs_fd.get()) != 0) return io_error(root_, "syncfs");
    }
    std::vector<IndexEntry> entries = std::move(index).value();
    std::vector<ImportedImage> out;
    // The import time image GC's minimum age counts from (image_gc.cpp).
    const std::int64_t now = static_cast<std::int64_t>(::time(nullptr));
    for (auto& planned : plan.images) {
        // Named, not structured bindings: clang 14 (the fuzz preset) cannot
        // capture those in a lambda.
        const auto& names = planned.first;
        auto& image = planned.second;
        auto known = [&](const IndexEntry& e) { return e.digest == image.manifest_digest; };
        for (const std::string& name : names) {
            // The same image under the same name again keeps its import time,
            // as the kubelet's image GC keeps an image's firstDetected: a
            // re-import changes nothing.
            std::int64_t when = now;
            for (const IndexEntry& e : entries)
                if (e.name == name && e.digest == image.manifest_digest && e.imported > 0) when = e.imported;
            std::erase_if(entries, [&](const IndexEntry& e) { return e.name == name; });
            entries.push_back({name, image.manifest_digest, when});
        }
        // An image without a name is still found by its digest.
        if (names.empty() && std::find_if(entries.begin(), entries.end(), known) == entries.end())
            entries.push_back({"", image.manifest_digest, now});
        std::erase_if(entries,
                      [&](const IndexEntry& e) { return e.name.empty() && known(e) && !names.empty(); });
        image.name = names.empty() ? "" : names.front();
        out.push_back(image);
        for (std::size_t i = 1; i < names.size(); ++i) {
            out.push_back(image);
            out.back().name = names[i];
        }
    }
    std::sort(entries.begin(), entries.end(), [](const IndexEntry& a, const IndexEntry& b) {
        return a.name < b.name || (a.name == b.name && a.digest < b.digest);
    });
    if (auto st = write_index(root_, entries); !st.ok()) return st.error();
    return out;
}

Result<ImportedImage> ImageStore::load(const std::string& name, const std::string& digest) const {
    std::string file = blob_path(digest);
    auto bytes = read_file(file, kMaxImageJsonBytes);
    if (!bytes.ok()) return bytes.error();
    auto manifest = parse_image_manifest(bytes.value(), file);
    if (!manifest.ok()) return manifest.error();
    std::string config_file = blob_path(manifest.value().config.digest);
    auto config_bytes = read_file(config_file, kMaxImageJsonBytes);
    if (!config_bytes.ok()) return config_bytes.error();
    auto config = parse_image_config(config_bytes.value(), config_file);
    if (!config.ok()) return config.error();
    return ImportedImage{name, digest, std::move(manifest).value(), std::move(config).value(), ""};
}

Result<ImportedImage> ImageStore::find(const std::string& reference) const {
    auto index = read_index(root_ + "/images.json");
    if (!index.ok()) return index.error();
    auto key = IndexKey::of(reference);
    if (!key.ok()) return key.error();
    for (const IndexEntry& e : index.value())
        if (key.value().matches(e)) {
            auto image = load(e.name, e.digest);
            if (image.ok()) image.value().imported = e.imported;
            return image;
        }
    return Error{ErrorCode::NotFound, "image " + reference + " is not in the store " + root_};
}

Result<std::vector<ImportedImage>> ImageStore::list() const {
    auto index = read_index(root_ + "/images.json");
    if (!index.ok()) return index.error();
    std::vector<ImportedImage> out;
    for (const IndexEntry& e : index.value()) {
        auto img = load(e.name, e.digest);
        if (!img.ok()) return img.error();
        out.push_back(std::move(img).value());
        out.back().imported = e.imported;
    }
    return out;
}

Status ImageStore::assemble_rootfs(const ImportedImage& image, const std::string& target_dir) const {
    if (auto st = empty_dir(target_dir); !st.ok()) return st;
    for (const std::string& diff_id : image.config.diff_ids) {
        std::string dir = layer_path(diff_id);
        if (!exists(dir))
            return Error{ErrorCode::NotFound, dir + ": the layer " + diff_id + " is not in the store"};
        if (auto st = apply_layer(dir, target_dir); !st.ok()) return st;
    }
    return Ok{};
}

Status ImageStore::mount_rootfs(const ImportedImage& image, const std::string& target_dir,
                                const std::string& overlay_dir) const {
    // The layers' names, top first, each once: a layer listed again above
    // adds the same entries and whiteouts on top, so its lower place adds nothing.
    std::vector<std::string> lowers;
    std::set<std::string> seen;
    for (auto it = image.config.diff_ids.rbegin(); it != image.config.diff_ids.rend(); ++it) {
        if (!exists(layer_path(*it)))
            return Error{ErrorCode::NotFound,
                         layer_path(*it) + ": the layer " + *it + " is not in the store"};
        if (seen.insert(*it).second) lowers.push_back(*it);
    }
    if (lowers.empty())
        return Error{ErrorCode::NoLayer,
                     "image " + image.manifest_digest + " has no layer for an overlay's lower"};
    const std::string base = root_ + "/overlay/sha256", staging = root_ + "/overlay/tmp";
    for (const char* sub : {"/overlay/sha256", "/overlay/tmp"}) {
        std::error_code ec;
        std::filesystem::create_directories(root_ + sub, ec);
        if (ec) return Error{ErrorCode::Io, root_ + sub + ": " + ec.message()};
    }
    bool missing = false;
    for (const std::string& d : lowers) missing = missing || !exists(overlay_layer_path(d));
    if (missing) {
        // One maker at a time (prepares run in parallel, an import may too):
        // it clears what a maker killed half-way left, then makes each form in
        // staging and renames it into place whole.
        const std::string lock_path = root_ + "/overlay/lock";
        Fd lock(::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600));
        if (lock.get() < 0 || ::flock(lock.get(), LOCK_EX) != 0) return io_error(lock_path, "lock");
        std::error_code ec;
        for (const auto& e : std::filesystem::directory_iterator(staging, ec)) {
            std::error_code rm;
            std::filesystem::remove_all(e.path(), rm);
        }
        std::vector<std::string> made;
        for (const std::string& d : lowers) {
            if (exists(overlay_layer_path(d))) continue;
            std::string stage = staging + "/" + hex_of(d);
            if (auto st = make_overlay_layer(layer_path(d), stage); !st.ok()) {
                std::filesystem::remove_all(stage, ec);
                return Error{st.error().code, "the overlay form of layer " + d + ": " + st.error().message};
            }
            made.push_back(d);
        }
        // On disk before their names say they are whole, as an import's layers.
        Fd fs_fd(::open(root_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
        if (fs_fd.get() < 0 || ::syncfs(fs_fd.get()) != 0) return io_error(root_, "syncfs");
        for (const std::string& d : made)
            if (::rename((staging + "/" + hex_of(d)).c_str(), overlay_layer_path(d).c_str()) != 0)
                return io_error(overlay_layer_path(d), "rename");
    }
    for (std::string& d : lowers) d = hex_of(d);
    if (auto st = empty_dir(target_dir); !st.ok()) return st;
    std::error_code ec;
    std::string target = std::filesystem::absolute(target_dir, ec).lexically_normal().string();
    std::string over = std::filesystem::absolute(overlay_dir, ec).lexically_normal().string();
    while (over.size() > 1 && over.back() == '/') over.pop_back();
    for (const std::string& d : {over, over + "/upper", over + "/work"})
        if (::mkdir(d.c_str(), 0755) != 0 && errno != EEXIST) return io_error(d, "mkdir");
    return mount_overlay(base, lowers, over + "/upper", over + "/work", target);
}

}  // namespace daemonlet::platform
