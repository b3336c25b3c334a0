// The runc runtime's images: the local image store (stateDir/images) and
// the import directory. Boards are often offline, so images arrive as
// archives (OCI image layout, docker-archive) dropped into
// runtime.imageImportDir; each is imported when it appears or changes, by
// daemonlet-image run on the loop (the agent never links libarchive, and
// never waits for an import), and the containers waiting for an image
// (ErrImagePull, ErrImageNeverPull) are started again at once rather than
// at the end of their back-off. With runtime.type cri the same directory
// feeds containerd: daemonlet-image verifies each archive, then imports it
// with ctr into the CRI plugin's namespace (platform/image/containerd_images.h);
// everything else here is the same.
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "agent/daemon/images.h"
#include "core/image_wait.h"
#include "core/json.h"
#include "core/pod_lifecycle.h"
#include "platform/image/overlay_mount.h"
#include "platform/log.h"
#include "platform/system_info.h"

namespace daemonlet::agent {

using platform::Level;
using platform::log;

namespace {

namespace fs = std::filesystem;

// An archive of several GiB on an SD card: far longer than any real import,
// short enough that a hung one does not stop the imports after it forever.
constexpr std::int64_t kImportDeadlineMs = 30 * 60 * 1000;

bool ends_with(const std::string& s, std::string_view suffix) {
    return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// An archive to import: *.tar (and so *.oci.tar), *.tar.gz, *.tgz. Dot-files
// are skipped: a copy in progress under a hidden name, then renamed, is
// imported once, whole.
bool is_archive_name(const std::string& name) {
    if (name.empty() || name[0] == '.') return false;
    return ends_with(name, ".tar") || ends_with(name, ".tar.gz") || ends_with(name, ".tgz");
}

// The deliberate deviation from kubelet (which fails the start): with
// imagePullPolicy Always and the registry unreachable, an offline board runs
// the image it has, as it runs static pods. Said once per image until a
// pull succeeds.
void warn_offline_once(const std::string& image, const std::string& error, bool& warned) {
    if (!warned)
        log(Level::Warning,
            "image " + image +
                ": imagePullPolicy Always but the registry is unreachable; starting the image "
                "in the local store (" +
                error + ")");
    warned = true;
}

}  // namespace

std::vector<std::string> image_tool_command(const std::string& image_tool, const AgentConfig& config,
                                            const std::string& verb) {
    std::vector<std::string> argv = {image_tool, verb, "--store", config.state_dir + "/images"};
    if (config.runtime_type == "cri") {
        // The store only stages the verification of each archive.
        argv.insert(argv.end(), {"--containerd", config.cri_endpoint});
        if (!config.cri_snapshotter.empty())
            argv.insert(argv.end(), {"--snapshotter", config.cri_snapshotter});
    }
    return argv;
}

bool is_runtime_unavailable(const std::string& output) {
    return output.find("daemonlet-image: unavailable: ") != std::string::npos;
}

bool is_disk_full(const std::string& output) {
    return output.find("No space left on device") != std::string::npos ||
           output.find("Disk quota exceeded") != std::string::npos ||
           output.find("daemonlet-image: no_space: ") != std::string::npos;
}

Images::Images(uv_loop_t* loop, const AgentConfig& config, store::Store& store, platform::Runtime& runtime,
               const platform::Clock& clock, Host& host, std::string image_tool)
    : loop_(loop),
      config_(config),
      store_(store),
      runtime_(runtime),
      clock_(clock),
      host_(host),
      image_tool_(std::move(image_tool)) {}

Images::~Images() = default;

void Images::open() {
    jobs_ = std::make_unique<platform::Prober>(loop_);
    std::error_code ec;
    fs::create_directories(image_import_dir_of(config_), ec);
    if (ec)
        log(Level::Warning, "runtime.imageImportDir " + image_import_dir_of(config_) + ": " + ec.message() +
                                "; images can only come from an earlier import");
}

void Images::start() {
    if (!jobs_ || closed_) return;
    // The images dropped in while the agent was down: a pod that needs
    // one waits (ErrImagePull) until its import ends, then starts.
    import_images();
    import_watch_ =
        std::make_unique<platform::DirWatch>(loop_, image_import_dir_of(config_), 30,
                                             config_.file_check_frequency_ms, [this] { import_images(); });
    import_watch_->start();
    start_image_gc();
}

void Images::close() {
    if (closed_) return;
    closed_ = true;
    if (import_watch_) import_watch_->close();
    if (gc_timer_) {
        uv_close(reinterpret_cast<uv_handle_t*>(gc_timer_),
                 [](uv_handle_t* h) { delete reinterpret_cast<uv_timer_t*>(h); });
        gc_timer_ = nullptr;
    }
    if (jobs_) jobs_->close();  // an import in progress is killed; the next one cleans up
    import_queue_.clear();
}

void Images::pod_removed(const std::string& uid) {
    std::erase_if(pulled_, [&](const ImageWaiter& w) { return w.uid == uid; });
    // Its image may be unused now (a rolling update's old one): image GC
    // need not wait for its period (image_gc.cpp).
    run_image_gc("a pod stopped");
}

std::int64_t Images::pull_backoff_ms(const std::string& image) const {
    auto it = pulls_.find(image);
    return it == pulls_.end() ? 0 : it->second.backoff_ms;
}

bool Images::pulling(const std::string& image) const {
    auto it = pulls_.find(image);
    return it != pulls_.end() && it->second.running;
}

Result<bool> choose_rootfs(const AgentConfig& config_, const std::string& store_dir,
                           const std::string& runtime_dir) {
    Status probe = Error{ErrorCode::Unavailable, "not probed"};
    if (config_.runtime_rootfs != "copy") {
        std::error_code ec;
        for (const std::string& d : {store_dir, runtime_dir}) fs::create_directories(d, ec);
        probe = platform::probe_overlay(store_dir, runtime_dir);
    }
    auto overlay = platform::use_overlay(config_.runtime_rootfs, probe);
    if (!overlay.ok()) return overlay;
    if (overlay.value())
        log(Level::Info, "runtime.rootfs " + config_.runtime_rootfs +
                             ": containers' root filesystems are overlay mounts of the image's layers");
    else if (config_.runtime_rootfs == "copy")
        log(Level::Info,
            "runtime.rootfs copy: containers' root filesystems are copies of the image's layers");
    else
        log(Level::Notice,
            "runtime.rootfs auto: containers' root filesystems are copies of the image's layers (" +
                probe.error().message + ")");
    return overlay;
}

void Images::import_images() {
    if (closed_ || !jobs_) return;
    // First what earlier runs imported (image_records.cpp): it calls back.
    if (!imports_recalled_) return recall_imports();
    const std::string dir = image_import_dir_of(config_);
    std::error_code ec;
    std::vector<std::string> names;
    for (fs::directory_iterator it(dir, ec); !ec && it != fs::directory_iterator(); it.increment(ec))
        if (is_archive_name(it->path().filename().string())) names.push_back(it->path().filename().string());
    std::sort(names.begin(), names.end());
    std::map<std::string, std::pair<std::int64_t, std::int64_t>> seen;
    for (const auto& name : names) {
        const std::string path = dir + "/" + name;
        struct stat st {};
        if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
        const std::pair<std::int64_t, std::int64_t> version{
            static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec,
            static_cast<std::int64_t>(st.st_size)};
        seen[path] = version;
        // Each version of a file once: a bad archive is not retried in a
        // loop, only when it is replaced.
        auto done = import_seen_.find(path);
        if (done != import_seen_.end() && done->second == version) continue;
        if (std::find(import_queue_.begin(), import_queue_.end(), path) == import_queue_.end())
            import_queue_.push_back(path);
    }
    // The archive that waited for space was taken away: nothing waits now.
    if (!import_full_path_.empty() && !seen.count(import_full_path_)) {
        import_full_path_.clear();
        import_full_why_.clear();
    }
    import_seen_ = std::move(seen);
    forget_removed_imports(import_seen_);
    start_next_import();
}

// One daemonlet-image at a time: imports share the store's lock anyway, and
// one at a time bounds what the agent starts however many files arrive.
void Images::start_next_import() {
    while (!closed_ && !importing_ && !import_queue_.empty()) {
        std::string path = import_queue_.front();
        import_queue_.pop_front();
        platform::ProbeAction a;
        a.type = platform::ProbeAction::Type::Exec;
        a.command = image_tool_command(image_tool_, config_, "import");
        a.command.push_back(path);
        a.timeout_ms = kImportDeadlineMs;
        // The version read before the import, recorded with its outcome.
        auto seen = import_seen_.find(path);
        std::optional<std::pair<std::int64_t, std::int64_t>> version;
        if (seen != import_seen_.end()) version = seen->second;
        auto id =
            jobs_->run(a, [this, path, version](platform::ProbeResult r) { on_imported(path, version, r); });
        if (!id) {
            log(Level::Err, "image import: " + path + ": cannot run daemonlet-image: " + id.error().message +
                                "; it is tried again when the file changes");
            continue;
        }
        importing_ = path;
    }
}

void Images::on_imported(const std::string& path,
                         const std::optional<std::pair<std::int64_t, std::int64_t>>& version,
                         const platform::ProbeResult& r) {
    importing_.reset();
    bool imported = false;
    Json images = Json::array();
    // The archive that waited for space ended otherwise (imported, bad,
    // containerd down): it waits for space no more.
    const bool full =
        r.outcome != ProbeOutcome::Success && !is_runtime_unavailable(r.output) && is_disk_full(r.output);
    if (!full && path == import_full_path_) {
        import_full_path_.clear();
        import_full_why_.clear();
    }
    if (r.outcome != ProbeOutcome::Success && is_runtime_unavailable(r.output)) {
        // containerd is down (cri): nothing is wrong with the archive. It
        // is not recorded, and the next look at the directory (a change,
        // or fileCheckFrequency) queues it again. Said once until an
        // import gets through.
        if (!import_runtime_down_) {
            std::string why = r.output;
            while (!why.empty() && why.back() == '\n') why.pop_back();
            log(Level::Warning, "image import: " + path + ": " + why +
                                    "; tried again at the next check of the import directory");
        }
        import_runtime_down_ = true;
        import_seen_.erase(path);
        start_next_import();
        return;
    }
    if (r.outcome != ProbeOutcome::Success && is_disk_full(r.output)) {
        // The stateDir (or containerd's root) is full: the archive is
        // fine. As above: not recorded, queued again at the next check of
        // the directory, said once until an import gets through.
        host_.image_operation_done("import", false);
        std::string why = r.output;
        while (!why.empty() && why.back() == '\n') why.pop_back();
        import_full_path_ = path;
        import_full_why_ = (why.find(path) == std::string::npos ? path + ": " : "") + why;
        if (!import_disk_full_)
            log(Level::Err, "image import: " + import_full_why_ +
                                "; the disk is full: nothing of it was imported, it is tried again at the "
                                "next check of the import directory");
        import_disk_full_ = true;
        import_seen_.erase(path);
        start_next_import();
        return;
    }
    if (r.outcome == ProbeOutcome::Success) {
        import_runtime_down_ = import_disk_full_ = false;
        import_full_path_.clear();
        import_full_why_.clear();
    }
    host_.image_operation_done("import", r.outcome == ProbeOutcome::Success);
    if (r.outcome != ProbeOutcome::Success) {
        std::string why = r.output;
        while (!why.empty() && why.back() == '\n') why.pop_back();
        // daemonlet-image names the archive, the member and the reason.
        log(Level::Err, "image import: " + (why.find(path) == std::string::npos ? path + ": " : "") + why +
                            "; nothing of it was imported; it is tried again when the file changes and at "
                            "the next start");
    } else {
        // One JSON line per image: {"name", "digest"}.
        for (const Json& line : json_object_lines(r.output)) {
            const std::string name = line.value("name", "");
            log(Level::Notice, "image import: " + path + ": imported " +
                                   (name.empty() ? std::string("(an image without a name)") : name) + " " +
                                   line.value("digest", ""));
            imported = true;
            images.push_back({{"name", name}, {"digest", line.value("digest", "")}});
        }
    }
    if (version) record_import(path, *version, r.outcome == ProbeOutcome::Success, images);
    if (imported) host_.images_arrived();
    start_next_import();
    // kubelet checks after its period only; a board's small store may fill
    // with one import (image_gc.cpp).
    if (imported) run_image_gc("an image was imported");
}

Json Images::status() const {
    Json out = Json::object();
    if (!import_full_path_.empty())
        out["importWaitsForSpace"] = {{"message", import_full_why_},
                                      {"retry", "at the next check of the import directory"}};
    return out;
}

std::vector<Json> json_object_lines(const std::string& output) {
    std::vector<Json> out;
    std::size_t start = 0;
    while (start < output.size()) {
        std::size_t end = output.find('\n', start);
        if (end == std::string::npos) end = output.size();
        Json line = Json::parse(output.substr(start, end - start), nullptr, false);
        start = end + 1;
        if (line.is_object()) out.push_back(std::move(line));
    }
    return out;
}

std::vector<std::string> registry_pull_options(const AgentConfig& config) {
    std::vector<std::string> out;
    if (!config.registry_auth_file.empty()) out.insert(out.end(), {"--auth-file", config.registry_auth_file});
    if (!config.registry_certs_dir.empty()) out.insert(out.end(), {"--certs-dir", config.registry_certs_dir});
    std::string insecure;
    for (const auto& h : config.insecure_registries) insecure += (insecure.empty() ? "" : ",") + h;
    if (!insecure.empty()) out.insert(out.end(), {"--insecure", insecure});
    return out;
}

// Always pulls at every container start; IfNotPresent pulls when start()
// finds the image absent (pods.cpp); Never never pulls.
bool Images::ready_to_start(const ImageWaiter& w, const PodRecord& pod, const Container& spec,
                            ContainerStatus& cs) {
    if (spec.image_pull_policy != "Always" || !runtime_.can_pull()) return true;
    if (pulled_.erase(w) > 0) return true;
    // Backing off after the registry was unreachable, and the image arrived
    // meanwhile (an import): the offline rule below applies to it too.
    auto it = pulls_.find(spec.image);
    if (it != pulls_.end() &&
        image_pull_step(it->second.running, it->second.retry_at_mono_ms, clock_.monotonic_ms()) ==
            ImagePullStep::BackOff &&
        it->second.error_code && may_run_local_image(*it->second.error_code) &&
        runtime_.has_image(spec.image)) {
        warn_offline_once(spec.image, it->second.error, it->second.warned_offline);
        return true;
    }
    request_pull(w, pod, spec, cs);
    return false;
}

// While the image backs off after a failure, the container waits for its
// retry (kubelet's imageBackOff: pkg/kubelet/kubelet.go NewBackOff(backOffPeriod
// 10 s, MaxContainerBackOff 300 s), our crashLoopBackoff figures, whose
// defaults are those).
void Images::request_pull(const ImageWaiter& w, const PodRecord& pod, const Container& spec,
                          ContainerStatus& cs) {
    ImagePull& pull = pulls_[spec.image];
    const std::int64_t now = clock_.monotonic_ms();
    cs.state = ContainerState::Waiting;
    const ImagePullStep step = image_pull_step(pull.running, pull.retry_at_mono_ms, now);
    const std::int64_t wall = clock_.wall_ms();
    if (step == ImagePullStep::BackOff) {
        // kubelet's images.ErrImagePullBackOff: "Back-off pulling image".
        cs.reason = "ImagePullBackOff";
        cs.message = "Back-off pulling image \"" + spec.image + "\": " + pull.error;
        host_.record_container_event(
            w, [&](const ContainerRef& c) { return pull_backoff_event(c, spec.image, wall); });
        host_.record_container_event(w,
                                     [&](const ContainerRef& c) { return failed_event(c, cs.reason, wall); });
        host_.retry_image_after(w, pull.retry_at_mono_ms - now, false);
        return;
    }
    pull.waiters.insert(w);
    if (!is_image_wait(cs.reason)) {
        cs.reason = "ContainerCreating";
        cs.message = "pulling image \"" + spec.image + "\"";
    }
    // EnsureImageExists: each container that waits for the pull says so.
    host_.record_container_event(w,
                                 [&](const ContainerRef& c) { return pulling_event(c, spec.image, wall); });
    if (step == ImagePullStep::Join) return;
    pull.running = true;
    pull.started_mono_ms = now;
    log(Level::Notice, "image " + spec.image + ": pulling from its registry (imagePullPolicy " +
                           spec.image_pull_policy + ", for pod " + pod.namespace_ + "/" + pod.name + ")");
    host_.record_image_event(pod, "Normal", "Pulling", "Pulling image \"" + spec.image + "\"");
    const std::string image = spec.image;
    runtime_.pull_image(image, [this, image](Status result) { on_image_pulled(image, result); });
}

void Images::on_image_pulled(const std::string& image, const Status& result) {
    if (closed_) return;
    ImagePull& pull = pulls_[image];
    pull.running = false;
    const auto waiters = std::move(pull.waiters);
    pull.waiters.clear();
    const std::int64_t now = clock_.monotonic_ms();
    const std::int64_t took = now - pull.started_mono_ms;
    std::int64_t delay = 0;
    host_.image_operation_done("pull", result.ok());
    if (result.ok()) {
        pull = ImagePull{};
        log(Level::Notice, "image " + image + ": pulled in " + std::to_string(took) + " ms");
        run_image_gc("an image was pulled");
    } else {
        // flowcontrol.Backoff.Next as image_manager.go calls it after a
        // failed pull: the first failure waits the initial period, each
        // later one twice the last, up to the maximum.
        pull.backoff_ms = next_image_pull_backoff(pull.backoff_ms, crash_loop_policy(config_));
        delay = pull.backoff_ms;
        pull.retry_at_mono_ms = now + delay;
        pull.error = result.error().message;
        pull.error_code = result.error().code;
        log(Level::Err, "image " + image + ": pull failed (" + result.error().code_name() +
                            "): " + pull.error + "; retrying in " + std::to_string(delay) + " ms");
    }
    // A pull that failed while an import brought the image (its waiters
    // were held for the pull): the image is there, nothing to back off for.
    const bool present_now = !result.ok() && runtime_.has_image(image);
    bool touched = false;
    std::set<std::string> noted;  // one event per DaemonSet
    for (const ImageWaiter& w : waiters) {
        const Host::Waiting c = host_.waiting_for_image(w, image);
        if (!c.pod) continue;
        const PodRecord& p = *c.pod;
        const bool first_of_ds = noted.insert(p.namespace_ + "/" + p.daemonset).second;
        // Recorded even for a container that another path (the reconcile's
        // PodWorkers::advance) started once the image was in the store.
        if (result.ok() && first_of_ds)
            host_.record_image_event(
                p, "Normal", "Pulled",
                "Successfully pulled image \"" + image + "\" in " + std::to_string(took) + "ms");
        const std::int64_t wall = clock_.wall_ms();
        if (result.ok())
            host_.record_container_event(
                w, [&](const ContainerRef& r) { return pulled_event(r, image, took, took, wall); });
        if (!c.spec || !c.status) continue;
        touched = true;
        const bool always = c.spec->image_pull_policy == "Always";
        if (!result.ok() && !(present_now && (!always || may_run_local_image(result.error().code)))) {
            if (first_of_ds) {
                host_.record_image_event(p, "Warning", "Failed",
                                         "Failed to pull image \"" + image + "\": " + pull.error);
                host_.record_image_event(p, "Normal", "BackOff", "Back-off pulling image \"" + image + "\"");
            }
            host_.record_container_event(
                w, [&](const ContainerRef& r) { return pull_failed_event(r, image, pull.error, wall); });
            ContainerStatus& cs = *c.status;
            const bool again = is_image_wait(cs.reason);
            cs.state = ContainerState::Waiting;
            cs.reason = image_wait_reason(false, again);
            host_.record_container_event(
                w, [&](const ContainerRef& r) { return failed_event(r, cs.reason, wall); });
            cs.message = pull.error;
            host_.retry_image_after(w, delay, true);
            continue;
        }
        // A deliberate deviation from kubelet, which fails the start: an
        // offline board runs the image it has, as it runs static pods.
        if (!result.ok() && always) warn_offline_once(image, pull.error, pull.warned_offline);
        pulled_.insert(w);
        host_.start_pulled(w);
    }
    if (touched) host_.pulls_changed();
}

}  // namespace daemonlet::agent
