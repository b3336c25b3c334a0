// The runc runtime's images: the local image store (stateDir/images) and
// the import directory. Boards are often offline, so images arrive as
// archives (OCI image layout, docker-archive) dropped into
// runtime.imageImportDir; each is imported when it appears or changes, by
// daemonlet-image run on the loop (the agent never links libarchive, and
// never waits for an import), and the containers waiting for an image
// (ErrImagePull, ErrImageNeverPull) are started again at once rather than
// at the end of their back-off.
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "agent/agent.h"
#include "core/json.h"
#include "platform/log.h"

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

}  // namespace

void Agent::open_images() {
    image_jobs_ = std::make_unique<platform::Prober>(&loop_);
    std::error_code ec;
    fs::create_directories(image_import_dir_of(config_), ec);
    if (ec)
        log(Level::Warning, "runtime.imageImportDir " + image_import_dir_of(config_) + ": " + ec.message() +
                                "; images can only come from an earlier import");
}

void Agent::import_images() {
    if (stopping_ || !image_jobs_) return;
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
    import_seen_ = std::move(seen);
    forget_removed_imports(import_seen_);
    start_next_import();
}

// One daemonlet-image at a time: imports share the store's lock anyway, and
// one at a time bounds what the agent starts however many files arrive.
void Agent::start_next_import() {
    while (!stopping_ && !importing_ && !import_queue_.empty()) {
        std::string path = import_queue_.front();
        import_queue_.pop_front();
        platform::ProbeAction a;
        a.type = platform::ProbeAction::Type::Exec;
        a.command = {find_helper("daemonlet-image"), "import", "--store", config_.state_dir + "/images",
                     path};
        a.timeout_ms = kImportDeadlineMs;
        // The version read before the import, recorded with its outcome.
        auto seen = import_seen_.find(path);
        std::optional<std::pair<std::int64_t, std::int64_t>> version;
        if (seen != import_seen_.end()) version = seen->second;
        auto id = image_jobs_->run(
            a, [this, path, version](platform::ProbeResult r) { on_imported(path, version, r); });
        if (!id) {
            log(Level::Err, "image import: " + path + ": cannot run daemonlet-image: " + id.error().message +
                                "; it is tried again when the file changes");
            continue;
        }
        importing_ = path;
    }
}

void Agent::on_imported(const std::string& path,
                        const std::optional<std::pair<std::int64_t, std::int64_t>>& version,
                        const platform::ProbeResult& r) {
    importing_.reset();
    bool imported = false;
    Json images = Json::array();
    if (r.outcome != ProbeOutcome::Success) {
        std::string why = r.output;
        while (!why.empty() && why.back() == '\n') why.pop_back();
        // daemonlet-image names the archive, the member and the reason.
        log(Level::Err, "image import: " + (why.find(path) == std::string::npos ? path + ": " : "") + why +
                            "; nothing of it was imported; it is tried again when the file changes and at "
                            "the next start");
    } else {
        // One JSON line per image: {"name", "digest"}.
        std::size_t start = 0;
        while (start < r.output.size()) {
            std::size_t end = r.output.find('\n', start);
            if (end == std::string::npos) end = r.output.size();
            Json line = Json::parse(r.output.substr(start, end - start), nullptr, false);
            start = end + 1;
            if (!line.is_object()) continue;
            const std::string name = line.value("name", "");
            log(Level::Notice, "image import: " + path + ": imported " +
                                   (name.empty() ? std::string("(an image without a name)") : name) + " " +
                                   line.value("digest", ""));
            imported = true;
            images.push_back({{"name", name}, {"digest", line.value("digest", "")}});
        }
    }
    if (version) record_import(path, *version, r.outcome == ProbeOutcome::Success, images);
    if (imported) retry_image_waits();
    start_next_import();
}

void Agent::retry_image_waits() {
    bool started = false;
    for (auto& [uid, p] : pods_) {
        for (std::size_t i = 0; i < p.containers.size(); ++i) {
            LiveContainer& lc = p.containers[i];
            const ContainerStatus& cs = p.status(i);
            if (!lc.id.empty() || !is_image_wait(cs.reason)) continue;
            close_restart_timer(lc.restart_timer);
            lc.backoff = {};
            start_container(uid, i);
            refresh_readiness(p);
            save_pod(p);
            started = true;
        }
    }
    if (started) schedule_reconcile();
}

}  // namespace daemonlet::agent
