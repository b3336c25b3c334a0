// Watching the manifest directory: inotify through libuv for changes as they
// happen, a settle delay so that an editor's burst of events (truncate and
// write, write a temp file and rename, several writes) leads to one rescan,
// and a full rescan every fileCheckFrequency to catch anything missed (as
// kubelet's static pod source does). The owner rescans on the callback.
#pragma once

#include <uv.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace daemonlet::platform {

class DirWatch {
  public:
    // on_change runs on the loop after events settle (no event for settle_ms,
    // or max_settle_ms since the first one) and at every periodic rescan.
    DirWatch(uv_loop_t* loop, std::string dir, std::int64_t settle_ms, std::int64_t rescan_ms,
             std::function<void()> on_change);
    DirWatch(const DirWatch&) = delete;
    DirWatch& operator=(const DirWatch&) = delete;
    ~DirWatch();

    // Starts watching. A missing directory is not an error: it is watched
    // for again at each periodic rescan.
    void start();
    void close();

  private:
    static void on_event(uv_fs_event_t* h, const char* name, int events, int status);
    static void on_settled(uv_timer_t* t);
    static void on_rescan(uv_timer_t* t);
    void ensure_watch();

    uv_loop_t* loop_;
    std::string dir_;
    std::int64_t settle_ms_;
    std::int64_t rescan_ms_;
    std::function<void()> on_change_;
    uv_fs_event_t* event_ = nullptr;
    uv_timer_t* settle_ = nullptr;
    uv_timer_t* rescan_ = nullptr;
    std::uint64_t first_event_ms_ = 0;
    bool pending_ = false;
};

// A manifest file in the directory: *.yaml, *.yml, *.json; dot-files and
// editor leftovers (~, .swp, .swx, #...#) skipped. Sorted by name.
struct DirEntry {
    std::string path;
    std::int64_t mtime_ns = 0;
    std::int64_t size = 0;
};
std::vector<DirEntry> list_manifest_files(const std::string& dir, std::string* error);
bool is_manifest_name(const std::string& name);

}  // namespace daemonlet::platform
