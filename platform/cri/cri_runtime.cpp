#include "platform/cri/cri_runtime.h"

#include <grpc/grpc.h>
#include <uv.h>

#include <unistd.h>
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <optional>
#include <set>
#include <system_error>
#include <thread>
#include <utility>

#include "core/cri_config.h"
#include "core/pod_network.h"
#include "platform/cri/cri_client.h"
#include "platform/cri/cri_jobs.h"
#include "platform/file.h"
#include "platform/volume_setup.h"

namespace daemonlet::platform {
namespace {

namespace fs = std::filesystem;

constexpr int kShortDeadlineMs = 3000;
constexpr int kCreateDeadlineMs = 10000;
constexpr int kPullDeadlineMs = 30 * 60 * 1000;  // an image of GiBs on a slow link
constexpr int kSandboxStopDeadlineMs = 60000;
constexpr std::size_t kWorkers = 4;
// The threads that run the agent's start, inspect and remove calls: as many
// as the agent's default runtime.maxParallelOperations, apart from those of
// pulls (minutes each) and relists.
constexpr std::size_t kCallWorkers = 4;
// kubelet labels.go newContainerAnnotations.
constexpr char kGraceAnnotation[] = "io.kubernetes.pod.terminationGracePeriod";
constexpr char kRestartCountAnnotation[] = "io.kubernetes.container.restartCount";

// A name the agent made, that becomes a path component (the log
// directory, the emptyDirs): never a path of its own.
bool is_component(const std::string& s) {
    return !s.empty() && s != "." && s != ".." && s.find('/') == std::string::npos &&
           s.find('\0') == std::string::npos;
}

// The labels the agent gave at start: those of the kubelet (io.kubernetes.*)
// and the managed label are the CRI runtime's own.
std::map<std::string, std::string> agent_labels(const std::map<std::string, std::string>& all) {
    std::map<std::string, std::string> out;
    for (const auto& [k, v] : all)
        if (k.rfind("io.kubernetes.", 0) != 0 && k != kCriManagedLabel) out.emplace(k, v);
    return out;
}

std::string label(const std::map<std::string, std::string>& labels, std::string_view key) {
    auto it = labels.find(std::string(key));
    return it == labels.end() ? std::string() : it->second;
}

// A sandbox's network as pod_network keeps it: none while a sandbox of its
// own network has no IP yet (asked again next time).
std::optional<PodNetwork> network_of(const CriSandboxStatus& st) {
    PodNetwork net;
    net.host_network = st.host_network;
    net.ips = sandbox_pod_ips(st.ip, st.additional_ips);
    if (net.host_network || !net.ips.empty()) return net;
    return std::nullopt;
}

bool contains(const std::string& s, std::string_view what) { return s.find(what) != std::string::npos; }

// The error codes of Runtime::pull_image from containerd's reasons.
Error pull_error(const std::string& image, const Error& e) {
    std::string lower = e.message;
    std::transform(lower.begin(), lower.end(), lower.begin(),
                   [](unsigned char c) { return std::tolower(c); });
    ErrorCode code = ErrorCode::PullFailed;
    if (e.code == ErrorCode::Unavailable || contains(lower, "dial tcp") || contains(lower, "no such host") ||
        contains(lower, "connection refused") || contains(lower, "i/o timeout"))
        code = ErrorCode::Unreachable;
    else if (contains(lower, "401") || contains(lower, "403") || contains(lower, "unauthorized") ||
             contains(lower, "authorization failed"))
        code = ErrorCode::Unauthorized;
    else if (contains(lower, "not found"))
        code = ErrorCode::NotFound;
    return Error{code, "pulling image \"" + image + "\": " + e.message};
}

// gRPC's library, held for the runtime's life: its last holder's
// grpc_shutdown_blocking() joins gRPC's own threads before the runtime is
// gone, rather than leaving them to end while the process exits (where
// LeakSanitizer's stop-the-world crashed on one, now and then).
struct GrpcLibrary {
    GrpcLibrary() { grpc_init(); }
    ~GrpcLibrary() { grpc_shutdown_blocking(); }
    GrpcLibrary(const GrpcLibrary&) = delete;
    GrpcLibrary& operator=(const GrpcLibrary&) = delete;
};

class CriRuntime final : public Runtime {
  public:
    CriRuntime(uv_loop_t* loop, CriRuntimeOptions opts, std::unique_ptr<CriClient> client)
        : opts_(std::move(opts)),
          client_(std::move(client)),
          jobs_(loop, kWorkers),
          calls_(loop, kCallWorkers) {
        attach_loop(loop);
        relist_timer_ = new uv_timer_t;
        uv_timer_init(loop, relist_timer_);
        relist_timer_->data = this;
        uv_timer_start(
            relist_timer_, [](uv_timer_t* t) { static_cast<CriRuntime*>(t->data)->tick(); },
            kRelistIntervalMs, kRelistIntervalMs);
    }
    ~CriRuntime() override { close(); }

    const char* name() const override { return "cri"; }
    void set_exit_handler(std::function<void(const std::string& id)> handler) override {
        exit_handler_ = std::move(handler);
    }
    Result<std::string> start(const ContainerLaunch& launch) override;
    void start_async(ContainerLaunch launch, std::function<void(Result<std::string>)> done) override;
    Status stop(const std::string& id) override;
    // StopContainer's timeout: what the preStop hook left.
    void set_stop_grace(const std::string& id, std::int64_t grace_seconds) override {
        if (auto w = watched_.find(id); w != watched_.end()) w->second.grace_seconds = grace_seconds;
    }
    Result<ContainerInfo> inspect(const std::string& id) override;
    void inspect_async(const std::string& id, std::function<void(Result<ContainerInfo>)> done) override;
    void remove_async(const std::string& id, std::function<void(Status)> done) override;
    Result<std::vector<ContainerInfo>> adopt_all() override;
    Status remove(const std::string& id) override;
    void pod_removed(const std::string& pod_uid) override;
    std::optional<std::vector<std::string>> exec_in(const std::string& id,
                                                    const std::vector<std::string>& command) const override;
    bool can_pull() const override { return true; }
    void pull_image(const std::string& image, std::function<void(Status)> done) override;
    Result<PodNetwork> pod_network(const std::string& id) const override;
    bool has_image(const std::string& image) const override {
        auto r = client_->has_image(image, kShortDeadlineMs);
        return r.ok() && r.value();
    }
    void close() override;
    std::string version_string() const override { return version_; }

  private:
    struct Watched {
        std::uint64_t since = 0;  // the relist generation it was added in
        std::int64_t grace_seconds = 30;
    };
    struct Started {
        std::string id;
        std::string sandbox_id;
        // The sandbox's network, from the PodSandboxStatus the start made
        // on its worker: kept for pod_network, which the agent asks on the
        // loop as the container is seen running.
        std::optional<PodNetwork> network;
    };
    // What start() checks on the loop, before any call.
    Status check(const ContainerLaunch& launch) const;
    // Every gRPC call of a start: touches only the client and the file
    // system, so it runs on a worker thread as well as on the loop.
    Result<Started> run_start(const ContainerLaunch& launch) const;
    void started(const Started& s, std::int64_t grace_seconds) {
        watch(s.id, grace_seconds);
        sandbox_of_[s.id] = s.sandbox_id;
        if (s.network) networks_[s.id] = *s.network;
    }
    Result<std::string> ensure_sandbox(const CriSandboxConfig& base, CriSandboxConfig& used) const;
    Status mount_hosts_file(const std::string& sandbox_id, CriPodInput& pod, const Container& c,
                            CriContainerConfig& config, std::optional<PodNetwork>& network) const;
    Result<std::string> create(const std::string& sandbox_id, const CriContainerConfig& config,
                               const CriLabels& annotations, const CriSandboxConfig& sandbox) const;
    void watch(const std::string& id, std::int64_t grace_seconds) {
        watched_[id] = Watched{generation_, grace_seconds};
    }
    void relist();
    // The relist timer: the failed stops again, then a relist.
    void tick() {
        for (const std::string& id : std::exchange(stop_again_, {}))
            if (watched_.count(id)) (void)stop(id);
        relist();
    }
    ContainerInfo info_of(const CriContainerStatus& st) const;
    std::string pod_dir(const std::string& uid) const { return opts_.runtime_dir + "/pods/" + uid; }

    GrpcLibrary grpc_;  // first: destroyed last, after the client and the workers
    CriRuntimeOptions opts_;
    std::unique_ptr<CriClient> client_;
    LoopJobs jobs_;
    LoopJobs calls_;
    uv_timer_t* relist_timer_ = nullptr;
    std::function<void(const std::string&)> exit_handler_;
    std::map<std::string, Watched> watched_;
    std::uint64_t generation_ = 0;  // bumped when a relist is posted
    bool relisting_ = false;
    std::set<std::string> stop_again_;  // watched containers whose StopContainer failed
    std::map<std::string, std::vector<std::function<void(Status)>>> pulls_;
    // Each container's sandbox (from start() and adopt_all()), and its
    // network once asked for: a sandbox keeps its network namespace, hence
    // its IPs, for its whole life, so one PodSandboxStatus per container.
    std::map<std::string, std::string> sandbox_of_;
    mutable std::map<std::string, PodNetwork> networks_;
    std::string version_;  // "containerd://v1.6.20", read by adopt_all
    bool closed_ = false;
};

Result<std::string> CriRuntime::ensure_sandbox(const CriSandboxConfig& base, CriSandboxConfig& used) const {
    used = base;
    auto found = client_->list_sandboxes(
        {{std::string(kCriPodUidLabel), base.uid}, {std::string(kCriManagedLabel), "true"}},
        kShortDeadlineMs);
    if (!found) return found.error();
    const CriSandbox* ready = nullptr;
    std::uint32_t next_attempt = 0;
    for (const auto& s : found.value()) {
        next_attempt = std::max(next_attempt, s.attempt + 1);
        if (s.ready && (!ready || s.attempt > ready->attempt)) ready = &s;
    }
    if (ready) {
        used.attempt = ready->attempt;
        return ready->id;
    }
    // None, or none ready (its pause process died, the node rebooted): a
    // new one with the next attempt (kuberuntime_manager.go
    // podSandboxChanged, computePodActions).
    used.attempt = next_attempt;
    std::error_code ec;
    fs::create_directories(used.log_directory, ec);
    if (ec) return Error{ErrorCode::Io, used.log_directory + ": " + ec.message()};
    return client_->run_sandbox(used, kRunSandboxDeadlineMs);
}

Result<std::string> CriRuntime::create(const std::string& sandbox_id, const CriContainerConfig& config,
                                       const CriLabels& annotations, const CriSandboxConfig& sandbox) const {
    auto id = client_->create_container(sandbox_id, config, annotations, sandbox, kCreateDeadlineMs);
    if (id || !contains(id.error().message, "reserved")) return id;
    // The name <container>_<pod>_<namespace>_<uid>_<attempt> is taken by an
    // exited container of an earlier agent (its database lost, so the
    // restart count began again): it goes, and the create is tried again.
    auto listed = client_->list_containers(
        {{std::string(kCriPodUidLabel), sandbox.uid}, {std::string(kCriContainerNameLabel), config.name}},
        kShortDeadlineMs);
    if (!listed) return id;
    for (const auto& c : listed.value())
        if (c.attempt == config.attempt && c.state != CriState::Running)
            (void)client_->remove_container(c.id, kCreateDeadlineMs);
    return client_->create_container(sandbox_id, config, annotations, sandbox, kCreateDeadlineMs);
}

// The kubelet's /etc/hosts rather than containerd's (cri_hosts_file), as
// makeMounts gives it to each container at its start: written again from
// the sandbox's IPs (one PodSandboxStatus, of up to kShortDeadlineMs; a
// new sandbox has them once RunPodSandbox has returned) and the node's
// /etc/hosts, to <pod dir>/etc-hosts (kubelet_pods.go getEtcHostsPath).
// Each container of the pod writes the same text under its own temporary
// name (replace_file), so two starting at once never mix their writes.
Status CriRuntime::mount_hosts_file(const std::string& sandbox_id, CriPodInput& pod, const Container& c,
                                    CriContainerConfig& config, std::optional<PodNetwork>& network) const {
    auto st = client_->sandbox_status(sandbox_id, kShortDeadlineMs);
    if (!st) return st.error();
    // What pod_network would ask on the loop, kept as it keeps it.
    network = network_of(st.value());
    if (pod.spec->host_network) {
        // nodeHostsFileContent: the node's file, bounded as the runc
        // runtime reads it (runc_security.cpp); the kubelet fails the
        // container without it.
        auto hosts = read_file("/etc/hosts", 1024 * 1024);
        if (!hosts)
            return Error{ErrorCode::Io,
                         "the node's hosts file for hostNetwork pods: " + hosts.error().message};
        pod.host_hosts = std::move(hosts).value();
    }
    const auto text = cri_hosts_file(pod, c, sandbox_pod_ips(st.value().ip, st.value().additional_ips));
    if (!text) return Ok{};
    const std::string dir = pod_dir(pod.uid);
    if (auto s = make_dirs(dir); !s) return s;
    const std::string path = dir + "/etc-hosts";
    if (auto s = replace_file(path, *text, c.name); !s) return s;
    config.mounts.push_back(cri_hosts_mount(path));
    return Ok{};
}

Status CriRuntime::check(const ContainerLaunch& launch) const {
    if (closed_) return Error{ErrorCode::Closed, "cri runtime: closed"};
    if (!launch.container || !launch.pod_spec)
        return Error{ErrorCode::Invalid,
                     "cri runtime: container " + launch.container_name + " started without its spec"};
    for (const auto* s : {&launch.pod_uid, &launch.pod_name, &launch.pod_namespace, &launch.container_name})
        if (!is_component(*s))
            return Error{ErrorCode::Invalid, "cri runtime: \"" + *s + "\" cannot name a directory"};
    return Ok{};
}

Result<std::string> CriRuntime::start(const ContainerLaunch& launch) {
    if (auto s = check(launch); !s) return s.error();
    auto r = run_start(launch);
    if (!r) return r.error();
    started(r.value(), launch.grace_seconds);
    return r.value().id;
}

// The calls of start() on a worker thread (calls_): a RunPodSandbox of up
// to kRunSandboxDeadlineMs, a containerd that answers late or not at all,
// hold that thread and the pod's start, not the loop.
void CriRuntime::start_async(ContainerLaunch launch, std::function<void(Result<std::string>)> done) {
    if (auto s = check(launch); !s) {
        post([done = std::move(done), e = s.error()] { done(e); });
        return;
    }
    auto shared = std::make_shared<const ContainerLaunch>(std::move(launch));
    calls_.post([this, shared, done = std::move(done)]() -> LoopJobs::Continuation {
        auto r = run_start(*shared);
        return [this, shared, done, r = std::move(r)]() {
            if (!r) {
                done(r.error());
                return;
            }
            started(r.value(), shared->grace_seconds);
            done(r.value().id);
        };
    });
}

Result<CriRuntime::Started> CriRuntime::run_start(const ContainerLaunch& launch) const {
    const Container& c = *launch.container;

    auto status = client_->image_status(c.image, kShortDeadlineMs);
    if (!status) return status.error();
    if (!status.value().present) {
        if (c.image_pull_policy == "Never")
            return Error{ErrorCode::ImageNotFound, "image \"" + c.image +
                                                       "\" is not present in the CRI runtime at " +
                                                       client_->endpoint() + " and imagePullPolicy is Never"};
        // The agent pulls it (pull_image) as imagePullPolicy says, and
        // starts the container again once the pull lands.
        return Error{ErrorCode::ImageNotFound,
                     "image \"" + c.image + "\" is not present in the CRI runtime at " + client_->endpoint()};
    }

    CriPodInput pod;
    pod.spec = launch.pod_spec.get();
    pod.name = launch.pod_name;
    pod.namespace_ = launch.pod_namespace;
    pod.uid = launch.pod_uid;
    pod.log_root = opts_.runtime_dir + "/logs";
    pod.labels = launch.labels;
    pod.annotations = launch.annotations;
    CriContainerInput in;
    in.container = &c;
    in.restart_count = launch.restart_count;
    in.env = launch.env;
    // Expanded by the agent; the image's entrypoint is kept when only args
    // are given (cri_container_config).
    in.command = c.command;
    in.args = c.args;
    // The agent's own volumes (config, secret, downward API) first; hostPath
    // and emptyDir are the runtime's.
    in.volume_host_paths = launch.volume_host_paths;
    in.image_user = status.value().user;
    in.oom_score_adj = launch.oom_score_adj;
    pod.seccomp_profile_root = opts_.seccomp_profile_root;
    pod.cluster_dns = opts_.cluster_dns;
    pod.cluster_domain = opts_.cluster_domain;
    // Bounded, as the runc runtime reads it (runc_security.cpp).
    if (auto resolv = read_file("/etc/resolv.conf", 1024 * 1024))
        pod.host_resolv_conf = std::move(resolv).value();
    for (const auto& v : launch.pod_spec->volumes) {
        if (v.source == Volume::Source::HostPath) {
            if (auto s = set_up_host_path(v); !s) return s.error();
            in.volume_host_paths[v.name] = v.host_path;
        } else if (v.source == Volume::Source::EmptyDir) {
            // Per pod, not per container: it outlives the container's restarts.
            std::string dir = pod_dir(launch.pod_uid) + "/volumes/" + v.name;
            const auto& psc = launch.pod_spec->security_context;
            if (auto s = set_up_empty_dir(v, dir, psc ? psc->fs_group : std::nullopt,
                                          tmpfs_size_of(launch.memory_volume_bytes, v.name));
                !s)
                return s.error();
            in.volume_host_paths[v.name] = dir;
        }
    }
    auto config = cri_container_config(pod, in);
    if (!config) return config.error();
    CriSandboxConfig sandbox;
    auto sandbox_id = ensure_sandbox(cri_sandbox_config(pod), sandbox);
    if (!sandbox_id) return sandbox_id.error();
    std::optional<PodNetwork> network;
    if (auto s = mount_hosts_file(sandbox_id.value(), pod, c, config.value(), network); !s) return s.error();
    std::error_code ec;
    fs::create_directories(sandbox.log_directory + "/" + c.name, ec);
    const CriLabels annotations = {{kGraceAnnotation, std::to_string(launch.grace_seconds)},
                                   {kRestartCountAnnotation, std::to_string(launch.restart_count)}};
    auto id = create(sandbox_id.value(), config.value(), annotations, sandbox);
    if (!id) return id.error();
    if (auto s = client_->start_container(id.value(), kCreateDeadlineMs); !s) {
        (void)client_->remove_container(id.value(), kCreateDeadlineMs);
        return s.error();
    }
    return Started{id.value(), sandbox_id.value(), std::move(network)};
}

Status CriRuntime::stop(const std::string& id) {
    if (closed_) return Error{ErrorCode::Closed, "cri runtime: closed"};
    auto w = watched_.find(id);
    const std::int64_t grace = w == watched_.end() ? 30 : w->second.grace_seconds;
    CriClient* client = client_.get();
    // The exit reaches the handler through a relist. The agent asks for a
    // pod's stop once, so a StopContainer that fails (containerd slow past
    // the deadline, or down) is asked again at each relist tick until the
    // container is gone, as kubelet's pod worker retries killPod at each
    // sync.
    jobs_.post([this, client, id, grace]() -> LoopJobs::Continuation {
        const bool stopped = client->stop_container(id, grace, static_cast<int>((grace + 10) * 1000)).ok();
        // StopContainer returns once the container is gone: relist now
        // rather than at the next tick, so that a rolling update does not
        // wait up to kRelistIntervalMs for the exit.
        return [this, id, stopped] {
            if (!stopped && watched_.count(id)) stop_again_.insert(id);
            relist();
        };
    });
    return Ok{};
}

ContainerInfo CriRuntime::info_of(const CriContainerStatus& st) const {
    ContainerInfo info;
    const auto& labels = st.container.labels;
    info.id = st.container.id;
    info.pod_uid = label(labels, kCriPodUidLabel);
    info.pod_name = label(labels, kCriPodNameLabel);
    info.pod_namespace = label(labels, kCriPodNamespaceLabel);
    info.container_name = st.container.name;
    info.labels = agent_labels(labels);
    info.running = st.container.state == CriState::Running;
    info.pid = st.pid;
    info.started_at_ms = st.started_at_ns / 1'000'000;
    info.log_path = st.log_path;
    info.image_ref = st.image_ref;
    if (!info.running) {
        info.exit_code = st.exit_code;
        info.reason = !st.reason.empty() ? st.reason : st.exit_code == 0 ? "Completed" : "Error";
        if (st.container.state == CriState::Created) info.reason = "ContainerCannotRun";
        info.finished_at_ms = st.finished_at_ns / 1'000'000;
    }
    return info;
}

Result<ContainerInfo> CriRuntime::inspect(const std::string& id) {
    auto st = client_->container_status(id, kShortDeadlineMs);
    if (!st) return st.error();
    return info_of(st.value());
}

void CriRuntime::inspect_async(const std::string& id, std::function<void(Result<ContainerInfo>)> done) {
    CriClient* client = client_.get();
    calls_.post([this, client, id, done = std::move(done)]() -> LoopJobs::Continuation {
        auto st = client->container_status(id, kShortDeadlineMs);
        return [this, done, st = std::move(st)]() {
            if (!st) {
                done(st.error());
                return;
            }
            done(info_of(st.value()));
        };
    });
}

void CriRuntime::remove_async(const std::string& id, std::function<void(Status)> done) {
    watched_.erase(id);
    sandbox_of_.erase(id);
    networks_.erase(id);
    CriClient* client = client_.get();
    calls_.post([client, id, done = std::move(done)]() -> LoopJobs::Continuation {
        auto s = client->remove_container(id, kCreateDeadlineMs);
        if (!s && s.error().code == ErrorCode::NotFound) s = Ok{};
        return [done, s = std::move(s)]() { done(s); };
    });
}

// Adoption, at the agent's start and before READY, costs a few round trips
// whatever the number of containers, as the kubelet's relist
// (pkg/kubelet/pleg/generic.go) lists them in one call: the connection,
// then Version beside ListContainers, then every container's
// ContainerStatus and every running sandbox's PodSandboxStatus at once
// (CriClient::container_statuses, sandbox_statuses). ListContainers
// alone does not say what the agent needs: started_at, the exit code and
// finished_at, and the image's repo digest (its image_ref is the image's
// id, ContainerStatus's the digest). With answers 500 ms late, 50 cached
// containers took 52 s one ContainerStatus after the other; a runtime that
// does not answer holds the start at most kAdoptDeadlineMs + two
// kShortDeadlineMs (one more per kMaxStatusesInFlight containers beyond the
// first).
Result<std::vector<ContainerInfo>> CriRuntime::adopt_all() {
    const bool ready = client_->wait_ready(kAdoptDeadlineMs);
    // The runtime's name and version for the Node's nodeInfo, asked once at
    // start when the runtime answers: "containerd v1.6.20" becomes the
    // kubelet's "containerd://v1.6.20".
    CriClient* client = client_.get();
    std::optional<Result<std::string>> version;
    std::thread asking;
    if (ready) asking = std::thread([client, &version] { version = client->version(kShortDeadlineMs); });
    auto listed = client_->list_containers({{std::string(kCriManagedLabel), "true"}}, kShortDeadlineMs);
    if (asking.joinable()) asking.join();
    if (version && version->ok()) {
        version_ = version->value();
        if (auto sp = version_.find(' '); sp != std::string::npos) version_.replace(sp, 1, "://");
    }
    if (!listed) return listed.error();
    // Beside the containers' statuses, their sandboxes', for pod_network:
    // the agent asks it for every adopted container in its first reconcile
    // (an exited one too, until its exit is inspected), before READY, and
    // one PodSandboxStatus per container there cost as much as the
    // adoption (with 500 ms answers, 25 s for 50 pods).
    std::vector<std::string> ids, sandboxes;
    for (const auto& c : listed.value()) {
        ids.push_back(c.id);
        if (!c.sandbox_id.empty() &&
            std::find(sandboxes.begin(), sandboxes.end(), c.sandbox_id) == sandboxes.end())
            sandboxes.push_back(c.sandbox_id);
    }
    std::vector<Result<CriSandboxStatus>> sandbox_statuses;
    asking = std::thread([&] { sandbox_statuses = client->sandbox_statuses(sandboxes, kShortDeadlineMs); });
    auto statuses = client_->container_statuses(ids, kShortDeadlineMs);
    asking.join();
    std::map<std::string, PodNetwork> network_of_sandbox;
    for (std::size_t i = 0; i < sandboxes.size(); ++i)
        if (sandbox_statuses[i])
            if (auto net = network_of(sandbox_statuses[i].value())) network_of_sandbox[sandboxes[i]] = *net;
    std::vector<ContainerInfo> out;
    for (std::size_t i = 0; i < ids.size(); ++i) {
        const CriContainer& c = listed.value()[i];
        // A call of the batch that failed otherwise than NotFound (the
        // batch's deadline on a busy runtime) is asked again on its own, as
        // every call was before: a container forgotten here would still run,
        // unwatched, beside the second copy its pod would start.
        if (!statuses[i] && statuses[i].error().code != ErrorCode::NotFound)
            statuses[i] = client_->container_status(c.id, kShortDeadlineMs);
        if (!statuses[i]) continue;  // removed meanwhile
        ContainerInfo info = info_of(statuses[i].value());
        sandbox_of_[c.id] = c.sandbox_id;
        if (auto net = network_of_sandbox.find(c.sandbox_id); net != network_of_sandbox.end())
            networks_[c.id] = net->second;
        if (info.running) {
            std::int64_t grace = 30;
            if (auto g = c.annotations.find(kGraceAnnotation); g != c.annotations.end())
                grace = std::max<std::int64_t>(0, std::atoll(g->second.c_str()));
            watch(c.id, grace);
        }
        out.push_back(std::move(info));
    }
    return out;
}

Status CriRuntime::remove(const std::string& id) {
    watched_.erase(id);
    sandbox_of_.erase(id);
    networks_.erase(id);
    auto s = client_->remove_container(id, kCreateDeadlineMs);
    if (!s && s.error().code == ErrorCode::NotFound) return Ok{};
    return s;
}

void CriRuntime::pod_removed(const std::string& pod_uid) {
    if (closed_ || !is_component(pod_uid)) return;
    std::error_code ec;
    tear_down_empty_dirs(pod_dir(pod_uid) + "/volumes");
    fs::remove_all(pod_dir(pod_uid), ec);
    CriClient* client = client_.get();
    jobs_.post([client, pod_uid]() -> LoopJobs::Continuation {
        auto found = client->list_sandboxes(
            {{std::string(kCriPodUidLabel), pod_uid}, {std::string(kCriManagedLabel), "true"}},
            kShortDeadlineMs);
        if (!found) return {};
        for (const auto& s : found.value()) {
            // kubelet: StopPodSandbox at least once before RemovePodSandbox.
            (void)client->stop_sandbox(s.id, kSandboxStopDeadlineMs);
            (void)client->remove_sandbox(s.id, kSandboxStopDeadlineMs);
        }
        return {};
    });
}

std::optional<std::vector<std::string>> CriRuntime::exec_in(const std::string& id,
                                                            const std::vector<std::string>& command) const {
    // The agent makes this command line once per probe and runs it every
    // period: a shell gives each run its own exec id (containerd refuses
    // an exec id that is still in use, as one a timed-out run left is).
    std::vector<std::string> argv = {"/bin/sh",
                                     "-c",
                                     "c=$0 a=$1 id=$2; shift 2; "
                                     "exec \"$c\" --address \"$a\" --namespace k8s.io tasks exec --exec-id "
                                     "\"daemonlet-probe-$$\" \"$id\" \"$@\"",
                                     opts_.ctr,
                                     opts_.endpoint.substr(std::string_view("unix://").size()),
                                     id};
    argv.insert(argv.end(), command.begin(), command.end());
    return argv;
}

// The pod's IPs, as the kubelet has them (PodSandboxStatus network.ip and
// additional_ips), for its probes and its status. Probes then connect to
// the pod's IP from the agent's own network namespace, as kubelet's prober
// dials status.PodIP from the host (pkg/kubelet/prober/prober.go runProbe),
// rather than from inside the sandbox's namespace (probe_netns, through
// the pause process's /proc/<pid>/ns/net, as the runc runtime must, having
// no pod IP): a server listening on the pod's loopback only is then unready
// here as under the kubelet, and the CNI plugin's routes are tested too.
Result<PodNetwork> CriRuntime::pod_network(const std::string& id) const {
    if (auto it = networks_.find(id); it != networks_.end()) return it->second;
    auto sb = sandbox_of_.find(id);
    if (sb == sandbox_of_.end() || sb->second.empty())
        return Error{ErrorCode::NotFound, "cri runtime: container " + id + " has no known pod sandbox"};
    auto st = client_->sandbox_status(sb->second, kShortDeadlineMs);
    if (!st) return st.error();
    auto net = network_of(st.value());
    if (!net) {  // a sandbox of its own network without an IP (yet): asked again next time
        PodNetwork none;
        none.host_network = false;
        return none;
    }
    networks_[id] = *net;
    return *net;
}

void CriRuntime::pull_image(const std::string& image, std::function<void(Status)> done) {
    auto& waiting = pulls_[image];
    waiting.push_back(std::move(done));
    if (waiting.size() > 1) return;  // one fetch per image at once
    CriClient* client = client_.get();
    jobs_.post([this, client, image]() -> LoopJobs::Continuation {
        Status s = client->pull_image(image, kPullDeadlineMs);
        return [this, image, s]() {
            auto it = pulls_.find(image);
            if (it == pulls_.end()) return;
            auto callbacks = std::move(it->second);
            pulls_.erase(it);
            Status result = s ? Status(Ok{}) : Status(pull_error(image, s.error()));
            for (auto& cb : callbacks) cb(result);
        };
    });
}

void CriRuntime::relist() {
    if (closed_ || relisting_ || watched_.empty()) return;
    relisting_ = true;
    const std::uint64_t generation = ++generation_;
    CriClient* client = client_.get();
    jobs_.post([this, client, generation]() -> LoopJobs::Continuation {
        auto listed = client->list_containers({{std::string(kCriManagedLabel), "true"}}, kShortDeadlineMs);
        return [this, generation, listed = std::move(listed)]() {
            relisting_ = false;
            if (!listed) return;  // the runtime is down: nothing is known to have exited
            std::set<std::string> running;
            for (const auto& c : listed.value())
                if (c.state == CriState::Running || c.state == CriState::Created) running.insert(c.id);
            std::vector<std::string> exited;
            for (const auto& [id, w] : watched_)
                if (w.since < generation && running.count(id) == 0) exited.push_back(id);
            for (const auto& id : exited) {
                // Once per exit: it is no longer watched.
                if (watched_.erase(id) == 0) continue;
                if (exit_handler_) exit_handler_(id);
                if (closed_) return;
            }
        };
    });
}

void CriRuntime::close() {
    if (closed_) return;
    closed_ = true;
    if (relist_timer_) {
        uv_close(reinterpret_cast<uv_handle_t*>(relist_timer_),
                 [](uv_handle_t* h) { delete reinterpret_cast<uv_timer_t*>(h); });
        relist_timer_ = nullptr;
    }
    client_->cancel_all();
    jobs_.close();
    calls_.close();
    pulls_.clear();
}

}  // namespace

static Result<std::unique_ptr<Runtime>> make_runtime(uv_loop_s* loop, CriRuntimeOptions options) {
    constexpr std::string_view scheme = "unix://";
    if (options.endpoint.rfind(scheme, 0) != 0 || options.endpoint.size() <= scheme.size() ||
        options.endpoint[scheme.size()] != '/')
        return Error{ErrorCode::Invalid, "runtime.endpoint: \"" + options.endpoint +
                                             "\": expected unix:///<absolute path of the CRI socket>"};
    std::error_code ec;
    options.runtime_dir = fs::absolute(options.runtime_dir, ec).lexically_normal().string();
    while (options.runtime_dir.size() > 1 && options.runtime_dir.back() == '/')
        options.runtime_dir.pop_back();
    fs::create_directories(options.runtime_dir + "/logs", ec);
    if (ec) return Error{ErrorCode::Io, options.runtime_dir + "/logs: " + ec.message()};
    // The socket of the containerd whose pods this agent runs, for the
    // package's purge (dist/debian/postrm), which runs once the agent is
    // gone: it stops them there by their label (kCriManagedLabel).
    const std::string record = options.runtime_dir + "/cri-endpoint";
    {
        std::ofstream out(record + ".tmp", std::ios::trunc);
        out << options.endpoint << '\n';
        out.close();
        if (!out || std::rename((record + ".tmp").c_str(), record.c_str()) != 0)
            return Error{ErrorCode::Io, record + ": cannot be written"};
    }
    auto client = make_cri_client(options.endpoint);
    if (!client) return client.error();
    return std::unique_ptr<Runtime>(new CriRuntime(loop, std::move(options), std::move(client).value()));
}

}  // namespace daemonlet::platform

// The module's one export (platform/cri/cri_loader.cpp looks it up).
extern "C" __attribute__((visibility("default"))) daemonlet::platform::CriRuntimeFactory
daemonlet_cri_factory() {
    return &daemonlet::platform::make_runtime;
}
