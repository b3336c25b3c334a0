// The DaemonSetEvents component (daemonset_events.h): events on a DaemonSet,
// in the store and on the cluster's DaemonSet.
#include "agent/daemon/daemonset_events.h"

#include "agent/daemon/cluster_link.h"
#include "core/strings.h"
#include "platform/log.h"

namespace daemonlet::agent {

using platform::Level;
using platform::log;

void DaemonSetEvents::record(const std::string& ns, const std::string& daemonset, const char* type,
                             const char* reason, const std::string& message) {
    // A static pod has no DaemonSet to record on: its log says what happened.
    store::Store* store = host_.ds_events_store();
    if (!store || daemonset.empty()) return;
    store::EventRecord ev;
    ev.namespace_ = ns;
    ev.object = "DaemonSet/" + daemonset;
    ev.type = type;
    ev.reason = reason;
    ev.message = message;
    ev.time_ms = clock_.wall_ms();
    // The cluster counts a repeat on its Event (send_to_cluster); the
    // store keeps one row for it.
    send_to_cluster(ns, daemonset, type, reason, message);
    auto last = store->list_events(ns, ev.object, 1);
    if (last.ok() && !last.value().empty() && last.value().back().reason == ev.reason &&
        last.value().back().message == ev.message)
        return;
    if (auto w = store->add_event(ev); !w.ok())
        log(Level::Warning, "store: event not recorded: " + w.error().message);
}

// Events go to the cluster for the DaemonSets it has (a file's own
// DaemonSet is not the cluster's business).
void DaemonSetEvents::send_to_cluster(const std::string& ns, const std::string& daemonset, const char* type,
                                      const char* reason, const std::string& message) {
    const std::optional<std::string> uid = host_.cluster_daemonset_uid(ns, daemonset);
    if (!uid) return;
    const std::int64_t now = clock_.wall_ms();
    // The DaemonSet controller's recorder correlates as the kubelet's: a
    // repeat PATCHes the count of the Event sent before, the spam filter
    // per DaemonSet (core PodEventFilter, keyed by its uid).
    const PodEventSend send =
        cluster_filter_.decide(*uid, PodEvent{"", type, reason, message, false, now}, clock_.monotonic_ms(),
                               new_event_name(daemonset, now, event_name_unique()));
    if (!send.send) return;
    ClusterEvent ev{ns, "DaemonSet", daemonset, *uid, type, reason, message, now, now, 1, ""};
    apply_send(send, ev);
    host_.send_ds_event(std::move(ev));
}

void DaemonSetEvents::pod_removed(const PodRecord& pod, const std::string& reason) {
    // The DaemonSet controller's FailedDaemonPod, before its delete.
    if (pod.phase == PodPhase::Failed && reason.rfind("failed daemon pod", 0) == 0)
        record(pod.namespace_, pod.daemonset, "Warning", "FailedDaemonPod",
               "Found failed daemon pod " + pod.namespace_ + "/" + pod.name + " on node " +
                   host_.events_node_name() + ", will try to kill it");
    if (reason.find("NoExecute") != std::string::npos)
        record(pod.namespace_, pod.daemonset, "Warning", "TaintManagerEviction",
               "Marking for deletion Pod " + pod.namespace_ + "/" + pod.name + ": " + reason);
    else
        record(pod.namespace_, pod.daemonset, "Normal", "SuccessfulDelete",
               "Deleted pod: " + pod.name + " (" + reason + ")");
}

void DaemonSetEvents::backoff(const PodRecord& pod, const std::string& container) {
    record(pod.namespace_, pod.daemonset, "Warning", "BackOff",
           "Back-off restarting failed container " + container + " in pod " + pod.name);
}

void DaemonSetEvents::placement(const DesiredDaemonSets::Desired& d, const Decision& decision) {
    const std::string key = d.ds().metadata.namespace_ + "/" + d.ds().metadata.name;
    const std::string why = join(decision.reasons, "; ");
    const std::string noted = decision.should_run ? std::string("runs") : why;
    auto [it, inserted] = placement_noted_.try_emplace(key, noted);
    if (!inserted && it->second == noted) return;
    it->second = noted;
    if (decision.should_run) return;
    record(d.ds().metadata.namespace_, d.ds().metadata.name, "Warning", "FailedPlacement",
           "failed to place pod on \"" + host_.events_node_name() +
               "\": " + (why.empty() ? std::string("the node does not match") : why) +
               (decision.should_continue_running ? "" : " (a running pod is stopped)"));
}

bool DaemonSetEvents::rollout_done(const DesiredDaemonSets::Desired& d) {
    const std::string key = d.ds().metadata.namespace_ + "/" + d.ds().metadata.name;
    std::string& done = rolled_out_[key];
    if (done == d.hash) return false;
    done = d.hash;
    record(d.ds().metadata.namespace_, d.ds().metadata.name, "Normal", "RolloutComplete",
           "Revision " + std::to_string(d.revision) + " (" + d.hash + ") rolled out");
    return true;
}

}  // namespace daemonlet::agent
