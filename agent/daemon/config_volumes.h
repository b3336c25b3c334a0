// The volumes the agent fills itself (configMap, secret, downwardAPI,
// projected: issue 13 §2), per pod: written with the atomic writer
// (platform/atomic_writer.h) from core's payload (core/volume_payload.h)
// when a container starts, rewritten in place when the ConfigMaps and
// Secrets change, removed with the pod.
//
// Layout: <root>/<pod uid>/<volume name>/ (root: <stateDir>/pod-volumes).
// A volume holding secret data is a tmpfs where the agent may mount one
// (root), else a 0700 directory. The runtimes bind-mount these directories
// (ContainerLaunch::volume_host_paths); a subPath mount binds the file as it
// was at the start and is not updated, as upstream.
#pragma once

#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "core/model.h"
#include "core/pod_env.h"
#include "core/result.h"

namespace daemonlet::agent {

class ConfigVolumes {
  public:
    explicit ConfigVolumes(std::string root) : root_(std::move(root)) {}

    // Writes the pod's payload volumes from `facts` (its objects included)
    // and remembers the pod for rewrite(). Volume name -> host directory; an
    // error is the kubelet's message naming the volume's object or key
    // (`configmap "x" not found`): the container does not start.
    Result<std::map<std::string, std::string>> prepare(const PodFacts& facts,
                                                       std::shared_ptr<const PodSpec> spec);

    // Rewrites every remembered pod's volumes from `objects`, as the
    // kubelet's periodic remount does. Returns one line per volume that
    // could not be rewritten (it keeps its last content), for the agent to
    // log; a volume whose content is unchanged is not touched.
    std::vector<std::string> rewrite(const ConfigObjects& objects);

    // The pod is gone: its volumes are unmounted and removed.
    Status forget(const std::string& uid);

    // Removes the volumes of pods not in `live` (gone while no agent ran):
    // at start, after adoption.
    void sweep(const std::set<std::string>& live);

    // Whether prepare() has seen the pod (since this agent started).
    bool knows(const std::string& uid) const { return pods_.count(uid) != 0; }

    std::string dir_of(const std::string& uid, const std::string& volume) const {
        return root_ + "/" + uid + "/" + volume;
    }

  private:
    struct Pod {
        PodFacts facts;  // objects and spec pointers reset on each use
        std::shared_ptr<const PodSpec> spec;
    };
    Result<std::map<std::string, std::string>> write(const Pod& pod, const ConfigObjects* objects);

    std::string root_;
    std::map<std::string, Pod> pods_;  // by uid
    // Volume dirs whose fsGroup the file system refused (said once each,
    // until it takes it).
    std::set<std::string> ownership_refused_;
};

}  // namespace daemonlet::agent
