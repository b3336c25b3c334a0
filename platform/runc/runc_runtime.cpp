#include "platform/runc/runc_runtime.h"

#include <uv.h>

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <set>
#include <system_error>
#include <utility>

#include "core/cgroup_oom.h"
#include "core/image_reference.h"
#include "core/json.h"
#include "core/oci_image.h"
#include "core/oci_spec.h"
#include "core/security_context.h"
#include "core/strings.h"
#include "platform/exec/exec_runtime.h"
#include "platform/exec/shim_state.h"
#include "platform/file.h"
#include "platform/image/image_index.h"
#include "platform/image/overlay_mount.h"
#include "platform/run_command.h"
#include "platform/runc/runc_security.h"
#include "platform/shim/shim_protocol.h"
#include "platform/volume_setup.h"

namespace daemonlet::platform {
namespace {

namespace fs = std::filesystem;

// `name` as execvp would find it; absolute, for the shim's argv[0].
Result<std::string> find_executable(const std::string& name) {
    auto check = [](const std::string& p) -> Result<std::string> {
        std::error_code ec;
        std::string abs = fs::absolute(p, ec).lexically_normal().string();
        if (::access(abs.c_str(), X_OK) != 0 || fs::is_directory(abs, ec))
            return Error{ErrorCode::NotFound, "runtime.runcPath: " + p + ": not an executable file"};
        return abs;
    };
    if (name.find('/') != std::string::npos) return check(name);
    const char* path = std::getenv("PATH");
    std::string dirs = path && *path ? path : "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
    std::size_t start = 0;
    while (start <= dirs.size()) {
        std::size_t end = dirs.find(':', start);
        if (end == std::string::npos) end = dirs.size();
        std::string dir = dirs.substr(start, end - start);
        if (!dir.empty() && check(dir + "/" + name)) return check(dir + "/" + name);
        start = end + 1;
    }
    return Error{ErrorCode::NotFound,
                 "runtime.runcPath: " + name + ": not found on PATH (apt-get install runc)"};
}

// `work` on libuv's thread pool, then `after` on the loop with uv's status
// (0, or UV_ECANCELED); uv's error when it refused the work (nothing runs).
int queue_on_pool(uv_loop_t* loop, std::function<void()> work, std::function<void(int)> after) {
    struct Job {
        uv_work_t req{};
        std::function<void()> work;
        std::function<void(int)> after;
    };
    auto* j = new Job{{}, std::move(work), std::move(after)};
    j->req.data = j;
    const int rc = uv_queue_work(
        loop, &j->req, [](uv_work_t* req) { static_cast<Job*>(req->data)->work(); },
        [](uv_work_t* req, int status) {
            std::unique_ptr<Job> done(static_cast<Job*>(req->data));
            done->after(status);
        });
    if (rc != 0) delete j;
    return rc;
}

// What an operation says that libuv canceled, or whose runtime went.
Error canceled(const std::string& doing) { return Error{ErrorCode::Canceled, doing + ": canceled"}; }
// What one says whose work libuv's pool refused.
Error refused(const std::string& doing, int rc) {
    return Error{ErrorCode::Runtime, doing + ": " + uv_strerror(rc)};
}

// The rootfs assembled in <bundle>/rootfs (which must not exist), and the
// image's config: an overlay mounted here when the image store has every
// layer's overlay form, else `daemonlet-image prepare`, which makes them,
// or copies.
Result<ImageConfig> prepare_rootfs(const ImageTool& tool, const std::string& reference,
                                   const std::string& bundle) {
    if (tool.overlay) {
        auto config = mount_stored_image(tool.store, reference, bundle + "/rootfs", bundle + "/overlay");
        if (config) return parse_image_config(config.value(), reference + ": its config");
        if (config.error().code != ErrorCode::Fallback) return config.error();
    }
    std::vector<std::string> argv = {tool.binary, "prepare", "--store",  tool.store,
                                     "--ref",     reference, "--rootfs", bundle + "/rootfs"};
    if (tool.overlay) argv.insert(argv.end(), {"--overlay", bundle + "/overlay"});
    auto r = run_command(argv, kImagePrepareDeadlineMs);
    if (!r) return r.error();
    if (r.value().exit_code == kImageToolNotFound)
        return Error{ErrorCode::ImageNotFound, "image \"" + reference + "\" is not in the image store"};
    if (r.value().exit_code != 0) {
        std::string why = trim(r.value().err);
        if (why.empty()) why = "exit status " + std::to_string(r.value().exit_code);
        return Error{ErrorCode::Image, tool.binary + " prepare " + reference + ": " + why};
    }
    return parse_image_config(r.value().out, tool.binary + " prepare " + reference + ": its output");
}

}  // namespace

Result<std::unique_ptr<Runtime>> make_runc_runtime(uv_loop_s* loop, std::string runtime_dir,
                                                   std::string shim_path, ImageTool images,
                                                   const std::string& runc, RuncPodSettings settings) {
    auto binary = find_executable(runc);
    if (!binary) return binary.error();
    if (::access(images.binary.c_str(), X_OK) != 0)
        return Error{ErrorCode::NotFound, images.binary +
                                              ": not an executable file (daemonlet-image is installed with "
                                              "the agent in libexec/daemonlet)"};
    auto caps = current_capabilities();
    if (!caps) return caps.error();
    std::error_code ec;
    runtime_dir = fs::absolute(runtime_dir, ec).lexically_normal().string();
    while (runtime_dir.size() > 1 && runtime_dir.back() == '/') runtime_dir.pop_back();
    if (settings.seccomp_profile_root.empty())
        settings.seccomp_profile_root = fs::path(runtime_dir).parent_path().string() + "/seccomp";
    auto exec = make_exec_runtime(loop, runtime_dir, std::move(shim_path));
    if (!exec) return exec.error();
    exec.value()->attach_loop(loop);
    auto runtime =
        std::make_unique<RuncRuntime>(std::move(exec).value(), std::move(images), std::move(runtime_dir),
                                      std::move(binary).value(), std::move(caps).value());
    runtime->enable_pulls(loop);
    runtime->attach_loop(loop);
    runtime->set_pod_settings(std::move(settings));
    return std::unique_ptr<Runtime>(std::move(runtime));
}

RuncRuntime::RuncRuntime(std::unique_ptr<Runtime> exec, ImageTool images, std::string runtime_dir,
                         std::string runc_binary, std::vector<std::string> capabilities)
    : exec_(std::move(exec)),
      images_(std::move(images)),
      runtime_dir_(std::move(runtime_dir)),
      runc_binary_(std::move(runc_binary)),
      capabilities_(std::move(capabilities)),
      runc_(RuncOptions{runc_binary_, runc_root(), false}) {}

namespace {

// A bundle's image reference, as inspect() reads it back.
constexpr const char* kImageRefFile = "image-ref";

// The image's reference as containerd's CRI reports a container's
// image_ref (its first repo digest): "<repository>@<manifest digest>",
// from the image store's index; empty when the image is not there.
std::string stored_image_ref(const std::string& store, const std::string& image) {
    auto ref = normalize_image_reference(image);
    if (!ref) return {};
    if (!ref.value().digest.empty()) return ref.value().name() + "@" + ref.value().digest;
    auto index = read_index(store + "/images.json");
    if (!index) return {};
    for (const auto& e : index.value())
        if (e.name == ref.value().str()) return ref.value().name() + "@" + e.digest;
    return {};
}

Status make_bundle(const ImageTool& images, const std::string& runtime_dir,
                   const std::vector<std::string>& capabilities, const RuncPodSettings& settings,
                   const ContainerLaunch& launch, const std::string& id, const std::string& bundle) {
    const Container& c = *launch.container;
    const auto& psc = launch.pod_spec->security_context;
    const std::optional<std::int64_t> fs_group = psc ? psc->fs_group : std::nullopt;
    if (auto s = make_dirs(bundle); !s) return s;
    auto image = prepare_rootfs(images, c.image, bundle);
    if (!image) return image.error();
    // What inspect() reports as its image_ref; none when unknown.
    if (const std::string ref = stored_image_ref(images.store, c.image); !ref.empty())
        if (std::FILE* f = std::fopen((bundle + "/" + kImageRefFile).c_str(), "we")) {
            std::fputs(ref.c_str(), f);
            std::fclose(f);
        }

    OciSpecInput in;
    in.container = &c;
    in.pod = launch.pod_spec.get();
    in.pod_display = format_pod(launch.pod_name, launch.pod_namespace, launch.pod_uid);
    in.image = std::move(image).value();
    if (auto s = read_security_inputs(settings.seccomp_profile_root, launch, bundle + "/rootfs", in); !s)
        return s;
    if (auto s = write_pod_etc_files(settings, launch, runtime_dir + "/pods/" + launch.pod_uid, in); !s)
        return s;
    in.host_network = launch.pod_spec->host_network;
    in.host_pid = launch.pod_spec->host_pid;
    in.host_ipc = launch.pod_spec->host_ipc;
    in.env = launch.env;
    in.rootfs = "rootfs";
    in.hostname = launch.pod_name;
    in.cgroups_path = "/daemonlet/" + id;
    in.current_capabilities = capabilities;
    in.oom_score_adj = launch.oom_score_adj;
    // The agent's own volumes (config, secret, downward API) first; hostPath
    // and emptyDir are the runtime's.
    in.volume_host_paths = launch.volume_host_paths;
    for (const auto& v : launch.pod_spec->volumes) {
        if (v.source == Volume::Source::HostPath) {
            if (auto s = set_up_host_path(v); !s) return s;
            in.volume_host_paths[v.name] = v.host_path;
        } else if (v.source == Volume::Source::EmptyDir) {
            // Per pod, not per container: it outlives the container's restarts.
            std::string dir = runtime_dir + "/pods/" + launch.pod_uid + "/volumes/" + v.name;
            if (auto s =
                    set_up_empty_dir(v, dir, fs_group, tmpfs_size_of(launch.memory_volume_bytes, v.name));
                !s)
                return s;
            in.volume_host_paths[v.name] = dir;
        }
    }
    auto spec = build_oci_spec(in);
    if (!spec) return spec.error();
    return Runc::write_bundle(bundle, spec.value());
}

}  // namespace

Status RuncRuntime::prepare_bundle(const BundleJob& job) {
    auto s = make_bundle(job.images, job.runtime_dir, job.capabilities, job.pod_settings, job.launch, job.id,
                         job.bundle);
    if (s) return s;
    // No runc container yet: the bundle is all there is to undo.
    (void)delete_bundle(job.bundle);
    // The kubelet's own messages (CreateContainerConfigError, a volume's
    // set-up) and a missing image are said as they are.
    const ErrorCode code = s.error().code;
    const bool as_is = code == ErrorCode::ImageNotFound || code == ErrorCode::ContainerConfig ||
                       code == ErrorCode::VolumeSetup;
    return Error{code,
                 as_is ? s.error().message : "preparing the bundle " + job.bundle + ": " + s.error().message};
}

Status RuncRuntime::delete_bundle(const std::string& bundle) {
    // A copy is no mount: nothing to do. An overlay's lower directories are
    // the image store's layers, which a plain rm -rf would delete through it.
    if (auto s = unmount_if_mounted(bundle + "/rootfs"); !s) return s;
    return remove_tree_on_one_fs(bundle);
}

Status RuncRuntime::delete_container(const Runc& runc, const std::string& id, const std::string& bundle) {
    // runc's container may outlive runc itself (runc was SIGKILLed after
    // the grace period): delete --force kills it and removes its cgroup.
    if (auto s = runc.remove(id); !s) return s;
    return delete_bundle(bundle);
}

void RuncRuntime::discard(const Runc& runc, const std::string& id, const std::string& bundle) {
    (void)runc.remove(id);
    // A bundle that cannot go yet (its rootfs busy) is a leftover that the
    // next adopt_all tries again.
    (void)delete_bundle(bundle);
}

Result<ContainerLaunch> RuncRuntime::shim_launch(const ContainerLaunch& launch) const {
    if (!launch.container || !launch.pod_spec)
        return Error{ErrorCode::Invalid,
                     "runc runtime: container " + launch.container_name + " started without its spec"};
    const std::string id = exec::new_container_id();
    const std::string bundle = bundle_dir(id);
    ContainerLaunch shim = launch;
    shim.id = id;
    // The shim runs `runc create` and `runc start` (shim_runc.h). runc
    // leaves the stopped container, and its cgroup with the OOM-kill
    // counter that inspect() reads, to remove()'s `runc delete`.
    shim.argv = {shim::kRuncMarker, runc_binary_, runc_root(), bundle, id};
    shim.env.clear();  // the container's is in config.json; runc needs none
    shim.working_dir.clear();
    shim.pod_spec = nullptr;
    shim.container = nullptr;
    // Before any path is made of the pod's uid (its emptyDirs).
    if (auto s = exec::validate_launch(shim); !s) return s.error();
    return shim;
}

RuncRuntime::BundleJob RuncRuntime::bundle_job(const ContainerLaunch& launch,
                                               const ContainerLaunch& shim) const {
    return BundleJob{images_, runtime_dir_, capabilities_,      pod_settings_,
                     launch,  shim.id,      bundle_dir(shim.id)};
}

Result<std::string> RuncRuntime::start(const ContainerLaunch& launch) {
    auto shim = shim_launch(launch);
    if (!shim) return shim.error();
    if (auto s = prepare_bundle(bundle_job(launch, shim.value())); !s) return s.error();
    const std::string id = shim.value().id;
    auto started = exec_->start(shim.value());
    if (!started) discard(runc_, id, bundle_dir(id));
    return started;
}

void RuncRuntime::start_async(ContainerLaunch launch, std::function<void(Result<std::string>)> done) {
    uv_loop_t* loop = attached_loop();
    if (!loop) return Runtime::start_async(std::move(launch), std::move(done));
    if (leftovers_pending_ > 0) {
        held_starts_.push_back({std::move(launch), std::move(done)});
        return;
    }
    auto shim = shim_launch(launch);
    if (!shim) {
        post([done = std::move(done), e = shim.error()] { done(e); });
        return;
    }
    // The pool's thread sees only the job (copies, and the launch's spec
    // shared read-only); the shim is started back on the loop.
    auto job = std::make_shared<const BundleJob>(bundle_job(launch, shim.value()));
    auto prepared = std::make_shared<Status>(Ok{});
    const std::string doing = "starting container " + job->id;
    auto prepare = [job, prepared] { *prepared = prepare_bundle(*job); };
    auto prepared_then = [this, job, prepared, shim = std::move(shim).value(), alive = alive_, done,
                          doing](int status) mutable {
        if (status != 0) return done(canceled(doing));
        if (!prepared->ok()) return done(prepared->error());
        if (!*alive) {
            // The runtime went while the bundle was made: nobody will start it.
            (void)delete_bundle(job->bundle);
            return done(canceled(doing));
        }
        exec_->start_async(std::move(shim), [this, id = job->id, alive, done](Result<std::string> started) {
            if (started || !*alive) return done(std::move(started));
            // runc's container and the bundle deleted on the pool (`runc
            // delete`: tens of milliseconds, 30 s for a hung runc), and only
            // then the failure said: the pod's next start comes after the
            // delete, as it did on the loop.
            auto undo = [runc = runc_, id, bundle = bundle_dir(id)] { discard(runc, id, bundle); };
            auto report = [done, error = started.error()](int) { done(error); };
            if (queue_on_pool(attached_loop(), undo, report) != 0) {
                undo();
                done(std::move(started));
            }
        });
    };
    if (const int rc = queue_on_pool(loop, prepare, prepared_then); rc != 0)
        post([done = std::move(done), e = refused(doing, rc)] { done(e); });
}

void RuncRuntime::add_oom_reason(ContainerInfo& info) const {
    if (info.running || !info.exit_code || *info.exit_code == 0) return;
    // No counter (the cgroup gone with a runc that was killed, an old
    // kernel): the shim's reason stands.
    auto kills = container_oom_kills(runc_root(), info.id);
    if (kills && ended_by_oom_kill(*info.exit_code, kills.value())) info.reason = kOomKilledReason;
}

void RuncRuntime::add_image_ref(ContainerInfo& info) const {
    auto ref = read_file(bundle_dir(info.id) + "/" + kImageRefFile, 4096);
    if (ref) info.image_ref = trim(ref.value());
}

Result<ContainerInfo> RuncRuntime::inspect(const std::string& id) {
    auto info = exec_->inspect(id);
    if (info) {
        add_oom_reason(info.value());
        add_image_ref(info.value());
    }
    return info;
}

std::string runc_version_string(const std::string& out) {
    constexpr std::string_view kPrefix = "runc version ";
    if (out.compare(0, kPrefix.size(), kPrefix) != 0) return {};
    std::string v = out.substr(kPrefix.size());
    v = v.substr(0, v.find_first_of("\r\n"));
    if (v.empty() || v.find_first_of(" \t") != std::string::npos) return {};
    return "runc://" + v;
}

namespace {

std::string ask_runc_version(const std::string& runc_binary) {
    auto v = run_command({runc_binary, "--version"}, 5'000);
    return v && v.value().exit_code == 0 ? runc_version_string(v.value().out) : std::string();
}

}  // namespace

void RuncRuntime::leftover_removed() {
    if (--leftovers_pending_ > 0) return;
    auto held = std::exchange(held_starts_, {});
    for (auto& h : held) start_async(std::move(h.launch), std::move(h.done));
}

void RuncRuntime::cancel_held_starts() {
    // Not begun: no id, no bundle, nothing to undo. The agent stops, and
    // each is one of its operations in flight that it waits for.
    for (auto& h : std::exchange(held_starts_, {}))
        post([done = std::move(h.done), name = h.launch.container_name] {
            done(canceled("starting container " + name));
        });
}

Result<std::vector<ContainerInfo>> RuncRuntime::adopt_all() {
    uv_loop_t* loop = attached_loop();
    if (version_.empty() && !version_asked_) {
        // `runc --version` (10 to 30 ms) on the pool, queued before any
        // start: known long before the Node's first status is posted.
        version_asked_ = true;
        auto out = std::make_shared<std::string>();
        auto ask = [out, binary = runc_binary_] { *out = ask_runc_version(binary); };
        auto answered = [this, out, alive = alive_](int) {
            if (*alive) version_ = *out;
        };
        if (!loop || queue_on_pool(loop, ask, answered) != 0) {
            ask();
            version_ = *out;
        }
    }
    auto adopted = exec_->adopt_all();
    if (!adopted) return adopted;
    for (auto& info : adopted.value()) {
        add_oom_reason(info);
        add_image_ref(info);
    }
    std::set<std::string> known;
    for (const auto& info : adopted.value()) known.insert(info.id);
    std::vector<std::string> leftovers;
    std::error_code ec;
    for (fs::directory_iterator it(runtime_dir_ + "/bundles", ec); !ec && it != fs::directory_iterator();
         it.increment(ec)) {
        std::string id = it->path().filename().string();
        if (exec::is_container_id(id) && known.count(id) == 0) leftovers.push_back(id);
    }
    for (const auto& id : leftovers) {
        // Each `runc delete` (20 to 50 ms) on the pool; starts wait for
        // them all (start_async), so that no leftover outlives a new start.
        const std::string bundle = bundle_dir(id);
        auto remove = [runc = runc_, id, bundle] { discard(runc, id, bundle); };
        ++leftovers_pending_;
        auto removed = [this, alive = alive_](int) {
            if (*alive) leftover_removed();
        };
        if (!loop || queue_on_pool(loop, remove, removed) != 0) {
            remove();
            leftover_removed();
        }
    }
    return adopted;
}

void RuncRuntime::pod_removed(const std::string& pod_uid) {
    // A uid is the agent's (validated at start); never a path of its own.
    if (pod_uid.empty() || pod_uid.find('/') != std::string::npos || pod_uid == "." || pod_uid == "..")
        return;
    std::error_code ec;
    // A Memory emptyDir's tmpfs first: remove_all would empty it, not unmount it.
    tear_down_empty_dirs(runtime_dir_ + "/pods/" + pod_uid + "/volumes");
    fs::remove_all(runtime_dir_ + "/pods/" + pod_uid, ec);
}

std::optional<std::vector<std::string>> RuncRuntime::exec_in(const std::string& id,
                                                             const std::vector<std::string>& command) const {
    std::vector<std::string> argv = {runc_binary_, "--root", runc_root(), "exec", id};
    argv.insert(argv.end(), command.begin(), command.end());
    return argv;
}

Result<bool> RuncRuntime::own_network(const std::string& id) const {
    if (!exec::is_container_id(id)) return Error{ErrorCode::Invalid, "\"" + id + "\" is not a container id"};
    if (auto it = own_network_.find(id); it != own_network_.end()) return it->second;
    auto config = read_file(bundle_dir(id) + "/config.json", 1024 * 1024);
    if (!config) return Error{ErrorCode::Io, "container " + id + ": " + config.error().message};
    const Json spec = Json::parse(config.value(), nullptr, false);
    bool own = false;
    if (spec.is_object() && spec.contains("linux") && spec["linux"].is_object())
        for (const auto& ns : spec["linux"].value("namespaces", Json::array()))
            if (ns.is_object() && ns.value("type", "") == "network" && ns.value("path", "").empty())
                own = true;
    own_network_[id] = own;
    return own;
}

Result<PodNetwork> RuncRuntime::pod_network(const std::string& id) const {
    auto own = own_network(id);
    if (!own) return own.error();
    PodNetwork net;
    net.host_network = !own.value();
    return net;
}

Result<std::string> RuncRuntime::probe_netns(const std::string& id) const {
    auto own_ns = own_network(id);
    if (!own_ns) return own_ns.error();
    const bool own = own_ns.value();
    // libcontainer's State (runc --root R state ID reads the same file).
    auto state = read_file(runc_root() + "/" + id + "/state.json", 1024 * 1024);
    const Json st = state ? Json::parse(state.value(), nullptr, false) : Json();
    const int pid =
        st.is_object() && st["init_process_pid"].is_number_integer() ? st.value("init_process_pid", 0) : 0;
    if (pid <= 0) return Error{ErrorCode::NotRunning, "container " + id + " has no process yet"};
    return own ? "/proc/" + std::to_string(pid) + "/ns/net" : std::string();
}

Status RuncRuntime::remove(const std::string& id) {
    if (!exec::is_container_id(id)) return Error{ErrorCode::Invalid, "\"" + id + "\" is not a container id"};
    auto info = exec_->inspect(id);
    if (info && info.value().running)
        return Error{ErrorCode::Running, "container " + id + " is running: stop it first"};
    if (auto s = delete_container(runc_, id, bundle_dir(id)); !s) return s;
    own_network_.erase(id);
    return exec_->remove(id);
}

void RuncRuntime::remove_async(const std::string& id, std::function<void(Status)> done) {
    uv_loop_t* loop = attached_loop();
    if (!loop || !exec::is_container_id(id)) return Runtime::remove_async(id, std::move(done));
    if (auto info = exec_->inspect(id); info && info.value().running) {
        post([done = std::move(done), id]() {
            done(Error{ErrorCode::Running, "container " + id + " is running: stop it first"});
        });
        return;
    }
    // What runs on the pool touches no member: runc's options, the paths.
    auto result = std::make_shared<Status>(Ok{});
    auto remove = [runc = runc_, id, bundle = bundle_dir(id), result] {
        *result = delete_container(runc, id, bundle);
    };
    auto removed = [this, id, result, alive = alive_, done](int status) {
        if (status != 0) *result = canceled("removing container " + id);
        if (result->ok() && *alive) {
            own_network_.erase(id);
            *result = exec_->remove(id);
        }
        done(std::move(*result));
    };
    if (const int rc = queue_on_pool(loop, remove, removed); rc != 0)
        post([done = std::move(done), e = refused("removing container " + id, rc)] { done(e); });
}

}  // namespace daemonlet::platform
