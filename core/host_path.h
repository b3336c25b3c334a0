// hostPath volumes' `type`, as the kubelet's hostPath plugin checks it
// before a pod's containers start (pkg/volume/hostpath/host_path.go
// checkType / checkTypeInternal). Pure: the caller says what is at the
// path now (platform/host_path.cpp stats it) and does what this answers.
//
//   ""                  no check (the API's default)
//   DirectoryOrCreate   a missing path is made a directory, mode 0755
//                       (hostutil MakeDir: os.MkdirAll(path, 0755)); an
//                       existing one must be a directory
//   Directory           must be a directory
//   FileOrCreate        a missing path is made an empty file, mode 0644
//                       (hostutil makeFile: os.OpenFile(path, O_CREATE,
//                       0644)); its parent is not made: a missing one
//                       fails the mount and the container waits. An
//                       existing path must be a regular file
//   File                must be a regular file
//   Socket, CharDevice, BlockDevice   must be one
// A path that must exist and is missing fails its check as a mismatch
// does, with the kubelet's message ("hostPath type check failed: /x is
// not a directory"), error code "volume_setup": the container waits.
#pragma once

#include <string>

#include "core/result.h"

namespace daemonlet {

enum class FileKind { Missing, Directory, File, Socket, CharDevice, BlockDevice, Other };
enum class HostPathAction { None, MakeDirectory, MakeFile };

Result<HostPathAction> host_path_check(const std::string& type, const std::string& path, FileKind kind);

}  // namespace daemonlet
