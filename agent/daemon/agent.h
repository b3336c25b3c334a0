// `daemonlet run`: the agent. One libuv loop, no threads. Wiring only: the
// decisions are core's (node_should_run_daemon_pod, plan_reconcile,
// next_restart_delay), persistence is store's, processes are the runtime's.
//
//   manifest dir --DirWatch--> Sources (sources.h) <-- API server (cluster.cpp)
//        --> merged (core merge_sources) --> the DaemonSets in force, their store
//            rows and revision history (DesiredDaemonSets, desired_daemonsets.h),
//            a rollout undo's template applied (Rollbacks, rollbacks.h)
//        --> reconcile (pods.cpp): DaemonSetSync (daemonset_sync.h) --> runtime start / stop
//   runtime exit --> container restart with crash-loop backoff
//   probe timers (Probes, prober_manager.h) --> started/ready --> availability, rollouts;
//     liveness/startup failure --> runtime stop --> the exit path above
//   init containers (and sidecars) before app containers (PodWorkers, pod_workers.h)
//   postStart after a start, preStop before a stop (PodHooks, pod_hooks.h)
//   images (images.h, one Images): imports, pulls and their back-off, image GC;
//     it starts the containers waiting for an image through Images::Host
//   what happens to a DaemonSet's pods --> its events (DaemonSetEvents,
//     daemonset_events.h): the store's rows for describe, the cluster's Events
//   the node: configuration + (nodeFromCluster) the cluster's Node (NodeState,
//     node_state.h) --> a change of labels or taints re-evaluates every DaemonSet
//   start: the store's pods matched with the runtime's containers (plan_adoption,
//     adoption.h; adopt.cpp carries it out) --> adopted as they run, zero restarts
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

#include "agent/daemon/api_access.h"
#include "agent/daemon/api_pods.h"
#include "agent/daemon/cluster_link.h"
#include "agent/daemon/config_volumes.h"
#include "agent/daemon/container_config.h"
#include "agent/daemon/control_server.h"
#include "agent/daemon/daemonset_events.h"
#include "agent/daemon/daemonset_sync.h"
#include "agent/daemon/desired_daemonsets.h"
#include "agent/daemon/images.h"
#include "agent/daemon/lifecycle_hooks.h"
#include "agent/daemon/metrics.h"
#include "agent/daemon/node_ips.h"
#include "agent/daemon/node_state.h"
#include "agent/daemon/pod_admission.h"
#include "agent/daemon/pod_events.h"
#include "agent/daemon/pod_hooks.h"
#include "agent/daemon/pod_table.h"
#include "agent/daemon/pod_workers.h"
#include "agent/daemon/prober_manager.h"
#include "agent/daemon/queued_events.h"
#include "agent/daemon/rollbacks.h"
#include "agent/daemon/sources.h"
#include "agent/daemon/static_pods.h"
#include "agent/daemon/storage.h"
#include "core/config.h"
#include "core/image_gc.h"
#include "core/manifest.h"
#include "core/model.h"
#include "core/pod.h"
#include "core/pod_env.h"
#include "core/probe.h"
#include "core/reconcile.h"
#include "core/rollout_status.h"
#include "core/source_merge.h"
#include "core/static_pod.h"
#include "core/wall_clock.h"
#include "platform/clock.h"
#include "platform/dir_watch.h"
#include "platform/line_server.h"
#include "platform/notify.h"
#include "platform/operation_queue.h"
#include "platform/probe/prober.h"
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

// daemonlet-shim or daemonlet-image, next to the agent's binary (agent.cpp).
std::string find_helper(const std::string& name);

class Agent : private Images::Host,
              private PodWorkers::Host,
              private PodHooks::Host,
              private PodTable::Host,
              private QueuedEvents::Host,
              private ContainerConfig::Host,
              private DesiredDaemonSets::Host,
              private Rollbacks::Host,
              private DaemonSetSync::Host,
              private PodAdmission::Host,
              private DaemonSetEvents::Host {
  public:
    // Time is read from `clock` only (a test passes a fake one).
    Agent(AgentConfig config, std::string config_path,
          const platform::Clock& clock = platform::system_clock());
    Agent(const Agent&) = delete;
    Agent& operator=(const Agent&) = delete;
    ~Agent() override;

    // Runs until SIGTERM or SIGINT. Returns the process exit status.
    int run();

    // config_objects.cpp: the ConfigMaps or Secrets changed (Sources, after
    // a rescan that changed them): running pods' config volumes are
    // rewritten in place, and containers waiting for an object try again.
    void on_config_objects_changed();

  private:
    // A DaemonSet in force (desired_daemonsets.h).
    using Desired = DesiredDaemonSets::Desired;

    // agent.cpp: lifecycle
    Status init();
    void shutdown();
    void reload_config();
    void update_status();
    // The systemd STATUS line: DaemonSets, pods, the API server, the stateDir.
    void refresh_status_line();
    // Opens the store, or only reads it on a read-only stateDir (storage.h).
    Status open_storage();
    static void on_signal(uv_signal_t* h, int signum);

    // desired.cpp: the sources (sources.h) merged to the desired state
    void rescan_manifests();
    void rebuild_desired();
    void
    schedule_rebuild();  // a rebuild once this loop turn's changes are in (many watch events, one rebuild)
    // DesiredDaemonSets' Host (desired_daemonsets.h); apply_rollback below (Rollbacks).
    store::Store& desired_store() override { return *store_; }
    void template_in_force(const std::string& key, const Desired& d) override;
    void revision_reported() override { queued_events_.flush_reported(); }

    // cluster.cpp: the API server's link (its DaemonSets go to sources_,
    // its Node to node_state_), connectivity, the Lease and the Events
    // (cluster_link.h)
    void start_cluster(bool start_now);
    void on_api_daemonsets(const std::string& scope, ReflectorChanges&& changes);
    void on_api_node(ReflectorChanges&& changes);
    void on_link(LinkState state);
    // node_state_'s Node in force again; a change re-evaluates every DaemonSet.
    void refresh_node();
    Json status_json() const;
    // registerNode: what the board's status reads of the agent (the
    // measurements and the Node it registers are node_state_'s).
    NodeState::StatusInputs node_status_inputs() const;
    // cluster_pods.cpp: podStatus, the board's DaemonSet pods as Pods of
    // the API (api_pods.h): what ApiPods reads of the pods
    void start_api_pods();
    void close_api_pods();
    std::vector<BoardPod> board_pods();
    void bind_tokens(const LivePod& p);  // its tokens bound to its Pod (api_access.h)
    // pod_events.cpp: the pod's Events on its Pod (core/pod_events.h).
    static ContainerRef container_ref(const LivePod& p, std::size_t index);
    void record_pod_event(const LivePod& p, PodEvent ev);
    void flush_pod_events();
    Json board_pod_status(const LivePod& p, bool terminal) const;
    void restart_for_api(const std::string& uid, std::optional<std::int64_t> grace, const std::string& why);
    // apiServer.rollouts: cluster (issue 14 §3): the DaemonSet controller
    // paces `d`'s rollout here: connected, and each of the board's pods of
    // an older revision has its Pod (the controller deletes it). DaemonSetSync::Host.
    void pace_by_cluster(const Desired& d, DesiredDaemonSet& w) const override;
    const Node& sync_node() const override { return node_state_->node(); }
    OwnerView pod_owner(const std::string& ns, const std::string& name, const std::string& uid) const;

    // DesiredDaemonSets' Host: a stored rollback over a manifest file's
    // template, applied by the rebuild (Rollbacks, rollbacks.h).
    void apply_rollback(Desired& d) override { rollbacks_->apply(d); }
    // Rollbacks' Host (rollbacks.h); record_rollback_event, manifest_daemonset
    // and rollback_changed in desired.cpp.
    void record_rollback_event(const std::string& ns, const std::string& daemonset, const char* type,
                               const char* reason, const std::string& message) override;
    const Desired* daemonset_in_force(const std::string& key) const override { return desired_.find(key); }
    std::shared_ptr<const DaemonSet> manifest_daemonset(const std::string& path, const std::string& ns,
                                                        const std::string& name) const override;
    void rollback_changed(const std::string& key) override;

    // events.cpp: DaemonSetEvents' Host (daemonset_events.h): the events
    // on the DaemonSets go to the store and, for the cluster's, to the link.
    store::Store* ds_events_store() override { return store_.get(); }
    std::optional<std::string> cluster_daemonset_uid(const std::string& ns,
                                                     const std::string& name) const override;
    void send_ds_event(ClusterEvent ev) override;
    const std::string& events_node_name() const override { return node_state_->name(); }

    // control.cpp: what the control socket's requests do (ControlServer,
    // control_server.h: delete, rollout undo and status)
    void start_control();
    void after_reconcile();
    RolloutStatus rollout_status_of(const Desired& d, const Decision& decision) const;

    // pods.cpp: the reconcile loop and the pods' lifecycle
    // On this turn, or (next_turn) only after the loop has polled: libuv runs
    // a 0 ms timer started in a timer callback again in the same pass.
    void schedule_reconcile(bool next_turn = false);
    void reconcile();
    // adopt.cpp: at the start, the Adoption component's plan (adoption.h)
    // applied: the runtime's stops and removals, watches, the pods added.
    void adopt();
    void create_pod(const PodToCreate& c);
    // An admitted pod (a DaemonSet's or a static pod) into the table, its
    // containers from `spec`, handed to its worker and saved.
    void start_new_pod(LivePod p, const PodSpec& spec);
    // rejectPod: the new pod is Failed with the handler's reason and
    // message, runs nothing, and is kept (saved, said once).
    void reject_pod(LivePod p, const PodRejection& rejected, const std::string& what);
    // The pod workers' Host (pod_workers.h): the pods as the workers see
    // them, the launch description, and what a start or an exit does here.
    PodRecord* worker_pod(const std::string& uid) override;
    WorkerContainer& worker_container(const std::string& uid, std::size_t index) override;
    bool agent_stopping() const override { return stopping_; }
    std::string pod_restart_policy(const PodRecord& pod) const override { return restart_policy_of(pod); }
    // hooks.cpp: container `index` runs its postStart, or starts and has
    // one: the containers after it wait (kubelet's SyncPod starts them one
    // by one, each startContainer returning after its postStart).
    bool holds_next(const std::string& uid, std::size_t index) override;
    void refresh_pod(const std::string& uid) override { refresh_readiness(pods_.at(uid)); }
    std::optional<platform::ContainerLaunch> launch_of(const std::string& uid, std::size_t index) override;
    void container_started(const std::string& uid, std::size_t index, const std::string& id,
                           std::shared_ptr<const Container> spec,
                           std::vector<std::pair<std::string, std::string>> env,
                           std::int64_t grace_seconds) override;
    bool container_start_failed(const std::string& uid, std::size_t index, const Container& spec,
                                const Error& error) override;
    void runtime_unavailable(const std::string& uid, std::size_t index, const Error& error,
                             bool first) override;
    void container_exiting(const std::string& uid, std::size_t index) override;
    void container_exited(const std::string& uid, std::size_t index, ExitAction action,
                          std::int64_t ran_for_ms, std::int64_t delay_ms) override;
    void pod_changed(const std::string& uid, bool reconcile) override;
    void pod_terminating(const std::string& uid, const std::string& reason) override;
    void container_terminating(const std::string& uid, std::size_t index) override;
    void container_killing(const std::string& uid, std::size_t index) override;
    bool run_pre_stop(const std::string& uid, std::size_t index, const std::string& expected,
                      std::function<void(const std::string& id, std::int64_t grace_seconds)> done) override;
    std::optional<std::int64_t> stop_grace(const std::string& uid) override;
    void pod_terminated(const std::string& uid) override;
    void pod_finishing(const std::string& /*uid*/) override { schedule_reconcile(); }
    void save_pod_record(const std::string& uid) override { pods_.save(pods_.at(uid)); }
    void runtime_operation_done(const char* what, std::uint64_t t0, bool ok) override;
    void operation_finished_while_stopping() override { close_runtime_when_idle(); }
    // The started container's image as its runtime names it (its imageID),
    // asked off the loop; the exec runtime has none.
    void note_image_id(const std::string& uid, std::size_t index, const std::string& id);
    // hooks.cpp: PodHooks (pod_hooks.h) wired: postStart after a start,
    // preStop before a stop; its Host
    std::optional<PodHooks::Env> hook_env(const std::string& uid, std::size_t index,
                                          const Container& spec) override;
    std::optional<PodHooks::Target> hook_target_now(const std::string& uid, std::size_t index,
                                                    const std::string& id) override;
    void post_start_failed(const std::string& uid, std::size_t index, const std::string& id,
                           const Error& error) override;
    void post_start_ended(const std::string& uid) override;
    void pre_stop_failed(const std::string& uid, std::size_t index, const Error& error) override;
    // adopt: an adopted DaemonSet pod's containers keep the hooks and grace
    // of the revision they run, read from the store now: its DaemonSet and
    // history may go before the pod is stopped.
    void load_adopted_hooks(const std::string& uid, LivePod& p);
    // Shutdown: the runtime is closed once no start is in flight, so that
    // every container started is in the store for the next agent.
    void close_runtime_when_idle();
    void start_waiting_containers();
    // PodTable's Host (pod_table.h): what a pod's save reaches.
    store::Store& pod_store() override { return *store_; }
    // QueuedEvents::Host
    store::Store& events_store() override { return *store_; }
    const std::deque<ClusterEvent>* link_events() override {
        return cluster_ ? &cluster_->queued_events() : nullptr;
    }
    MetricRegistry* pod_metrics() override;
    void pod_saved() override;
    void refresh_readiness(LivePod& pod);
    void refresh_pod_ips(LivePod& pod);
    // The spec a pod runs and its metadata (container_config.h).
    using PodSource = ContainerConfig::PodSource;
    PodSource pod_source(const PodRecord& rec) const;
    // PodAdmission's Host (pod_admission.h): pod_source's spec.
    std::shared_ptr<const PodSpec> admission_spec(const PodRecord& rec) const override;
    // The pod's restartPolicy: a static pod's own, Always for a DaemonSet's.
    std::string restart_policy_of(const PodRecord& rec) const;

    // static_admission.cpp: what StaticPods' decisions do: a static pod
    // created through the kubelet's admission, and, at start, once the
    // sources are read, the adopted ones admitted again (core
    // readmit_static_pods).
    void create_static_pod(const std::string& uid, const StaticPods::Desired& s);
    void readmit_adopted_static_pods();
    const Container* container_spec(const LivePod& pod, std::size_t index) const;
    static const Container* find_container(const PodSpec& spec, const LivePod& pod, std::size_t index);

    // config_objects.cpp: the ContainerConfig's Host (container_config.h):
    // what a launch description reads of the agent
    PodSource source_of(const PodRecord& rec) const override { return pod_source(rec); }
    const DaemonSet* daemonset_of(const PodRecord& rec) const override;
    ContainerConfig::NodeFacts node_facts() const override;
    const ConfigObjects& config_objects() const override { return sources_->config_objects(); }
    std::optional<std::string> api_server() const override;
    ApiAccess* api_access() const override { return api_access_.get(); }
    ConfigVolumes& config_volumes() override { return *config_volumes_; }
    bool image_ready(const ImageWaiter& w, const PodRecord& pod, const Container& spec,
                     ContainerStatus& cs) override;
    void record_config_event(const std::string& ns, const std::string& daemonset, const char* type,
                             const char* reason, const std::string& message) override;
    void record_pod_warning(const LivePod& pod, std::optional<std::size_t> index, const char* reason,
                            const std::string& message) override;
    // The TokenRequests and cluster objects the live pods use (api_access.h
    // keeps them fresh).
    ApiAccess::Wanted wanted_from_cluster() const;

    // image_waits.cpp: the images (images.h) and the containers waiting
    // for theirs
    void retry_image_waits();
    void images_arrived() override;
    Waiting waiting_for_image(const ImageWaiter& w, const std::string& image) override;
    void start_pulled(const ImageWaiter& w) override;
    void retry_image_after(const ImageWaiter& w, std::int64_t delay_ms, bool save) override;
    void pulls_changed() override;
    void record_container_event(const ImageWaiter& w,
                                const std::function<PodEvent(const ContainerRef&)>& make) override;
    void record_image_event(const PodRecord& pod, const char* type, const char* reason,
                            const std::string& message) override;
    std::set<std::string> images_in_use() override;

    // agent_metrics.cpp: what the metrics (metrics.h) read of the state
    void start_metrics();
    void collect_metrics(MetricRegistry& r);
    std::string store_problem();
    void count_daemonsets(const std::vector<std::pair<const Desired*, bool>>& decided,
                          std::size_t in_progress);
    void image_operation_done(const char* what, bool ok) override;

    // wall_clock.cpp: a step of the wall clock (NTP at boot) noticed, the
    // times recorded before it re-based (core/wall_clock.h)
    void start_wall_clock_watch();
    void check_wall_clock();

    // hostNetwork pods' IPs follow the node's (node_ips_ changed).
    void on_node_ips_changed();

    // probes.cpp: what the Probes component (prober_manager.h) probes, and
    // what its results do
    const Container* probed_spec(const LivePod& pod, std::size_t index);
    void start_probes(const std::string& uid, std::size_t index);
    void ensure_probes();
    void on_probe_failed(const std::string& uid, std::size_t index, ProbeKind kind);
    void on_probe_result_changed(const std::string& uid);

    AgentConfig config_;
    std::string config_path_;
    const platform::Clock& clock_;
    uv_loop_t loop_{};
    std::unique_ptr<store::Store> store_;  // the Storage (storage.h) over the SQLite store
    Storage* storage_ = nullptr;           // store_, watched: whether the stateDir takes writes
    // The Node in force, the cluster's Node and registerNode's pressure
    // observations (node_state.h); made with store_.
    std::unique_ptr<NodeState> node_state_;
    std::unique_ptr<platform::Runtime> runtime_;
    // Starts and stops, at most runtime.maxParallelOperations at once, one
    // pod's in order (pods.cpp).
    platform::OperationQueue runtime_ops_{4};
    // The pods' lifecycle sequence: starts, exits, restarts (pod_workers.h).
    std::unique_ptr<PodWorkers> workers_;
    std::unique_ptr<platform::Notifier> notifier_;
    std::unique_ptr<platform::DirWatch> watch_;
    std::unique_ptr<Probes> probes_;         // kubelet's prober manager: the running containers' probes
    std::unique_ptr<LifecycleHooks> hooks_;  // kubelet's HandlerRunner: postStart and preStop
    std::unique_ptr<PodHooks> pod_hooks_;    // when each container's hooks run, over hooks_
    // Imports, pulls, their back-off and image GC (images.h).
    std::unique_ptr<Images> images_;
    // The node's IPs (nodeIP, else the interfaces), for status.hostIP and
    // hostNetwork pods' podIP; re-checked every minute (node_ips.h).
    std::unique_ptr<NodeAddresses> node_ips_;
    std::vector<uv_signal_t*> signals_;
    uv_timer_t* reconcile_timer_ = nullptr;
    uv_timer_t* wake_timer_ = nullptr;
    // The queue of Events kept in the store, and the flush of what the
    // agent reports (queued_events.h).
    QueuedEvents queued_events_{&loop_, *this};
    uv_timer_t* rebuild_timer_ = nullptr;
    uv_timer_t* wall_clock_timer_ = nullptr;
    std::optional<WallClockSteps> wall_steps_;  // from the agent's start
    bool reconcile_pending_ = false;
    bool stopping_ = false;
    int exit_status_ = 0;  // run()'s, once the loop ends
    std::string notifier_status_;

    std::unique_ptr<Sources> sources_;               // the manifest directory and the API server, merged
    std::unique_ptr<Rollbacks> rollbacks_;           // rollout undo's rollbacks, over store_ (rollbacks.h)
    std::unique_ptr<ConfigVolumes> config_volumes_;  // configMap, secret, downwardAPI, projected volumes
    std::unique_ptr<ClusterLink> cluster_;
    // Service-account tokens, kube-root-ca.crt and the admitted specs (api_access.h).
    std::unique_ptr<ApiAccess> api_access_;
    std::unique_ptr<ApiPods> api_pods_;          // podStatus: over cluster_, closed before it
    PodEvents pod_events_;                       // their Events, kept until the Pod exists
    ClusterLink::Counts cluster_counts_before_;  // of the links a reload replaced (metrics)
    std::string cluster_error_;                  // why the link could not start
    PodTable pods_{*this, clock_};               // the pods, by uid (pod_table.h)
    // The launch description of each container start (container_config.h).
    ContainerConfig container_config_{*this, config_};
    StaticPods static_pods_{pods_};  // the files' static pods (static_pods.h)
    // The DaemonSets in force, their store rows and revisions (desired_daemonsets.h).
    DesiredDaemonSets desired_{pods_, *this, clock_};
    DaemonSetSync ds_sync_{*this, clock_};  // the DaemonSet controller's sync here (daemonset_sync.h)
    PodAdmission admission_{*this, pods_};  // the kubelet's admit handlers (pod_admission.h)

    std::unique_ptr<AgentMetrics> metrics_;   // /metrics and /healthz, the counters
    std::unique_ptr<ControlServer> control_;  // the control socket, its delete waiters and status watchers
    // The DaemonSets' events: the store's rows and the cluster's Events,
    // FailedPlacement and RolloutComplete once each (daemonset_events.h).
    DaemonSetEvents ds_events_{*this, clock_};
};

}  // namespace daemonlet::agent
