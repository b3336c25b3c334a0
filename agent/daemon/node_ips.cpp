// The node's IPs: nodeIP when configured, else chosen from the interfaces and
// default routes (core/node_ips.h, read by platform/host_network.h), at
// start, on SIGHUP and every minute. They give every pod its
// status.hostIP / hostIPs and a hostNetwork pod its status.podIP / podIPs
// (kubelet_pods.go generateAPIPodStatus).
#include "agent/daemon/node_ips.h"

#include "core/json.h"
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

std::string ip_list(const std::vector<std::string>& ips) {
    std::string out;
    for (const auto& ip : ips) out += (out.empty() ? "" : ", ") + ip;
    return out;
}

}  // namespace

NodeAddresses::NodeAddresses(store::Store& store, ReadHost read_host, Changed changed)
    : store_(store), read_host_(std::move(read_host)), changed_(std::move(changed)) {}

NodeAddresses::~NodeAddresses() { close(); }

void NodeAddresses::start(uv_loop_t* loop, std::vector<std::string> configured) {
    refresh(std::move(configured));
    timer_ = new uv_timer_t;
    uv_timer_init(loop, timer_);
    timer_->data = this;
    uv_timer_start(
        timer_, [](uv_timer_t* t) { static_cast<NodeAddresses*>(t->data)->check(); }, kNodeIpsPeriodMs,
        kNodeIpsPeriodMs);
}

void NodeAddresses::close() {
    if (!timer_) return;
    uv_close(reinterpret_cast<uv_handle_t*>(timer_),
             [](uv_handle_t* h) { delete reinterpret_cast<uv_timer_t*>(h); });
    timer_ = nullptr;
}

void NodeAddresses::refresh(std::vector<std::string> configured) {
    configured_ = std::move(configured);
    check();
}

void NodeAddresses::check() {
    std::vector<std::string> ips = configured_;
    const bool configured = !ips.empty();
    if (!configured) {
        auto host = read_host_();
        if (!host.ok()) {
            // Keep what is known; said once until it works again.
            if (!read_failed_)
                log(Level::Warning, "node IP: " + host.error().message + "; keeping " +
                                        (ips_.empty() ? std::string("none") : ip_list(ips_)));
            read_failed_ = true;
            return;
        }
        read_failed_ = false;
        ips = node_host_ips({}, host.value());
    }
    if (ips == ips_ && known_) return;
    if (ips.empty())
        log(Level::Warning,
            "node IP: no interface has a global address (nor a default route); pods report "
            "no status.hostIP, hostNetwork pods no podIP (set nodeIP to give one)");
    else
        log(Level::Notice,
            "node IP: " + ip_list(ips) +
                (configured ? " (nodeIP)" : " (the default route's interface; nodeIP sets it)"));
    ips_ = std::move(ips);
    known_ = true;
    Json arr = Json::array();
    for (const auto& ip : ips_) arr.push_back(ip);
    if (auto w = store_.put_meta(kNodeIpsMeta, arr.dump()); !w.ok())
        log(Level::Err, "store: " + w.error().message);
    if (changed_) changed_();
}

}  // namespace daemonlet::agent
