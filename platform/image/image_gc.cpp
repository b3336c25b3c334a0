// Removing images from the store (image_store.h: remove_images, prune,
// collect_garbage). kubelet's image GC removes images through the runtime
// (pkg/kubelet/images/image_gc_manager.go, freeSpace -> RemoveImage);
// containerd then deletes the content and snapshots no image references
// (its garbage collector, metadata/gc.go: mark what a root references, sweep
// the rest). This is that mark and sweep over our layout: the index is the
// root; a manifest marks its config and layer blobs and its layers' diff_ids;
// everything else in blobs/, layers/ and overlay/ is swept, except a layer
// that a mounted overlay uses.
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <set>
#include <utility>

#include "core/io_error.h"
#include "platform/fd.h"
#include "platform/file.h"
#include "platform/image/image_index.h"
#include "platform/image/image_store.h"
#include "platform/image/overlay_mount.h"
#include "platform/image/sha256.h"

namespace daemonlet::platform {

namespace {

namespace fs = std::filesystem;

constexpr std::size_t kMaxMountinfoBytes = 4 * 1024 * 1024;

// The last component of each lower directory of every overlay mounted in
// this mount namespace (/proc/self/mountinfo: "... - overlay overlay
// rw,lowerdir=a:b,upperdir=..."). Our overlays name each lower by its
// layer's hex relative to the store's overlay/sha256 (overlay_mount.h), and
// a kernel may show it relative or resolved: the last component is the hex
// either way. Any overlay's lower of that name counts: keeping a layer too
// many is safe, deleting one under a mount is not.
Result<std::set<std::string>> mounted_lowers() {
    auto text = read_file("/proc/self/mountinfo", kMaxMountinfoBytes);
    if (!text.ok()) return Error{ErrorCode::Io, "/proc/self/mountinfo: " + text.error().message};
    std::set<std::string> out;
    std::size_t start = 0;
    const std::string& s = text.value();
    while (start < s.size()) {
        std::size_t end = s.find('\n', start);
        if (end == std::string::npos) end = s.size();
        const std::string line = s.substr(start, end - start);
        start = end + 1;
        std::size_t sep = line.find(" - ");
        if (sep == std::string::npos || line.compare(sep + 3, 8, "overlay ") != 0) continue;
        std::size_t opts = line.find("lowerdir=", sep);
        if (opts == std::string::npos) continue;
        opts += 9;
        std::size_t opts_end = line.find_first_of(", ", opts);
        const std::string lowers =
            line.substr(opts, opts_end == std::string::npos ? opts_end : opts_end - opts);
        for (std::size_t a = 0; a <= lowers.size();) {
            std::size_t b = lowers.find(':', a);
            if (b == std::string::npos) b = lowers.size();
            std::string dir = lowers.substr(a, b - a);
            while (!dir.empty() && dir.back() == '/') dir.pop_back();
            if (!dir.empty()) out.insert(dir.substr(dir.find_last_of('/') + 1));
            a = b + 1;
        }
    }
    return out;
}

// Bytes of the files under `path` not counted before (hard links: overlay
// forms link the unpacked layer's files).
std::int64_t tree_bytes(const std::string& path, std::set<std::pair<dev_t, ino_t>>& seen) {
    std::int64_t bytes = 0;
    auto count = [&](const fs::path& p) {
        struct stat st {};
        if (::lstat(p.c_str(), &st) == 0 && seen.insert({st.st_dev, st.st_ino}).second)
            bytes += static_cast<std::int64_t>(st.st_blocks) * 512;
    };
    count(path);
    std::error_code ec;
    for (fs::recursive_directory_iterator it(path, fs::directory_options::none, ec);
         !ec && it != fs::recursive_directory_iterator(); it.increment(ec))
        count(it->path());
    return bytes;
}

// The names (hex) of the entries of `dir`; empty when it does not exist.
std::vector<std::string> names_in(const std::string& dir) {
    std::vector<std::string> out;
    std::error_code ec;
    for (fs::directory_iterator it(dir, ec); !ec && it != fs::directory_iterator(); it.increment(ec))
        out.push_back(it->path().filename().string());
    return out;
}

}  // namespace

Result<Collection> ImageStore::collect_garbage() {
    auto index = read_index(root_ + "/images.json");
    if (!index.ok()) return index.error();
    // Mark. An image that cannot be read stops the collection: its files
    // cannot be told from garbage.
    std::set<std::string> blobs, layers;
    for (const IndexEntry& e : index.value()) {
        auto image = load(e.name, e.digest);
        if (!image.ok())
            return Error{image.error().code, "image " + (e.name.empty() ? e.digest : e.name) +
                                                 ": cannot read it to know which files it needs, nothing "
                                                 "is deleted: " +
                                                 image.error().message};
        blobs.insert(hex_of(e.digest));
        blobs.insert(hex_of(image.value().manifest.config.digest));
        for (const Descriptor& l : image.value().manifest.layers) blobs.insert(hex_of(l.digest));
        for (const std::string& d : image.value().config.diff_ids) layers.insert(hex_of(d));
    }
    auto mounted = mounted_lowers();
    if (!mounted.ok()) return mounted.error();

    // No overlay form is made while we sweep (mount_rootfs takes this lock
    // to make them).
    const std::string overlay_lock = root_ + "/overlay/lock";
    std::error_code ec;
    fs::create_directories(root_ + "/overlay", ec);
    Fd lock(::open(overlay_lock.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600));
    if (lock.get() < 0 || ::flock(lock.get(), LOCK_EX) != 0) return io_error(overlay_lock, "lock");

    Collection out;
    std::set<std::pair<dev_t, ino_t>> seen;
    auto spend = [&]() -> Status {
        if (deletion_budget_ == 0) return Error{ErrorCode::Interrupted, "the removal was interrupted (test)"};
        if (deletion_budget_ > 0) --deletion_budget_;
        return Ok{};
    };
    // What an interrupted sweep had renamed out of place but not deleted.
    for (const std::string& name : names_in(root_ + "/tmp"))
        if (name.rfind("gc-", 0) == 0) {
            out.bytes_freed += tree_bytes(root_ + "/tmp/" + name, seen);
            if (auto st = remove_tree_on_one_fs(root_ + "/tmp/" + name); !st.ok()) return st.error();
        }
    // Sweep layers and their overlay forms: renamed out of place first, so
    // that an import or a mount never takes a half-deleted one as present.
    for (const char* kind : {"layers", "overlay"}) {
        const std::string dir = root_ + "/" + kind + "/sha256";
        for (const std::string& hex : names_in(dir)) {
            if (layers.count(hex)) continue;
            if (mounted.value().count(hex)) {
                if (std::string(kind) == "layers") out.kept_mounted.push_back("sha256:" + hex);
                continue;
            }
            if (auto st = spend(); !st.ok()) return st.error();
            const std::string from = dir + "/" + hex, to = root_ + "/tmp/gc-" + kind + "-" + hex;
            if (::rename(from.c_str(), to.c_str()) != 0) return io_error(from, "rename");
            out.bytes_freed += tree_bytes(to, seen);
            if (auto st = remove_tree_on_one_fs(to); !st.ok()) return st.error();
        }
    }
    // A blob is one file: its unlink is whole. Last, so that an interrupted
    // sweep leaves blobs, never layers without them, which an import would
    // not unpack again.
    for (const std::string& hex : names_in(root_ + "/blobs/sha256")) {
        if (blobs.count(hex)) continue;
        if (auto st = spend(); !st.ok()) return st.error();
        const std::string path = root_ + "/blobs/sha256/" + hex;
        out.bytes_freed += tree_bytes(path, seen);
        if (::unlink(path.c_str()) != 0 && errno != ENOENT) return io_error(path, "unlink");
    }
    return out;
}

namespace {

// The bytes of the files that only the image `digest` needs among `index`.
struct Sizer {
    const ImageStore& store;
    std::int64_t own_bytes(const ImportedImage& image, const std::vector<ImportedImage>& others) const {
        std::set<std::string> shared;
        for (const ImportedImage& o : others) {
            if (o.manifest_digest == image.manifest_digest) return 0;  // another name of it stays
            for (const auto& l : o.manifest.layers) shared.insert(l.digest);
            for (const auto& d : o.config.diff_ids) shared.insert(d);
            shared.insert(o.manifest.config.digest);
        }
        std::set<std::pair<dev_t, ino_t>> seen;
        std::int64_t bytes = 0;
        auto blob = [&](const std::string& d) {
            if (!shared.count(d)) bytes += tree_bytes(store.blob_path(d), seen);
        };
        blob(image.manifest_digest);
        blob(image.manifest.config.digest);
        for (const auto& l : image.manifest.layers) blob(l.digest);
        for (const auto& d : image.config.diff_ids)
            if (!shared.count(d)) {
                bytes += tree_bytes(store.layer_path(d), seen);
                bytes += tree_bytes(store.overlay_layer_path(d), seen);
            }
        return bytes;
    }
};

}  // namespace

Result<Collection> ImageStore::remove_images(const std::vector<std::string>& references) {
    auto index = read_index(root_ + "/images.json");
    if (!index.ok()) return index.error();
    std::vector<bool> drop(index.value().size(), false);
    for (const std::string& reference : references) {
        auto key = IndexKey::of(reference);
        if (!key.ok()) return key.error();
        bool found = false;
        for (std::size_t i = 0; i < drop.size(); ++i)
            if (key.value().matches(index.value()[i])) drop[i] = found = true;
        if (!found) return Error{ErrorCode::NotFound, "image " + reference + " is not in the store " + root_};
    }
    return drop_entries(index.value(), drop);
}

Result<Collection> ImageStore::prune(const std::vector<std::string>& in_use) {
    auto index = read_index(root_ + "/images.json");
    if (!index.ok()) return index.error();
    std::set<std::string> kept_digests;
    for (const std::string& reference : in_use) {
        auto key = IndexKey::of(reference);
        if (!key.ok()) return key.error();
        for (const IndexEntry& e : index.value())
            if (key.value().matches(e)) kept_digests.insert(e.digest);
    }
    std::vector<bool> drop;
    for (const IndexEntry& e : index.value()) drop.push_back(!kept_digests.count(e.digest));
    return drop_entries(index.value(), drop);
}

Result<Collection> ImageStore::drop_entries(const std::vector<IndexEntry>& index,
                                            const std::vector<bool>& drop) {
    std::vector<IndexEntry> kept;
    std::vector<ImportedImage> kept_images, dropped;
    for (std::size_t i = 0; i < index.size(); ++i) {
        auto image = load(index[i].name, index[i].digest);
        if (!image.ok()) return image.error();
        (drop[i] ? dropped : kept_images).push_back(std::move(image).value());
        if (!drop[i]) kept.push_back(index[i]);
    }
    // Measured before anything goes, for the log: what each image alone had.
    Collection out;
    const Sizer sizer{*this};
    std::set<std::string> sized;  // an image of two names is counted once
    for (const ImportedImage& image : dropped) {
        std::int64_t bytes = 0;
        if (sized.insert(image.manifest_digest).second) bytes = sizer.own_bytes(image, kept_images);
        out.removed.push_back({image.name, image.manifest_digest, bytes});
    }
    // The record first: from here no reader finds these images, whatever
    // happens to their files.
    if (!dropped.empty())
        if (auto st = write_index(root_, kept); !st.ok()) return st.error();
    auto swept = collect_garbage();
    if (!swept.ok()) return swept.error();
    out.bytes_freed = swept.value().bytes_freed;
    out.kept_mounted = std::move(swept.value().kept_mounted);
    return out;
}

}  // namespace daemonlet::platform
