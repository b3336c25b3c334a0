// A container's environment as the kubelet builds it: makeEnvironmentVariables
// (pkg/kubelet/kubelet_pods.go, Kubernetes 1.28 to 1.30) with the downward API
// helpers it calls (podFieldSelectorRuntimeValue, fieldpath.ExtractFieldPathAsString,
// resource.ExtractContainerResourceValue). The same helpers give the
// downwardAPI volume's files (core/volume_payload.h).
//
// Pure: the pod's facts, the node's and the ConfigMaps and Secrets are
// passed in. Errors carry the kubelet's message, which becomes the waiting
// container's CreateContainerConfigError message; they name objects and keys,
// never a Secret's value.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/model.h"
#include "core/result.h"

namespace daemonlet {

class ServiceAccountTokenSource;  // core/service_account.h

// What the downward API and the config references of one pod can see.
struct PodFacts {
    std::string name;
    std::string namespace_;
    std::string uid;
    Labels labels;
    Labels annotations;
    std::string service_account_name;
    std::string node_name;
    std::vector<std::string> host_ips;  // the node's, primary first
    std::vector<std::string> pod_ips;   // the pod's (the node's under hostNetwork)
    // The node's allocatable, the limit a container without one gets in a
    // resourceFieldRef (defaultPodLimitsForDownwardAPI).
    std::optional<Quantity> allocatable_cpu;
    std::optional<Quantity> allocatable_memory;
    std::optional<Quantity> allocatable_ephemeral_storage;
    const PodSpec* spec = nullptr;           // for resourceFieldRef.containerName
    const ConfigObjects* objects = nullptr;  // nullptr: no ConfigMap or Secret exists
    // The service env getServiceEnvVarMap gives (the `kubernetes` Service's,
    // core/service_account.h, when the agent follows a cluster): $(VAR) in
    // the container's own values sees it, and it is added after them, a
    // name the container defines keeping the container's value.
    std::vector<std::pair<std::string, std::string>> service_env;
    // The ConfigMaps and Secrets the agent read from the cluster (the
    // kube-root-ca.crt the kube-api-access volume projects), consulted after
    // `objects` (the manifest directory's win).
    const ConfigObjects* cluster_objects = nullptr;
    // The TokenRequest API's tokens for serviceAccountToken projections;
    // nullptr (no cluster): those sources project nothing.
    const ServiceAccountTokenSource* tokens = nullptr;
    // A token not there yet projects nothing instead of failing the
    // volume (the kubelet's projected plugin fails it, and the pod waits):
    // daemonlet's departure, so that a board that boots without its API
    // server, and no token kept from before, still starts its pods; the
    // token is written into the volume when it comes. The same for the
    // kube-root-ca.crt ConfigMap that volume projects.
    bool start_without_token = false;
};

struct ResolvedEnv {
    // Name and value, each name once: envFrom's keys first (sorted per
    // source), then env in declared order; a later definition replaces the
    // value of an earlier one in place, as the kubelet's map does.
    std::vector<std::pair<std::string, std::string>> vars;
    // The kubelet's InvalidEnvironmentVariableNames event messages: "Keys
    // [a, b] from the EnvFrom configMap ns/x were skipped since they are
    // considered invalid environment variable names."
    std::vector<std::string> warnings;
};

// The pod's namespace's ConfigMap or Secret by name: the manifest
// directory's (`objects`), else the cluster's (`cluster_objects`).
const ConfigMap* find_config_map(const PodFacts& pod, const std::string& name);
const Secret* find_secret(const PodFacts& pod, const std::string& name);

// makeEnvironmentVariables: envFrom, then env with $(VAR) expansion,
// configMapKeyRef / secretKeyRef, fieldRef and resourceFieldRef. A missing
// object or key that is not optional is an error (code NotFound) with the
// kubelet's message: `configmap "x" not found`, `couldn't find key k in
// ConfigMap ns/x` (and the Secret forms).
Result<ResolvedEnv> make_environment_variables(const PodFacts& pod, const Container& c);

// podFieldSelectorRuntimeValue: a fieldRef as env var value (status.* and
// spec.* included).
Result<std::string> pod_field_value(const PodFacts& pod, const ObjectFieldSelector& fs);

// fieldpath.ExtractFieldPathAsString: metadata.name/namespace/uid, labels
// and annotations (whole, as FormatMap, or one key by subscript).
Result<std::string> extract_field_path(const PodFacts& pod, const std::string& path);

// containerResourceRuntimeValue with defaultPodLimitsForDownwardAPI: the
// named (or this) container's request or limit divided by the divisor,
// rounded up; a missing cpu, memory or ephemeral-storage limit is the node's
// allocatable.
Result<std::string> container_resource_value(const PodFacts& pod, const ResourceFieldSelector& fs,
                                             const Container& c);

// fieldpath.SplitMaybeSubscriptedPath: "metadata.labels['key']" ->
// ("metadata.labels", "key"); false when the path has no subscript.
bool split_subscripted_path(const std::string& fp, std::string& path, std::string& subscript);

// fieldpath.FormatMap: `k="v"` lines sorted by key, no final newline, the
// value quoted as Go's %q quotes it.
std::string format_map(const Labels& m);

}  // namespace daemonlet
