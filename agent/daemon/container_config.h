// The ContainerConfig component: the kubelet's kuberuntime
// generateContainerConfig (pkg/kubelet/kuberuntime/kuberuntime_container.go),
// the launch description of a container that the pod workers hand to the
// runtime (platform::ContainerLaunch): its pod's spec at the pod's revision,
// its env from ConfigMaps, Secrets and the downward API (core/pod_env.h, the
// kubelet's makeEnvironmentVariables), its pod's config volumes
// (config_volumes.h), its command and args expanded, its OOM score, its
// labels, and its image present; or why it waits.
//
// The checks, in this order (each leaves the container Waiting, its status
// saying why, and the launch nullopt):
//   the pod's spec not known now     ContainerCreating, "waiting for the pod's replacement"
//   (the stop record kept: core/lifecycle_hook.h stop_record)
//   env, then config volumes         CreateContainerConfigError and the kubelet's message
//                                    (an Event once per message, not at each retry)
//   (command and args expanded: ExpandContainerCommandAndArgs; config
//    volumes' mounts read-only: makeMounts)
//   exec runtime without command     CreateContainerConfigError
//   the image not ready              Images::ready_to_start says how
//
// What it owns: the OOM score's capacity and floor of this machine. The
// rest it reads through its Host when asked, since the agent replaces the
// node, the link and the DaemonSets as they change.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "agent/daemon/api_access.h"
#include "agent/daemon/config_volumes.h"
#include "agent/daemon/images.h"
#include "agent/daemon/pod_table.h"
#include "core/config.h"
#include "core/model.h"
#include "core/pod_env.h"
#include "platform/runtime.h"

namespace daemonlet::agent {

class ContainerConfig {
  public:
    // The spec a pod runs and its metadata: its DaemonSet's template at the
    // pod's revision, or its static pod; null spec when not known now.
    struct PodSource {
        std::shared_ptr<const PodSpec> spec;
        const ObjectMeta* meta = nullptr;
    };
    // What the downward API reads of the node, asked at each use.
    struct NodeFacts {
        const Node* node = nullptr;         // its status.allocatable first
        std::vector<std::string> host_ips;  // primary first
        std::int64_t machine_cpus = 0;      // without an allocatable cpu: the machine's
        std::int64_t machine_memory = 0;    // bytes; 0: unknown
    };

    class Host {
      public:
        virtual ~Host() = default;
        virtual PodSource source_of(const PodRecord& rec) const = 0;
        // The DaemonSet in force of a DaemonSet's pod, whatever the pod's
        // revision; nullptr for a static pod, or a DaemonSet gone.
        virtual const DaemonSet* daemonset_of(const PodRecord& rec) const = 0;
        virtual NodeFacts node_facts() const = 0;
        // The manifest directory's ConfigMaps and Secrets.
        virtual const ConfigObjects& config_objects() const = 0;
        // The API server's URL while the agent has a link to one; nullopt: none.
        virtual std::optional<std::string> api_server() const = 0;
        // Tokens and the cluster's objects (api_access.h); nullptr: none.
        virtual ApiAccess* api_access() const = 0;
        virtual ConfigVolumes& config_volumes() = 0;
        // Images::ready_to_start: whether its image lets it start now (`cs`
        // says how it waits).
        virtual bool image_ready(const ImageWaiter& w, const PodRecord& pod, const Container& spec,
                                 ContainerStatus& cs) = 0;
        // An Event for `describe` on the pod's DaemonSet.
        virtual void record_config_event(const std::string& ns, const std::string& daemonset,
                                         const char* type, const char* reason,
                                         const std::string& message) = 0;
        // A Warning Event on the pod's Pod (with podStatus: pod_events.h),
        // on its container `index` (its fieldPath), or on the Pod itself.
        virtual void record_pod_warning(const LivePod& pod, std::optional<std::size_t> index,
                                        const char* reason, const std::string& message) = 0;
    };

    // `config` is the agent's, read at each launch (a reload changes the
    // log sizes and the API server).
    ContainerConfig(Host& host, const AgentConfig& config) : host_(host), config_(config) {}
    ContainerConfig(const ContainerConfig&) = delete;
    ContainerConfig& operator=(const ContainerConfig&) = delete;

    // The kubelet's OOM scores per QoS class (core/qos.h) against
    // `memory_bytes` of the machine, raised to `floor` where the machine
    // refuses lower ones; 0 bytes (the exec runtime): no score set.
    void set_oom_scores(std::int64_t memory_bytes, std::optional<int> floor) {
        oom_memory_bytes_ = memory_bytes;
        oom_score_floor_ = floor;
    }

    // The launch description of the pod's container `index`; nullopt: it
    // waits, its status (and stop record) says why.
    std::optional<platform::ContainerLaunch> launch(LivePod& pod, std::size_t index);

    // What the kubelet resolves for the downward API, env and volumes.
    PodFacts pod_facts(const LivePod& pod) const;
    Result<std::vector<std::pair<std::string, std::string>>> container_env(const LivePod& pod,
                                                                           const Container& spec) const;
    // The ConfigMaps and Secrets a pod references that the manifest
    // directory does not define (read from the cluster, api_access.h).
    std::set<ObjectRef> cluster_refs(const std::string& ns, const PodSpec& spec) const;
    // The container of `spec` that is the pod's container `index` (by name).
    static const Container* find_container(const PodSpec& spec, const LivePod& pod, std::size_t index);

  private:
    // The container's env and its pod's config volumes into `launch`; false
    // when an object or key is missing: the container then waits with
    // CreateContainerConfigError and the kubelet's message.
    bool resolve(LivePod& pod, std::size_t index, const Container& spec, platform::ContainerLaunch& launch);
    std::optional<int> oom_score_adj_of(const PodSpec& pod, const Container& c) const;

    Host& host_;
    const AgentConfig& config_;
    std::int64_t oom_memory_bytes_ = 0;
    std::optional<int> oom_score_floor_;
};

}  // namespace daemonlet::agent
