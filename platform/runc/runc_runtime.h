// The runc runtime: a container from an image, made and started by the
// daemonlet-shim with `runc create` and `runc start` (shim_runc.h), as
// conmon and containerd's runc shim do, in place of the exec runtime's
// command. No runc process stays: the shim is the container's subreaper
// and the holder of its stdio, so its logs, exit status, graceful stop and
// re-adoption after an agent restart work as they do for the exec runtime,
// which this wraps; the pid it records is the container's init, and a
// start returns once that process exists.
//
// What it adds, per start: the image's layers from the local image store
// mounted as an overlay on <runtime>/bundles/<id>/rootfs (upper and work
// directories in <id>/overlay; ImageTool::overlay) by the agent itself
// when the store has every layer's overlay form (overlay_mount.h
// mount_stored_image), else by `daemonlet-image prepare`, which makes
// them, or copies the layers there; either gives the image's config (not
// in the store: error "image_not_found", the agent's ErrImagePull);
// config.json is written by core's build_oci_spec (hostPath volumes; an
// emptyDir is <runtime>/pods/<pod uid>/volumes/<name>; cgroupsPath
// /daemonlet/<id>). The runc container, the bundle and the shim's state
// share one id. On remove(): `runc delete --force` (nothing deletes runc's
// stopped container and its cgroup before this; a container whose shim
// was killed goes with it), then the rootfs unmounted, then the bundle
// (never through a mount: platform/image/overlay_mount.h), then the shim's
// state. The overlay mounts are in the host's mount namespace: an agent
// restart keeps the running containers' (the unit sets no PrivateMounts);
// a reboot takes them, and the containers, which are started again with
// new bundles.
//
// The image store's library is daemonlet-image's, never linked here: it
// links libarchive and its dependencies, which the agent would otherwise
// map in every process, runc or not (docs/figures.md, "Memory of the libraries"). The agent reads
// only images.json and the manifest and config blobs.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/result.h"
#include "platform/probe/prober.h"
#include "platform/runc/runc.h"
#include "platform/runc/runc_security.h"
#include "platform/runtime.h"

struct uv_loop_s;

namespace daemonlet::platform {

// The daemonlet-image executable and the image store it manages.
struct ImageTool {
    std::string binary;  // absolute path
    std::string store;   // stateDir/images
    // Root filesystems as overlay mounts (the agent probed that the node can:
    // overlay_mount.h use_overlay), else copies.
    bool overlay = false;
    // Given to `daemonlet-image pull` after --store: --auth-file,
    // --certs-dir, --insecure (the agent's runtime.registry* keys).
    std::vector<std::string> pull_options;
};

// seccompProfile RuntimeDefault under runc: the profile Debian's
// golang-github-containers-common ships (podman's and CRI-O's default, in
// the docker format that core/seccomp.h converts). containerd builds its
// own in; runc has none.
inline constexpr const char* kRuntimeDefaultSeccompProfile = "/usr/share/containers/seccomp.json";

// A registry pull of a large image on a slow link may take long; one that
// takes longer than this is killed (and retried with back-off).
inline constexpr int kImagePullDeadlineMs = 30 * 60 * 1000;

// `daemonlet-image prepare` (the fallback) mounts or copies a rootfs and
// blocks a thread of libuv's pool while it does (start_async; start() blocks
// the loop) (docs/figures.md, "Root filesystems": milliseconds for
// busybox). One that takes longer is killed and the start fails; a pool
// thread held that long delays other pool work (removes), never the
// watchdog ping.
inline constexpr int kImagePrepareDeadlineMs = 10000;
// daemonlet-image's exit status for an image that is not in the store.
inline constexpr int kImageToolNotFound = 2;

// "runc://1.1.5+ds1" from `runc --version`'s first line ("runc version
// 1.1.5+ds1"); empty when the output is not runc's.
std::string runc_version_string(const std::string& runc_version_output);

class RuncRuntime final : public Runtime {
  public:
    // `exec` runs the shims; `images` says where daemonlet-image and its
    // store are; `runtime_dir` is the exec runtime's state directory
    // (absolute); `runc_binary` an absolute path.
    RuncRuntime(std::unique_ptr<Runtime> exec, ImageTool images, std::string runtime_dir,
                std::string runc_binary, std::vector<std::string> capabilities);

    const char* name() const override { return "runc"; }
    void set_exit_handler(std::function<void(const std::string& id)> handler) override {
        exec_->set_exit_handler(std::move(handler));
    }
    // Needs launch.pod_spec and launch.container. Blocks the loop for the
    // rootfs copy and runc's start.
    Result<std::string> start(const ContainerLaunch& launch) override;
    // As start(), off the loop: the bundle is prepared on libuv's thread
    // pool (its directories, the rootfs's overlay mount or `daemonlet-image
    // prepare`, config.json: a millisecond to tens of them each, which 50
    // starts at a boot added up to 70 ms and more on the loop), then back on
    // the loop the shim is started through the exec runtime's start_async;
    // `done` comes once the shim has run `runc create` and `runc start` and
    // the container's init exists, or with the error (the bundle and any
    // runc container deleted).
    void start_async(ContainerLaunch launch, std::function<void(Result<std::string>)> done) override;
    Status stop(const std::string& id) override { return exec_->stop(id); }
    void set_stop_grace(const std::string& id, std::int64_t grace_seconds) override {
        exec_->set_stop_grace(id, grace_seconds);
    }
    // The exec runtime's, and for a container that exited non-zero after
    // the OOM killer killed in its memory cgroup, reason OOMKilled
    // (core/cgroup_oom.h): runc's stopped container, its cgroup and the
    // counter stay until remove().
    Result<ContainerInfo> inspect(const std::string& id) override;
    // The exec runtime's (exited ones' reasons as inspect's), then the leftovers of starts an agent crash cut
    // short (a bundle, maybe a runc container, without the shim's state)
    // are deleted: no container record will ever remove them. With a loop,
    // their `runc delete` and `runc --version` run on libuv's thread pool
    // (tens of milliseconds each, on the loop before: docs/figures.md);
    // start_async holds every start until the leftovers are gone.
    Result<std::vector<ContainerInfo>> adopt_all() override;
    // The starts held for the leftovers: canceled (their done posted with
    // Canceled); the leftovers' deletion goes on.
    void cancel_held_starts() override;
    Status remove(const std::string& id) override;
    // As remove(), with `runc delete --force` and the bundle's unmount and
    // deletion (tens of milliseconds each: at a boot that finds 50 stopped
    // containers, seconds) on libuv's thread pool; the shim's state goes,
    // and `done` is called, back on the loop.
    void remove_async(const std::string& id, std::function<void(Status)> done) override;
    ~RuncRuntime() override { *alive_ = false; }
    // Deletes <runtime>/pods/<uid> (its emptyDirs).
    void pod_removed(const std::string& pod_uid) override;
    // `runc exec ID command...`: the container's env and cwd from its config.json.
    std::optional<std::vector<std::string>> exec_in(const std::string& id,
                                                    const std::vector<std::string>& command) const override;
    // /proc/<init pid>/ns/net (runc's state.json), "" when config.json
    // shares the host's network; an error until runc has made the
    // container's init.
    Result<std::string> probe_netns(const std::string& id) const override;
    // host_network as config.json says: a container without hostNetwork is
    // alone in a network namespace with only loopback (no CNI here), so it
    // has no IP; a hostNetwork one has the node's (the agent's).
    Result<PodNetwork> pod_network(const std::string& id) const override;
    void close() override {
        close_pulls();
        exec_->close();
    }

    // Registry pulls (runc_pull.cpp): `daemonlet-image pull` run on the loop
    // through a Prober, one per image at a time, shared by every caller
    // waiting for that image. Enabled by make_runc_runtime.
    void enable_pulls(uv_loop_s* loop);
    bool can_pull() const override { return pulls_ != nullptr; }
    void pull_image(const std::string& image, std::function<void(Status)> done) override;
    // `daemonlet-image list`, the reference normalised (blocks the loop for
    // a few milliseconds).
    bool has_image(const std::string& image) const override;

    // nodeInfo.containerRuntimeVersion: "runc://<version>" from `runc
    // --version`, asked once by adopt_all (at the agent's start; with a
    // loop, answered on it once runc has, tens of milliseconds later);
    // empty until then or when runc does not say.
    std::string version_string() const override { return version_; }

    std::string bundle_dir(const std::string& id) const { return runtime_dir_ + "/bundles/" + id; }
    // seccompProfileRoot, clusterDNS, clusterDomain (runc_security.h).
    void set_pod_settings(RuncPodSettings settings) { pod_settings_ = std::move(settings); }
    std::string runc_root() const { return runtime_dir_ + "/runc"; }

  private:
    // What start() and start_async() share, on the loop: the launch
    // checked, a new id, and the launch of the shim that makes the container
    // from its bundle.
    Result<ContainerLaunch> shim_launch(const ContainerLaunch& launch) const;
    // What the bundle's preparation needs, copied: it runs on the thread
    // pool for start_async, and touches no member.
    struct BundleJob {
        ImageTool images;
        std::string runtime_dir;
        std::vector<std::string> capabilities;
        RuncPodSettings pod_settings;
        ContainerLaunch launch;  // the container's, with its spec
        std::string id;
        std::string bundle;
    };
    BundleJob bundle_job(const ContainerLaunch& launch, const ContainerLaunch& shim) const;
    // The bundle prepared, or deleted again and the error said with the
    // bundle's path (image_not_found as it is). Thread-safe.
    static Status prepare_bundle(const BundleJob& job);
    // The rootfs unmounted, then the bundle deleted.
    static Status delete_bundle(const std::string& bundle);
    // runc's container (`runc delete --force`), then the bundle: remove()'s
    // part of the work. Thread-safe.
    static Status delete_container(const Runc& runc, const std::string& id, const std::string& bundle);
    // Sets info.reason to OOMKilled when the container's exit was the OOM killer's.
    void add_oom_reason(ContainerInfo& info) const;
    // The image reference make_bundle kept in the bundle.
    void add_image_ref(ContainerInfo& info) const;
    // Undoes a start: runc's container (`runc delete --force`), then the
    // bundle. Thread-safe (start_async runs it on the pool).
    static void discard(const Runc& runc, const std::string& id, const std::string& bundle);
    // Whether config.json gives the container a network namespace of its
    // own; remembered per id (until remove) since config.json never changes.
    Result<bool> own_network(const std::string& id) const;
    mutable std::map<std::string, bool> own_network_;
    // False once destroyed: a remove_async or start_async whose work ends
    // later does not touch it.
    std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);

    std::unique_ptr<Runtime> exec_;
    ImageTool images_;
    std::string runtime_dir_;
    std::string runc_binary_;
    std::vector<std::string> capabilities_;
    RuncPodSettings pod_settings_;
    std::string version_;
    bool version_asked_ = false;
    Runc runc_;
    // adopt_all's leftovers whose deletion runs on the pool, and the starts
    // that wait for them (run once none is left, or canceled when the agent
    // stops first).
    std::size_t leftovers_pending_ = 0;
    struct HeldStart {
        ContainerLaunch launch;
        std::function<void(Result<std::string>)> done;
    };
    std::vector<HeldStart> held_starts_;
    void leftover_removed();

    void close_pulls();
    void on_pulled(const std::string& image, Status result);
    uv_loop_s* loop_ = nullptr;
    std::unique_ptr<Prober> pulls_;
    std::map<std::string, std::vector<std::function<void(Status)>>> pulling_;  // image -> waiting callers
};

// The agent's way to make one: the exec runtime under
// `runtime_dir`, `runc` found (on PATH unless it holds a '/') and
// executable, the agent's capabilities read. Errors say which.
// `settings.seccomp_profile_root` empty: <runtime_dir>/../seccomp.
Result<std::unique_ptr<Runtime>> make_runc_runtime(uv_loop_s* loop, std::string runtime_dir,
                                                   std::string shim_path, ImageTool images,
                                                   const std::string& runc, RuncPodSettings settings = {});

}  // namespace daemonlet::platform
