// The DaemonSetEvents component: the Events the agent records on a
// DaemonSet, for `daemonlet describe` (the store) and, for the DaemonSets the
// cluster has, on the cluster's DaemonSet (its link's queue).
//
// Reasons follow upstream's where there is one (the DaemonSet controller's
// SuccessfulCreate, SuccessfulDelete, FailedPlacement, FailedDaemonPod; the
// kubelet's BackOff; the taint manager's TaintManagerEviction).
//
// Flash wears out: an event identical to the DaemonSet's newest one (same
// reason and message) is not written again, so a decision that keeps saying
// no, or a crash loop, is one event until something else happens. The
// cluster's Event counts it (a PATCH of its count, as client-go's recorder:
// core PodEventFilter, per DaemonSet uid).
//
// What it owns: the decision each DaemonSet's FailedPlacement last said,
// the hash whose rollout each completed (RolloutComplete once per hash) and
// the cluster Events' filter. The store, the link and the node are the
// agent's, read through the Host.
#pragma once

#include <map>
#include <optional>
#include <string>

#include "agent/daemon/desired_daemonsets.h"
#include "core/cluster_report.h"
#include "core/decision.h"
#include "core/pod.h"
#include "core/pod_events.h"
#include "core/wall_clock.h"
#include "platform/clock.h"
#include "store/store.h"

namespace daemonlet::agent {

class DaemonSetEvents {
  public:
    // What recording reads of the agent, asked at each event (the agent
    // opens its store and its link after the component exists).
    class Host {
      public:
        virtual ~Host() = default;
        // The store the events are written to; null: none open (nothing is
        // recorded, on the cluster either).
        virtual store::Store* ds_events_store() = 0;
        // The uid of the cluster's DaemonSet ns/name; nullopt: no link to
        // the API server, or the cluster has no such DaemonSet (a manifest
        // file's own is not the cluster's business).
        virtual std::optional<std::string> cluster_daemonset_uid(const std::string& ns,
                                                                 const std::string& name) const = 0;
        // An Event for the cluster's DaemonSet (ClusterLink::add_event).
        virtual void send_ds_event(ClusterEvent ev) = 0;
        // This node's name, as the messages say it.
        virtual const std::string& events_node_name() const = 0;
    };

    DaemonSetEvents(Host& host, const platform::Clock& clock) : host_(host), clock_(clock) {}
    DaemonSetEvents(const DaemonSetEvents&) = delete;
    DaemonSetEvents& operator=(const DaemonSetEvents&) = delete;

    // An event on the DaemonSet ns/daemonset: a row in the store unless
    // identical to its newest, and the cluster's Event. A static pod's
    // (no DaemonSet) is nothing: its log says what happened.
    void record(const std::string& ns, const std::string& daemonset, const char* type, const char* reason,
                const std::string& message);
    // The cluster's Event only (LocalManifestOverrides: the file's DaemonSet
    // in force over the cluster's).
    void send_to_cluster(const std::string& ns, const std::string& daemonset, const char* type,
                         const char* reason, const std::string& message);
    // The pod stops for `reason`: the DaemonSet controller's FailedDaemonPod
    // (a Failed pod, before its delete), then the taint manager's
    // TaintManagerEviction (a NoExecute taint) or SuccessfulDelete.
    void pod_removed(const PodRecord& pod, const std::string& reason);
    // The kubelet's BackOff: `container` restarts after a delay.
    void backoff(const PodRecord& pod, const std::string& container);
    // FailedPlacement, once per change of the decision: the first time it
    // says no, and again only after it said something else.
    void placement(const DesiredDaemonSets::Desired& d, const Decision& decision);
    // d's rollout is complete on this node: RolloutComplete, the first time
    // for its hash (again only after another hash); true when recorded (the
    // agent counts it).
    bool rollout_done(const DesiredDaemonSets::Desired& d);
    // A step of the wall clock: the cluster Events' first times move with it.
    void rebase(const WallStep& step) { cluster_filter_.rebase(step); }

  private:
    Host& host_;
    const platform::Clock& clock_;
    std::map<std::string, std::string> placement_noted_;  // DaemonSet key -> the decision last recorded
    std::map<std::string, std::string> rolled_out_;       // DaemonSet key -> the hash whose rollout completed
    PodEventFilter cluster_filter_;                       // the cluster DaemonSets' Events: repeats counted
};

}  // namespace daemonlet::agent
