// `daemonlet run`: the agent. One libuv loop, no threads. Wiring only: the
// decisions are core's (node_should_run_daemon_pod, plan_reconcile,
// next_restart_delay), persistence is store's, processes are the runtime's.
//
//   manifest dir --DirWatch--> Sources (sources.h) <-- API server (cluster.cpp)
//        --> merged (core merge_sources) --> desired DaemonSets, store (desired.cpp)
//        --> reconcile (pods.cpp): plan_reconcile --> runtime start / stop
//   runtime exit --> container restart with crash-loop backoff
//   probe timers (Probes, prober_manager.h) --> started/ready --> availability, rollouts;
//     liveness/startup failure --> runtime stop --> the exit path above
//   init containers (and sidecars) before app containers (pods.cpp advance_pod)
//   SIGHUP --> reload the configuration; SIGTERM/SIGINT --> stop, pods keep running
#pragma once

#include <uv.h>

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "agent/cluster_link.h"
#include "agent/control_server.h"
#include "agent/node_ips.h"
#include "agent/prober_manager.h"
#include "agent/sources.h"
#include "core/config.h"
#include "core/image_gc.h"
#include "core/manifest.h"
#include "core/model.h"
#include "core/pod.h"
#include "core/probe.h"
#include "core/reconcile.h"
#include "core/rollout_status.h"
#include "core/source_merge.h"
#include "platform/clock.h"
#include "platform/dir_watch.h"
#include "platform/line_server.h"
#include "platform/notify.h"
#include "platform/prober.h"
#include "platform/runtime.h"
#include "store/store.h"

namespace daemonlet::agent {

// Closes a timer whose data is a heap-allocated Target (what it fires for),
// freeing both in the close callback, as libuv requires.
template <class Target>
void close_targeted_timer(uv_timer_t*& t) {
    if (!t) return;
    uv_close(reinterpret_cast<uv_handle_t*>(t), [](uv_handle_t* h) {
        delete static_cast<Target*>(h->data);
        delete reinterpret_cast<uv_timer_t*>(h);
    });
    t = nullptr;
}

// `daemonlet-image pull`'s options from the runtime.registry* keys (images.cpp).
std::vector<std::string> registry_pull_options(const AgentConfig& config);

// `daemonlet-image VERB --store stateDir/images`, and for runtime.type cri
// its containerd options (images.cpp): the import directory's archives go
// to the runtime's image store.
std::vector<std::string> image_tool_command(const AgentConfig& config, const std::string& verb);
// Whether daemonlet-image's output says the runtime's image store did not
// answer (containerd down): tried again later, not a bad archive.
bool is_runtime_unavailable(const std::string& output);
// The JSON objects of daemonlet-image's output, one per line; other lines
// are skipped (images.cpp).
std::vector<Json> json_object_lines(const std::string& output);

// daemonlet-shim or daemonlet-image, next to the agent's binary (agent.cpp).
std::string find_helper(const std::string& name);

// Closes a container's restart timer (pods.cpp).
void close_restart_timer(uv_timer_t*& t);

class Agent {
  public:
    // Time is read from `clock` only (a test passes a fake one).
    Agent(AgentConfig config, std::string config_path,
          const platform::Clock& clock = platform::system_clock());
    Agent(const Agent&) = delete;
    Agent& operator=(const Agent&) = delete;
    ~Agent();

    // Runs until SIGTERM or SIGINT. Returns the process exit status.
    int run();

  private:
    // A DaemonSet in force.
    struct Desired {
        std::shared_ptr<const DaemonSet> object;  // the file's (shared with files_) or a rollback's
        std::shared_ptr<const DaemonSet> from;    // the source's (file or API server), before any rollback
        const DaemonSet& ds() const { return *object; }
        DaemonSetSource source;
        bool from_api() const { return source.from_api(); }
        std::string hash;
        std::int64_t revision = 0;
        std::string file_hash;     // of the file's DaemonSet: what a rollback applies to
        bool rolled_back = false;  // a rollback's template is in force, not the file's
    };
    struct LiveContainer {
        std::string id;  // runtime id while it has one
        std::int64_t started_mono_ms = 0;
        BackoffState backoff;
        std::int64_t runtime_down_ms = 0;     // the last wait for an unreachable runtime; 0: it answered
        uv_timer_t* restart_timer = nullptr;  // pending restart; freed in its close callback
        // imagePullPolicy Always: this start's pull is done (or, offline, the
        // local image stands in); the next start_container starts it.
        bool image_pulled = false;
    };
    // A registry pull of one image (images.cpp), shared by the containers
    // waiting for it, with kubelet's per-image back-off.
    struct ImagePull {
        bool running = false;
        std::int64_t started_mono_ms = 0;
        std::int64_t backoff_ms = 0;        // the wait after the last failure; 0: none failed
        std::int64_t retry_at_mono_ms = 0;  // no pull before this after a failure
        std::string error;                  // the last failure's message
        std::string error_code;             // and its code ("unreachable", ...)
        bool warned_offline = false;        // the local image ran instead (logged once)
        std::set<std::pair<std::string, std::size_t>> waiters;  // (pod uid, container index)
    };
    struct LivePod {
        PodRecord rec;
        // Init containers first, then app containers: index i is status(i).
        std::vector<LiveContainer> containers;
        std::optional<std::int64_t> ready_since_mono_ms;
        bool deleted_by_user = false;

        bool is_init(std::size_t i) const { return i < rec.init_containers.size(); }
        ContainerStatus& status(std::size_t i) {
            return is_init(i) ? rec.init_containers[i] : rec.containers[i - rec.init_containers.size()];
        }
    };

    // agent.cpp: lifecycle
    Status init();
    void shutdown();
    void reload_config();
    void update_status();
    static void on_signal(uv_signal_t* h, int signum);

    // desired.cpp: the sources (sources.h) merged to the desired state
    void rescan_manifests();
    void rebuild_desired();
    void
    schedule_rebuild();  // a rebuild once this loop turn's changes are in (many watch events, one rebuild)
    Status record_revision(Desired& d);

    // cluster.cpp: the API server's link (its DaemonSets go to sources_),
    // the node from the cluster, connectivity, the Lease and the Events
    // (cluster_link.h)
    void load_cluster_node();
    void start_cluster(bool start_now);
    void save_cluster_events();
    void on_api_daemonsets(const std::string& scope, ReflectorChanges&& changes);
    void on_api_node(ReflectorChanges&& changes);
    void on_link(LinkState state);
    void refresh_node();
    void send_cluster_event(const std::string& ns, const std::string& daemonset, const char* type,
                            const char* reason, const std::string& message);
    Json status_json() const;

    // rollback.cpp: rollout undo over a manifest file's template
    void apply_rollback(Desired& d);
    Result<std::string> undo(const std::string& ns, const std::string& name, std::int64_t to_revision);

    // events.cpp: events for describe, recorded in the store
    void record_event(const std::string& ns, const std::string& daemonset, const char* type,
                      const char* reason, const std::string& message);
    void record_pod_removed(const PodRecord& pod, const std::string& reason);
    void record_backoff(const PodRecord& pod, const std::string& container);
    void record_placement(const Desired& d, const Decision& decision);

    // control.cpp: what the control socket's requests do (ControlServer,
    // control_server.h: delete, rollout undo and status)
    void start_control();
    void after_reconcile();
    RolloutStatus rollout_status_of(const Desired& d, const Decision& decision) const;

    // pods.cpp: the reconcile loop and the pods' lifecycle
    void schedule_reconcile();
    void reconcile();
    void adopt();
    void create_pod(const PodToCreate& c);
    void remove_pod(const std::string& uid, const std::string& reason);
    void start_container(const std::string& uid, std::size_t index);
    void start_waiting_containers();
    void on_container_exit(const std::string& id);
    void schedule_restart(const std::string& uid, std::size_t index, std::int64_t delay_ms);
    void finish_pod_if_stopped(const std::string& uid);
    void save_pod(const LivePod& pod);
    void refresh_readiness(LivePod& pod);
    void refresh_pod_ips(LivePod& pod);
    bool advance_pod(const std::string& uid);
    const Desired* desired_for(const PodRecord& rec) const;
    const Container* container_spec(const LivePod& pod, std::size_t index) const;
    static const Container* find_container(const PodSpec& spec, const LivePod& pod, std::size_t index);
    std::vector<std::pair<std::string, std::string>> container_env(const LivePod& pod,
                                                                   const Container& spec) const;

    // images.cpp: the import directory (runc and cri runtimes), imported
    // by daemonlet-image, one archive at a time, without blocking the loop
    void open_images();
    // runtime.rootfs and the node: whether root filesystems are overlay
    // mounts; logged once. Forced overlay on a node without: an error.
    Result<bool> choose_rootfs(const std::string& store_dir, const std::string& runtime_dir);
    void import_images();
    void start_next_import();
    void on_imported(const std::string& path,
                     const std::optional<std::pair<std::int64_t, std::int64_t>>& version,
                     const platform::ProbeResult& r);
    void retry_image_waits();
    // Registry pulls, as imagePullPolicy says (kubelet's image_manager.go
    // EnsureImageExists): whether container `index` may start now, else a
    // pull was asked for (Always) and it waits for it.
    bool image_ready_to_start(const std::string& uid, std::size_t index, const Container& spec);
    void request_image_pull(const std::string& uid, std::size_t index, const Container& spec);
    void on_image_pulled(const std::string& image, const Status& result);
    // image_records.cpp: what the archives gave, in the store's meta table,
    // so that a restart imports only what changed or went
    void recall_imports();
    void on_images_listed(const platform::ProbeResult& r);
    void record_import(const std::string& path, std::pair<std::int64_t, std::int64_t> version, bool imported,
                       const Json& images);
    void forget_removed_imports(const std::map<std::string, std::pair<std::int64_t, std::int64_t>>& present);
    void save_import_records();
    // The records of the archives that gave image `digest` (or one of
    // `names`) say it was collected; and an archive whose collected image a
    // pod waits for is imported again.
    void mark_collected_imports(const std::string& digest, const std::set<std::string>& names);
    void reimport_collected(const std::string& image);

    // image_gc.cpp: kubelet's image GC over the runc store
    void start_image_gc();
    void run_image_gc(const std::string& why);
    std::set<std::string> images_in_use();
    void on_image_gc_listed(const std::string& why, const platform::ProbeResult& r);
    void remove_next_image();
    void on_image_removed(const std::string& digest, const platform::ProbeResult& r);
    void finish_image_gc();

    // hostNetwork pods' IPs follow the node's (node_ips_ changed).
    void on_node_ips_changed();

    // probes.cpp: what the Probes component (prober_manager.h) probes, and
    // what its results do
    const Container* probed_spec(const LivePod& pod, std::size_t index);
    void start_probes(const std::string& uid, std::size_t index);
    void ensure_probes();
    void on_probe_failed(const std::string& uid, std::size_t index);
    void on_probe_result_changed(const std::string& uid);

    AgentConfig config_;
    std::string config_path_;
    const platform::Clock& clock_;
    uv_loop_t loop_{};
    Node node_;
    std::unique_ptr<store::Store> store_;
    std::unique_ptr<platform::Runtime> runtime_;
    std::unique_ptr<platform::Notifier> notifier_;
    std::unique_ptr<platform::DirWatch> watch_;
    std::unique_ptr<Probes> probes_;  // kubelet's prober manager: the running containers' probes
    // runc and cri runtimes: daemonlet-image runs through its own Prober (a
    // command to completion on the loop, with a deadline, killed on close).
    std::unique_ptr<platform::Prober> image_jobs_;
    std::unique_ptr<platform::DirWatch> import_watch_;
    std::map<std::string, std::pair<std::int64_t, std::int64_t>>
        import_seen_;                               // archive -> (mtime ns, size) queued or tried
    std::deque<std::string> import_queue_;          // archives waiting for daemonlet-image
    std::optional<std::string> importing_;          // the archive daemonlet-image imports now
    std::map<std::string, ImagePull> image_pulls_;  // by the image as the pod spec names it
    Json import_records_ = Json::object();          // images.imports in the store: path -> version, outcome
    bool recalling_imports_ = false;                // daemonlet-image list runs
    bool imports_recalled_ = false;                 // the records are checked against the store
    bool import_runtime_down_ = false;              // cri: containerd did not answer (said once)
    uv_timer_t* image_gc_timer_ = nullptr;          // image GC's period; freed in its close callback
    bool image_gc_running_ = false;                 // a list or a remove of image GC runs
    bool image_gc_again_ = false;                   // asked for while running: once more after
    std::vector<GcImage> image_gc_victims_;         // what this collection still removes, in order
    std::map<std::string, std::int64_t> image_last_used_;  // normalised image -> wall s last seen in use
    std::map<std::string, DaemonSet> old_revisions_;  // "ns/name/hash" -> the DaemonSet with that template
    // The node's IPs (nodeIP, else the interfaces), for status.hostIP and
    // hostNetwork pods' podIP; re-checked every minute (node_ips.h).
    std::unique_ptr<NodeAddresses> node_ips_;
    std::vector<uv_signal_t*> signals_;
    uv_timer_t* reconcile_timer_ = nullptr;
    uv_timer_t* wake_timer_ = nullptr;
    uv_timer_t* rebuild_timer_ = nullptr;
    bool reconcile_pending_ = false;
    bool stopping_ = false;
    std::string notifier_status_;

    std::unique_ptr<Sources> sources_;        // the manifest directory and the API server, merged
    std::map<std::string, Desired> desired_;  // by "namespace/name"
    bool store_swept_ = false;                // the store's DaemonSets no source offers are deleted
    std::optional<Json> cluster_node_;        // nodeFromCluster: the Node object
    std::unique_ptr<ClusterLink> cluster_;
    std::string cluster_error_;                                         // why the link could not start
    std::map<std::string, LivePod> pods_;                               // by uid
    std::map<std::string, std::pair<std::string, std::size_t>> by_id_;  // runtime id -> (uid, container)

    std::unique_ptr<ControlServer> control_;  // the control socket, its delete waiters and status watchers
    std::map<std::string, std::string> placement_noted_;  // DaemonSet key -> the decision last recorded
    std::map<std::string, std::string> rolled_out_;       // DaemonSet key -> the hash whose rollout completed
};

}  // namespace daemonlet::agent
