// The files the kubelet writes into configMap, secret, downwardAPI and
// projected volumes: configmap.MakePayload, secret.MakePayload,
// downwardapi.CollectData and the projected plugin's collectData
// (pkg/volume/{configmap,secret,downwardapi,projected}, Kubernetes 1.28 to
// 1.30). The atomic writer (platform/fs/atomic_writer.h) puts a payload on
// disk.
//
// Pure: the pod's facts and its namespace's ConfigMaps and Secrets come in
// (core/pod_env.h PodFacts). An error carries the kubelet's message
// (`configmap "x" not found`, `configmap references non-existent config key:
// k`), never a Secret's value.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "core/model.h"
#include "core/pod_env.h"
#include "core/result.h"

namespace daemonlet {

// volumeutil.FileProjection.
struct FileProjection {
    std::string data;
    std::int32_t mode = 0644;
    // The file's owner, else the agent's (root): FsUser, set for the token.
    std::optional<std::int64_t> fs_user = std::nullopt;
    bool operator==(const FileProjection&) const = default;
};

// Relative path (as the volume's items name it) -> file.
using VolumePayload = std::map<std::string, FileProjection>;

// The API server's default for defaultMode of all four sources
// (SecretVolumeSourceDefaultMode and its siblings).
inline constexpr std::int32_t kDefaultVolumeFileMode = 0644;

// True for the sources whose content the agent writes: configMap, secret,
// downwardAPI, projected.
bool has_payload(const Volume& v);

// True when the volume holds secret data (a secret volume, or a projected
// one with a secret or serviceAccountToken source): it goes on tmpfs.
bool holds_secrets(const Volume& v);

// The volume's payload. A missing optional ConfigMap or Secret projects
// nothing (an empty volume, as upstream); a missing non-optional one or a
// missing item key without optional is an error. A serviceAccountToken
// source projects the token pod.tokens has (its error when it has none:
// the container waits), nothing without a cluster (pod.tokens null); when
// every container runs as one runAsUser (fs_user_from), the token is that
// user's, mode 0600 (projected.go collectData); with the pod's fsGroup it
// is 0600 too, and volume_ownership_mode then makes it 0640, the group's.
Result<VolumePayload> volume_payload(const Volume& v, const PodFacts& pod);

// pkg/volume/volume_linux.go SetVolumeOwnership (changeFilePermission), which
// every volume plugin with a pod-level fsGroup calls on its directory after
// SetUpAt wrote it: each file and directory, the volume's own directory
// too, becomes the fsGroup's (os.Lchown: symbolic links too) and gets
// `mode | 0660`, or `mode | 0440` for a read-only volume (configMap, secret,
// downwardAPI, projected: GetAttributes ReadOnly); a directory also gets
// 0110 and setgid. A symbolic link's mode is left alone (chmod follows it).
// The agent's one place for this rule: the atomic writer's config volumes
// and the runtimes' emptyDirs (platform/volume_setup.h set_volume_ownership).
std::uint32_t volume_ownership_mode(std::uint32_t mode, bool is_dir, bool read_only);

}  // namespace daemonlet
