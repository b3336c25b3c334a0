// The board pods' Events on their Pods (pod_events.h), and where the agent
// records them: the kubelet's sites (core/pod_events.h) map to the agent's
// start (pods.cpp container_started, container_start_failed), stop (pods.cpp container_killing), crash
// loop (pods.cpp container_exited), probes (agent_metrics.cpp's observer,
// on_probe_failed) and image pulls (record_image_event).
#include "agent/daemon/pod_events.h"

#include "agent/daemon/agent.h"

namespace daemonlet::agent {

void PodEvents::send_one(const ApiPodRef& pod, const PodEvent& ev, std::int64_t mono_ms, const Send& send) {
    const PodEventSend how =
        filter_.decide(pod.uid, ev, mono_ms, new_event_name(pod.name, ev.time_ms, event_name_unique()));
    if (!how.send) return;
    ClusterEvent out = pod_cluster_event(ev, pod);
    apply_send(how, out);
    send(std::move(out));
}

void PodEvents::record(const std::string& board_uid, const std::optional<ApiPodRef>& pod, bool may_get_one,
                       PodEvent ev, std::int64_t mono_ms, const Send& send) {
    if (pod) {
        flush_one(board_uid, *pod, mono_ms, send);
        return send_one(*pod, ev, mono_ms, send);
    }
    if (!may_get_one) return;
    // Pods gone while disconnected are dropped at the next flush; until
    // then at most kPendingPods of them keep Events.
    if (!pending_.count(board_uid) && pending_.size() >= kPendingPods) pending_.erase(pending_.begin());
    auto& q = pending_[board_uid];
    if (q.size() >= kPendingPerPod) q.pop_front();
    q.push_back(std::move(ev));
}

void PodEvents::flush_one(const std::string& board_uid, const ApiPodRef& pod, std::int64_t mono_ms,
                          const Send& send) {
    auto it = pending_.find(board_uid);
    if (it == pending_.end()) return;
    const std::deque<PodEvent> q = std::move(it->second);
    pending_.erase(it);
    for (const PodEvent& ev : q) send_one(pod, ev, mono_ms, send);
}

void PodEvents::flush(const PodOf& pod_of, const std::set<std::string>& live, std::int64_t mono_ms,
                      const Send& send) {
    std::erase_if(pending_, [&](const auto& kv) { return !live.count(kv.first); });
    std::set<std::string> keys;
    for (const auto& [uid, q] : pending_) keys.insert(uid);
    for (const std::string& uid : keys)
        if (auto pod = pod_of(uid)) flush_one(uid, *pod, mono_ms, send);
}

void PodEvents::rebase(const WallStep& step) {
    filter_.rebase(step);
    for (auto& [uid, q] : pending_)
        for (auto& ev : q) ev.time_ms = daemonlet::rebase(ev.time_ms, step);
}

std::size_t PodEvents::pending() const {
    std::size_t n = 0;
    for (const auto& [uid, q] : pending_) n += q.size();
    return n;
}

ContainerRef Agent::container_ref(const LivePod& p, std::size_t index) {
    return ContainerRef{p.is_init(index) ? p.rec.init_containers[index].name
                                         : p.rec.containers[index - p.rec.init_containers.size()].name,
                        p.is_init(index)};
}

// Only a cluster DaemonSet's pod has (or will have) a Pod.
void Agent::record_pod_event(const LivePod& p, PodEvent ev) {
    if (!api_pods_ || !cluster_ || p.rec.is_static()) return;
    const Desired* d = desired_.for_pod(p.rec);
    pod_events_.record(p.rec.uid, api_pods_->pod_of(p.rec.uid), d && d->from_api(), std::move(ev),
                       clock_.monotonic_ms(), [this](ClusterEvent e) {
                           if (cluster_) cluster_->add_event(std::move(e));
                       });
}

void Agent::flush_pod_events() {
    if (!api_pods_ || !cluster_) return;
    std::set<std::string> live;
    for (const auto& [uid, p] : pods_) live.insert(uid);
    pod_events_.flush([this](const std::string& uid) { return api_pods_->pod_of(uid); }, live,
                      clock_.monotonic_ms(),
                      [this](ClusterEvent e) {
                          if (cluster_) cluster_->add_event(std::move(e));
                      });
}

}  // namespace daemonlet::agent
