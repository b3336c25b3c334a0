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
// - the API server's DaemonSets as last received (the daemonsets table,
//   source "api"): an offline boot runs them.
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

    // Reads the manifest directory: each file again only when its size or
    // mtime changed, acted on only when its content changed. True when the
    // DaemonSets it offers changed (a file went, or loaded anew).
    bool rescan(const std::string& dir);

    // What the API server's reflector for `scope` sent. True when a
    // DaemonSet changed, came or went.
    bool apply_api(const std::string& scope, ReflectorChanges&& changes);
    // After a configuration change: only what `api` still follows is kept.
    void keep_followed(const ApiServerConfig& api);
    const std::map<std::string, ApiObject>& api() const { return api_; }
    // The ConfigMaps and Secrets pods may reference (issue 13 §2): filled
    // from the manifest directory by the rescan (the `kinds` work); the
    // Agent's on_config_objects_changed follows a change.
    const ConfigObjects& config_objects() const { return config_objects_; }

    // The desired set by "namespace/name" (core merge_sources); each
    // conflict is logged once (and reported through api_overridden).
    std::map<std::string, SourcedDaemonSet> merge(const std::string& node_name);

    // The file's own DaemonSet ns/name, as last loaded (rollout undo).
    std::shared_ptr<const DaemonSet> file_daemonset(const std::string& path, const std::string& ns,
                                                    const std::string& name) const;

    // For `daemonlet status`: the files and the broken ones' errors.
    Json status() const;

  private:
    struct FileState {
        std::int64_t mtime_ns = -1;  // -1: not read by this process yet
        std::int64_t size = -1;
        std::uint64_t content_hash = 0;
        // The last version that loaded without errors, shared with the
        // desired set: a parsed DaemonSet is about 8 KiB for a 600-byte file.
        std::vector<std::shared_ptr<const DaemonSet>> good;
        std::string good_text;            // its text, as stored
        std::vector<std::string> errors;  // of the current version; empty when it is the good one
    };
    // A version that loaded without errors: its DaemonSets (a Node is ignored, said once).
    static std::vector<std::shared_ptr<const DaemonSet>> daemonsets_of(LoadedManifest&& m,
                                                                       const std::string& path);
    // Writes the file's state when it changed (compare-then-write).
    void save(const std::string& path, const FileState& fs);
    void forget(const std::string& path);

    store::Store& store_;
    const platform::Clock& clock_;
    ConfigObjects config_objects_;
    ApiOverridden api_overridden_;
    std::map<std::string, FileState> files_;  // by path: the first file wins a conflict
    std::map<std::string, ApiObject> api_;    // by "namespace/name"
    std::set<std::string> reported_conflicts_;
    std::string list_error_;  // the manifest directory's last listing error (logged once)
};

}  // namespace daemonlet::agent
