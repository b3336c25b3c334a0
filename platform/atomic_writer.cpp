// AtomicWriter.Write after pkg/volume/util/atomic_writer.go (Kubernetes 1.28
// to 1.30); the steps are numbered as upstream numbers them.
#include "platform/atomic_writer.h"

#include <fcntl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <cerrno>
#include <ctime>
#include <filesystem>
#include <set>
#include <vector>

#include "core/io_error.h"
#include "platform/fd.h"
#include "platform/file.h"
#include "platform/volume_setup.h"

namespace daemonlet::platform {
namespace {

namespace fs = std::filesystem;

constexpr const char* kDataDirName = "..data";
constexpr const char* kNewDataDirName = "..data_tmp";
constexpr std::size_t kMaxFileBytes = 16u << 20;

// validatePath: relative, no "..", not starting with "..", not too long.
Status validate_path(const std::string& p) {
    auto bad = [&](const char* why) {
        return Error{ErrorCode::Invalid, "volume payload path \"" + p + "\": " + why};
    };
    if (p.empty()) return Ok{};
    if (p.size() > 4096) return bad("must be less than or equal to 4096 characters");
    if (p.front() == '/') return bad("must be relative path");
    if (p.rfind("..", 0) == 0) return bad("must not start with '..'");
    std::size_t i = 0;
    while (i <= p.size()) {
        std::size_t j = p.find('/', i);
        if (j == std::string::npos) j = p.size();
        if (p.compare(i, j - i, "..") == 0) return bad("must not contain '..'");
        i = j + 1;
    }
    return Ok{};
}

// The first element of a relative path: the user-visible name.
std::string top_level(const std::string& p) { return p.substr(0, p.find('/')); }

// The files below `dir` (relative paths), regular files only.
std::set<std::string> files_below(const std::string& dir) {
    std::set<std::string> out;
    std::error_code ec;
    for (fs::recursive_directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec))
        if (it->is_regular_file(ec)) out.insert(fs::relative(it->path(), dir, ec).string());
    return out;
}

// Owners (FsUser, fsGroup) are set by an agent that may set them: root, as
// the kubelet runs. An unprivileged agent's containers run as its own user,
// which owns the files already; a chown would fail and refuse the pod.
bool may_own() { return ::geteuid() == 0; }

// shouldWritePayload: a file missing or different (content, or mode and
// owners: upstream compares content only) in the current data dir.
bool should_write(const VolumePayload& payload, const std::string& old_dir,
                  std::optional<std::int64_t> fs_group) {
    if (old_dir.empty()) return true;
    for (const auto& [path, f] : payload) {
        std::string full = old_dir + "/" + path;
        struct stat st {};
        if (::lstat(full.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return true;
        // With a group: its mode, or the payload's where the chmod was
        // refused; the group itself is set_volume_ownership's to mend (a
        // refused lchown is no reason to write the payload again).
        const auto on_disk = static_cast<std::uint32_t>(st.st_mode & 07777);
        const auto asked = static_cast<std::uint32_t>(f.mode);
        if (on_disk != asked && (!fs_group || on_disk != volume_ownership_mode(asked, false, true)))
            return true;
        if (f.fs_user && may_own() && static_cast<std::int64_t>(st.st_uid) != *f.fs_user) return true;
        auto content = read_file(full, kMaxFileBytes);
        if (!content || content.value() != f.data) return true;
    }
    return false;
}

Status write_file(const std::string& path, const FileProjection& f) {
    Fd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600));
    if (fd.get() < 0) return io_error(path, "open");
    std::size_t done = 0;
    while (done < f.data.size()) {
        ssize_t n = ::write(fd.get(), f.data.data() + done, f.data.size() - done);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) return io_error(path, "write");
        done += static_cast<std::size_t>(n);
    }
    // The mode as asked, whatever the umask (upstream's os.Chmod).
    if (::fchmod(fd.get(), static_cast<mode_t>(f.mode)) != 0) return io_error(path, "chmod");
    // FsUser: the file is that user's (upstream's os.Lchown(path, fsUser, -1)).
    if (f.fs_user && may_own() &&
        ::fchown(fd.get(), static_cast<uid_t>(*f.fs_user), static_cast<gid_t>(-1)) != 0)
        return io_error(path, "chown");
    return Ok{};
}

// (5) newTimestampDir: "..YYYY_MM_DD_HH_MM_SS.XXXXXX", mode 0755.
Result<std::string> new_timestamp_dir(const std::string& target) {
    std::time_t now = std::time(nullptr);
    std::tm tm{};
    ::gmtime_r(&now, &tm);
    char stamp[32];
    std::strftime(stamp, sizeof stamp, "..%Y_%m_%d_%H_%M_%S.", &tm);
    std::string templ = target + "/" + stamp + "XXXXXX";
    std::vector<char> buf(templ.begin(), templ.end());
    buf.push_back('\0');
    if (!::mkdtemp(buf.data())) return io_error(templ, "mkdtemp");
    std::string dir(buf.data());
    if (::chmod(dir.c_str(), 0755) != 0) return io_error(dir, "chmod");
    return dir;
}

}  // namespace

Result<bool> atomic_write(const std::string& target_dir, const VolumePayload& payload,
                          std::optional<std::int64_t> fs_group, Status* ownership) {
    if (!may_own()) fs_group.reset();
    Status owned = Ok{};
    auto own = [&](const std::string& dir) {
        auto st = set_volume_ownership(dir, *fs_group, true);
        if (owned.ok() && !st.ok()) owned = std::move(st);
    };
    // (1) validatePayload.
    for (const auto& [path, f] : payload) {
        auto ok = validate_path(path);
        if (!ok) return ok.error();
        if (path.empty()) return Error{ErrorCode::Invalid, "volume payload path \"\": must not be empty"};
    }
    // (2) the current data dir, if any.
    std::string data_link = target_dir + "/" + kDataDirName;
    std::string old_name;
    {
        std::error_code ec;
        fs::path target = fs::read_symlink(data_link, ec);
        if (!ec) old_name = target.string();
    }
    std::string old_dir = old_name.empty() ? "" : target_dir + "/" + old_name;
    // (3) pathsToRemove: what the old dir has that the payload does not;
    // the top-level names among them are the visible links to remove.
    std::set<std::string> stale, dropped;
    if (!old_dir.empty()) {
        std::set<std::string> wanted_top;
        for (const auto& [path, f] : payload) wanted_top.insert(top_level(path));
        for (const auto& p : files_below(old_dir))
            if (!payload.count(p)) stale.insert(p);
        for (const auto& p : stale)
            if (!wanted_top.count(top_level(p))) dropped.insert(top_level(p));
    }
    // (4) shouldWritePayload.
    bool write = should_write(payload, old_dir, fs_group) || !stale.empty();
    if (!old_dir.empty() && !write) {
        // Up to date; still make sure the visible links exist (upstream #121472).
        old_dir.clear();
    }
    if (write) {
        // (5) (6) the new dir and the payload in it.
        auto ts = new_timestamp_dir(target_dir);
        if (!ts) return ts.error();
        const std::string& ts_dir = ts.value();
        for (const auto& [path, f] : payload) {
            std::string full = ts_dir + "/" + path;
            auto parent = fs::path(full).parent_path().string();
            if (parent != ts_dir) {
                auto made = make_dirs(parent, 0755);
                if (!made) return made.error();
            }
            auto w = write_file(full, f);
            if (!w) return w.error();
        }
        // (7) setPerms, the plugins' SetVolumeOwnership: on the new payload
        // before it is seen (upstream walks the whole volume here).
        if (fs_group) own(ts_dir);
        // (8) ..data_tmp -> the new dir (relative), (9) renamed over ..data.
        std::string tmp_link = target_dir + "/" + kNewDataDirName;
        ::unlink(tmp_link.c_str());
        std::string ts_name = fs::path(ts_dir).filename().string();
        if (::symlink(ts_name.c_str(), tmp_link.c_str()) != 0) return io_error(tmp_link, "symlink");
        if (::rename(tmp_link.c_str(), data_link.c_str()) != 0) return io_error(data_link, "rename");
    }
    // (10) createUserVisibleFiles: <name> -> ..data/<name> for each top-level entry.
    for (const auto& [path, f] : payload) {
        std::string name = top_level(path);
        std::string visible = target_dir + "/" + name;
        struct stat st {};
        if (::lstat(visible.c_str(), &st) == 0) continue;
        std::string to = std::string(kDataDirName) + "/" + name;
        if (::symlink(to.c_str(), visible.c_str()) != 0) return io_error(visible, "symlink");
    }
    // (11) removeUserVisiblePaths.
    for (const auto& name : dropped) {
        std::string visible = target_dir + "/" + name;
        if (::unlink(visible.c_str()) != 0 && errno != ENOENT) return io_error(visible, "unlink");
    }
    // (12) the old dir.
    if (write && !old_dir.empty()) {
        std::error_code ec;
        fs::remove_all(old_dir, ec);
        if (ec) return io_error(old_dir, "remove", ec.value());
    }
    // SetVolumeOwnership's rest: the volume's directory and its links, the
    // new ones too (what is already the group's is left alone).
    if (fs_group) own(target_dir);
    if (ownership) *ownership = std::move(owned);
    return write;
}

namespace {

bool is_tmpfs(const std::string& dir) {
    struct statfs sf {};
    constexpr long kTmpfsMagic = 0x01021994;  // linux/magic.h TMPFS_MAGIC
    return ::statfs(dir.c_str(), &sf) == 0 && static_cast<long>(sf.f_type) == kTmpfsMagic;
}

// A mount point: on another device than its parent.
bool is_mount_point(const std::string& dir) {
    struct stat self {
    }, parent{};
    if (::stat(dir.c_str(), &self) != 0 || ::stat((dir + "/..").c_str(), &parent) != 0) return false;
    return self.st_dev != parent.st_dev;
}

}  // namespace

Result<bool> make_secret_dir(const std::string& dir) {
    if (auto s = make_dirs(dir, 0700); !s) return s.error();
    // Already a tmpfs: mounted by an agent before a restart, or a state
    // directory that lives in memory anyway.
    if (is_tmpfs(dir)) return true;
    if (::mount("tmpfs", dir.c_str(), "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, "mode=0755") == 0)
        return true;
    if (errno != EPERM && errno != EACCES) return io_error(dir, "mount tmpfs");
    if (::chmod(dir.c_str(), 0700) != 0) return io_error(dir, "chmod");
    return false;
}

Status remove_volume_dir(const std::string& dir) {
    // Only our own mount: a state directory that is itself on a tmpfs
    // (/run, a test's /tmp) has nothing mounted on the volume.
    if (is_mount_point(dir) && ::umount2(dir.c_str(), MNT_DETACH) != 0) return io_error(dir, "umount");
    std::error_code ec;
    fs::remove_all(dir, ec);
    if (ec) return io_error(dir, "remove", ec.value());
    return Ok{};
}

}  // namespace daemonlet::platform
