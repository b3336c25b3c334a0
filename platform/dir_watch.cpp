#include "platform/dir_watch.h"

#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace daemonlet::platform {
namespace {

constexpr std::uint64_t kMaxSettleMs = 500;

template <class H>
void close_and_free(H*& h) {
    if (!h) return;
    uv_close(reinterpret_cast<uv_handle_t*>(h), [](uv_handle_t* p) { delete reinterpret_cast<H*>(p); });
    h = nullptr;
}

bool ends_with(const std::string& s, const char* suffix) {
    std::size_t n = std::strlen(suffix);
    return s.size() >= n && s.compare(s.size() - n, n, suffix) == 0;
}

}  // namespace

bool is_manifest_name(const std::string& name) {
    if (name.empty() || name[0] == '.' || name[0] == '#') return false;
    if (name.back() == '~' || ends_with(name, ".swp") || ends_with(name, ".swx")) return false;
    return ends_with(name, ".yaml") || ends_with(name, ".yml") || ends_with(name, ".json");
}

std::vector<DirEntry> list_manifest_files(const std::string& dir, std::string* error) {
    std::vector<DirEntry> out;
    DIR* d = opendir(dir.c_str());
    if (!d) {
        if (error) *error = dir + ": " + std::strerror(errno);
        return out;
    }
    while (struct dirent* e = readdir(d)) {
        std::string name = e->d_name;
        if (!is_manifest_name(name)) continue;
        std::string path = dir + "/" + name;
        struct stat st {};
        if (stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
        out.push_back({path,
                       static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec,
                       static_cast<std::int64_t>(st.st_size)});
    }
    closedir(d);
    std::sort(out.begin(), out.end(), [](const DirEntry& a, const DirEntry& b) { return a.path < b.path; });
    return out;
}

DirWatch::DirWatch(uv_loop_t* loop, std::string dir, std::int64_t settle_ms, std::int64_t rescan_ms,
                   std::function<void()> on_change)
    : loop_(loop),
      dir_(std::move(dir)),
      settle_ms_(settle_ms),
      rescan_ms_(rescan_ms),
      on_change_(std::move(on_change)) {}

DirWatch::~DirWatch() { close(); }

void DirWatch::start() {
    settle_ = new uv_timer_t;
    uv_timer_init(loop_, settle_);
    settle_->data = this;
    rescan_ = new uv_timer_t;
    uv_timer_init(loop_, rescan_);
    rescan_->data = this;
    auto period = static_cast<std::uint64_t>(rescan_ms_);
    uv_timer_start(rescan_, on_rescan, period, period);
    ensure_watch();
}

void DirWatch::ensure_watch() {
    if (event_) return;
    auto* h = new uv_fs_event_t;
    uv_fs_event_init(loop_, h);
    h->data = this;
    if (uv_fs_event_start(h, on_event, dir_.c_str(), 0) != 0) {
        // Not there (yet): the periodic rescan tries again.
        uv_close(reinterpret_cast<uv_handle_t*>(h),
                 [](uv_handle_t* p) { delete reinterpret_cast<uv_fs_event_t*>(p); });
        return;
    }
    event_ = h;
}

void DirWatch::on_event(uv_fs_event_t* h, const char*, int, int status) {
    auto* self = static_cast<DirWatch*>(h->data);
    if (status < 0) {
        // The directory went away (deleted or replaced): watch again at the
        // next rescan, and rescan now so its files' removal is noticed.
        close_and_free(self->event_);
    }
    std::uint64_t now = uv_now(self->loop_);
    if (!self->pending_) {
        self->pending_ = true;
        self->first_event_ms_ = now;
    }
    // Settle: wait for a quiet period, but never longer than kMaxSettleMs
    // after the first event, so a file written continuously is still seen.
    std::uint64_t wait = static_cast<std::uint64_t>(self->settle_ms_);
    std::uint64_t deadline = self->first_event_ms_ + kMaxSettleMs;
    if (now + wait > deadline) wait = deadline > now ? deadline - now : 0;
    uv_timer_start(self->settle_, on_settled, wait, 0);
}

void DirWatch::on_settled(uv_timer_t* t) {
    auto* self = static_cast<DirWatch*>(t->data);
    self->pending_ = false;
    self->on_change_();
}

void DirWatch::on_rescan(uv_timer_t* t) {
    auto* self = static_cast<DirWatch*>(t->data);
    self->ensure_watch();
    self->on_change_();
}

void DirWatch::close() {
    close_and_free(event_);
    close_and_free(settle_);
    close_and_free(rescan_);
}

}  // namespace daemonlet::platform
