// Events for `daemonlet describe`: what the agent did to a DaemonSet's pods
// and why, recorded in the store on the DaemonSet (bounded per object there).
// Reasons follow upstream's where there is one (the DaemonSet controller's
// SuccessfulCreate, SuccessfulDelete, FailedPlacement, FailedDaemonPod; the kubelet's
// BackOff; the taint manager's TaintManagerEviction).
//
// Flash wears out: an event identical to the DaemonSet's newest one (same
// reason and message) is not written again, so a decision that keeps saying
// no, or a crash loop, is one event until something else happens. The
// cluster's Event counts it (a PATCH of its count, as client-go's recorder).
#include "agent/daemon/agent.h"
#include "platform/log.h"
#include "platform/system_info.h"

namespace daemonlet::agent {

using platform::Level;
using platform::log;

void Agent::record_event(const std::string& ns, const std::string& daemonset, const char* type,
                         const char* reason, const std::string& message) {
    // A static pod has no DaemonSet to record on: its log says what happened.
    if (!store_ || daemonset.empty()) return;
    store::EventRecord ev;
    ev.namespace_ = ns;
    ev.object = "DaemonSet/" + daemonset;
    ev.type = type;
    ev.reason = reason;
    ev.message = message;
    ev.time_ms = clock_.wall_ms();
    // The cluster counts a repeat on its Event (send_cluster_event); the
    // store keeps one row for it.
    send_cluster_event(ns, daemonset, type, reason, message);
    auto last = store_->list_events(ns, ev.object, 1);
    if (last.ok() && !last.value().empty() && last.value().back().reason == ev.reason &&
        last.value().back().message == ev.message)
        return;
    if (auto w = store_->add_event(ev); !w.ok())
        log(Level::Warning, "store: event not recorded: " + w.error().message);
}

void Agent::record_pod_removed(const PodRecord& pod, const std::string& reason) {
    // The DaemonSet controller's FailedDaemonPod, before its delete.
    if (pod.phase == PodPhase::Failed && reason.rfind("failed daemon pod", 0) == 0)
        record_event(pod.namespace_, pod.daemonset, "Warning", "FailedDaemonPod",
                     "Found failed daemon pod " + pod.namespace_ + "/" + pod.name + " on node " +
                         node_state_->name() + ", will try to kill it");
    if (reason.find("NoExecute") != std::string::npos)
        record_event(pod.namespace_, pod.daemonset, "Warning", "TaintManagerEviction",
                     "Marking for deletion Pod " + pod.namespace_ + "/" + pod.name + ": " + reason);
    else
        record_event(pod.namespace_, pod.daemonset, "Normal", "SuccessfulDelete",
                     "Deleted pod: " + pod.name + " (" + reason + ")");
}

void Agent::record_backoff(const PodRecord& pod, const std::string& container) {
    record_event(pod.namespace_, pod.daemonset, "Warning", "BackOff",
                 "Back-off restarting failed container " + container + " in pod " + pod.name);
}

// Once per change of the decision: the first time it says no, and again
// only after it said something else.
void Agent::record_placement(const Desired& d, const Decision& decision) {
    const std::string key = d.ds().metadata.namespace_ + "/" + d.ds().metadata.name;
    std::string why;
    for (const auto& r : decision.reasons) why += (why.empty() ? "" : "; ") + r;
    const std::string noted = decision.should_run ? std::string("runs") : why;
    auto [it, inserted] = placement_noted_.try_emplace(key, noted);
    if (!inserted && it->second == noted) return;
    it->second = noted;
    if (decision.should_run) return;
    record_event(d.ds().metadata.namespace_, d.ds().metadata.name, "Warning", "FailedPlacement",
                 "failed to place pod on \"" + node_state_->name() +
                     "\": " + (why.empty() ? std::string("the node does not match") : why) +
                     (decision.should_continue_running ? "" : " (a running pod is stopped)"));
}

}  // namespace daemonlet::agent
