#include "platform/image/overlay_mount.h"

#include <dirent.h>
#include <fcntl.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string_view>

#include "core/io_error.h"
#include "core/oci_image.h"
#include "platform/fd.h"
#include "platform/file.h"
#include "platform/image/image_index.h"

// Linux 5.8's statx attribute; older headers lack the name.
#ifndef STATX_ATTR_MOUNT_ROOT
#define STATX_ATTR_MOUNT_ROOT 0x00002000
#endif

namespace daemonlet::platform {

namespace {

// The working directory is the process's: a mount_overlay in a thread of
// the runtime's pool (starts run in parallel, runtime.maxParallelOperations)
// that changed it would change every thread's, and two at once would each
// name their lowers in the other's directory (ENOENT: agent.runc_security
// failed once so). The calling thread takes a working directory of its own
// first (unshare(CLONE_FS), as Samba's pthreadpool does for per-thread
// working directories); where that is refused the mounts take turns.
bool thread_has_own_working_directory() {
    thread_local const bool own = ::unshare(CLONE_FS) == 0;
    return own;
}

std::mutex shared_working_directory;

std::string parent_of(const std::string& path) {
    std::size_t slash = path.find_last_of('/');
    if (slash == std::string::npos) return ".";
    return slash == 0 ? "/" : path.substr(0, slash);
}

bool has_overlay_in_kernel() {
    auto text = read_file("/proc/filesystems", 64 * 1024);
    if (!text) return false;
    // Lines are "nodev\toverlay" or "\text4".
    return text.value().find("\toverlay\n") != std::string::npos;
}

Status make_dir(const std::string& path) {
    if (::mkdir(path.c_str(), 0755) != 0 && errno != EEXIST) return io_error(path, "mkdir");
    return Ok{};
}

// The trial mount: a file of the lower directory seen through the overlay.
Status probe_uncached(const std::string& lower_parent, const std::string& upper_parent) {
    // Not gated on /proc/filesystems: overlay is often a module that is not
    // loaded until the first overlay mount asks for it (the kernel's
    // request_module("fs-overlay") in mount(2)), as on Debian's stock
    // kernel. The list only explains a failed trial mount.
    if (::geteuid() != 0)
        return Error{ErrorCode::Unavailable, "not running as root (an overlay mount needs CAP_SYS_ADMIN)"};
    const std::string lower = lower_parent + "/.overlay-probe", box = upper_parent + "/.overlay-probe";
    // What a probe cut short by a crash left.
    auto clean = [&]() -> Status {
        if (auto s = unmount_if_mounted(box + "/merged"); !s) return s;
        if (auto s = remove_tree_on_one_fs(box); !s) return s;
        return remove_tree_on_one_fs(lower);
    };
    if (auto s = clean(); !s) return s;
    Status result = Ok{};
    for (const std::string& d : {lower, box, box + "/upper", box + "/work", box + "/merged"})
        if (result) result = make_dir(d);
    if (result) {
        Fd f(::open((lower + "/probe").c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644));
        if (f.get() < 0) result = io_error(lower + "/probe", "create");
    }
    if (result)
        result =
            mount_overlay(lower_parent, {".overlay-probe"}, box + "/upper", box + "/work", box + "/merged");
    struct stat st {};
    if (result && ::lstat((box + "/merged/probe").c_str(), &st) != 0)
        result = Error{ErrorCode::Unavailable,
                       box + "/merged: the trial overlay does not show its lower directory's file"};
    if (auto s = clean(); !s && result) result = s;
    if (!result && !has_overlay_in_kernel())
        return Error{ErrorCode::Unavailable,
                     "the kernel has no overlay file system (/proc/filesystems, after a trial mount: " +
                         result.error().message + ")"};
    if (!result)
        return Error{ErrorCode::Unavailable, "a trial overlay mount failed: " + result.error().message};
    return result;
}

}  // namespace

Status probe_overlay(const std::string& lower_parent, const std::string& upper_parent) {
    static std::optional<Status> answer;
    if (!answer) answer = probe_uncached(lower_parent, upper_parent);
    return *answer;
}

Result<bool> use_overlay(const std::string& setting, const Status& probe) {
    if (setting == "copy") return false;
    if (setting == "overlay" && !probe)
        return Error{ErrorCode::Unavailable,
                     "runtime.rootfs: overlay: this node cannot mount one: " + probe.error().message};
    if (setting == "overlay" || setting == "auto") return probe.ok();
    return Error{ErrorCode::Invalid, "runtime.rootfs: Unsupported value: \"" + setting + "\""};
}

Status mount_overlay(const std::string& lower_base, const std::vector<std::string>& lowers,
                     const std::string& upper, const std::string& work, const std::string& target) {
    if (lowers.empty())
        return Error{ErrorCode::Invalid, target + ": an overlay needs at least one lower directory"};
    for (const std::string* p : {&upper, &work, &target})
        if (p->empty() || p->front() != '/') return Error{ErrorCode::Invalid, *p + ": not an absolute path"};
    std::string options = "lowerdir=";
    for (std::size_t i = 0; i < lowers.size(); ++i) options += (i ? ":" : "") + lowers[i];
    options += ",upperdir=" + upper + ",workdir=" + work;
    for (const std::string* p : {&upper, &work})
        if (p->find_first_of(",:\\") != std::string::npos)
            return Error{ErrorCode::Invalid,
                         *p + ": holds ',', ':' or '\\', which overlay's mount options cannot"};
    for (const std::string& l : lowers)
        if (l.empty() || l.find_first_of(",:\\") != std::string::npos)
            return Error{ErrorCode::Invalid, lower_base + "/" + l + ": not a plain directory name"};
    if (options.size() >= kMaxMountOptionBytes)
        return Error{ErrorCode::TooLong, target + ": the overlay's options for " +
                                             std::to_string(lowers.size()) + " layers are " +
                                             std::to_string(options.size()) + " bytes, more than a page (" +
                                             std::to_string(kMaxMountOptionBytes) + ")"};
    std::unique_lock<std::mutex> turn(shared_working_directory, std::defer_lock);
    if (!thread_has_own_working_directory()) turn.lock();
    Fd cwd(::open(".", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (cwd.get() < 0) return io_error(".", "open");
    if (::chdir(lower_base.c_str()) != 0) return io_error(lower_base, "chdir");
    int r = ::mount("overlay", target.c_str(), "overlay", 0, options.c_str());
    int saved = errno;
    if (::fchdir(cwd.get()) != 0) return io_error("the previous working directory", "fchdir");
    errno = saved;
    if (r != 0) return io_error(target, "mount overlay");
    return Ok{};
}

bool is_mount_point(const std::string& path) {
    struct statx sx {};
    if (::statx(AT_FDCWD, path.c_str(), AT_SYMLINK_NOFOLLOW, STATX_BASIC_STATS, &sx) != 0) return false;
    if (sx.stx_attributes_mask & STATX_ATTR_MOUNT_ROOT)
        return (sx.stx_attributes & STATX_ATTR_MOUNT_ROOT) != 0;
    // Before Linux 5.8: a mount of another file system has another device.
    struct stat self {
    }, parent{};
    if (::lstat(path.c_str(), &self) != 0 || ::lstat(parent_of(path).c_str(), &parent) != 0) return false;
    return self.st_dev != parent.st_dev;
}

Status unmount_if_mounted(const std::string& path) {
    if (!is_mount_point(path)) return Ok{};
    if (::umount2(path.c_str(), UMOUNT_NOFOLLOW) == 0) return Ok{};
    const int err = errno;
    if (err == EINVAL && !is_mount_point(path)) return Ok{};  // gone meanwhile
    if (err != EBUSY) {
        errno = err;
        return io_error(path, "umount");
    }
    if (::umount2(path.c_str(), MNT_DETACH | UMOUNT_NOFOLLOW) != 0) return io_error(path, "umount (detach)");
    return Ok{};
}

namespace {

Status remove_entry(const std::string& path, dev_t dev) {
    struct stat st {};
    if (::lstat(path.c_str(), &st) != 0) return errno == ENOENT ? Status{Ok{}} : io_error(path, "lstat");
    if (!S_ISDIR(st.st_mode)) {
        if (::unlink(path.c_str()) != 0 && errno != ENOENT) return io_error(path, "unlink");
        return Ok{};
    }
    if (st.st_dev != dev || is_mount_point(path))
        return Error{ErrorCode::Busy, path + ": a mount point: not deleted, nor anything under it"};
    std::vector<std::string> names;
    {
        std::unique_ptr<DIR, int (*)(DIR*)> d(::opendir(path.c_str()), ::closedir);
        if (!d) return io_error(path, "opendir");
        while (dirent* e = ::readdir(d.get())) {
            std::string_view n = e->d_name;
            if (n != "." && n != "..") names.emplace_back(n);
        }
    }
    for (const std::string& n : names)
        if (auto s = remove_entry(path + "/" + n, dev); !s) return s;
    if (::rmdir(path.c_str()) != 0 && errno != ENOENT) return io_error(path, "rmdir");
    return Ok{};
}

}  // namespace

Status remove_tree_on_one_fs(const std::string& path) {
    struct stat st {};
    if (::lstat(path.c_str(), &st) != 0) return errno == ENOENT ? Status{Ok{}} : io_error(path, "lstat");
    if (S_ISDIR(st.st_mode) && is_mount_point(path))
        return Error{ErrorCode::Busy, path + ": a mount point: not deleted, nor anything under it"};
    return remove_entry(path, st.st_dev);
}

Result<std::string> mount_stored_image(const std::string& store, const std::string& reference,
                                       const std::string& rootfs, const std::string& overlay_dir) {
    auto hex = [](const std::string& digest) { return digest.substr(digest.find(':') + 1); };
    auto index = read_index(store + "/images.json");
    if (!index) return index.error();
    auto key = IndexKey::of(reference);
    if (!key) return key.error();
    const IndexEntry* entry = nullptr;
    for (const IndexEntry& e : index.value())
        if (entry == nullptr && key.value().matches(e)) entry = &e;
    if (entry == nullptr)
        return Error{ErrorCode::ImageNotFound, "image \"" + reference + "\" is not in the image store"};
    const std::string manifest_file = store + "/blobs/sha256/" + hex(entry->digest);
    auto manifest_text = read_file(manifest_file, kMaxImageJsonBytes);
    if (!manifest_text) return manifest_text.error();
    auto manifest = parse_image_manifest(manifest_text.value(), manifest_file);
    if (!manifest) return manifest.error();
    const std::string config_file = store + "/blobs/sha256/" + hex(manifest.value().config.digest);
    auto config_text = read_file(config_file, kMaxImageJsonBytes);
    if (!config_text) return config_text.error();
    auto config = parse_image_config(config_text.value(), config_file);
    if (!config) return config.error();
    // The layers' overlay forms, top first, each once (ImageStore::mount_rootfs).
    const std::string base = store + "/overlay/sha256";
    std::vector<std::string> lowers;
    std::set<std::string> seen;
    const auto& ids = config.value().diff_ids;
    for (auto it = ids.rbegin(); it != ids.rend(); ++it) {
        if (!seen.insert(*it).second) continue;
        struct stat st {};
        if (::stat((base + "/" + hex(*it)).c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
            return Error{ErrorCode::Fallback, "layer " + *it + " has no overlay form yet"};
        lowers.push_back(hex(*it));
    }
    if (lowers.empty()) return Error{ErrorCode::Fallback, "image " + entry->digest + " has no layer"};
    std::string over = overlay_dir;
    while (over.size() > 1 && over.back() == '/') over.pop_back();
    for (const std::string& d : {rootfs, over, over + "/upper", over + "/work"})
        if (::mkdir(d.c_str(), 0755) != 0 && errno != EEXIST) return io_error(d, "mkdir");
    auto mounted = mount_overlay(base, lowers, over + "/upper", over + "/work", rootfs);
    if (!mounted)
        return mounted.error().code == ErrorCode::TooLong
                   ? Error{ErrorCode::Fallback, mounted.error().message}
                   : mounted.error();
    return std::move(config_text).value();
}

}  // namespace daemonlet::platform
