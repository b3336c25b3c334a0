// The DaemonSetSync component (daemonset_sync.h).
#include "agent/daemon/daemonset_sync.h"

#include <algorithm>
#include <random>
#include <utility>

#include "core/decision.h"

namespace daemonlet::agent {

namespace {

std::string random_chars(std::size_t n, std::string_view alphabet) {
    static std::mt19937_64 rng{std::random_device{}()};
    std::string s(n, ' ');
    std::uniform_int_distribution<std::size_t> pick(0, alphabet.size() - 1);
    for (auto& c : s) c = alphabet[pick(rng)];
    return s;
}

}  // namespace

DaemonSetSync::DaemonSetSync(Host& host, const platform::Clock& clock, Random random)
    : host_(host), clock_(clock), random_(random ? std::move(random) : Random(random_chars)) {}

DaemonSetSync::Observed DaemonSetSync::observe(const DesiredDaemonSets& desired, const PodTable& pods) const {
    Observed o;
    o.want.reserve(desired.size());
    for (const auto& [key, d] : desired) {
        DesiredDaemonSet w;
        w.ds = &d.ds();
        w.hash = d.hash;
        w.revision = d.revision;
        w.decision = node_should_run_daemon_pod(host_.sync_node(), d.ds());
        host_.pace_by_cluster(d, w);
        o.want.push_back(std::move(w));
    }
    o.seen.reserve(pods.size());
    for (const auto& [uid, p] : pods) {
        if (p.rec.is_static()) continue;  // StaticPods (static_pods.h)
        ObservedPod s;
        s.pod = p.rec;
        s.terminating = p.rec.deleting;
        s.ready = p.ready_since_mono_ms.has_value();
        s.ready_since_mono_ms = p.ready_since_mono_ms;
        s.deleted_by_user = p.deleted_by_user;
        o.seen.push_back(std::move(s));
    }
    return o;
}

DaemonSetSync::Plan DaemonSetSync::plan(const Observed& observed) {
    const std::int64_t now = clock_.monotonic_ms();
    ReconcilePlan rp = plan_reconcile(observed.want, observed.seen, now, &failed_pods_backoff_);
    Plan out;
    for (const auto& key : rp.paced)
        if (std::find(paced_.begin(), paced_.end(), key) == paced_.end()) out.newly_paced.push_back(key);
    paced_ = std::move(rp.paced);
    out.again = !rp.create.empty() || !rp.remove.empty();
    out.next_turn = rp.create.size() > kCreatesPerTurn;
    if (out.next_turn) rp.create.resize(kCreatesPerTurn);
    out.create = std::move(rp.create);
    out.remove = std::move(rp.remove);
    if (rp.wake_at_mono_ms)
        out.wake_in_ms = static_cast<std::uint64_t>(std::max<std::int64_t>(0, *rp.wake_at_mono_ms - now));
    return out;
}

LivePod DaemonSetSync::new_pod(const PodToCreate& c) const {
    // A v4-shaped UUID (the API server's uuid.NewUUID).
    std::string h = random_(32, "0123456789abcdef");
    h[12] = '4';
    LivePod p;
    p.rec.uid = h.substr(0, 8) + "-" + h.substr(8, 4) + "-" + h.substr(12, 4) + "-" + h.substr(16, 4) + "-" +
                h.substr(20);
    p.rec.name = c.daemonset + "-" + random_(5, "bcdfghjklmnpqrstvwxz2456789");
    p.rec.namespace_ = c.namespace_;
    p.rec.daemonset = c.daemonset;
    p.rec.revision_hash = c.hash;
    p.rec.revision = c.revision;
    p.rec.created_at_ms = clock_.wall_ms();
    return p;
}

}  // namespace daemonlet::agent
