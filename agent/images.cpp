// The runc runtime's images: the local image store (stateDir/images) and
// the import directory. Boards are often offline, so images arrive as
// archives (OCI image layout, docker-archive) dropped into
// runtime.imageImportDir; each is imported when it appears or changes, and
// the containers waiting for an image (ErrImagePull, ErrImageNeverPull) are started again at
// once rather than at the end of their back-off.
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "agent/agent.h"
#include "core/local_node.h"
#include "core/oci_image.h"
#include "platform/log.h"
#include "platform/system_info.h"

namespace daemonlet::agent {

using platform::Level;
using platform::log;

namespace {

namespace fs = std::filesystem;

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

Status Agent::open_images() {
    const std::string root = config_.state_dir + "/images";
    const std::string machine = platform::machine();
    auto store = platform::ImageStore::open(root, host_platform(goarch_from_machine(machine), machine));
    if (!store) return Error{store.error().code, "image store " + root + ": " + store.error().message};
    images_ = std::make_unique<platform::ImageStore>(std::move(store).value());
    std::error_code ec;
    fs::create_directories(image_import_dir_of(config_), ec);
    if (ec)
        log(Level::Warning, "runtime.imageImportDir " + image_import_dir_of(config_) + ": " + ec.message() +
                                "; images can only come from an earlier import");
    return Ok{};
}

void Agent::import_images() {
    if (stopping_ || !images_) return;
    const std::string dir = image_import_dir_of(config_);
    std::error_code ec;
    std::vector<std::string> names;
    for (fs::directory_iterator it(dir, ec); !ec && it != fs::directory_iterator(); it.increment(ec))
        if (is_archive_name(it->path().filename().string())) names.push_back(it->path().filename().string());
    std::sort(names.begin(), names.end());
    std::map<std::string, std::pair<std::int64_t, std::int64_t>> seen;
    bool imported = false;
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
        auto result = images_->import_archive(path);
        if (!result) {
            log(Level::Err, "image import: " + result.error().message +
                                "; nothing of it was imported; it is tried again when the file changes");
            continue;
        }
        for (const auto& image : result.value())
            log(Level::Notice,
                "image import: " + path + ": imported " +
                    (image.name.empty() ? std::string("(an image without a name)") : image.name) + " " +
                    image.manifest_digest);
        imported = imported || !result.value().empty();
    }
    import_seen_ = std::move(seen);
    if (imported) retry_image_waits();
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
