// The agent's own requests through the API server link (cluster_link.h):
// the TokenRequests and kube-root-ca.crt reads of api_access.h, and the
// per-object watches of the ConfigMaps and Secrets its pods use.
#include "agent/daemon/cluster_link.h"

namespace daemonlet::agent {

namespace {
constexpr std::size_t kMaxApiBody = 1 << 20;  // a TokenRequest or a ConfigMap of a CA is a few KiB
}

bool ClusterLink::call(const std::string& method, const std::string& target, std::string body, ApiDone done) {
    if (closed_) return false;
    platform::HttpRequest r = base_request(method, target);
    r.body = std::move(body);
    r.timeout_ms = config_.request_timeout_ms;
    r.max_body_bytes = kMaxApiBody;
    auto id = http_->request(r, [this, done = std::move(done)](Result<platform::HttpResponse> res) {
        if (res.ok()) bytes_in_ += res.value().body.size();
        done(std::move(res));
    });
    if (!id.ok()) return false;
    return true;
}

ClusterLink::WatchId ClusterLink::watch(ListWatchTarget target, std::string what,
                                        std::function<void(ReflectorChanges&&)> changes,
                                        std::function<void(const std::string&)> failure) {
    if (closed_) return 0;
    auto f = std::make_unique<Follower>("", false, std::move(target));
    f->id = next_watch_id_++;
    f->what = std::move(what);
    f->changes = std::move(changes);
    f->failure = std::move(failure);
    f->timer = new uv_timer_t;
    uv_timer_init(loop_, f->timer);
    f->timer->data = this;
    followers_.push_back(std::move(f));
    Follower& added = *followers_.back();
    // From the loop, not the caller's stack (start() steps it otherwise).
    if (started_) schedule(added, 0);
    return added.id;
}

void ClusterLink::unwatch(WatchId id) {
    if (closed_ || !id) return;
    for (auto& f : followers_)
        if (f->id == id && !f->stopped) {
            f->stopped = true;
            schedule(*f, 0);
            return;
        }
}

}  // namespace daemonlet::agent
