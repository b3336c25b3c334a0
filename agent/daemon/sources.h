// The sources of DaemonSets, as the kubelet's pkg/kubelet/config mux: the
// manifest directory (one input per file) and the API server, each input's
// state owned here, merged in one place by core's merge_sources.
//
// Each input's state is in the store as well as here, so that a restart, a
// reboot or a rebuild of this object answers as the running agent did:
// - a file's last good version, and whether the file is broken now (and
//   why): a file that stops parsing keeps its last good version in force,
//   across restarts too;
// - a file gone: its row is deleted, whether inotify saw it go or the next
//   start found it missing;
// - the API server's DaemonSets as last received, each in its own row
//   (api_daemonsets) whether or not a file overrides it: an offline boot
//   runs them, and the cluster's version of a DaemonSet whose overriding
//   file went while the board was offline (the kubelet's config mux keeps
//   each source's pods apart the same way).
//
// The files' ConfigMaps and Secrets (data for pods) come from each file's
// last good version, the one kept in the store: a restart or an offline
// reboot offers the same ones before any file is read again. Other kinds
// (Namespace, RBAC, CRDs, ...) are logged once per file version and not
// used; v1 Pods are the node's static pods (static_pods()), from each file's
// last good version as the DaemonSets are.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "core/config.h"
#include "core/json.h"
#include "core/manifest.h"
#include "core/model.h"
#include "core/reflector.h"
#include "core/source_merge.h"
#include "platform/clock.h"
#include "store/store.h"

namespace daemonlet::agent {

// An API object's metadata.<key> when it is a string, else "".
std::string meta_string(const Json& o, const char* key);

// A DaemonSet in force by the merge, and where it came from.
struct SourcedDaemonSet {
    std::shared_ptr<const DaemonSet> object;
    DaemonSetSource source;
};

// A DaemonSet from the API server as last received.
struct ApiObject {
    std::shared_ptr<const DaemonSet> object;
    std::string normalized;  // the object without status and bookkeeping, to tell real changes
    std::string uid;
};

class Sources {
  public:
    // A file's DaemonSet overrides the API server's `api` (reported once per
    // pairing): the agent sends it to the cluster as an Event.
    using ApiOverridden = std::function<void(const DaemonSet& api, const std::string& message)>;

    Sources(store::Store& store, const platform::Clock& clock, ApiOverridden api_overridden);

    // At start, before the first merge: each file's state as stored (its last
    // good version, broken or not) and, with the API server configured, the
    // DaemonSets it last sent that `api` still follows.
    void load(const ApiServerConfig& api);

    // What a rescan changed.
    struct Changes {
        bool daemonsets = false;      // a file went, or loaded anew
        bool config_objects = false;  // the merged ConfigMaps and Secrets differ
    };
    // Reads the manifest directory: each file again only when its size or
    // mtime changed, acted on only when its content changed.
    Changes rescan(const std::string& dir);

    // The files' ConfigMaps and Secrets, merged: the first file by path wins
    // a namespace/name both define (said once per pairing).
    const ConfigObjects& config_objects() const { return config_objects_; }

    // What the API server's reflector for `scope` sent. True when a
    // DaemonSet changed, came or went.
    bool apply_api(const std::string& scope, ReflectorChanges&& changes);
    // After a configuration change: only what `api` still follows is kept.
    void keep_followed(const ApiServerConfig& api);
    const std::map<std::string, ApiObject>& api() const { return api_; }

    // The desired set by "namespace/name" (core merge_sources); each
    // conflict is logged once (and reported through api_overridden).
    std::map<std::string, SourcedDaemonSet> merge(const std::string& node_name);

    // The files' v1 Pods (static pods), as each file's last good version
    // has them, with their file, in path order.
    struct FilePod {
        std::shared_ptr<const Pod> pod;  // as written, validated and defaulted
        std::string path;
    };
    std::vector<FilePod> static_pods() const;

    // The file's own DaemonSet ns/name, as last loaded (rollout undo).
    std::shared_ptr<const DaemonSet> file_daemonset(const std::string& path, const std::string& ns,
                                                    const std::string& name) const;

    // For `daemonlet status`: the files and the broken ones' errors.
    Json status() const;
    // For `daemonlet status`: the ConfigMaps and Secrets by namespace/name,
    // with their key counts and files (never a value).
    Json config_status() const;

  private:
    struct FileState {
        std::int64_t mtime_ns = -1;  // -1: not read by this process yet
        std::int64_t size = -1;
        std::uint64_t content_hash = 0;
        // The last version that loaded without errors, shared with the
        // desired set: a parsed DaemonSet is about 8 KiB for a 600-byte file.
        std::vector<std::shared_ptr<const DaemonSet>> good;
        std::vector<std::shared_ptr<const Pod>> pods;  // its static pods
        ConfigObjects config;                          // its ConfigMaps and Secrets
        std::string good_text;                         // its text, as stored
        std::vector<std::string> errors;  // of the current version; empty when it is the good one
    };
    // A good version of the file is in force: its DaemonSets, static pods,
    // ConfigMaps or Secrets.
    static bool in_force(const FileState& fs) {
        return !fs.good.empty() || !fs.pods.empty() || !fs.config.config_maps.empty() ||
               !fs.config.secrets.empty();
    }
    // Takes a version that loaded without errors: its DaemonSets and its
    // ConfigMaps and Secrets and its static pods; what is not used (a Node,
    // other kinds) is said once, here.
    static void take_version(FileState& fs, LoadedManifest&& m, const std::string& path);
    // Merges the files' ConfigMaps and Secrets; true when they changed.
    bool merge_config_objects();
    // Writes the file's state when it changed (compare-then-write).
    void save(const std::string& path, FileState& fs);
    // Writes the API server's DaemonSets of these names as api_ has them
    // (a row deleted when it has none), in one transaction.
    void save_api(const std::set<std::pair<std::string, std::string>>& names);
    void forget(const std::string& path);

    store::Store& store_;
    const platform::Clock& clock_;
    ApiOverridden api_overridden_;
    std::map<std::string, FileState> files_;  // by path: the first file wins a conflict
    std::map<std::string, ApiObject> api_;    // by "namespace/name"
    std::set<std::string> reported_conflicts_;
    std::string list_error_;        // the manifest directory's last listing error (logged once)
    ConfigObjects config_objects_;  // merged
    std::map<std::pair<std::string, std::string>, std::string>
        config_from_;  // "ConfigMap"/"Secret" + ns/name -> path
};

}  // namespace daemonlet::agent
