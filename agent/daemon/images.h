// The node's images, one component (kubelet's image manager and image GC
// manager, pkg/kubelet/images): the import directory's archives imported by
// daemonlet-image (images.cpp), what they gave kept in the store across
// restarts (image_records.cpp), registry pulls with kubelet's per-image
// back-off (images.cpp), and image GC over the runc store (image_gc.cpp).
// It owns all of that state; the agent holds one Images, calls it at a
// container's start and a pod's end, and hears back through Images::Host.
//
//   Agent --ready_to_start / request_pull--> Images --Runtime::pull_image-->
//   Images --Host::start_pulled / wait_for_pull--> the waiting containers
//   import dir --DirWatch--> daemonlet-image import --> Host::images_arrived
//   GC timer, an import, a pull, pod_removed --> daemonlet-image list / remove
#pragma once

#include <uv.h>

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "core/config.h"
#include "core/image_gc.h"
#include "core/json.h"
#include "core/model.h"
#include "core/pod.h"
#include "core/pod_events.h"
#include "core/wall_clock.h"
#include "platform/clock.h"
#include "platform/dir_watch.h"
#include "platform/probe/prober.h"
#include "platform/runtime.h"
#include "store/store.h"

namespace daemonlet::agent {

// `daemonlet-image list` reads images.json only: seconds even under qemu.
inline constexpr std::int64_t kListDeadlineMs = 60 * 1000;

// `daemonlet-image pull`'s options from the runtime.registry* keys.
std::vector<std::string> registry_pull_options(const AgentConfig& config);
// `IMAGE_TOOL VERB --store stateDir/images`, and for runtime.type cri its
// containerd options: the import directory's archives go to the runtime's
// image store.
std::vector<std::string> image_tool_command(const std::string& image_tool, const AgentConfig& config,
                                            const std::string& verb);
// Whether daemonlet-image's output says the runtime's image store did not
// answer (containerd down): tried again later, not a bad archive.
bool is_runtime_unavailable(const std::string& output);
// Whether daemonlet-image's output says the disk is full (ENOSPC, EDQUOT):
// the import did not fit, nothing of it was kept (daemonlet-image's import
// is all or nothing); tried again later, not a bad archive.
bool is_disk_full(const std::string& output);
// The JSON objects of daemonlet-image's output, one per line; other lines
// are skipped.
std::vector<Json> json_object_lines(const std::string& output);
// The key image GC matches an image by: the normalised name, or the digest
// of a reference by digest; the text itself when it does not parse.
std::string image_key(const std::string& image);
// runtime.rootfs and the node: whether root filesystems are overlay
// mounts; logged once. Forced overlay on a node without: an error.
Result<bool> choose_rootfs(const AgentConfig& config, const std::string& store_dir,
                           const std::string& runtime_dir);

// A container of a pod, as Images names it to the agent.
struct ImageWaiter {
    std::string uid;
    std::size_t index = 0;
    bool operator<(const ImageWaiter& o) const { return std::tie(uid, index) < std::tie(o.uid, o.index); }
};

class Images {
  public:
    // What Images tells the agent, and asks it.
    class Host {
      public:
        virtual ~Host() = default;
        // An import brought images: the containers waiting for an image
        // (ErrImagePull, ErrImageNeverPull) start again now rather than at
        // the end of their back-off.
        virtual void images_arrived() = 0;
        // The container a finished pull was for, if it still waits for
        // `image` (not started since, its pod not gone or deleting): its
        // pod and status; null otherwise.
        struct Waiting {
            const PodRecord* pod = nullptr;
            ContainerStatus* status = nullptr;
            const Container* spec = nullptr;
        };
        virtual Waiting waiting_for_image(const ImageWaiter& w, const std::string& image) = 0;
        // Its pull is done (or, offline, the local image stands in): start it now.
        virtual void start_pulled(const ImageWaiter& w) = 0;
        // It waits `delay_ms` for its image (the image's pull back-off);
        // `save`: its status changed here, keep it.
        virtual void retry_image_after(const ImageWaiter& w, std::int64_t delay_ms, bool save) = 0;
        // Pulls changed containers: the reconcile looks again.
        virtual void pulls_changed() = 0;
        // An event for describe (and the API server).
        virtual void record_image_event(const PodRecord& pod, const char* type, const char* reason,
                                        const std::string& message) = 0;
        // An Event of the waiting container on its Pod (core/pod_events.h):
        // `make` builds it for the container.
        virtual void record_container_event(const ImageWaiter& w,
                                            const std::function<PodEvent(const ContainerRef&)>& make) {
            (void)w;
            (void)make;
        }
        // What image GC never removes (image_key of each).
        virtual std::set<std::string> images_in_use() = 0;
        // A pull or an import ended (for the metrics): `what` is "pull" or
        // "import".
        virtual void image_operation_done(const char* what, bool ok) {
            (void)what;
            (void)ok;
        }
    };

    // `image_tool`: the daemonlet-image binary. `config` is the agent's,
    // read at each use (a reload changes it in place).
    Images(uv_loop_t* loop, const AgentConfig& config, store::Store& store, platform::Runtime& runtime,
           const platform::Clock& clock, Host& host, std::string image_tool);
    Images(const Images&) = delete;
    Images& operator=(const Images&) = delete;
    ~Images();

    // runc and cri: the import directory and daemonlet-image's jobs. With
    // the exec runtime Images only answers ready_to_start.
    void open();
    // After the first reconcile: the images dropped in while the agent was
    // down are imported, the directory watched (every fileCheckFrequency
    // too), image GC's period started.
    void start();
    // Stops everything; an import in progress is killed (the next one
    // cleans up). Nothing calls back after.
    void close();
    // A step of the wall clock (core/wall_clock.h): the images' last uses
    // move with it, so that image GC does not take a clock set at boot for
    // decades of disuse.
    void rebase_wall_times(const WallStep& step);

    // Registry pulls, as imagePullPolicy says (kubelet's image_manager.go
    // EnsureImageExists): whether container `w` may start now, else a pull
    // was asked for (Always) and it waits for it (`cs` says how).
    bool ready_to_start(const ImageWaiter& w, const PodRecord& pod, const Container& spec,
                        ContainerStatus& cs);
    // The container waits for a pull of its image: the one in progress, a
    // new one, or, while the image backs off after a failure, a retry
    // (Host::retry_image_after).
    void request_pull(const ImageWaiter& w, const PodRecord& pod, const Container& spec, ContainerStatus& cs);
    // The runtime did not find `image` at a start: an archive whose image
    // GC removed it is imported again.
    void image_missing(const std::string& image) { reimport_collected(image); }
    // Pod `uid` is gone: what it held is forgotten, and its images may be
    // unused now (a rolling update's old one): image GC need not wait.
    void pod_removed(const std::string& uid);
    // Image GC now (kubelet checks every 5 minutes; see image_gc.cpp).
    void collect(const std::string& why) { run_image_gc(why); }
    // The import directory looked at again.
    void rescan() { import_images(); }

    // For tests and status: the back-off of `image`'s pulls (0: none failed).
    std::int64_t pull_backoff_ms(const std::string& image) const;
    bool pulling(const std::string& image) const;

    // The image store's bytes as image GC last listed them (the sum of its
    // images' sizes); -1 before the first listing.
    std::int64_t store_bytes() const { return store_bytes_; }
    // For `daemonlet status -o json` (images): the archive that did not fit
    // and why, until an import gets through ({} when none).
    Json status() const;

  private:
    // A registry pull of one image, shared by the containers waiting for
    // it, with kubelet's per-image back-off.
    struct ImagePull {
        bool running = false;
        std::int64_t started_mono_ms = 0;
        std::int64_t backoff_ms = 0;          // the wait after the last failure; 0: none failed
        std::int64_t retry_at_mono_ms = 0;    // no pull before this after a failure
        std::string error;                    // the last failure's message
        std::optional<ErrorCode> error_code;  // and its code (Unreachable, ...)
        bool warned_offline = false;          // the local image ran instead (logged once)
        std::set<ImageWaiter> waiters;
    };

    // images.cpp
    void import_images();
    void start_next_import();
    void on_imported(const std::string& path,
                     const std::optional<std::pair<std::int64_t, std::int64_t>>& version,
                     const platform::ProbeResult& r);
    void on_image_pulled(const std::string& image, const Status& result);
    // image_records.cpp
    void recall_imports();
    void on_images_listed(const platform::ProbeResult& r);
    void record_import(const std::string& path, std::pair<std::int64_t, std::int64_t> version, bool imported,
                       const Json& images);
    void forget_removed_imports(const std::map<std::string, std::pair<std::int64_t, std::int64_t>>& present);
    void save_import_records();
    void mark_collected_imports(const std::string& digest, const std::set<std::string>& names);
    void reimport_collected(const std::string& image);
    // image_gc.cpp
    void start_image_gc();
    void run_image_gc(const std::string& why);
    void on_image_gc_listed(const std::string& why, const platform::ProbeResult& r);
    void remove_next_image();
    void on_image_removed(const std::string& digest, const platform::ProbeResult& r);
    void finish_image_gc();

    uv_loop_t* loop_;
    const AgentConfig& config_;
    store::Store& store_;
    platform::Runtime& runtime_;
    const platform::Clock& clock_;
    Host& host_;
    std::string image_tool_;
    bool closed_ = false;

    // daemonlet-image runs through its own Prober (a command to completion
    // on the loop, with a deadline, killed on close). Null: not opened.
    std::unique_ptr<platform::Prober> jobs_;
    std::unique_ptr<platform::DirWatch> import_watch_;
    std::map<std::string, std::pair<std::int64_t, std::int64_t>>
        import_seen_;                         // archive -> (mtime ns, size) queued or tried
    std::deque<std::string> import_queue_;    // archives waiting for daemonlet-image
    std::optional<std::string> importing_;    // the archive daemonlet-image imports now
    Json import_records_ = Json::object();    // images.imports in the store: path -> version, outcome
    bool recalling_imports_ = false;          // daemonlet-image list runs
    bool imports_recalled_ = false;           // the records are checked against the store
    bool import_runtime_down_ = false;        // cri: containerd did not answer (said once)
    bool import_disk_full_ = false;           // an import did not fit (said once)
    std::string import_full_path_;            // the archive that waits for space ("" none, or removed)
    std::string import_full_why_;             // its archive and daemonlet-image's words
    std::map<std::string, ImagePull> pulls_;  // by the image as the pod spec names it
    std::set<ImageWaiter> pulled_;            // Always: this start's pull is done, the next start runs
    uv_timer_t* gc_timer_ = nullptr;          // image GC's period; freed in its close callback
    bool gc_running_ = false;                 // a list or a remove of image GC runs
    bool gc_again_ = false;                   // asked for while running: once more after
    std::vector<GcImage> gc_victims_;         // what this collection still removes, in order
    std::map<std::string, std::int64_t> last_used_;
    std::int64_t store_bytes_ = -1;  // normalised image -> wall s last seen in use
};

}  // namespace daemonlet::agent
