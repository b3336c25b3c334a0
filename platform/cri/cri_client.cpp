#include "platform/cri/cri_client.h"

#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <chrono>
#include <mutex>
#include <set>

#include "platform/cri/api.grpc.pb.h"

namespace daemonlet::platform {
namespace {

namespace v1 = runtime::v1;

// The RPC's answers are small; a pull's is one digest.
constexpr int kMaxMessageBytes = 16 * 1024 * 1024;

v1::NamespaceMode mode(CriNamespaceMode m) { return static_cast<v1::NamespaceMode>(static_cast<int>(m)); }

void fill_sandbox(const CriSandboxConfig& in, v1::PodSandboxConfig& out) {
    auto* md = out.mutable_metadata();
    md->set_name(in.name);
    md->set_namespace_(in.namespace_);
    md->set_uid(in.uid);
    md->set_attempt(in.attempt);
    out.set_hostname(in.hostname);
    out.set_log_directory(in.log_directory);
    for (const auto& v : in.dns.nameservers) out.mutable_dns_config()->add_servers(v);
    for (const auto& v : in.dns.searches) out.mutable_dns_config()->add_searches(v);
    for (const auto& v : in.dns.options) out.mutable_dns_config()->add_options(v);
    for (const auto& [k, v] : in.labels) (*out.mutable_labels())[k] = v;
    for (const auto& [k, v] : in.annotations) (*out.mutable_annotations())[k] = v;
    for (const auto& m : in.port_mappings) {
        auto* pm = out.add_port_mappings();
        pm->set_protocol(static_cast<v1::Protocol>(static_cast<int>(m.protocol)));
        pm->set_container_port(m.container_port);
        pm->set_host_port(m.host_port);
        pm->set_host_ip(m.host_ip);
    }
    auto* sc = out.mutable_linux()->mutable_security_context();
    sc->set_privileged(in.privileged);
    if (in.run_as_user) sc->mutable_run_as_user()->set_value(*in.run_as_user);
    if (in.run_as_group) sc->mutable_run_as_group()->set_value(*in.run_as_group);
    for (auto g : in.supplemental_groups) sc->add_supplemental_groups(g);
    sc->mutable_seccomp()->set_profile_type(
        static_cast<v1::SecurityProfile::ProfileType>(static_cast<int>(in.seccomp)));
    for (const auto& [k, v] : in.sysctls) (*out.mutable_linux()->mutable_sysctls())[k] = v;
    auto* ns = sc->mutable_namespace_options();
    ns->set_network(mode(in.network));
    ns->set_pid(mode(in.pid));
    ns->set_ipc(mode(in.ipc));
}

void fill_container(const CriContainerConfig& in, const CriLabels& annotations, v1::ContainerConfig& out) {
    out.mutable_metadata()->set_name(in.name);
    out.mutable_metadata()->set_attempt(in.attempt);
    out.mutable_image()->set_image(in.image);
    for (const auto& a : in.command) out.add_command(a);
    for (const auto& a : in.args) out.add_args(a);
    out.set_working_dir(in.working_dir);
    for (const auto& [k, v] : in.envs) {
        auto* kv = out.add_envs();
        kv->set_key(k);
        kv->set_value(v);
    }
    for (const auto& m : in.mounts) {
        auto* pm = out.add_mounts();
        pm->set_container_path(m.container_path);
        pm->set_host_path(m.host_path);
        pm->set_readonly(m.readonly);
        pm->set_propagation(static_cast<v1::MountPropagation>(static_cast<int>(m.propagation)));
    }
    for (const auto& [k, v] : in.labels) (*out.mutable_labels())[k] = v;
    for (const auto& [k, v] : annotations) (*out.mutable_annotations())[k] = v;
    out.set_log_path(in.log_path);
    auto* lx = out.mutable_linux();
    auto* r = lx->mutable_resources();
    r->set_memory_limit_in_bytes(in.memory_limit_in_bytes);
    r->set_cpu_shares(in.cpu_shares);
    r->set_cpu_quota(in.cpu_quota);
    r->set_cpu_period(in.cpu_period);
    if (in.oom_score_adj) r->set_oom_score_adj(*in.oom_score_adj);
    auto* sc = lx->mutable_security_context();
    sc->set_privileged(in.privileged);
    for (const auto& c : in.capabilities_add) sc->mutable_capabilities()->add_add_capabilities(c);
    for (const auto& c : in.capabilities_drop) sc->mutable_capabilities()->add_drop_capabilities(c);
    if (in.run_as_user) sc->mutable_run_as_user()->set_value(*in.run_as_user);
    if (in.run_as_group) sc->mutable_run_as_group()->set_value(*in.run_as_group);
    sc->set_run_as_username(in.run_as_username);
    sc->set_readonly_rootfs(in.readonly_rootfs);
    for (auto g : in.supplemental_groups) sc->add_supplemental_groups(g);
    sc->set_no_new_privs(in.no_new_privs);
    for (const auto& p : in.masked_paths) sc->add_masked_paths(p);
    for (const auto& p : in.readonly_paths) sc->add_readonly_paths(p);
    sc->mutable_seccomp()->set_profile_type(
        static_cast<v1::SecurityProfile::ProfileType>(static_cast<int>(in.seccomp)));
    sc->mutable_seccomp()->set_localhost_ref(in.seccomp_localhost_ref);
    auto* ns = sc->mutable_namespace_options();
    ns->set_network(mode(in.network));
    ns->set_pid(mode(in.pid));
    ns->set_ipc(mode(in.ipc));
}

CriState state(v1::ContainerState s) {
    switch (s) {
    case v1::CONTAINER_CREATED: return CriState::Created;
    case v1::CONTAINER_RUNNING: return CriState::Running;
    case v1::CONTAINER_EXITED: return CriState::Exited;
    default: return CriState::Unknown;
    }
}

template <typename Map>
CriLabels to_map(const Map& m) {
    return CriLabels(m.begin(), m.end());
}

// containerd's verbose ContainerStatus info: {"info": "{... \"pid\": 1234, ...}"}.
int pid_of(const google::protobuf::Map<std::string, std::string>& info) {
    auto it = info.find("info");
    if (it == info.end()) return 0;
    const std::string& s = it->second;
    std::size_t at = s.find("\"pid\":");
    if (at == std::string::npos) return 0;
    at += 6;
    while (at < s.size() && s[at] == ' ') ++at;
    long pid = 0;
    while (at < s.size() && s[at] >= '0' && s[at] <= '9' && pid < 1'000'000'000)
        pid = pid * 10 + (s[at++] - '0');
    return static_cast<int>(pid);
}

CriContainerStatus status_of(const v1::ContainerStatusResponse& resp) {
    const auto& st = resp.status();
    CriContainerStatus out;
    out.container = CriContainer{st.id(),
                                 "",
                                 st.metadata().name(),
                                 st.metadata().attempt(),
                                 state(st.state()),
                                 st.created_at(),
                                 to_map(st.labels()),
                                 to_map(st.annotations())};
    out.started_at_ns = st.started_at();
    out.finished_at_ns = st.finished_at();
    out.exit_code = st.exit_code();
    out.reason = st.reason();
    out.message = st.message();
    out.log_path = st.log_path();
    out.image_ref = st.image_ref();
    if (out.container.state == CriState::Running) out.pid = pid_of(resp.info());
    return out;
}

CriSandboxStatus sandbox_status_of(const v1::PodSandboxStatusResponse& resp) {
    const auto& st = resp.status();
    CriSandboxStatus out;
    out.id = st.id();
    out.ready = st.state() == v1::SANDBOX_READY;
    out.host_network = st.linux().namespaces().options().network() == v1::NODE;
    out.ip = st.network().ip();
    for (const auto& ip : st.network().additional_ips()) out.additional_ips.push_back(ip.ip());
    return out;
}

class GrpcCriClient final : public CriClient {
  public:
    explicit GrpcCriClient(const std::string& endpoint) : CriClient(endpoint) {
        grpc::ChannelArguments args;
        args.SetMaxReceiveMessageSize(kMaxMessageBytes);
        // A runtime that was down is tried again within 2 s, not after
        // gRPC's default back-off of up to 120 s: the agent's
        // restarts come back as soon as containerd does.
        args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 500);
        args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 500);
        args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 2000);
        channel_ = grpc::CreateCustomChannel(endpoint, grpc::InsecureChannelCredentials(), args);
        runtime_ = v1::RuntimeService::NewStub(channel_);
        images_ = v1::ImageService::NewStub(channel_);
    }

    bool wait_ready(int deadline_ms) override {
        return channel_->WaitForConnected(std::chrono::system_clock::now() +
                                          std::chrono::milliseconds(deadline_ms));
    }

    Result<std::string> version(int deadline_ms) override {
        v1::VersionRequest req;
        req.set_version("v1");
        v1::VersionResponse resp;
        if (auto s = call("Version", deadline_ms,
                          [&](grpc::ClientContext* c) { return runtime_->Version(c, req, &resp); });
            !s)
            return s.error();
        return resp.runtime_name() + " " + resp.runtime_version();
    }

    Result<std::vector<CriSandbox>> list_sandboxes(const CriLabels& selector, int deadline_ms) override {
        v1::ListPodSandboxRequest req;
        for (const auto& [k, v] : selector) (*req.mutable_filter()->mutable_label_selector())[k] = v;
        v1::ListPodSandboxResponse resp;
        if (auto s = call("ListPodSandbox", deadline_ms,
                          [&](grpc::ClientContext* c) { return runtime_->ListPodSandbox(c, req, &resp); });
            !s)
            return s.error();
        std::vector<CriSandbox> out;
        for (const auto& p : resp.items())
            out.push_back(CriSandbox{p.id(), p.metadata().attempt(), p.state() == v1::SANDBOX_READY,
                                     to_map(p.labels())});
        return out;
    }

    Result<std::string> run_sandbox(const CriSandboxConfig& config, int deadline_ms) override {
        v1::RunPodSandboxRequest req;
        fill_sandbox(config, *req.mutable_config());
        v1::RunPodSandboxResponse resp;
        if (auto s = call("RunPodSandbox", deadline_ms,
                          [&](grpc::ClientContext* c) { return runtime_->RunPodSandbox(c, req, &resp); });
            !s)
            return s.error();
        return resp.pod_sandbox_id();
    }

    Result<CriSandboxStatus> sandbox_status(const std::string& id, int deadline_ms) override {
        v1::PodSandboxStatusRequest req;
        req.set_pod_sandbox_id(id);
        v1::PodSandboxStatusResponse resp;
        if (auto s = call("PodSandboxStatus", deadline_ms,
                          [&](grpc::ClientContext* c) { return runtime_->PodSandboxStatus(c, req, &resp); });
            !s)
            return s.error();
        return sandbox_status_of(resp);
    }

    Status stop_sandbox(const std::string& id, int deadline_ms) override {
        v1::StopPodSandboxRequest req;
        req.set_pod_sandbox_id(id);
        v1::StopPodSandboxResponse resp;
        return call("StopPodSandbox", deadline_ms,
                    [&](grpc::ClientContext* c) { return runtime_->StopPodSandbox(c, req, &resp); });
    }

    Status remove_sandbox(const std::string& id, int deadline_ms) override {
        v1::RemovePodSandboxRequest req;
        req.set_pod_sandbox_id(id);
        v1::RemovePodSandboxResponse resp;
        return call("RemovePodSandbox", deadline_ms,
                    [&](grpc::ClientContext* c) { return runtime_->RemovePodSandbox(c, req, &resp); });
    }

    Result<std::string> create_container(const std::string& sandbox_id, const CriContainerConfig& config,
                                         const CriLabels& annotations, const CriSandboxConfig& sandbox,
                                         int deadline_ms) override {
        v1::CreateContainerRequest req;
        req.set_pod_sandbox_id(sandbox_id);
        fill_container(config, annotations, *req.mutable_config());
        fill_sandbox(sandbox, *req.mutable_sandbox_config());
        v1::CreateContainerResponse resp;
        if (auto s = call("CreateContainer", deadline_ms,
                          [&](grpc::ClientContext* c) { return runtime_->CreateContainer(c, req, &resp); });
            !s)
            return s.error();
        return resp.container_id();
    }

    Status start_container(const std::string& id, int deadline_ms) override {
        v1::StartContainerRequest req;
        req.set_container_id(id);
        v1::StartContainerResponse resp;
        return call("StartContainer", deadline_ms,
                    [&](grpc::ClientContext* c) { return runtime_->StartContainer(c, req, &resp); });
    }

    Status stop_container(const std::string& id, std::int64_t timeout_s, int deadline_ms) override {
        v1::StopContainerRequest req;
        req.set_container_id(id);
        req.set_timeout(timeout_s);
        v1::StopContainerResponse resp;
        return call("StopContainer", deadline_ms,
                    [&](grpc::ClientContext* c) { return runtime_->StopContainer(c, req, &resp); });
    }

    Status remove_container(const std::string& id, int deadline_ms) override {
        v1::RemoveContainerRequest req;
        req.set_container_id(id);
        v1::RemoveContainerResponse resp;
        return call("RemoveContainer", deadline_ms,
                    [&](grpc::ClientContext* c) { return runtime_->RemoveContainer(c, req, &resp); });
    }

    Result<std::vector<CriContainer>> list_containers(const CriLabels& selector, int deadline_ms) override {
        v1::ListContainersRequest req;
        for (const auto& [k, v] : selector) (*req.mutable_filter()->mutable_label_selector())[k] = v;
        v1::ListContainersResponse resp;
        if (auto s = call("ListContainers", deadline_ms,
                          [&](grpc::ClientContext* c) { return runtime_->ListContainers(c, req, &resp); });
            !s)
            return s.error();
        std::vector<CriContainer> out;
        for (const auto& c : resp.containers())
            out.push_back(CriContainer{c.id(), c.pod_sandbox_id(), c.metadata().name(),
                                       c.metadata().attempt(), state(c.state()), c.created_at(),
                                       to_map(c.labels()), to_map(c.annotations())});
        return out;
    }

    Result<CriContainerStatus> container_status(const std::string& id, int deadline_ms) override {
        v1::ContainerStatusRequest req;
        req.set_container_id(id);
        req.set_verbose(true);
        v1::ContainerStatusResponse resp;
        if (auto s = call("ContainerStatus", deadline_ms,
                          [&](grpc::ClientContext* c) { return runtime_->ContainerStatus(c, req, &resp); });
            !s)
            return s.error();
        return status_of(resp);
    }

    std::vector<Result<CriContainerStatus>> container_statuses(const std::vector<std::string>& ids,
                                                               int deadline_ms) override {
        return batch<v1::ContainerStatusResponse, CriContainerStatus>(
            "ContainerStatus", ids, deadline_ms,
            [this](grpc::ClientContext* c, const std::string& id, grpc::CompletionQueue* cq) {
                v1::ContainerStatusRequest req;
                req.set_container_id(id);
                req.set_verbose(true);
                return runtime_->AsyncContainerStatus(c, req, cq);
            },
            status_of);
    }

    std::vector<Result<CriSandboxStatus>> sandbox_statuses(const std::vector<std::string>& ids,
                                                           int deadline_ms) override {
        return batch<v1::PodSandboxStatusResponse, CriSandboxStatus>(
            "PodSandboxStatus", ids, deadline_ms,
            [this](grpc::ClientContext* c, const std::string& id, grpc::CompletionQueue* cq) {
                v1::PodSandboxStatusRequest req;
                req.set_pod_sandbox_id(id);
                return runtime_->AsyncPodSandboxStatus(c, req, cq);
            },
            sandbox_status_of);
    }

    Result<bool> has_image(const std::string& image, int deadline_ms) override {
        auto st = image_status(image, deadline_ms);
        if (!st) return st.error();
        return st.value().present;
    }

    Result<CriImageStatus> image_status(const std::string& image, int deadline_ms) override {
        v1::ImageStatusRequest req;
        req.mutable_image()->set_image(image);
        v1::ImageStatusResponse resp;
        if (auto s = call("ImageStatus", deadline_ms,
                          [&](grpc::ClientContext* c) { return images_->ImageStatus(c, req, &resp); });
            !s)
            return s.error();
        CriImageStatus st;
        st.present = resp.has_image() && !resp.image().id().empty();
        if (!st.present) return st;
        // kuberuntime getImageUser: a uid, else a name, else root.
        if (resp.image().has_uid())
            st.user.uid = resp.image().uid().value();
        else if (!resp.image().username().empty())
            st.user.username = resp.image().username();
        else
            st.user.uid = 0;
        return st;
    }

    Status pull_image(const std::string& image, int deadline_ms) override {
        v1::PullImageRequest req;
        req.mutable_image()->set_image(image);
        v1::PullImageResponse resp;
        return call("PullImage", deadline_ms,
                    [&](grpc::ClientContext* c) { return images_->PullImage(c, req, &resp); });
    }

    void cancel_all() override {
        std::lock_guard<std::mutex> lock(mu_);
        cancelled_ = true;
        for (auto* c : in_flight_) c->TryCancel();
    }

  private:
    template <typename F>
    Status call(const char* rpc, int deadline_ms, F&& f) {
        grpc::ClientContext ctx;
        ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(deadline_ms));
        {
            std::lock_guard<std::mutex> lock(mu_);
            if (cancelled_)
                return Error{ErrorCode::Unavailable, std::string("CRI ") + rpc + ": the agent is stopping"};
            in_flight_.insert(&ctx);
        }
        grpc::Status s = f(&ctx);
        {
            std::lock_guard<std::mutex> lock(mu_);
            in_flight_.erase(&ctx);
        }
        return status_error(rpc, s);
    }

    // `rpc` for each of `ids`, through gRPC's asynchronous stub: every
    // request of a batch is sent before the first answer is awaited, and
    // the answers come back over the one HTTP/2 connection in whatever
    // order the runtime gives them.
    template <typename Resp, typename Out, typename Send, typename Convert>
    std::vector<Result<Out>> batch(const char* rpc, const std::vector<std::string>& ids, int deadline_ms,
                                   Send send, Convert convert) {
        struct Pending {
            grpc::ClientContext ctx;
            Resp resp;
            grpc::Status status;
            std::unique_ptr<grpc::ClientAsyncResponseReader<Resp>> reader;
        };
        std::vector<Result<Out>> out;
        out.reserve(ids.size());
        for (std::size_t first = 0; first < ids.size(); first += kMaxStatusesInFlight) {
            const std::size_t n = std::min(kMaxStatusesInFlight, ids.size() - first);
            std::vector<std::unique_ptr<Pending>> pending;
            grpc::CompletionQueue cq;
            const auto deadline = std::chrono::system_clock::now() + std::chrono::milliseconds(deadline_ms);
            {
                std::lock_guard<std::mutex> lock(mu_);
                for (std::size_t i = 0; i < n && !cancelled_; ++i) {
                    pending.push_back(std::make_unique<Pending>());
                    pending.back()->ctx.set_deadline(deadline);
                    in_flight_.insert(&pending.back()->ctx);
                }
            }
            for (std::size_t i = 0; i < pending.size(); ++i) {
                Pending& p = *pending[i];
                p.reader = send(&p.ctx, ids[first + i], &cq);
                p.reader->Finish(&p.resp, &p.status, &p);
            }
            void* tag = nullptr;
            bool ok = false;
            for (std::size_t left = pending.size(); left > 0 && cq.Next(&tag, &ok); --left) {
            }
            cq.Shutdown();
            while (cq.Next(&tag, &ok)) {
            }
            {
                std::lock_guard<std::mutex> lock(mu_);
                for (auto& p : pending) in_flight_.erase(&p->ctx);
            }
            for (std::size_t i = 0; i < n; ++i) {
                if (i >= pending.size())
                    out.push_back(
                        Error{ErrorCode::Unavailable, std::string("CRI ") + rpc + ": the agent is stopping"});
                else if (auto s = status_error(rpc, pending[i]->status); !s)
                    out.push_back(s.error());
                else
                    out.push_back(convert(pending[i]->resp));
            }
        }
        return out;
    }

    Status status_error(const char* rpc, const grpc::Status& s) const {
        if (s.ok()) return Ok{};
        const std::string where = std::string("CRI ") + rpc + " (" + endpoint() + "): ";
        switch (s.error_code()) {
        case grpc::StatusCode::UNAVAILABLE:
        case grpc::StatusCode::DEADLINE_EXCEEDED:
        case grpc::StatusCode::CANCELLED:
            return Error{ErrorCode::Unavailable,
                         where + "the runtime is not reachable: " + s.error_message()};
        case grpc::StatusCode::NOT_FOUND: return Error{ErrorCode::NotFound, where + s.error_message()};
        default: return Error{ErrorCode::Cri, where + s.error_message()};
        }
    }

    std::shared_ptr<grpc::Channel> channel_;
    std::unique_ptr<v1::RuntimeService::Stub> runtime_;
    std::unique_ptr<v1::ImageService::Stub> images_;
    std::mutex mu_;
    bool cancelled_ = false;
    std::set<grpc::ClientContext*> in_flight_;
};

}  // namespace

Result<std::unique_ptr<CriClient>> make_cri_client(const std::string& endpoint) {
    return std::unique_ptr<CriClient>(new GrpcCriClient(endpoint));
}

}  // namespace daemonlet::platform
