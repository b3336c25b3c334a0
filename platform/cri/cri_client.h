// A client of one CRI runtime (containerd's CRI plugin, CRI-O): the
// runtime.v1 RuntimeService and ImageService RPCs the CRI runtime uses,
// over gRPC on a unix socket, with plain values in and out so that gRPC and
// protobuf stay in cri_client.cpp. Every call is synchronous with its own
// deadline; calls may be made from any thread at once (gRPC channels and
// stubs are thread-safe). cancel_all() ends the calls in flight, and every
// later one fails at once: what close() needs so that no worker thread is
// left waiting on a pull that takes minutes.
//
// Errors: code "unavailable" when the runtime cannot be reached (no socket,
// not listening, the deadline passed), "not_found" for an id the runtime
// does not know, "cri" otherwise; the message names the RPC, the endpoint
// and the runtime's reason.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/cri_config.h"
#include "core/result.h"

namespace daemonlet::platform {

enum class CriState { Created, Running, Exited, Unknown };

struct CriImageStatus {
    bool present = false;
    ImageUser user;  // when present
};

struct CriContainer {
    std::string id;
    std::string sandbox_id;
    std::string name;
    std::uint32_t attempt = 0;
    CriState state = CriState::Unknown;
    std::int64_t created_at_ns = 0;
    std::map<std::string, std::string> labels;
    std::map<std::string, std::string> annotations;
};

struct CriContainerStatus {
    CriContainer container;
    std::int64_t started_at_ns = 0;
    std::int64_t finished_at_ns = 0;
    int exit_code = 0;
    std::string reason;  // Completed, Error, OOMKilled (containerd)
    std::string message;
    std::string log_path;
    int pid = 0;  // from the verbose info, 0 when not running
    // image_ref: containerd's repo digest of the image ("docker.io/library/
    // busybox@sha256:..."), or its id ("sha256:...") when it has none.
    std::string image_ref;
};

struct CriSandbox {
    std::string id;
    std::uint32_t attempt = 0;
    bool ready = false;
    std::map<std::string, std::string> labels;
};

// PodSandboxStatus: what the agent needs of a sandbox beyond its listing.
struct CriSandboxStatus {
    std::string id;
    bool ready = false;
    // linux.namespaces.options.network is NODE: the sandbox is in the
    // node's network (hostNetwork), and has no IP of its own.
    bool host_network = false;
    std::string ip;                           // network.ip, as the CNI plugin gave it ("" for none)
    std::vector<std::string> additional_ips;  // network.additional_ips (dual stack)
};

using CriLabels = std::map<std::string, std::string>;

class CriClient {
  public:
    virtual ~CriClient() = default;
    const std::string& endpoint() const { return endpoint_; }

    // Waits up to `deadline_ms` for the runtime's socket to accept a
    // connection; whether it did.
    virtual bool wait_ready(int deadline_ms) = 0;
    // "<runtime name> <version>", e.g. "containerd v1.6.20".
    virtual Result<std::string> version(int deadline_ms) = 0;
    virtual Result<std::vector<CriSandbox>> list_sandboxes(const CriLabels& selector, int deadline_ms) = 0;
    virtual Result<std::string> run_sandbox(const CriSandboxConfig& config, int deadline_ms) = 0;
    virtual Result<CriSandboxStatus> sandbox_status(const std::string& id, int deadline_ms) = 0;
    virtual Status stop_sandbox(const std::string& id, int deadline_ms) = 0;
    virtual Status remove_sandbox(const std::string& id, int deadline_ms) = 0;
    virtual Result<std::string> create_container(const std::string& sandbox_id,
                                                 const CriContainerConfig& config,
                                                 const CriLabels& annotations,
                                                 const CriSandboxConfig& sandbox, int deadline_ms) = 0;
    virtual Status start_container(const std::string& id, int deadline_ms) = 0;
    // StopContainer with `timeout_s` (the grace period): the runtime sends
    // SIGTERM, then SIGKILL after it, and returns when the container is gone.
    virtual Status stop_container(const std::string& id, std::int64_t timeout_s, int deadline_ms) = 0;
    virtual Status remove_container(const std::string& id, int deadline_ms) = 0;
    virtual Result<std::vector<CriContainer>> list_containers(const CriLabels& selector, int deadline_ms) = 0;
    virtual Result<CriContainerStatus> container_status(const std::string& id, int deadline_ms) = 0;
    // ContainerStatus (PodSandboxStatus) of each of `ids`, in their order,
    // all in flight at once on the one connection (up to
    // kMaxStatusesInFlight at a time, each with `deadline_ms`): the cost of
    // one call, not of one per container, when the runtime answers slowly
    // (adoption at start).
    static constexpr std::size_t kMaxStatusesInFlight = 64;
    virtual std::vector<Result<CriContainerStatus>> container_statuses(const std::vector<std::string>& ids,
                                                                       int deadline_ms) = 0;
    virtual std::vector<Result<CriSandboxStatus>> sandbox_statuses(const std::vector<std::string>& ids,
                                                                   int deadline_ms) = 0;
    // Whether the runtime has `image` (ImageStatus returns no image when not).
    virtual Result<bool> has_image(const std::string& image, int deadline_ms) = 0;
    // ImageStatus: whether the runtime has `image` and, when it has, the
    // user its config names (what the kubelet's getImageUser reads).
    virtual Result<CriImageStatus> image_status(const std::string& image, int deadline_ms) = 0;
    virtual Status pull_image(const std::string& image, int deadline_ms) = 0;
    virtual void cancel_all() = 0;

  protected:
    explicit CriClient(std::string endpoint) : endpoint_(std::move(endpoint)) {}

  private:
    std::string endpoint_;
};

// A client of `endpoint` ("unix:///run/containerd/containerd.sock"). Does
// not connect: the first call does, and a runtime that is down now may be
// up for a later call (reconnection is retried every second or two).
Result<std::unique_ptr<CriClient>> make_cri_client(const std::string& endpoint);

}  // namespace daemonlet::platform
