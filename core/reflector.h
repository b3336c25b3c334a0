// Following a Kubernetes collection (DaemonSets, the Node) as client-go's
// Reflector does (tools/cache/reflector.go ListAndWatch, tools/pager), as a
// pure state machine: the caller makes the HTTP requests it asks for, feeds
// back what came, and applies the changes it returns. Time and randomness
// are passed in.
//
//   list (limit/continue pages, resourceVersion="" so it is consistent)
//     --complete--> Replace(all items) --> watch from the list's
//     resourceVersion (allowWatchBookmarks, timeoutSeconds in [300, 600))
//     --events--> Upsert / Delete / bookmark --> watch again when it ends
//   410 Gone (a too old resourceVersion or continue token) --> list again
//   other failures --> back off (800 ms doubling to 30 s, jittered; reset
//     after 2 min without failure; Retry-After honoured) --> list, or watch
//     again where a watch failed on connection refused or 429.
//
// What the agent relies on: deletions come only from a complete list (a
// Replace) or a DELETED event; a failed, cut-off or partial list changes
// nothing.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/json.h"
#include "core/result.h"

namespace daemonlet {

// A watch stream's events (metav1.WatchEvent), one JSON object per line.
enum class WatchEventType { Added, Modified, Deleted, Bookmark, Error };
struct WatchEvent {
    WatchEventType type = WatchEventType::Added;
    Json object;
};

// Splits a watch response body into events as bytes arrive. A line longer
// than max_line_bytes, a line that is not JSON or not a WatchEvent is an
// error: the stream is not to be trusted after it.
class WatchDecoder {
  public:
    explicit WatchDecoder(std::size_t max_line_bytes = 4 * 1024 * 1024) : max_line_(max_line_bytes) {}
    Result<std::vector<WatchEvent>> feed(std::string_view data);
    bool mid_line() const { return !buf_.empty(); }

  private:
    std::size_t max_line_;
    std::string buf_;
};

struct ListWatchTarget {
    std::string path;  // "/apis/apps/v1/daemonsets", "/api/v1/nodes", ".../namespaces/NS/daemonsets"
    // A list's items come without these; they are set on them, so that an
    // object reads the same from a list as from a watch event.
    std::string api_version;  // "apps/v1"
    std::string kind;         // "DaemonSet"
    std::string label_selector;
    std::string field_selector;
    std::int64_t page_size = 500;  // 0: no limit (one object by name)
};

struct ReflectorPolicy {
    std::int64_t backoff_initial_ms = 800;
    std::int64_t backoff_max_ms = 30'000;
    std::int64_t backoff_reset_ms = 120'000;
    std::int64_t min_watch_timeout_s = 300;
};

struct ReflectorRequest {
    enum class Kind { List, Watch, Wait } kind = Kind::List;
    std::string target;          // path and query, for List and Watch
    std::int64_t at_ms = 0;      // Wait: until then
    std::int64_t timeout_s = 0;  // Watch: the server ends it after this
};

// What the cache must do.
struct ReflectorChanges {
    bool replace = false;       // `objects` is the whole collection: anything else goes
    std::vector<Json> objects;  // added or modified (or, with replace, all)
    std::vector<Json> deleted;
    std::string resource_version;  // to resume from, once applied
};

class Reflector {
  public:
    explicit Reflector(ListWatchTarget target, ReflectorPolicy policy = {});

    // The next request to make, marked as sent (or how long to wait first).
    // `jitter` in [0, 1) spreads watch timeouts.
    ReflectorRequest begin(std::int64_t now_ms, double jitter);

    // A list page (a *List object). When it is the last one, the changes
    // replace the collection; before that they are empty. A page that is
    // not a list is an error: call on_failure.
    Result<ReflectorChanges> on_list_page(const Json& list);
    // One event of the watch stream. A 410 ERROR event means: list again
    // (no changes, no back-off); another ERROR backs off.
    ReflectorChanges on_watch_event(const WatchEvent& ev, std::int64_t now_ms, double jitter);
    // The server ended the watch. A watch that ended within a second with
    // no event is a failure, as client-go's "very short watch".
    void on_watch_end(std::int64_t now_ms, double jitter);
    // A list page was larger than the client takes: the next pages (from
    // the list's start again, after on_failure's back-off) ask for half as
    // many objects, down to one, so that large objects (annotations,
    // managedFields) still list a page at a time. False at one already.
    bool shrink_page();
    std::int64_t page_size() const { return target_.page_size; }
    // A request failed: HTTP status (0: no response, `refused` when the
    // connection was refused), Retry-After in ms (0: none).
    void on_failure(int status, bool refused, std::int64_t retry_after_ms, std::int64_t now_ms,
                    double jitter);

    // Where the reflector is, for status lines and tests.
    bool synced() const { return synced_; }
    bool watching() const {
        return phase_ == Phase::Watch;
    }  // a watch is (or is next) the request  // a complete list has been applied
    const std::string& resource_version() const { return rv_; }
    int consecutive_failures() const { return failures_; }

  private:
    enum class Phase { List, Watch };
    void back_off(std::int64_t now_ms, double jitter, std::int64_t at_least_ms);
    void succeeded();

    ListWatchTarget target_;
    ReflectorPolicy policy_;
    Phase phase_ = Phase::List;
    std::string continue_;
    std::vector<Json> pages_;  // items of the pages so far
    std::string rv_;
    bool synced_ = false;
    std::int64_t wait_until_ms_ = 0;
    std::int64_t backoff_ms_ = 0;  // the last delay; 0: none
    std::int64_t last_failure_ms_ = 0;
    std::int64_t watch_started_ms_ = 0;
    int watch_events_ = 0;
    int failures_ = 0;
};

// Following one object by name, as the kubelet's watch-based manager
// follows each ConfigMap and Secret its pods use
// (pkg/kubelet/util/manager/watch_based_manager.go): a Reflector of the
// object's namespace with fieldSelector metadata.name=NAME (its listObject
// and watchObject set fields.OneTermEqualSelector("metadata.name", name)).
ListWatchTarget object_watch_target(const std::string& path, const std::string& kind,
                                    const std::string& name);
// What a Reflector's changes say of the object named `name`: present (its
// latest version), gone (a complete list without it, or a DELETED event:
// as a GET's 404), or nothing about it (a bookmark, another name).
struct ObjectWatchOutcome {
    enum class Kind { Nothing, Present, Gone } kind = Kind::Nothing;
    Json object;  // Present: the object
};
ObjectWatchOutcome object_watch_outcome(ReflectorChanges&& changes, const std::string& name);

// Percent-encodes a query value (RFC 3986 unreserved characters kept).
std::string query_escape(std::string_view s);

}  // namespace daemonlet
