// The Adoption component: what the agent finds running when it starts
// (the kubelet's first relist after a restart: pkg/kubelet/pleg/generic.go
// relist, kuberuntime GetPods over the runtime's containers, which a new
// kubelet adopts rather than starts again). The pods in the store are
// matched with the runtime's containers; containers no pod record knows
// (the database was lost) rebuild their pods from the labels every
// container is started with (pod_labels.h), so nothing restarts.
//
// plan_adoption decides only: the agent (agent/daemon/adopt.cpp) logs the
// plan's lines as they stand, asks the runtime to stop and remove, watches,
// adds and saves the pods, then resumes their terminations and sweeps.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "agent/daemon/pod_table.h"
#include "core/pod.h"
#include "platform/runtime.h"

namespace daemonlet::agent {

struct AdoptionPlan {
    // A container whose exit the pod workers watch (PodWorkers::watch).
    struct Watch {
        std::string id;
        std::string uid;
        std::size_t index = 0;
    };
    // A second instance of a container its pod already runs: stopped, then
    // removed; the instance the record names stays.
    // A container to stop.
    struct Stop {
        std::string id;
        std::string warning;  // logged (Warning) before its stop
    };
    // The running containers no pod record knows, of one pod uid: their pod
    // rebuilt from its labels, or (unlabelled, labels that disagree) stopped.
    struct Orphan {
        std::optional<LivePod> rebuilt;  // Running, start observed: to be saved
        std::string rebuilt_warning;     // logged (Warning) before its save
        std::vector<Watch> watch;        // the rebuilt pod's containers
        std::vector<Stop> stop;          // not rebuilt: every container of the uid
    };

    // The store's pods in its order, each container the runtime still has
    // with its id and start (now); start observed (started by an earlier
    // agent).
    std::vector<LivePod> pods;
    std::vector<Watch> watch;  // the containers of `pods` found
    // Found but exited: handled as exits once every pod is known.
    std::vector<std::string> exited;
    // Unrecorded running instances adopted into their record (Notice), in
    // the store's order: logged first.
    std::vector<std::string> notices;
    // Containers no record knows, each list in id order: exited ones
    // removed, second instances stopped (the agent asks the removals
    // first, then the stops: they concern different containers).
    std::vector<std::string> remove;
    std::vector<Stop> second_instances;
    std::vector<Orphan> orphans;  // in uid order
};

// `stored`: the store's pod records; `found`: the runtime's containers
// (Runtime::adopt_all); `now_mono_ms`: the start each adopted container's
// worker state records (read once, before the plan's stops run).
AdoptionPlan plan_adoption(std::vector<PodRecord> stored, std::vector<platform::ContainerInfo> found,
                           std::int64_t now_mono_ms);

// The record of a pod whose containers run but which the store does not
// know, from the labels its containers were started with; nullopt when they
// carry none, disagree, or name a container the labels do not list.
std::optional<PodRecord> rebuild_record(const std::vector<platform::ContainerInfo>& found);

}  // namespace daemonlet::agent
