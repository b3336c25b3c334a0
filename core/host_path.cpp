// hostPath type checks: see host_path.h.
#include "core/host_path.h"

namespace daemonlet {
namespace {

Error mismatch(const std::string& path, const char* what) {
    return Error{ErrorCode::VolumeSetup, "hostPath type check failed: " + path + " is not " + what};
}

}  // namespace

Result<HostPathAction> host_path_check(const std::string& type, const std::string& path, FileKind kind) {
    if (type.empty()) return HostPathAction::None;
    if (type == "DirectoryOrCreate" || type == "Directory") {
        if (kind == FileKind::Missing && type == "DirectoryOrCreate") return HostPathAction::MakeDirectory;
        if (kind != FileKind::Directory) return mismatch(path, "a directory");
        return HostPathAction::None;
    }
    if (type == "FileOrCreate" || type == "File") {
        if (kind == FileKind::Missing && type == "FileOrCreate") return HostPathAction::MakeFile;
        if (kind != FileKind::File) return mismatch(path, "a file");
        return HostPathAction::None;
    }
    if (type == "Socket") {
        if (kind != FileKind::Socket) return mismatch(path, "a socket file");
        return HostPathAction::None;
    }
    if (type == "CharDevice") {
        if (kind != FileKind::CharDevice) return mismatch(path, "a character device");
        return HostPathAction::None;
    }
    if (type == "BlockDevice") {
        if (kind != FileKind::BlockDevice) return mismatch(path, "a block device");
        return HostPathAction::None;
    }
    return Error{ErrorCode::VolumeSetup, type + " is an invalid volume type"};
}

}  // namespace daemonlet
