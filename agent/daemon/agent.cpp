// The agent's lifecycle: start-up, signals, configuration reload, shutdown.
#include "agent/daemon/agent.h"
#include "agent/daemon/config_file.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstring>

#include "core/local_node.h"
#include "core/qos.h"
#include "platform/cri/cri_runtime.h"
#include "platform/exec/exec_runtime.h"
#include "platform/file.h"
#include "platform/host_network.h"
#include "platform/log.h"
#include "platform/runc/runc_runtime.h"
#include "platform/system_info.h"

namespace daemonlet::agent {

using platform::Level;
using platform::log;

// The shim and daemonlet-image live next to the daemonlet binary (build
// tree) or in ../libexec/daemonlet (installed).
std::string find_helper(const std::string& name) {
    char buf[4096];
    ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
    if (n <= 0) return name;
    std::string exe(buf, static_cast<std::size_t>(n));
    std::string dir = exe.substr(0, exe.rfind('/'));
    for (const std::string& candidate :
         {dir + "/" + name, dir + "/../platform/" + name, dir + "/../libexec/daemonlet/" + name})
        if (::access(candidate.c_str(), X_OK) == 0) return candidate;
    return name;
}

namespace {

template <class H>
void close_and_free(H*& h) {
    if (!h) return;
    uv_close(reinterpret_cast<uv_handle_t*>(h), [](uv_handle_t* p) { delete reinterpret_cast<H*>(p); });
    h = nullptr;
}

}  // namespace

Agent::Agent(AgentConfig config, std::string config_path, const platform::Clock& clock)
    : config_(std::move(config)), config_path_(std::move(config_path)), clock_(clock) {
    uv_loop_init(&loop_);
}

Agent::~Agent() {
    // Handles are closed in shutdown(); a loop that still has some is a bug
    // we want to hear about rather than hide.
    if (uv_loop_close(&loop_) != 0) log(Level::Warning, "event loop closed with handles still open");
}

Status Agent::init() {
    // The times a step moves (core/wall_clock.h): those of this boot
    // (CLOCK_MONOTONIC counts from it), an earlier agent's included.
    // CLOCK_BOOTTIME, not the monotonic clock: a board that suspends for
    // an hour sees both clocks move by an hour, which is no step.
    wall_steps_.emplace(clock_.wall_ms() - clock_.since_boot_ms(), 0);
    if (auto s = platform::make_dirs(config_.state_dir, 0700); !s.ok()) return s;
    // First: a second agent on the same stateDir must stop before it touches
    // the store or the containers. Requests are served once the loop runs.
    start_control();
    if (auto s = control_->start(); !s.ok()) {
        if (s.error().code == ErrorCode::Busy) return s.error();
        log(Level::Err, s.error().message + "; delete and rollout undo will not reach this agent");
    }

    if (auto s = open_storage(); !s.ok()) return s;
    rollbacks_ = std::make_unique<Rollbacks>(static_cast<Rollbacks::Host&>(*this), *store_, clock_);
    // The Node in force is read from here on (empty until refresh_node).
    node_state_ = std::make_unique<NodeState>(config_, *store_, clock_);

    // Each source's state as last kept: the manifest files' last good
    // versions (a broken one's stays in force) and the cluster's DaemonSets
    // and Node, so that an offline boot runs them like the manifests'.
    sources_ =
        std::make_unique<Sources>(*store_, clock_, [this](const DaemonSet& api, const std::string& msg) {
            ds_events_.send_to_cluster(api.metadata.namespace_, api.metadata.name, "Warning",
                                       "LocalManifestOverrides", msg);
        });
    sources_->load(config_.api_server);
    config_volumes_ = std::make_unique<ConfigVolumes>(config_.state_dir + "/pod-volumes");
    api_access_ =
        std::make_unique<ApiAccess>(&loop_, *store_, clock_, [this] { on_config_objects_changed(); });
    api_access_->load();
    api_access_->set_wanted([this] { return wanted_from_cluster(); });
    node_state_->load();
    refresh_node();
    // The link exists (its Events queue with it) before the first reconcile,
    // so the pods an offline boot starts are reported once it connects.
    start_cluster(false);

    Result<std::unique_ptr<platform::Runtime>> rt =
        Error{ErrorCode::Invalid, "runtime.type " + config_.runtime_type};
    if (config_.runtime_type == "runc") {
        platform::ImageTool images;
        images.binary = find_helper("daemonlet-image");
        images.store = config_.state_dir + "/images";
        auto overlay = choose_rootfs(config_, images.store, config_.state_dir + "/runtime");
        if (!overlay.ok()) return overlay.error();
        images.overlay = overlay.value();
        images.pull_options = registry_pull_options(config_);
        rt = platform::make_runc_runtime(
            &loop_, config_.state_dir + "/runtime", find_helper("daemonlet-shim"), std::move(images),
            config_.runc_path,
            platform::RuncPodSettings{seccomp_profile_root_of(config_), config_.cluster_dns,
                                      config_.cluster_domain});

    } else if (config_.runtime_type == "cri") {
        // Archives in runtime.imageImportDir go to containerd (images.cpp).
        platform::CriRuntimeOptions cri;
        cri.endpoint = config_.cri_endpoint;
        cri.runtime_dir = config_.state_dir + "/runtime";
        cri.module = find_helper(platform::kCriModule);
        cri.seccomp_profile_root = seccomp_profile_root_of(config_);
        cri.cluster_dns = config_.cluster_dns;
        cri.cluster_domain = config_.cluster_domain;
        rt = platform::make_cri_runtime(&loop_, std::move(cri));
    } else {
        rt = platform::make_exec_runtime(&loop_, config_.state_dir + "/runtime",
                                         find_helper("daemonlet-shim"));
    }
    if (!rt.ok()) return rt.error();
    // The kubelet's GetPodDNS falls back to Default when no cluster DNS is set: said once.
    if (config_.runtime_type != "exec") {
        // The kubelet's OOM scores per QoS class (core/qos.h); the exec
        // runtime's containers keep the agent's own.
        std::optional<int> oom_score_floor;
        // runc gets the score from the agent: raised where the machine
        // refuses it. A CRI runtime gets the kubelet's, and restricts it
        // itself (containerd's restrict_oom_score_adj).
        if (config_.runtime_type == "runc") oom_score_floor = platform::oom_score_adj_floor();
        container_config_.set_oom_scores(platform::memory_bytes(), oom_score_floor);
        if (oom_score_floor)
            log(Level::Notice,
                "this machine refuses an oom_score_adj below " + std::to_string(*oom_score_floor) +
                    " to the agent (no CAP_SYS_RESOURCE): Guaranteed and node-critical pods get " +
                    std::to_string(std::max(kGuaranteedOOMScoreAdj, *oom_score_floor)) +
                    " instead of -997, as containerd's restrict_oom_score_adj");
    }
    if (config_.cluster_dns.empty() && config_.runtime_type != "exec")
        log(Level::Notice,
            "no clusterDNS configured: pods of dnsPolicy ClusterFirst get the node's resolver "
            "(/etc/resolv.conf), as the kubelet falls back to dnsPolicy Default");
    // Which safe sysctls pods may set (core/sysctl.h SafeSysctlAllowlist).
    admission_.set_kernel_release(platform::kernel_release());
    admission_.set_allowed_unsafe_sysctls(config_.allowed_unsafe_sysctls);
    runtime_ = std::move(rt).value();
    runtime_->attach_loop(&loop_);
    runtime_ops_.set_limit(config_.max_parallel_operations);
    workers_ = std::make_unique<PodWorkers>(static_cast<PodWorkers::Host&>(*this), *runtime_, runtime_ops_,
                                            make_loop_timers(&loop_), clock_);
    workers_->set_backoff_policy(crash_loop_policy(config_));
    runtime_->set_exit_handler([this](const std::string& id) { workers_->on_exit(id); });
    images_ = std::make_unique<Images>(&loop_, config_, *store_, *runtime_, clock_,
                                       static_cast<Images::Host&>(*this), find_helper("daemonlet-image"));
    // runc and cri: the import directory feeds the runtime's image store.
    if (config_.runtime_type == "runc" || config_.runtime_type == "cri") images_->open();
    probes_ = std::make_unique<Probes>(
        *runtime_, make_loop_prober(&loop_), make_loop_ticker(&loop_), clock_,
        [this](const std::string& uid, std::size_t) { on_probe_result_changed(uid); },
        [this](const std::string& uid, std::size_t index, ProbeKind kind) {
            on_probe_failed(uid, index, kind);
        });
    hooks_ = std::make_unique<LifecycleHooks>(&loop_, *runtime_, make_loop_prober(&loop_));
    pod_hooks_ = std::make_unique<PodHooks>(static_cast<PodHooks::Host&>(*this), *hooks_);

    start_metrics();
    notifier_ = std::make_unique<platform::Notifier>(&loop_);
    notifier_->start();

    for (int signum : {SIGHUP, SIGTERM, SIGINT}) {
        auto* h = new uv_signal_t;
        uv_signal_init(&loop_, h);
        h->data = this;
        uv_signal_start(h, on_signal, signum);
        signals_.push_back(h);
    }
    reconcile_timer_ = new uv_timer_t;
    uv_timer_init(&loop_, reconcile_timer_);
    reconcile_timer_->data = this;
    wake_timer_ = new uv_timer_t;
    uv_timer_init(&loop_, wake_timer_);
    wake_timer_->data = this;
    rebuild_timer_ = new uv_timer_t;
    uv_timer_init(&loop_, rebuild_timer_);
    rebuild_timer_->data = this;
    queued_events_.start();
    start_wall_clock_watch();

    // Before the pods: a hostNetwork pod's podIP is the node's.
    node_ips_ = std::make_unique<NodeAddresses>(
        *store_, [] { return platform::read_host_network(); }, [this] { on_node_ips_changed(); });
    node_ips_->start(&loop_, config_.node_ips);
    // The cached pods first: adopt what runs, then read the manifests and
    // start what is missing, all before READY. The static pods of the files'
    // stored versions first: a pod whose file went while the agent was down
    // stops with its preStop hooks and grace period.
    static_pods_.rebuild(sources_->static_pods(), node_state_->name(), config_.runtime_type);
    adopt();
    // Always rebuilt once: with no file changed since the last run, the
    // store still loses what went while the agent was down.
    const bool config_changed = sources_->rescan(config_.manifest_dir).config_objects;
    rebuild_desired();
    if (config_changed) on_config_objects_changed();
    readmit_adopted_static_pods();
    reconcile();
    // Only then the API server: READY never waits for the network.
    if (cluster_) cluster_->start();

    watch_ = std::make_unique<platform::DirWatch>(
        &loop_, config_.manifest_dir, 30, config_.file_check_frequency_ms, [this] { rescan_manifests(); });
    watch_->start();
    images_->start();
    return Ok{};
}

Status Agent::open_storage() {
    auto opened = Storage::open(&loop_, config_.state_dir, clock_, [this] {
        // The file went bad while the pods ran from a copy (storage.h): the
        // agent stops (exit status 1) and systemd starts it again on the
        // copy written in its place, or on the empty database when that
        // write failed (docs/operating.md).
        exit_status_ = 1;
        // Not from inside the storage's retry: shutdown() closes it.
        auto* later = new uv_timer_t;
        uv_timer_init(&loop_, later);
        later->data = this;
        uv_timer_start(
            later,
            [](uv_timer_t* t) {
                auto* self = static_cast<Agent*>(t->data);
                close_and_free(t);
                self->shutdown();
            },
            0, 0);
    });
    if (!opened.ok()) return opened.error();
    storage_ = opened.value().get();
    storage_->set_on_change([this] { refresh_status_line(); });
    store_ = std::move(opened).value();
    return Ok{};
}

int Agent::run() {
    if (auto s = init(); !s.ok()) {
        log(Level::Err, "cannot start: " + s.error().message);
        shutdown();
        uv_run(&loop_, UV_RUN_DEFAULT);
        return 1;
    }
    log(Level::Notice, "daemonlet running on node " + node_state_->name() + ": " +
                           std::to_string(desired_.size()) + " DaemonSets, " + std::to_string(pods_.size()) +
                           " pods");
    update_status();
    notifier_->ready(notifier_status_);
    uv_run(&loop_, UV_RUN_DEFAULT);
    return exit_status_;
}

void Agent::update_status() {
    refresh_status_line();
    after_reconcile();
}

void Agent::refresh_status_line() {
    std::size_t running = 0;
    for (const auto& [uid, p] : pods_)
        if (p.rec.phase == PodPhase::Running) ++running;
    notifier_status_ = std::to_string(desired_.size()) + " DaemonSets, " + std::to_string(running) + "/" +
                       std::to_string(pods_.size()) + " pods running";
    if (cluster_)
        notifier_status_ += std::string(", API server ") + to_string(cluster_->state());
    else if (config_.api_server.enabled)
        notifier_status_ += ", API server not reachable (configuration error)";
    if (storage_) notifier_status_ += storage_->status_suffix();
    if (notifier_) notifier_->status(notifier_status_);
}

void Agent::on_signal(uv_signal_t* h, int signum) {
    auto* self = static_cast<Agent*>(h->data);
    if (signum == SIGHUP) {
        self->reload_config();
        return;
    }
    log(Level::Notice, std::string("received ") + (signum == SIGTERM ? "SIGTERM" : "SIGINT") +
                           ": stopping; pods keep running and the next agent adopts them");
    self->shutdown();
}

void Agent::reload_config() {
    auto loaded = load_config(config_path_);
    if (!loaded.ok()) {
        log(Level::Err, loaded.error().message);
        log(Level::Err, "SIGHUP: invalid configuration; keeping the current one");
        return;
    }
    AgentConfig next = std::move(loaded).value();
    if (next.state_dir != config_.state_dir || next.runtime_type != config_.runtime_type ||
        next.image_import_dir != config_.image_import_dir || next.runc_path != config_.runc_path ||
        next.runtime_rootfs != config_.runtime_rootfs ||
        next.registry_auth_file != config_.registry_auth_file ||
        next.registry_certs_dir != config_.registry_certs_dir ||
        next.insecure_registries != config_.insecure_registries ||
        next.cri_endpoint != config_.cri_endpoint || next.cri_snapshotter != config_.cri_snapshotter ||
        next.metrics_bind_address != config_.metrics_bind_address)
        log(Level::Warning,
            "SIGHUP: stateDir, runtime and metricsBindAddress change only on restart; keeping " +
                config_.state_dir + ", runtime " + config_.runtime_type + " and metricsBindAddress \"" +
                config_.metrics_bind_address + "\"");
    next.state_dir = config_.state_dir;
    next.runtime_type = config_.runtime_type;
    next.image_import_dir = config_.image_import_dir;
    next.runc_path = config_.runc_path;
    next.runtime_rootfs = config_.runtime_rootfs;
    // The runtime was made with them (its pulls' daemonlet-image arguments).
    next.registry_auth_file = config_.registry_auth_file;
    next.registry_certs_dir = config_.registry_certs_dir;
    next.insecure_registries = config_.insecure_registries;
    next.cri_endpoint = config_.cri_endpoint;
    next.cri_snapshotter = config_.cri_snapshotter;
    next.metrics_bind_address = config_.metrics_bind_address;
    bool dir_changed = next.manifest_dir != config_.manifest_dir ||
                       next.file_check_frequency_ms != config_.file_check_frequency_ms;
    const bool api_changed = next.api_server != config_.api_server;
    config_ = std::move(next);
    admission_.set_allowed_unsafe_sysctls(config_.allowed_unsafe_sysctls);
    runtime_ops_.set_limit(config_.max_parallel_operations);
    if (workers_) workers_->set_backoff_policy(crash_loop_policy(config_));
    log(Level::Notice, "SIGHUP: configuration reloaded; re-evaluating every DaemonSet");
    if (api_changed || (config_.api_server.enabled && !cluster_)) {
        // A new link, with the credentials read again; the cache keeps what
        // the new scope still follows until its first complete list.
        if (cluster_) {
            queued_events_.save_now();
            cluster_->close();
            // Its queue goes on in the next link, as is (not as the store
            // lists it: QueuedEvents::carry_from).
            queued_events_.carry_from(*cluster_);
            // The metrics' counters go on from the old link's counts.
            const ClusterLink::Counts c = cluster_->counts();
            cluster_counts_before_.relists += c.relists;
            cluster_counts_before_.watch_restarts += c.watch_restarts;
            cluster_counts_before_.events_sent += c.events_sent;
            cluster_counts_before_.events_dropped += c.events_dropped;
        }
        close_api_pods();
        cluster_.reset();
        sources_->keep_followed(config_.api_server);
        if (!config_.api_server.node_from_cluster) node_state_->forget_cluster_node();
        start_cluster(true);
        if (!dir_changed) rebuild_desired();
    }
    refresh_node();
    node_ips_->refresh(config_.node_ips);
    if (dir_changed) {
        // The old directory's files are not in the new one: its rescan
        // removes them, from the store too.
        watch_->close();
        watch_ = std::make_unique<platform::DirWatch>(&loop_, config_.manifest_dir, 30,
                                                      config_.file_check_frequency_ms,
                                                      [this] { rescan_manifests(); });
        watch_->start();
        rescan_manifests();
    }
    schedule_reconcile();
}

void Agent::on_node_ips_changed() {
    for (auto& [uid, p] : pods_) {
        const auto before = p.rec.pod_ips;
        refresh_pod_ips(p);
        if (p.rec.pod_ips != before) pods_.save(p);
    }
}

void Agent::shutdown() {
    if (stopping_) return;
    stopping_ = true;
    queued_events_.stop();
    if (notifier_) notifier_->stopping();
    if (watch_) watch_->close();
    if (images_) images_->close();
    close_api_pods();
    if (cluster_) {
        queued_events_.save_now();
        cluster_->close();
    }
    if (api_access_) api_access_->close();
    if (metrics_) metrics_->close();
    // An undo recorded and waiting on its flush is answered before the
    // control socket closes (its answer is written before the connection is).
    if (storage_) storage_->finish_flushes();
    if (control_) control_->close();  // removes the socket: clients see the agent is not running
    for (auto*& h : signals_) close_and_free(h);
    signals_.clear();
    close_and_free(reconcile_timer_);
    close_and_free(wake_timer_);
    close_and_free(rebuild_timer_);
    queued_events_.close();
    close_and_free(wall_clock_timer_);
    if (node_ips_) node_ips_->close();
    if (workers_) workers_->close();  // the restart timers
    if (probes_) probes_->close();
    if (hooks_) hooks_->close();  // containers keep running, their hooks are not the next agent's
    // Starts not begun are dropped, here and in the runtime (a runc start
    // held behind a leftover's delete); those in flight finish, and are
    // saved, before the runtime closes (pods.cpp close_runtime_when_idle).
    runtime_ops_.drop_queued();
    if (runtime_) runtime_->cancel_held_starts();
    close_runtime_when_idle();
    if (storage_) storage_->close();
    if (notifier_) notifier_->close();
}

}  // namespace daemonlet::agent
