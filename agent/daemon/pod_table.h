// The PodTable component: kubelet's pod manager (pkg/kubelet/pod/
// pod_manager.go), beside the pod workers (pod_workers.h). The pods this
// agent runs, by uid: each one's record (what the store keeps and the
// API's podStatus shows), its containers' worker state, its readiness and
// its deletion; and the pod's save (the store's row, the start-duration
// metric once it runs, the API's podStatus told).
//
// A pod is looked up with find (it may be gone: nullptr) or at (it must
// exist: a missing one is a broken invariant and aborts, never an empty pod
// made up for a uid that is gone).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "agent/daemon/pod_workers.h"
#include "core/metrics.h"
#include "core/model.h"
#include "platform/clock.h"
#include "store/store.h"

namespace daemonlet::agent {

// A pod the agent runs.
struct LivePod {
    PodRecord rec;
    // Init containers first, then app containers: index i is status(i).
    // The pod worker's state of each (pod_workers.h); its hooks' is
    // PodHooks's (pod_hooks.h).
    std::vector<WorkerContainer> containers;
    std::optional<std::int64_t> ready_since_mono_ms;
    bool deleted_by_user = false;
    // kubelet_pod_start_duration_seconds has seen it run (or it was
    // adopted running): observed once per pod.
    mutable bool start_observed = false;

    bool is_init(std::size_t i) const { return i < rec.init_containers.size(); }
    ContainerStatus& status(std::size_t i) {
        return is_init(i) ? rec.init_containers[i] : rec.containers[i - rec.init_containers.size()];
    }
};

class PodTable {
  public:
    using Map = std::map<std::string, LivePod>;

    // What a save reaches, asked at each save: the agent opens its store
    // and its metrics after the table exists.
    class Host {
      public:
        virtual ~Host() = default;
        virtual store::Store& pod_store() = 0;
        virtual MetricRegistry* pod_metrics() = 0;  // null: no /metrics
        // A pod's record was saved: the API's podStatus follows (ApiPods).
        virtual void pod_saved() = 0;
    };

    PodTable(Host& host, const platform::Clock& clock) : host_(host), clock_(clock) {}
    PodTable(const PodTable&) = delete;
    PodTable& operator=(const PodTable&) = delete;

    LivePod* find(const std::string& uid);
    const LivePod* find(const std::string& uid) const;
    bool contains(const std::string& uid) const { return pods_.count(uid) != 0; }
    // The pod must be here: a missing one aborts with its uid.
    LivePod& at(const std::string& uid);
    const LivePod& at(const std::string& uid) const;
    // Adds `pod` under its rec.uid; a uid already here is a broken invariant.
    LivePod& add(LivePod pod);
    void erase(const std::string& uid);

    std::size_t size() const { return pods_.size(); }
    bool empty() const { return pods_.empty(); }
    // By uid, in uid order: (uid, pod) pairs. No add or erase while
    // iterating; a loop that may change the table walks uids().
    Map::iterator begin() { return pods_.begin(); }
    Map::iterator end() { return pods_.end(); }
    Map::const_iterator begin() const { return pods_.begin(); }
    Map::const_iterator end() const { return pods_.end(); }
    std::vector<std::string> uids() const;

    // A new pod's container statuses and worker state from its spec, init
    // containers first: each init container Waiting with PodInitializing
    // (a sidecar: restartPolicy Always), each app container Waiting with
    // ContainerCreating, or PodInitializing behind init containers (the
    // kubelet's default waiting reasons: pkg/kubelet/kubelet_pods.go
    // convertToAPIContainerStatuses).
    static void add_containers(LivePod& pod, const PodSpec& spec);

    // The pod's record to the store (a failed write is logged: the Storage
    // keeps it for a later flush), kubelet_pod_start_duration_seconds
    // observed the first time it is saved Running (from its creation), and
    // the Host told.
    void save(const LivePod& pod);

  private:
    Host& host_;
    const platform::Clock& clock_;
    Map pods_;  // by uid
};

}  // namespace daemonlet::agent
