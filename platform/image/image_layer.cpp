#include "platform/image/image_layer.h"

#include <archive.h>
#include <archive_entry.h>
#include <dirent.h>
#include <fcntl.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <set>
#include <utility>
#include <vector>

#include "core/io_error.h"
#include "platform/fd.h"
#include "platform/image/sha256.h"

namespace daemonlet::platform {

namespace {

// A layer bigger than this uncompressed is refused before it fills the disk
// (a gzip bomb). Real layers are far smaller.
constexpr std::int64_t kMaxLayerBytes = std::int64_t{16} * 1024 * 1024 * 1024;
// Files that size need a 64-bit off_t on 32-bit targets too, which the top
// CMakeLists.txt asks for (_FILE_OFFSET_BITS=64).
static_assert(sizeof(off_t) == 8, "image layers need 64-bit file offsets: build with -D_FILE_OFFSET_BITS=64");

struct ReadFree {
    void operator()(archive* a) const { archive_read_free(a); }
};
struct WriteFree {
    void operator()(archive* a) const { archive_write_free(a); }
};
using ReadArchive = std::unique_ptr<archive, ReadFree>;
using WriteArchive = std::unique_ptr<archive, WriteFree>;

Error layer_error(const std::string& what, const std::string& member, const std::string& reason) {
    return Error{ErrorCode::Invalid, what + (member.empty() ? "" : ": " + member) + ": " + reason};
}

std::string archive_reason(archive* a) {
    const char* s = archive_error_string(a);
    return s ? s : "unknown libarchive error";
}

Result<ReadArchive> open_read(const std::string& path, bool raw, const std::string& what) {
    ReadArchive a(archive_read_new());
    archive_read_support_filter_all(a.get());
    if (raw)
        archive_read_support_format_raw(a.get());
    else
        archive_read_support_format_tar(a.get());
    if (archive_read_open_filename(a.get(), path.c_str(), 64 * 1024) != ARCHIVE_OK)
        return layer_error(what, "", "cannot read: " + archive_reason(a.get()));
    return a;
}

// The uncompressed stream's digest must be the config's diff_id.
Status verify_diff_id(const std::string& blob, const std::string& diff_id, const std::string& what) {
    auto opened = open_read(blob, true, what);
    if (!opened.ok()) return opened.error();
    archive* a = opened.value().get();
    archive_entry* entry = nullptr;
    if (archive_read_next_header(a, &entry) != ARCHIVE_OK)
        return layer_error(what, "", "cannot decompress: " + archive_reason(a));
    auto hasher = Sha256::create();
    if (!hasher.ok()) return hasher.error();
    std::vector<char> buf(256 * 1024);
    std::int64_t total = 0;
    while (true) {
        la_ssize_t n = archive_read_data(a, buf.data(), buf.size());
        if (n < 0) return layer_error(what, "", "cannot decompress: " + archive_reason(a));
        if (n == 0) break;
        total += n;
        if (total > kMaxLayerBytes)
            return layer_error(what, "",
                               "larger than " + std::to_string(kMaxLayerBytes) + " bytes uncompressed");
        hasher.value().update(buf.data(), static_cast<std::size_t>(n));
    }
    std::string got = hasher.value().finish();
    if (got != diff_id)
        return layer_error(
            what, "",
            "uncompressed content has digest " + got + ", the image config's diff_id is " + diff_id);
    return Ok{};
}

// True when a relative symlink at `name` pointing at `target` resolves
// above the layer's root (an absolute target is rooted in the image).
bool climbs_out(const std::string& name, const std::string& target) {
    if (target.empty() || target.front() == '/') return false;
    std::size_t slash = name.rfind('/');
    return !resolve_member_link(slash == std::string::npos ? "" : name.substr(0, slash), target).ok();
}

// The symlink of this layer that `name` would be written through, if any.
const std::string* under_symlink(const std::set<std::string>& symlinks, const std::string& name) {
    for (std::size_t slash = name.find('/'); slash != std::string::npos; slash = name.find('/', slash + 1)) {
        auto it = symlinks.find(name.substr(0, slash));
        if (it != symlinks.end()) return &*it;
    }
    return nullptr;
}

Status copy_data(archive* in, archive* out, const std::string& what, const std::string& member) {
    const void* block = nullptr;
    std::size_t size = 0;
    la_int64_t offset = 0;
    while (true) {
        int r = archive_read_data_block(in, &block, &size, &offset);
        if (r == ARCHIVE_EOF) return Ok{};
        if (r < ARCHIVE_WARN) return layer_error(what, member, archive_reason(in));
        if (archive_write_data_block(out, block, size, offset) < ARCHIVE_WARN)
            return layer_error(what, member, archive_reason(out));
    }
}

}  // namespace

namespace {

// Normalises `path` (a member name or a link resolved against its
// directory): "." and empty components dropped, ".." taken off the
// components before it when `dotdot` allows it.
Result<std::string> normalise(const std::string& path, bool dotdot) {
    if (!path.empty() && path.front() == '/') return Error{ErrorCode::Invalid, "absolute path"};
    std::vector<std::string> parts;
    std::size_t i = 0;
    while (i <= path.size()) {
        std::size_t slash = path.find('/', i);
        if (slash == std::string::npos) slash = path.size();
        std::string part = path.substr(i, slash - i);
        if (part == "..") {
            if (!dotdot) return Error{ErrorCode::Invalid, "\"..\" in the path"};
            if (parts.empty()) return Error{ErrorCode::Invalid, "leads out of the root"};
            parts.pop_back();
        } else if (!part.empty() && part != ".") {
            parts.push_back(std::move(part));
        }
        i = slash + 1;
    }
    std::string out;
    for (const auto& p : parts) out += (out.empty() ? "" : "/") + p;
    return out;
}

}  // namespace

Result<std::string> clean_member_name(const std::string& name) { return normalise(name, false); }

Result<std::string> resolve_member_link(const std::string& dir, const std::string& target) {
    if (!target.empty() && target.front() == '/') return Error{ErrorCode::Invalid, "absolute link target"};
    return normalise(dir.empty() ? target : dir + "/" + target, true);
}

Status unpack_layer(const std::string& blob, LayerCompression compression, const std::string& diff_id,
                    const std::string& dir, const std::string& what) {
    // An uncompressed layer's digest, already verified, is its diff_id.
    if (compression != LayerCompression::kNone)
        if (auto st = verify_diff_id(blob, diff_id, what); !st.ok()) return st;
    if (::mkdir(dir.c_str(), 0755) != 0) return Error{ErrorCode::Io, dir + ": " + std::strerror(errno)};
    // libarchive's symlink check walks the whole path: give it one without links.
    std::error_code ec;
    std::string root = std::filesystem::canonical(dir, ec).string();
    if (ec) return Error{ErrorCode::Io, dir + ": " + ec.message()};

    auto opened = open_read(blob, false, what);
    if (!opened.ok()) return opened.error();
    archive* in = opened.value().get();
    WriteArchive out(archive_write_disk_new());
    int flags = ARCHIVE_EXTRACT_PERM | ARCHIVE_EXTRACT_TIME | ARCHIVE_EXTRACT_SECURE_NODOTDOT |
                ARCHIVE_EXTRACT_SECURE_SYMLINKS;
    // Numeric owners, as the layer has them (no user-name lookup on the host).
    if (::geteuid() == 0) flags |= ARCHIVE_EXTRACT_OWNER;
    archive_write_disk_set_options(out.get(), flags);

    std::set<std::string> symlinks;
    archive_entry* entry = nullptr;
    while (true) {
        int r = archive_read_next_header(in, &entry);
        if (r == ARCHIVE_EOF) break;
        if (r < ARCHIVE_WARN) return layer_error(what, "", "not a tar archive: " + archive_reason(in));
        const char* raw = archive_entry_pathname(entry);
        std::string member = raw ? raw : "";
        auto name = clean_member_name(member);
        if (!name.ok()) return layer_error(what, member, name.error().message + ": refused");
        if (name.value().empty()) continue;  // the layer's root directory
        std::string base = name.value().substr(name.value().rfind('/') + 1);
        if (base == ".wh." || base == ".wh.." || base == ".wh...")
            return layer_error(what, member, "a whiteout of no name, \".\" or \"..\": refused");
        if (const std::string* link = under_symlink(symlinks, name.value()))
            return layer_error(what, member,
                               "written through the symlink " + *link + " of the layer: refused");
        if (const char* hard = archive_entry_hardlink(entry)) {
            auto target = clean_member_name(hard);
            if (!target.ok() || target.value().empty() || under_symlink(symlinks, target.value()))
                return layer_error(what, member,
                                   std::string("hard link to \"") + hard + "\", outside the layer: refused");
            archive_entry_set_hardlink(entry, (root + "/" + target.value()).c_str());
        }
        if (archive_entry_filetype(entry) == AE_IFLNK) {
            const char* t = archive_entry_symlink(entry);
            std::string target = t ? t : "";
            if (climbs_out(name.value(), target))
                return layer_error(what, member,
                                   "symlink to \"" + target + "\" leads out of the image's root: refused");
            symlinks.insert(name.value());
        } else {
            symlinks.erase(name.value());
        }
        archive_entry_set_pathname(entry, (root + "/" + name.value()).c_str());
        if (archive_write_header(out.get(), entry) < ARCHIVE_WARN)
            return layer_error(what, member, archive_reason(out.get()));
        if (archive_entry_size(entry) > 0)
            if (auto st = copy_data(in, out.get(), what, member); !st.ok()) return st;
        if (archive_write_finish_entry(out.get()) < ARCHIVE_WARN)
            return layer_error(what, member, archive_reason(out.get()));
    }
    // Directory modes and times are set last, when the layer is complete.
    if (archive_write_close(out.get()) < ARCHIVE_WARN)
        return layer_error(what, "", archive_reason(out.get()));
    return Ok{};
}

namespace {

constexpr std::string_view kWhiteoutPrefix = ".wh.";
constexpr std::string_view kOpaque = ".wh..wh..opq";

Status remove_path(const std::string& path) {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);  // never follows symlinks
    if (ec) return Error{ErrorCode::Io, path + ": cannot remove: " + ec.message()};
    return Ok{};
}

// Owner, mode and times of `st` onto `dst` (not followed when a symlink).
Status set_meta(const std::string& dst, const struct stat& st) {
    if (::geteuid() == 0 && ::lchown(dst.c_str(), st.st_uid, st.st_gid) != 0) return io_error(dst, "chown");
    // chown clears set-user-ID: the mode comes after it. Symlinks have none.
    if (!S_ISLNK(st.st_mode) && ::chmod(dst.c_str(), st.st_mode & 07777) != 0) return io_error(dst, "chmod");
    struct timespec times[2] = {st.st_atim, st.st_mtim};
    if (::utimensat(AT_FDCWD, dst.c_str(), times, AT_SYMLINK_NOFOLLOW) != 0)
        return io_error(dst, "utimensat");
    return Ok{};
}

Status copy_file(const std::string& src, const std::string& dst, const struct stat& st) {
    Fd in(::open(src.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
    if (in.get() < 0) return io_error(src, "open");
    Fd out(::open(dst.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600));
    if (out.get() < 0) return io_error(dst, "create");
    off_t left = st.st_size;
    while (left > 0) {
        ssize_t n = ::sendfile(out.get(), in.get(), nullptr, static_cast<std::size_t>(left));
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return io_error(dst, "copy");
        left -= n;
    }
    return Ok{};
}

// The names in the directory `dir`, without "." and "..".
Result<std::vector<std::string>> entries_of(const std::string& dir) {
    std::vector<std::string> names;
    std::unique_ptr<DIR, int (*)(DIR*)> d(::opendir(dir.c_str()), ::closedir);
    if (!d) return io_error(dir, "opendir");
    // readdir returns null both at the end and on an error: only errno
    // tells them apart. An error taken for the end would assemble a layer
    // with files missing, and say nothing.
    errno = 0;
    while (dirent* e = ::readdir(d.get())) {
        std::string n = e->d_name;
        if (n != "." && n != "..") names.push_back(std::move(n));
        errno = 0;
    }
    if (errno != 0) return io_error(dir, "readdir");
    return names;
}

struct Applier {
    // Hard links within the layer: (device, inode) of the layer's file ->
    // the copy made of it first.
    std::map<std::pair<dev_t, ino_t>, std::string> copied;

    Status apply_entry(const std::string& src, const std::string& dst);

    Status apply_dir(const std::string& src, const std::string& dst) {
        auto listed = entries_of(src);
        if (!listed.ok()) return listed.error();
        const std::vector<std::string>& names = listed.value();
        // Whiteouts first: they remove what the layers below put here.
        for (const std::string& n : names) {
            if (n == kOpaque) {
                // Listed first, removed after: a directory is not changed while read.
                std::error_code ec;
                std::vector<std::string> lower;
                for (const auto& e : std::filesystem::directory_iterator(dst, ec)) lower.push_back(e.path());
                if (ec) return Error{ErrorCode::Io, dst + ": " + ec.message()};
                for (const std::string& path : lower)
                    if (auto st = remove_path(path); !st.ok()) return st;
            }
        }
        for (const std::string& n : names)
            if (n != kOpaque && n.rfind(kWhiteoutPrefix, 0) == 0) {
                std::string victim = n.substr(kWhiteoutPrefix.size());
                if (victim.empty() || victim == "." || victim == "..") continue;  // refused at unpack
                if (auto st = remove_path(dst + "/" + victim); !st.ok()) return st;
            }
        for (const std::string& n : names)
            if (n.rfind(kWhiteoutPrefix, 0) != 0)
                if (auto st = apply_entry(src + "/" + n, dst + "/" + n); !st.ok()) return st;
        return Ok{};
    }
};

Status Applier::apply_entry(const std::string& src, const std::string& dst) {
    struct stat st {};
    if (::lstat(src.c_str(), &st) != 0) return io_error(src, "lstat");
    struct stat cur {};
    bool exists = ::lstat(dst.c_str(), &cur) == 0;
    if (S_ISDIR(st.st_mode)) {
        // A directory merges into a directory and replaces anything else.
        if (exists && !S_ISDIR(cur.st_mode)) {
            if (auto r = remove_path(dst); !r.ok()) return r;
            exists = false;
        }
        if (!exists && ::mkdir(dst.c_str(), 0700) != 0) return io_error(dst, "mkdir");
        if (auto r = apply_dir(src, dst); !r.ok()) return r;
        return set_meta(dst, st);
    }
    if (exists)
        if (auto r = remove_path(dst); !r.ok()) return r;
    if (S_ISREG(st.st_mode) && st.st_nlink > 1) {
        auto it = copied.find({st.st_dev, st.st_ino});
        if (it != copied.end()) {
            if (::link(it->second.c_str(), dst.c_str()) != 0) return io_error(dst, "link");
            return Ok{};
        }
        copied[{st.st_dev, st.st_ino}] = dst;
    }
    if (S_ISREG(st.st_mode)) {
        if (auto r = copy_file(src, dst, st); !r.ok()) return r;
    } else if (S_ISLNK(st.st_mode)) {
        std::vector<char> target(static_cast<std::size_t>(st.st_size) + 1);
        ssize_t n = ::readlink(src.c_str(), target.data(), target.size());
        if (n < 0 || static_cast<std::size_t>(n) >= target.size()) return io_error(src, "readlink");
        if (::symlink(std::string(target.data(), static_cast<std::size_t>(n)).c_str(), dst.c_str()) != 0)
            return io_error(dst, "symlink");
    } else if (S_ISFIFO(st.st_mode) || S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode)) {
        if (::mknod(dst.c_str(), st.st_mode, st.st_rdev) != 0) return io_error(dst, "mknod");
    } else {
        return Error{ErrorCode::Invalid, src + ": a socket or unknown file type in a layer"};
    }
    return set_meta(dst, st);
}

// The overlay form of a layer (make_overlay_layer).
struct OverlayMaker {
    Status make_dir(const std::string& src, const std::string& dst) {
        auto listed = entries_of(src);
        if (!listed.ok()) return listed.error();
        const std::vector<std::string>& names = listed.value();
        std::set<std::string> present;
        for (const std::string& n : names)
            if (n.rfind(kWhiteoutPrefix, 0) != 0) {
                if (auto st = make_entry(src + "/" + n, dst + "/" + n); !st.ok()) return st;
                present.insert(n);
            }
        for (const std::string& n : names) {
            if (n == kOpaque) {
                if (::lsetxattr(dst.c_str(), "trusted.overlay.opaque", "y", 1, 0) != 0)
                    return io_error(dst, "setxattr trusted.overlay.opaque");
            } else if (n.rfind(kWhiteoutPrefix, 0) == 0) {
                std::string victim = n.substr(kWhiteoutPrefix.size());
                if (victim.empty() || victim == "." || victim == "..") continue;
                // apply_layer removes first, then copies: the layer's own entry
                // wins, and a directory of it hides what was below, as an
                // opaque one does.
                if (present.count(victim)) {
                    const std::string made = dst + "/" + victim;
                    struct stat st {};
                    if (::lstat(made.c_str(), &st) == 0 && S_ISDIR(st.st_mode) &&
                        ::lsetxattr(made.c_str(), "trusted.overlay.opaque", "y", 1, 0) != 0)
                        return io_error(made, "setxattr trusted.overlay.opaque");
                    continue;
                }
                if (::mknod((dst + "/" + victim).c_str(), S_IFCHR | 0000, makedev(0, 0)) != 0)
                    return io_error(dst + "/" + victim, "mknod (overlay whiteout)");
            }
        }
        return Ok{};
    }

    Status make_entry(const std::string& src, const std::string& dst) {
        struct stat st {};
        if (::lstat(src.c_str(), &st) != 0) return io_error(src, "lstat");
        if (S_ISDIR(st.st_mode)) {
            if (::mkdir(dst.c_str(), 0700) != 0) return io_error(dst, "mkdir");
            if (auto r = make_dir(src, dst); !r.ok()) return r;
            return set_meta(dst, st);
        }
        if (::link(src.c_str(), dst.c_str()) == 0) return Ok{};
        // Another file system, or too many links: the copy keeps the tree right.
        Applier copier;
        return copier.apply_entry(src, dst);
    }
};

}  // namespace

Status make_overlay_layer(const std::string& layer_dir, const std::string& target_dir) {
    struct stat st {};
    if (::lstat(layer_dir.c_str(), &st) != 0) return io_error(layer_dir, "lstat");
    if (::mkdir(target_dir.c_str(), 0700) != 0) return io_error(target_dir, "mkdir");
    OverlayMaker maker;
    if (auto r = maker.make_dir(layer_dir, target_dir); !r.ok()) return r;
    return set_meta(target_dir, st);
}

Status apply_layer(const std::string& layer_dir, const std::string& target_dir) {
    Applier a;
    return a.apply_dir(layer_dir, target_dir);
}

}  // namespace daemonlet::platform
