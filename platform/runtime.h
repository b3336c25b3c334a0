// The runtime interface: how the agent starts, stops, watches and re-adopts
// containers. Every container runs under its own `daemonlet-shim` process
// that outlives the agent (as conmon and containerd's shims do), so an agent
// restart, kill -9 included, restarts no container.
//
// Contract, as libuv's: a call either fails synchronously and never calls
// back, or succeeds and the exit handler is called exactly once when that
// container's shim reports the container's exit. The *_async calls are how
// the agent uses a runtime: whatever waits on a child process, a socket or
// gRPC runs off the loop, and `done` comes back on it.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/model.h"
#include "core/result.h"

struct uv_loop_s;

namespace daemonlet::platform {

struct ContainerLaunch {
    // The container id to use (a new one is made when empty): the runc
    // runtime chooses it, to name runc's container and bundle the same.
    std::string id;
    std::string pod_uid;
    std::string pod_name;
    std::string pod_namespace;
    std::string container_name;
    // The process the exec runtime runs under its shim. Empty: the
    // container's own, `container`'s command + args and workingDir (what
    // the agent gives); an image runtime that runs a tool of its own under
    // the shim (runc's `runc run`) sets them.
    std::vector<std::string> argv;
    std::string working_dir;
    // The environment, $(VAR) and the downward API resolved (what the
    // container's env entries say, as values).
    std::vector<std::pair<std::string, std::string>> env;
    // Host directories the agent made for volumes it fills itself
    // (configMap, secret, downwardAPI, projected: the atomic writer's
    // target), by volume name; runc and CRI bind-mount them as they do
    // hostPath and emptyDir volumes.
    std::map<std::string, std::string> volume_host_paths;
    // The tmpfs size of each Memory emptyDir, by volume name, as the kubelet
    // sizes it (core/empty_dir.h); absent: the kernel's default.
    std::map<std::string, std::int64_t> memory_volume_bytes;
    std::int64_t grace_seconds = 30;  // SIGTERM, then SIGKILL after this
    // The container's oom_score_adj as the kubelet sets it per QoS class
    // (core/qos.h), restricted to what the machine allows; none: the
    // runtime's default (the exec runtime sets none).
    std::optional<int> oom_score_adj;
    std::uint64_t log_max_bytes = 10 * 1024 * 1024;  // kubelet's containerLogMaxSize
    std::uint32_t log_max_files = 5;                 // kubelet's containerLogMaxFiles
    std::uint32_t restart_count = 0;                 // names the log file <restart_count>.log, as kubelet's
    // Kept with the container and reported back by inspect() and adopt_all(),
    // as CRI labels: what the agent needs to rebuild its pod records from the
    // running containers alone when its database was lost.
    std::map<std::string, std::string> labels;
    // The pod's annotations (its template's): the CRI runtime's sandbox has
    // them, as the kubelet's does.
    std::map<std::string, std::string> annotations;
    // The one description of what runs: the pod's spec and the container,
    // its command and args with $(VAR) expanded (kubelet's
    // ExpandContainerCommandAndArgs). Shared, so that a start that runs off
    // the loop has them for as long as it needs. An image runtime builds
    // the container from them; the exec runtime runs the container's
    // command + args (argv above, when empty).
    std::shared_ptr<const PodSpec> pod_spec;
    std::shared_ptr<const Container> container;
};

struct ContainerInfo {
    std::string id;
    std::string pod_uid;
    std::string container_name;
    bool running = false;
    int pid = 0;                     // the container's main process
    std::int64_t started_at_ms = 0;  // wall clock
    std::optional<int> exit_code;    // set once it has exited (128+N for signal N)
    std::string reason;              // on exit: Completed (0), Error, the signal name, OOMKilled (runc)
    std::int64_t finished_at_ms = 0;
    std::string log_path;  // the current log file
    std::string pod_name;
    std::string pod_namespace;
    std::map<std::string, std::string> labels;  // as given at start
    // The image it runs, as the runtime names it (the kubelet's
    // containerStatuses[].imageID): CRI's ContainerStatus.image_ref, the
    // runc runtime's "<repository>@<manifest digest>"; empty for the exec
    // runtime, and when unknown.
    std::string image_ref;
};

// The network a container's pod is in, as its runtime set it up.
struct PodNetwork {
    // In the node's network: the exec runtime's containers, hostNetwork
    // pods. tcpSocket and httpGet probes then connect to 127.0.0.1 (in
    // probe_netns).
    bool host_network = true;
    // The pod's own IPs (the CRI sandbox's, valid ones only, the first is
    // status.podIP): what kubelet's probes connect to. Empty for a pod in
    // the node's network, and for runtimes that give a pod no address.
    std::vector<std::string> ips;
};

class Runtime {
  public:
    virtual ~Runtime() = default;

    // "exec", later "runc", "cri": the scheme of containerID ("exec://<id>").
    virtual const char* name() const = 0;

    // Called once per container exit, with its id. Set before start().
    virtual void set_exit_handler(std::function<void(const std::string& id)> handler) = 0;

    // Starts a shim and, under it, the container. Returns the container id
    // once the container's process has been started (or fails).
    virtual Result<std::string> start(const ContainerLaunch& launch) = 0;

    // Asks the shim to stop the container: SIGTERM, SIGKILL after the grace
    // period given at start. Returns at once; the exit handler reports the end.
    virtual Status stop(const std::string& id) = 0;

    virtual Result<ContainerInfo> inspect(const std::string& id) = 0;

    // The next stop of container `id` gives it `grace_seconds` between
    // SIGTERM and SIGKILL instead of the grace period given at start: what
    // a preStop hook left of it (kubelet's killContainer). The default
    // keeps the one given at start.
    virtual void set_stop_grace(const std::string& /*id*/, std::int64_t /*grace_seconds*/) {}

    // Starts the container without blocking the loop: `done` is called exactly once, on the
    // loop, never from inside start_async(), with the container id once its process exists,
    // or the error. Default: runs start() and posts done to the loop.
    // stop_async, remove_async and inspect_async (and the exit handler)
    // likewise answer on a later turn of the loop, never from inside the
    // call: the agent's pod workers rely on it (a pod is forgotten only
    // after the calls of its termination have returned: PodTable::at).
    virtual void start_async(ContainerLaunch launch, std::function<void(Result<std::string>)> done);
    virtual void stop_async(const std::string& id, std::function<void(Status)> done);
    virtual void remove_async(const std::string& id, std::function<void(Status)> done);
    virtual void inspect_async(const std::string& id, std::function<void(Result<ContainerInfo>)> done);

    // The loop the *_async defaults call `done` on. A runtime made with the
    // loop attaches it itself; attaching it again is harmless.
    void attach_loop(uv_loop_s* loop) { loop_for_done_ = loop; }

    // nodeInfo.containerRuntimeVersion: "<name>://<version>" as the CRI's
    // Version answers it (the kubelet's format); empty when unknown.
    virtual std::string version_string() const { return {}; }

    // Every container whose state is under the runtime's state directory,
    // running or exited: what the agent re-adopts after a restart. Running
    // ones are watched again, so their exit reaches the handler.
    virtual Result<std::vector<ContainerInfo>> adopt_all() = 0;

    // Forgets an exited container: its state goes, its logs stay (rotated
    // away with the pod's).
    virtual Status remove(const std::string& id) = 0;

    // The pod is gone for good: what the runtime kept for it beyond its
    // containers (the runc runtime's emptyDir volumes) goes too.
    virtual void pod_removed(const std::string& /*pod_uid*/) {}

    // The command line that runs `command` inside container `id` (exec
    // probes), with the container's environment and working directory; none
    // when the container is on the host (the exec runtime) and `command` runs
    // as is.
    virtual std::optional<std::vector<std::string>> exec_in(
        const std::string& /*id*/, const std::vector<std::string>& /*command*/) const {
        return std::nullopt;
    }

    // Images. A start whose image is absent fails with error code
    // "image_not_found" (the agent's ErrImagePull). The agent then asks the
    // runtime to fetch it from its registry, as imagePullPolicy says
    // (kubelet's image_manager.go EnsureImageExists), and starts the
    // container again once `done` reports success.
    //
    // Whether the runtime can pull at all (a registry client, the node online).
    virtual bool can_pull() const { return false; }
    // Fetches `image` (as the pod spec names it, e.g. "busybox:1.36") into
    // the runtime's image store, asynchronously. `done` is called exactly
    // once, on the loop, never from inside pull_image(): an Error (code
    // "unauthorized", "not_found", "unreachable", "invalid" or "pull_failed";
    // the message names the image, the registry and the reason) or Ok.
    // Pulls of the same image at once may share one fetch. Called only when
    // can_pull(); the default, for runtimes that cannot, fails at once.
    virtual void pull_image(const std::string& image, std::function<void(Status)> done) {
        done(Error{ErrorCode::Unsupported,
                   "the " + std::string(name()) + " runtime cannot pull \"" + image + "\""});
    }
    // Whether `image` is in the runtime's store now (imagePullPolicy
    // IfNotPresent pulls only when it is not; Always pulls at every start
    // but an offline board runs what it has).
    virtual bool has_image(const std::string& /*image*/) const { return false; }

    // The network namespace tcpSocket and httpGet probes of container `id`
    // connect from, as kubelet's reach the pod's address: "" for the host's
    // (the exec runtime; hostNetwork), else a path such as
    // /proc/<pid>/ns/net. An error when the container has no process yet
    // (its runtime is still creating it): then no probe of any kind runs,
    // and the agent counts none (kubelet's worker throws away a probe that
    // errs: pkg/kubelet/prober/worker.go doProbe).
    virtual Result<std::string> probe_netns(const std::string& /*id*/) const { return std::string(); }

    // The network of container `id`'s pod. The default: the node's (the
    // exec runtime; the runc runtime, whose pods without hostNetwork are
    // reached through probe_netns instead). An error when the runtime
    // cannot say now (the probe is then not run, as for probe_netns).
    virtual Result<PodNetwork> pod_network(const std::string& /*id*/) const { return PodNetwork{}; }

    // The agent stops: starts the runtime holds back and has not begun (the
    // runc runtime's, waiting for adopt_all's leftovers to go) call back
    // with ErrorCode::Canceled, on the loop and never from inside this
    // call, and never make their container; begun ones finish as before.
    // The default holds none.
    virtual void cancel_held_starts() {}

    // Closes every libuv handle the runtime holds (watches on running shims)
    // without touching the containers: the agent is stopping, the shims stay.
    // The loop can then finish and uv_loop_close() succeed. An asynchronous
    // call still in flight may then never call back: the agent waits for
    // its starts to finish before it closes the runtime.
    virtual void close() {}

  protected:
    // The loop attached (attach_loop), or none.
    uv_loop_s* attached_loop() const { return loop_for_done_; }
    // Calls `fn` on the loop attached once the caller has returned to it:
    // how the defaults above, and runtimes whose work is done at once, keep
    // `done` out of the call that asked for it.
    void post(std::function<void()> fn);

  private:
    uv_loop_s* loop_for_done_ = nullptr;
};

// Calls `fn` on `loop` from a one-shot timer of 0 ms (closed once it
// fired): after the current callback has returned, in this timer pass or
// the next. Call it on the loop's thread.
void post_to_loop(uv_loop_s* loop, std::function<void()> fn);

}  // namespace daemonlet::platform
