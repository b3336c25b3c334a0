// The agent's own requests through the API server link (cluster_link.h):
// the TokenRequests and kube-root-ca.crt reads of api_access.h.
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

}  // namespace daemonlet::agent
