// Image garbage collection for the runc runtime's store, as kubelet's image
// GC (pkg/kubelet/images/image_gc_manager.go): when the file system holding
// stateDir/images is at or above runtime.imageGC.highThresholdPercent, the
// least recently used images that nothing needs are removed until it is
// below lowThresholdPercent. The choice is core's select_image_victims; the
// removal is a `daemonlet-image remove` child, one image at a time, the
// file system measured again after each (kubelet frees by the images'
// reported sizes; we measure instead, so that shared layers do not make us
// remove more than needed).
//
// Checked every 5 minutes (kubelet's ImageGCPeriod), after an import or a
// pull, and after a pod of ours stops (a deviation: a rolling update then
// frees its old image's space without waiting for the period).
//
// In use, and never removed: the images of every container of every pod we
// run, and, the edge deviation from kubelet, those of every DaemonSet this
// node should run (its cached template), running or not: an offline board
// must keep what its DaemonSets need to restart after a reboot.
//
// The import records (image_records.cpp) of an archive whose images were
// removed say so ("collected"): the next start does not import it again
// (that would fill the disk again), unless the archive changed, or a pod
// waits for one of its images, which imports it again at once.
#include <sys/statvfs.h>

#include <algorithm>

#include "agent/daemon/images.h"
#include "core/decision.h"
#include "core/image_gc.h"
#include "core/image_reference.h"
#include "core/json.h"
#include "core/strings.h"
#include "platform/log.h"
#include "platform/system_info.h"

namespace daemonlet::agent {

using platform::Level;
using platform::log;

namespace {

// kubelet's ImageGCPeriod (pkg/kubelet/kubelet.go).
constexpr std::uint64_t kImageGcPeriodMs = 5 * 60 * 1000;
// A removal deletes files; a store of thousands of files on an SD card
// takes seconds. A hung one must not stop GC forever.
constexpr std::int64_t kRemoveDeadlineMs = 10 * 60 * 1000;
constexpr std::size_t kMaxLastUsed = 256;

// The file system holding `dir` (statvfs: f_bavail, what we may use);
// capacity 0 when it cannot be measured.
FsUsage usage_of(const std::string& dir) {
    struct statvfs vfs {};
    if (::statvfs(dir.c_str(), &vfs) != 0) return FsUsage{};
    return FsUsage{static_cast<std::int64_t>(vfs.f_blocks) * static_cast<std::int64_t>(vfs.f_frsize),
                   static_cast<std::int64_t>(vfs.f_bavail) * static_cast<std::int64_t>(vfs.f_frsize)};
}

}  // namespace

// The key select_image_victims matches (images.h): the normalised name, or the digest
// of a reference by digest; the text itself when it does not parse.
std::string image_key(const std::string& image) {
    auto ref = normalize_image_reference(image);
    if (!ref.ok()) return image;
    return ref.value().digest.empty() ? ref.value().str() : ref.value().digest;
}

void Images::start_image_gc() {
    gc_timer_ = new uv_timer_t;
    uv_timer_init(loop_, gc_timer_);
    gc_timer_->data = this;
    uv_timer_start(
        gc_timer_, [](uv_timer_t* t) { static_cast<Images*>(t->data)->run_image_gc("periodic check"); },
        kImageGcPeriodMs, kImageGcPeriodMs);
}

void Images::rebase_wall_times(const WallStep& step) {
    for (auto& [image, s] : last_used_) s = rebase(s * 1000, step) / 1000;
}

void Images::run_image_gc(const std::string& why) {
    // Our store holds images for runc only: with cri, containerd keeps them
    // (and the store only stages verifications).
    if (closed_ || !jobs_ || config_.runtime_type != "runc") return;
    if (gc_running_) {
        gc_again_ = true;
        return;
    }
    // Last use: every image a pod of ours runs now (kubelet's detectImages
    // sets lastUsed to now for the images of running containers).
    const std::int64_t now_s = clock_.wall_ms() / 1000;
    const std::set<std::string> in_use = host_.images_in_use();
    for (const std::string& image : in_use) last_used_[image] = now_s;
    // Bounded: every tag a rollout ever used would stay otherwise. What is
    // forgotten counts as never used, as after a restart (kubelet keeps its
    // records in memory too).
    if (last_used_.size() > kMaxLastUsed)
        std::erase_if(last_used_, [&](const auto& e) { return !in_use.count(e.first); });
    const std::string store_dir = config_.state_dir + "/images";
    const FsUsage usage = usage_of(store_dir);  // no store yet: capacity 0, nothing to collect
    if (image_gc_bytes_to_free(usage, config_.image_gc) <= 0) return;
    platform::ProbeAction a;
    a.type = platform::ProbeAction::Type::Exec;
    a.command = {image_tool_, "list", "--store", store_dir};
    a.timeout_ms = kListDeadlineMs;
    gc_running_ = true;
    auto id = jobs_->run(a, [this, why](platform::ProbeResult r) { on_image_gc_listed(why, r); });
    if (!id) {
        gc_running_ = false;
        log(Level::Err, "image GC: cannot run daemonlet-image: " + id.error().message);
    }
}

void Images::on_image_gc_listed(const std::string& why, const platform::ProbeResult& r) {
    if (closed_) return;
    Json list = r.outcome == ProbeOutcome::Success ? Json::parse(r.output, nullptr, false) : Json();
    if (!list.is_array()) {
        log(Level::Err, "image GC: cannot list the image store: " + trim(r.output) + "; tried again later");
        return finish_image_gc();
    }
    // One GcImage per digest, with every name of it.
    std::map<std::string, GcImage> by_digest;
    for (const Json& e : list) {
        if (!e.is_object() || !e.contains("digest") || !e["digest"].is_string()) continue;
        GcImage& g = by_digest[e["digest"].get<std::string>()];
        g.digest = e["digest"].get<std::string>();
        const std::string name = e.value("name", "");
        if (!name.empty()) {
            g.names.push_back(name);
            auto used = last_used_.find(name);
            if (used != last_used_.end()) g.last_used_s = std::max(g.last_used_s, used->second);
        }
        if (e.contains("size") && e["size"].is_number_integer())
            g.size = std::max(g.size, e["size"].get<std::int64_t>());
        if (e.contains("imported") && e["imported"].is_number_integer())
            g.imported_s = std::max(g.imported_s, e["imported"].get<std::int64_t>());
    }
    std::vector<GcImage> images;
    store_bytes_ = 0;
    for (auto& [digest, g] : by_digest) {
        store_bytes_ += g.size;
        images.push_back(std::move(g));
    }
    const std::string store_dir = config_.state_dir + "/images";
    const FsUsage usage = usage_of(store_dir);
    const std::int64_t to_free = image_gc_bytes_to_free(usage, config_.image_gc);
    auto victims = select_image_victims(std::move(images), host_.images_in_use(), usage, config_.image_gc,
                                        clock_.wall_ms() / 1000);
    const std::int64_t used_percent = usage.capacity > 0 ? 100 - usage.available * 100 / usage.capacity : 0;
    if (victims.empty()) {
        log(Level::Warning, "image GC (" + why + "): " + store_dir + " is " + std::to_string(used_percent) +
                                "% used (runtime.imageGC.highThresholdPercent " +
                                std::to_string(config_.image_gc.high_threshold_percent) +
                                "), and no image can be removed: every image is in use or younger than " +
                                std::to_string(config_.image_gc.minimum_age_s) + " s");
        return finish_image_gc();
    }
    log(Level::Notice, "image GC (" + why + "): " + store_dir + " is " + std::to_string(used_percent) +
                           "% used, at or above runtime.imageGC.highThresholdPercent " +
                           std::to_string(config_.image_gc.high_threshold_percent) + "; freeing " +
                           std::to_string(to_free) + " bytes, down to lowThresholdPercent " +
                           std::to_string(config_.image_gc.low_threshold_percent));
    gc_victims_ = std::move(victims);
    remove_next_image();
}

void Images::remove_next_image() {
    if (closed_) return;
    const std::string store_dir = config_.state_dir + "/images";
    const FsUsage usage = usage_of(store_dir);
    // Below the low threshold: done (kubelet: spaceFreed >= bytesToFree).
    const bool enough =
        usage.capacity > 0 &&
        usage.capacity * (100 - config_.image_gc.low_threshold_percent) / 100 <= usage.available;
    if (gc_victims_.empty() || enough) return finish_image_gc();
    // In use since the choice (a pod created meanwhile): skipped.
    const GcImage victim = gc_victims_.front();
    gc_victims_.erase(gc_victims_.begin());
    const std::set<std::string> in_use = host_.images_in_use();
    bool used = in_use.count(victim.digest) > 0;
    for (const std::string& n : victim.names) used = used || in_use.count(n) > 0;
    if (used) return remove_next_image();
    const std::string digest = victim.digest;
    platform::ProbeAction a;
    a.type = platform::ProbeAction::Type::Exec;
    a.command = {image_tool_, "remove", "--store", store_dir, digest};
    a.timeout_ms = kRemoveDeadlineMs;
    auto id = jobs_->run(a, [this, digest](platform::ProbeResult r) { on_image_removed(digest, r); });
    if (!id) {
        log(Level::Err, "image GC: cannot run daemonlet-image: " + id.error().message);
        finish_image_gc();
    }
}

void Images::on_image_removed(const std::string& digest, const platform::ProbeResult& r) {
    if (closed_) return;
    if (r.outcome != ProbeOutcome::Success) {
        // Crash-safe in the store: the next collection finishes it.
        log(Level::Err, "image GC: removing " + digest + ": " + trim(r.output) + "; tried again later");
        return finish_image_gc();
    }
    // One JSON line per image removed, then {"bytesFreed", "keptMounted"}.
    std::set<std::string> removed_names;
    for (const Json& line : json_object_lines(r.output)) {
        if (line.contains("bytesFreed")) {
            std::string kept;
            if (line.contains("keptMounted") && line["keptMounted"].is_array())
                for (const Json& k : line["keptMounted"])
                    if (k.is_string()) kept += (kept.empty() ? "" : ", ") + k.get<std::string>();
            log(Level::Info, "image GC: " + std::to_string(line.value("bytesFreed", std::int64_t{0})) +
                                 " bytes freed in the store" +
                                 (kept.empty() ? std::string() : "; layers kept while mounted: " + kept));
            continue;
        }
        const std::string name = line.value("name", "");
        removed_names.insert(name);
        log(Level::Notice, "image GC: removed image " +
                               (name.empty() ? std::string("(without a name)") : name) + " " +
                               line.value("digest", "") + ", " +
                               std::to_string(line.value("bytes", std::int64_t{0})) + " bytes freed");
    }
    mark_collected_imports(digest, removed_names);
    remove_next_image();
}

void Images::finish_image_gc() {
    gc_running_ = false;
    gc_victims_.clear();
    if (gc_again_) {
        gc_again_ = false;
        run_image_gc("checked again");
    }
}

}  // namespace daemonlet::agent
