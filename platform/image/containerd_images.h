// Image archives into containerd (runtime.type cri), for daemonlet-image.
// CRI has no import call, and an air-gapped board has no registry to pull
// from: containerd's own CLI, `ctr images import`, puts the archive into the
// namespace the CRI plugin uses (k8s.io), unpacked for the CRI plugin's
// snapshotter. daemonlet-image first verifies the archive with our image
// store's checks (ImageStore::verify_archive), so that a damaged archive is
// refused with our error naming the file, member and reason before ctr
// sees it.
//
// Names: the CRI plugin resolves an image by its normalised reference
// (containerd 1.6 pkg/cri/server/helpers.go localResolve, through
// reference.ParseDockerRef: "busybox:1" is docker.io/library/busybox:1,
// "busybox" docker.io/library/busybox:latest). ctr normalises a
// docker-archive's RepoTags the same way, but keeps an OCI layout's
// io.containerd.image.name (or full org.opencontainers.image.ref.name) as
// written: such an image is tagged again under its normalised name, the
// one a pod's image finds.
#pragma once

#include <string>
#include <vector>

#include "core/result.h"
#include "platform/image/image_store.h"

namespace daemonlet::platform {

inline constexpr const char* kCriNamespace = "k8s.io";  // containerd's namespace for the CRI plugin

struct CtrOptions {
    std::string ctr = "ctr";    // found on PATH unless it holds a '/'
    std::string address;        // containerd's socket: a path, or unix://<path>
    std::string snapshotter;    // the CRI plugin's; empty: ctr's default (overlayfs)
    int connect_timeout_s = 5;  // a containerd that is down answers "unavailable" after this
};

struct CtrImage {
    std::string name;
    std::string digest;  // the image's target: its manifest, or index
};

// `ctr --address A --namespace k8s.io --connect-timeout Ns` followed by `args`.
std::vector<std::string> ctr_command(const CtrOptions& o, const std::vector<std::string>& args);

// The rows of `ctr images ls` (a header, then REF TYPE DIGEST SIZE
// PLATFORMS LABELS separated by blanks; names and digests hold none).
// Errors: a header that is not ctr's, a row without a sha256 digest.
Result<std::vector<CtrImage>> parse_ctr_images(const std::string& output);

// The error of a failed ctr run: code "unavailable" when containerd did not
// answer (ctr's "failed to dial"; the caller tries again later), else
// "ctr_failed"; the message quotes `what` and ctr's own.
Error ctr_error(const std::string& what, int exit_code, const std::string& stderr_text);

// Every image in containerd's k8s.io namespace.
Result<std::vector<CtrImage>> list_containerd_images(const CtrOptions& o);

// Imports `archive`, whose images verify_archive found (`verified`), into
// containerd (this machine's platform, unpacked for o.snapshotter), tags
// each name ctr kept unnormalised, and checks that every name is then among
// containerd's images. Returns each verified name with containerd's digest.
// `deadline_ms` bounds the import.
Result<std::vector<CtrImage>> import_into_containerd(const CtrOptions& o, const std::string& archive,
                                                     const std::vector<ImportedImage>& verified,
                                                     int deadline_ms);

}  // namespace daemonlet::platform
