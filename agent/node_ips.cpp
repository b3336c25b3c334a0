// The node's IPs: nodeIP when configured, else chosen from the interfaces and
// default routes (core/node_ips.h, read by platform/host_network.h), at
// start, on SIGHUP and every minute. They give every pod its
// status.hostIP / hostIPs and a hostNetwork pod its status.podIP / podIPs
// (kubelet_pods.go generateAPIPodStatus).
#include "agent/node_ips.h"

#include "agent/agent.h"
#include "platform/host_network.h"
#include "platform/log.h"

namespace daemonlet::agent {

using platform::Level;
using platform::log;

std::vector<std::string> stored_node_ips(store::Store& store) {
    auto m = store.get_meta(kNodeIpsMeta);
    if (!m.ok() || !m.value()) return {};
    const Json j = Json::parse(*m.value(), nullptr, false);
    std::vector<std::string> out;
    if (!j.is_array()) return out;
    for (const auto& ip : j)
        if (ip.is_string()) out.push_back(ip.get<std::string>());
    return out;
}

namespace {

std::string joined(const std::vector<std::string>& ips) {
    std::string out;
    for (const auto& ip : ips) out += (out.empty() ? "" : ", ") + ip;
    return out;
}

}  // namespace

void Agent::start_node_ips() {
    refresh_node_ips();
    node_ips_timer_ = new uv_timer_t;
    uv_timer_init(&loop_, node_ips_timer_);
    node_ips_timer_->data = this;
    uv_timer_start(
        node_ips_timer_, [](uv_timer_t* t) { static_cast<Agent*>(t->data)->refresh_node_ips(); },
        kNodeIpsPeriodMs, kNodeIpsPeriodMs);
}

void Agent::refresh_node_ips() {
    std::vector<std::string> ips = config_.node_ips;
    const bool configured = !ips.empty();
    if (!configured) {
        auto host = platform::read_host_network();
        if (!host.ok()) {
            // Keep what is known; said once until it works again.
            if (!node_ips_read_failed_)
                log(Level::Warning, "node IP: " + host.error().message + "; keeping " +
                                        (node_ips_.empty() ? std::string("none") : joined(node_ips_)));
            node_ips_read_failed_ = true;
            return;
        }
        node_ips_read_failed_ = false;
        ips = node_host_ips({}, host.value());
    }
    if (ips == node_ips_ && node_ips_known_) return;
    if (ips.empty())
        log(Level::Warning,
            "node IP: no interface has a global address (nor a default route); pods report "
            "no status.hostIP, hostNetwork pods no podIP (set nodeIP to give one)");
    else
        log(Level::Notice,
            "node IP: " + joined(ips) +
                (configured ? " (nodeIP)" : " (the default route's interface; nodeIP sets it)"));
    node_ips_ = std::move(ips);
    node_ips_known_ = true;
    Json arr = Json::array();
    for (const auto& ip : node_ips_) arr.push_back(ip);
    if (auto w = store_->put_meta(kNodeIpsMeta, arr.dump()); !w.ok())
        log(Level::Err, "store: " + w.error().message);
    // hostNetwork pods' IPs are the node's.
    for (auto& [uid, p] : pods_) {
        const auto before = p.rec.pod_ips;
        refresh_pod_ips(p);
        if (p.rec.pod_ips != before) save_pod(p);
    }
}

}  // namespace daemonlet::agent
