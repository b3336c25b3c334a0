#include "platform/volume_setup.h"

#include "core/io_error.h"

#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/types.h>

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <system_error>

#include "core/host_path.h"
#include "core/volume_payload.h"

namespace daemonlet::platform {
namespace {

namespace fs = std::filesystem;

constexpr long kTmpfsMagic = 0x01021994;

FileKind kind_of(const std::string& path) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) return FileKind::Missing;
    switch (st.st_mode & S_IFMT) {
    case S_IFDIR: return FileKind::Directory;
    case S_IFREG: return FileKind::File;
    case S_IFSOCK: return FileKind::Socket;
    case S_IFCHR: return FileKind::CharDevice;
    case S_IFBLK: return FileKind::BlockDevice;
    default: return FileKind::Other;
    }
}

// Go's syscall.Errno text: strerror's, its first letter in lower case.
std::string go_strerror(int err) {
    std::string s = std::strerror(err);
    if (!s.empty() && s[0] >= 'A' && s[0] <= 'Z') s[0] = static_cast<char>(s[0] - 'A' + 'a');
    return s;
}

Error setup_failed(const Volume& v, const std::string& why) {
    return Error{ErrorCode::VolumeSetup, "MountVolume.SetUp failed for volume \"" + v.name + "\" : " + why};
}

Status make_dir_mode(const std::string& path, mode_t mode) {
    std::error_code ec;
    fs::create_directories(path, ec);
    if (ec) return Error{ErrorCode::Io, path + ": " + ec.message()};
    if (::chmod(path.c_str(), mode) != 0)
        return Error{ErrorCode::Io, path + ": chmod: " + std::strerror(errno)};
    return Ok{};
}

bool is_tmpfs_mount(const std::string& dir) {
    struct statfs fs_info {};
    if (::statfs(dir.c_str(), &fs_info) != 0 || fs_info.f_type != kTmpfsMagic) return false;
    // A tmpfs parent (/run) is no mount of ours: compare with the parent's device.
    struct stat here {
    }, parent{};
    if (::stat(dir.c_str(), &here) != 0 || ::stat((dir + "/..").c_str(), &parent) != 0) return false;
    return here.st_dev != parent.st_dev;
}

Status mount_memory_medium(const Volume& v, const std::string& dir, std::optional<std::int64_t> size) {
    if (v.empty_dir_medium != "Memory" || is_tmpfs_mount(dir)) return Ok{};
    std::string options = "mode=1777";
    if (size && *size > 0) options += ",size=" + std::to_string(*size);
    if (::mount("tmpfs", dir.c_str(), "tmpfs", MS_NOSUID | MS_NODEV, options.c_str()) != 0)
        return Error{ErrorCode::Io, "emptyDir \"" + v.name + "\" (medium Memory): mount tmpfs on " + dir +
                                        ": " + std::strerror(errno)};
    return Ok{};
}

}  // namespace

Status set_volume_ownership(const std::string& dir, std::int64_t fs_group, bool read_only) {
    const auto gid = static_cast<gid_t>(fs_group);
    Status first = Ok{};
    auto refused = [&first](const std::string& path, const char* call) {
        if (first.ok()) first = io_error(path, call);
    };
    // What is already right is not written again: flash wears out.
    auto own = [gid, read_only, &refused](const std::string& path) {
        struct stat st {};
        if (::lstat(path.c_str(), &st) != 0) return;
        // Given the group now: lchown cleared setuid and setgid, which the
        // chmod puts back (the mode as read before it). Refused: the mode
        // is still set, as the kubelet does (changeFilePermission), but
        // written only when it is not yet, not at every pass over the volume.
        bool chowned = false;
        if (st.st_gid != gid) {
            chowned = ::lchown(path.c_str(), static_cast<uid_t>(-1), gid) == 0;
            if (!chowned) refused(path, "lchown");
        }
        if (S_ISLNK(st.st_mode)) return;
        const mode_t was = st.st_mode & 07777;
        const auto mode = static_cast<mode_t>(volume_ownership_mode(was, S_ISDIR(st.st_mode), read_only));
        if ((chowned || mode != was) && ::chmod(path.c_str(), mode) != 0) refused(path, "chmod");
    };
    own(dir);
    std::error_code ec;
    for (fs::recursive_directory_iterator it(dir, fs::directory_options::none, ec);
         !ec && it != fs::recursive_directory_iterator(); it.increment(ec))
        own(it->path().string());
    return first;
}

Status set_up_host_path(const Volume& v) {
    const FileKind kind = kind_of(v.host_path);
    auto action = host_path_check(v.host_path_type, v.host_path, kind);
    if (!action) return setup_failed(v, action.error().message);
    // No type and nothing there: the kubelet checks nothing, and the
    // runtime under it makes the missing bind-mount source a directory
    // (containerd pkg/cri/opts/spec_linux.go WithMounts: os.MkdirAll(src,
    // 0755)); under runc the agent is that runtime, and flannel's
    // /run/flannel, typeless, would otherwise never start.
    if (v.host_path_type.empty() && kind == FileKind::Missing) action = HostPathAction::MakeDirectory;
    if (action.value() == HostPathAction::MakeDirectory) {
        // MakeDir: os.MkdirAll(path, 0755). The unit's UMask=0077 would
        // leave it 0700, closed to a container's non-root user, so the
        // directory is given 0755 (through its descriptor: never a
        // symlink's target put there meanwhile).
        std::error_code ec;
        fs::create_directories(v.host_path, ec);
        if (ec) return setup_failed(v, "mkdir " + v.host_path + ": " + ec.message());
        const int fd = ::open(v.host_path.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0) return setup_failed(v, "open " + v.host_path + ": " + std::strerror(errno));
        (void)::fchmod(fd, 0755);
        ::close(fd);
    } else if (action.value() == HostPathAction::MakeFile) {
        // makeFile: os.OpenFile(path, O_CREATE, 0644), no parent made; a
        // missing parent fails the mount as upstream ("open /x/y: no such
        // file or directory", Go's words) and the container waits.
        // Made here (O_EXCL), it is given 0644 whatever the unit's UMask,
        // as the directory above; one made meanwhile is left as it is.
        int fd = ::open(v.host_path.c_str(), O_CREAT | O_EXCL | O_WRONLY | O_NOFOLLOW | O_CLOEXEC, 0644);
        if (fd >= 0) {
            (void)::fchmod(fd, 0644);
        } else if (errno == EEXIST) {
            // Something is there that stat did not see: a dangling symlink,
            // or a path made meanwhile. OpenFile(O_CREATE) follows the link
            // and makes its target (as the umask leaves it); a directory
            // there fails ("is a directory"), as upstream's open does; a
            // FIFO put there meanwhile does not hold the loop (O_NONBLOCK).
            fd = ::open(v.host_path.c_str(), O_CREAT | O_RDONLY | O_NONBLOCK | O_CLOEXEC, 0644);
        }
        if (fd < 0) return setup_failed(v, "open " + v.host_path + ": " + go_strerror(errno));
        ::close(fd);
    }
    return Ok{};
}

std::optional<std::int64_t> tmpfs_size_of(const std::map<std::string, std::int64_t>& sizes,
                                          const std::string& name) {
    auto it = sizes.find(name);
    if (it == sizes.end()) return std::nullopt;
    return it->second;
}

Status set_up_empty_dir(const Volume& v, const std::string& dir, std::optional<std::int64_t> fs_group,
                        std::optional<std::int64_t> tmpfs_size) {
    if (auto s = make_dir_mode(dir, 0777); !s) return s;
    if (auto s = mount_memory_medium(v, dir, tmpfs_size); !s) return s;
    // Once, as the emptyDir plugin's SetUpAt (a ready marker): while it is
    // still empty. Not at a container's restart, when the pod's other
    // containers could swap a file of theirs for a link to a host file
    // under the walk.
    std::error_code ec;
    // A refusal leaves the emptyDir as it is (upstream logs and goes on);
    // nothing rewrites it.
    if (fs_group && fs::is_empty(dir, ec) && !ec) (void)set_volume_ownership(dir, *fs_group, false);
    return Ok{};
}

void tear_down_empty_dirs(const std::string& dir) {
    std::error_code ec;
    for (fs::directory_iterator it(dir, ec); !ec && it != fs::directory_iterator(); it.increment(ec)) {
        const std::string path = it->path().string();
        if (is_tmpfs_mount(path)) ::umount2(path.c_str(), MNT_DETACH);
    }
}

}  // namespace daemonlet::platform
