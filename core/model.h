// The typed model of what the agent acts on: apps/v1 DaemonSet and v1 Node,
// with the field names of the Kubernetes API (k8s.io/api/apps/v1,
// k8s.io/api/core/v1). Optional fields that upstream models as pointers are
// std::optional here, so that "unset" and "zero" stay distinct where the
// semantics depend on it (an empty required node affinity is not an absent one).
//
// Every object also keeps `object`: the full document as read and defaulted,
// unknown fields included, so nothing a user wrote is lost when it is stored
// and written out again. The typed fields are a view of that document.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/json.h"
#include "core/quantity.h"

namespace daemonlet {

using Labels = std::map<std::string, std::string>;

// intstr.IntOrString.
struct IntOrString {
    enum class Type { Int, String };
    Type type = Type::Int;
    std::int64_t int_val = 0;
    std::string str_val;

    static IntOrString from_int(std::int64_t v) { return {Type::Int, v, {}}; }
    static IntOrString from_string(std::string s) { return {Type::String, 0, std::move(s)}; }
    bool operator==(const IntOrString&) const = default;
};

struct ObjectMeta {
    std::string name;
    std::string generate_name;
    std::string namespace_;  // defaulted to "default" for namespaced kinds
    Labels labels;
    Labels annotations;
    std::string uid;
    std::int64_t generation = 0;
    std::string resource_version;
    std::string creation_timestamp;  // RFC 3339 as written; empty when null
};

// metav1.LabelSelector.
struct LabelSelectorRequirement {
    std::string key;
    std::string op;  // In, NotIn, Exists, DoesNotExist
    std::vector<std::string> values;
};
struct LabelSelector {
    Labels match_labels;
    std::vector<LabelSelectorRequirement> match_expressions;
};

// v1.NodeSelector and friends.
struct NodeSelectorRequirement {
    std::string key;
    std::string op;  // In, NotIn, Exists, DoesNotExist, Gt, Lt
    std::vector<std::string> values;
};
struct NodeSelectorTerm {
    std::vector<NodeSelectorRequirement> match_expressions;
    std::vector<NodeSelectorRequirement> match_fields;
};
struct NodeSelector {
    std::vector<NodeSelectorTerm> node_selector_terms;
};
struct PreferredSchedulingTerm {
    std::int32_t weight = 0;
    NodeSelectorTerm preference;
};
struct NodeAffinity {
    std::optional<NodeSelector> required;            // requiredDuringSchedulingIgnoredDuringExecution
    std::vector<PreferredSchedulingTerm> preferred;  // preferredDuringSchedulingIgnoredDuringExecution
};
struct Affinity {
    std::optional<NodeAffinity> node_affinity;
    Json pod_affinity;       // kept as written; not acted on by a single node
    Json pod_anti_affinity;  // kept as written
};

struct Toleration {
    std::string key;
    std::string op;  // "" (Equal), Equal, Exists
    std::string value;
    std::string effect;  // "" (all), NoSchedule, PreferNoSchedule, NoExecute
    std::optional<std::int64_t> toleration_seconds;
    bool operator==(const Toleration&) const = default;
};

struct Taint {
    std::string key;
    std::string value;
    std::string effect;  // NoSchedule, PreferNoSchedule, NoExecute
    std::string time_added;
    bool operator==(const Taint&) const = default;
};

struct ObjectFieldSelector {
    std::string api_version;
    std::string field_path;
};
struct ResourceFieldSelector {
    std::string container_name;
    std::string resource;
    std::optional<Quantity> divisor;
};
// ConfigMapKeySelector / SecretKeySelector.
struct KeySelector {
    std::string name;
    std::string key;
    std::optional<bool> optional;
};
struct EnvVarSource {
    std::optional<ObjectFieldSelector> field_ref;
    std::optional<ResourceFieldSelector> resource_field_ref;
    Json config_map_key_ref;                    // configMapKeyRef as written (validation)
    Json secret_key_ref;                        // secretKeyRef as written (validation)
    std::optional<KeySelector> config_map_key;  // configMapKeyRef, typed
    std::optional<KeySelector> secret_key;      // secretKeyRef, typed
};
struct EnvVar {
    std::string name;
    std::string value;
    std::optional<EnvVarSource> value_from;
};

// ConfigMapEnvSource / SecretEnvSource.
struct EnvFromRef {
    std::string name;
    std::optional<bool> optional;
};
// EnvFromSource: every key of a ConfigMap or Secret, each name prefixed.
struct EnvFromSource {
    std::string prefix;
    std::optional<EnvFromRef> config_map_ref;
    std::optional<EnvFromRef> secret_ref;
};

struct ContainerPort {
    std::string name;
    std::int32_t container_port = 0;
    std::int32_t host_port = 0;
    std::string protocol;  // defaulted to TCP
    std::string host_ip;
};

struct ResourceRequirements {
    std::map<std::string, Quantity> limits;
    std::map<std::string, Quantity> requests;
};

struct VolumeMount {
    std::string name;
    std::string mount_path;
    std::string sub_path;
    bool read_only = false;
    std::string mount_propagation;
};

struct ExecAction {
    std::vector<std::string> command;
};
struct HTTPHeader {
    std::string name;
    std::string value;
};
struct HTTPGetAction {
    std::string path;
    IntOrString port;
    std::string host;
    std::string scheme;  // defaulted to HTTP
    std::vector<HTTPHeader> http_headers;
};
struct TCPSocketAction {
    IntOrString port;
    std::string host;
};
// GRPCAction: the standard gRPC health check (grpc.health.v1.Health/Check).
struct GRPCAction {
    std::int32_t port = 0;
    std::string service;  // *string upstream; nil and "" both ask about the whole server
};
// ProbeHandler / LifecycleHandler: exactly one action is set when valid.
struct Handler {
    std::optional<ExecAction> exec;
    std::optional<HTTPGetAction> http_get;
    std::optional<TCPSocketAction> tcp_socket;
    std::optional<std::int64_t> sleep_seconds;  // lifecycle sleep action
    std::optional<GRPCAction> grpc;             // probes only
};
struct Probe {
    Handler handler;
    std::int32_t initial_delay_seconds = 0;
    std::int32_t timeout_seconds = 1;
    std::int32_t period_seconds = 10;
    std::int32_t success_threshold = 1;
    std::int32_t failure_threshold = 3;
    std::optional<std::int64_t> termination_grace_period_seconds;
};
struct Lifecycle {
    std::optional<Handler> post_start;
    std::optional<Handler> pre_stop;
};

// v1.SeccompProfile: type RuntimeDefault, Unconfined or Localhost (then
// localhostProfile, relative to the kubelet's seccomp profile root).
struct SeccompProfile {
    std::string type;
    std::string localhost_profile;
    bool operator==(const SeccompProfile&) const = default;
};

struct Sysctl {
    std::string name;
    std::string value;
    bool operator==(const Sysctl&) const = default;
};

struct SecurityContext {
    std::optional<bool> privileged;
    std::optional<std::int64_t> run_as_user;
    std::optional<std::int64_t> run_as_group;
    std::optional<bool> run_as_non_root;
    std::optional<bool> read_only_root_filesystem;
    std::optional<bool> allow_privilege_escalation;
    std::vector<std::string> capabilities_add;
    std::vector<std::string> capabilities_drop;
    std::optional<SeccompProfile> seccomp_profile;
    std::string proc_mount;  // "" (Default), Default, Unmasked
};

// v1.PodSecurityContext: what applies to every container of the pod
// (runAsUser, runAsGroup, runAsNonRoot, seccompProfile, unless the
// container sets its own) and to the pod itself (groups, sysctls).
struct PodSecurityContext {
    std::optional<std::int64_t> run_as_user;
    std::optional<std::int64_t> run_as_group;
    std::optional<bool> run_as_non_root;
    std::vector<std::int64_t> supplemental_groups;
    std::optional<std::int64_t> fs_group;
    std::optional<SeccompProfile> seccomp_profile;
    std::vector<Sysctl> sysctls;
};

struct Container {
    std::string name;
    std::string image;
    std::string image_pull_policy;  // defaulted: Always for :latest / untagged, else IfNotPresent
    std::vector<std::string> command;
    std::vector<std::string> args;
    std::string working_dir;
    std::vector<EnvVar> env;
    std::vector<EnvFromSource> env_from;
    std::vector<ContainerPort> ports;
    ResourceRequirements resources;
    std::vector<VolumeMount> volume_mounts;
    std::optional<Probe> liveness_probe;
    std::optional<Probe> readiness_probe;
    std::optional<Probe> startup_probe;
    std::optional<Lifecycle> lifecycle;
    std::optional<SecurityContext> security_context;
    std::string termination_message_path;
    std::string termination_message_policy;
    std::string restart_policy;  // init containers only: "Always" makes a sidecar (1.28+)
};

// KeyToPath: one key of a ConfigMap or Secret projected to a file.
struct KeyToPath {
    std::string key;
    std::string path;
    std::optional<std::int32_t> mode;
};
// DownwardAPIVolumeFile.
struct DownwardAPIVolumeFile {
    std::string path;
    std::optional<ObjectFieldSelector> field_ref;
    std::optional<ResourceFieldSelector> resource_field_ref;
    std::optional<std::int32_t> mode;
};
// ConfigMapProjection / SecretProjection (and the volume sources' shared part).
struct KeyProjection {
    std::string name;
    std::vector<KeyToPath> items;
    std::optional<bool> optional;
};
struct ServiceAccountTokenProjection {
    std::string audience;
    std::optional<std::int64_t> expiration_seconds;
    std::string path;
};
// VolumeProjection: one source of a projected volume (exactly one is set
// when valid; clusterTrustBundle is kept only in the raw document).
struct VolumeProjection {
    std::optional<KeyProjection> config_map;
    std::optional<KeyProjection> secret;
    std::optional<std::vector<DownwardAPIVolumeFile>> downward_api;
    std::optional<ServiceAccountTokenProjection> service_account_token;
};

struct Volume {
    enum class Source { None, HostPath, EmptyDir, ConfigMap, Secret, DownwardAPI, Projected, Other };
    std::string name;
    Source source = Source::None;
    std::string host_path;       // hostPath.path
    std::string host_path_type;  // hostPath.type
    std::string empty_dir_medium;
    std::optional<Quantity> empty_dir_size_limit;
    std::string config_map_name;  // configMap.name
    std::string secret_name;      // secret.secretName
    // configMap / secret: items and optional (name as above); downwardAPI:
    // downward_api_items; projected: projections. defaultMode for all four.
    std::vector<KeyToPath> items;
    std::optional<bool> optional;
    std::vector<DownwardAPIVolumeFile> downward_api_items;
    std::vector<VolumeProjection> projections;
    std::optional<std::int32_t> default_mode;
    Json raw;  // the whole volume as written
};

// v1.PodDNSConfig; options as "name" or "name:value".
struct PodDNSConfig {
    std::vector<std::string> nameservers;
    std::vector<std::string> searches;
    std::vector<std::string> options;
};

struct PodHostAlias {
    std::string ip;
    std::vector<std::string> hostnames;
};

struct PodSpec {
    std::string node_name;
    Labels node_selector;
    std::optional<Affinity> affinity;
    std::vector<Toleration> tolerations;
    std::vector<Container> init_containers;
    std::vector<Container> containers;
    std::vector<Volume> volumes;
    bool host_network = false;
    bool host_pid = false;
    bool host_ipc = false;
    std::string restart_policy;                                    // defaulted to Always
    std::optional<std::int64_t> termination_grace_period_seconds;  // defaulted to 30
    std::optional<std::int64_t> active_deadline_seconds;
    std::string dns_policy;  // defaulted to ClusterFirst
    std::optional<PodSecurityContext> security_context;
    std::string hostname;   // spec.hostname
    std::string subdomain;  // spec.subdomain
    std::optional<PodDNSConfig> dns_config;
    std::vector<PodHostAlias> host_aliases;
    std::string service_account_name;
    std::string priority_class_name;
    std::string scheduler_name;
};

struct PodTemplateSpec {
    ObjectMeta metadata;
    PodSpec spec;
};

struct RollingUpdateDaemonSet {
    std::optional<IntOrString> max_unavailable;
    std::optional<IntOrString> max_surge;
};
struct DaemonSetUpdateStrategy {
    std::string type;  // RollingUpdate (default), OnDelete
    std::optional<RollingUpdateDaemonSet> rolling_update;
};

struct DaemonSetSpec {
    std::optional<LabelSelector> selector;
    PodTemplateSpec template_;
    DaemonSetUpdateStrategy update_strategy;
    std::int32_t min_ready_seconds = 0;
    std::optional<std::int32_t> revision_history_limit;  // defaulted to 10
    std::int64_t template_generation = 0;                // legacy, extensions/v1beta1
};

struct DaemonSetStatus {
    std::int32_t current_number_scheduled = 0;
    std::int32_t number_misscheduled = 0;
    std::int32_t desired_number_scheduled = 0;
    std::int32_t number_ready = 0;
    std::int64_t observed_generation = 0;
    std::int32_t updated_number_scheduled = 0;
    std::int32_t number_available = 0;
    std::int32_t number_unavailable = 0;
    std::optional<std::int32_t> collision_count;
};

struct DaemonSet {
    ObjectMeta metadata;
    DaemonSetSpec spec;
    DaemonSetStatus status;
    Json object;  // the full apps/v1 object, defaulted, unknown fields kept
};

struct Node {
    ObjectMeta metadata;
    bool unschedulable = false;
    std::vector<Taint> taints;
    Json object;  // the full v1 object as read
};

// v1 ConfigMap: data for pods (volumes, env). Values are bytes: `data` as
// written, `binaryData` base64-decoded. A key is in at most one of the two
// (validation.ValidateConfigMap).
struct ConfigMap {
    ObjectMeta metadata;
    std::map<std::string, std::string> data;
    std::map<std::string, std::string> binary_data;  // decoded bytes
    bool immutable = false;
    Json object;  // the full v1 object as read
};

// What a Secret's value is shown as in messages and `get -o json`.
inline constexpr const char* kSecretRedacted = "<secret contents redacted>";

// v1 Secret. `data` holds the decoded bytes, `stringData` merged over it as
// the API server merges it on write. Values never reach a log or an error.
struct Secret {
    ObjectMeta metadata;
    std::string type;  // defaulted to Opaque
    std::map<std::string, std::string> data;
    bool immutable = false;
    Json object;  // the full v1 object as read, data redacted
};

// v1 Pod from a manifest file: a static pod (the kubelet's file source).
struct Pod {
    ObjectMeta metadata;
    PodSpec spec;
    Json object;  // the full v1 object, defaulted, unknown fields kept
};

// Any other object a published install file holds (Namespace,
// ServiceAccount, RBAC, CRDs, Services, ...): checked for what every object
// needs, and otherwise not used on a board.
struct OtherObject {
    std::string api_version;
    std::string kind;
    std::string name;
    std::string namespace_;  // empty for cluster-scoped kinds
};

// The ConfigMaps and Secrets pods may reference, by namespace and name.
// Shared, never copied: a ConfigMap holds up to 1 MiB of data, and the
// agent's sets of them (a file's, the files' merged) hold the same objects.
// An object is replaced, never changed in place.
struct ConfigObjects {
    std::map<std::pair<std::string, std::string>, std::shared_ptr<const ConfigMap>> config_maps;
    std::map<std::pair<std::string, std::string>, std::shared_ptr<const Secret>> secrets;
    const ConfigMap* config_map(const std::string& ns, const std::string& name) const {
        auto it = config_maps.find({ns, name});
        return it == config_maps.end() ? nullptr : it->second.get();
    }
    const Secret* secret(const std::string& ns, const std::string& name) const {
        auto it = secrets.find({ns, name});
        return it == secrets.end() ? nullptr : it->second.get();
    }
};

// Upstream constants (k8s.io/api/core/v1 well_known_taints.go, well_known_labels.go).
namespace taints {
inline constexpr const char* kNotReady = "node.kubernetes.io/not-ready";
inline constexpr const char* kUnreachable = "node.kubernetes.io/unreachable";
inline constexpr const char* kUnschedulable = "node.kubernetes.io/unschedulable";
inline constexpr const char* kMemoryPressure = "node.kubernetes.io/memory-pressure";
inline constexpr const char* kDiskPressure = "node.kubernetes.io/disk-pressure";
inline constexpr const char* kNetworkUnavailable = "node.kubernetes.io/network-unavailable";
inline constexpr const char* kPIDPressure = "node.kubernetes.io/pid-pressure";
// The effects (types.go TaintEffect).
inline constexpr const char* kNoSchedule = "NoSchedule";
inline constexpr const char* kNoExecute = "NoExecute";
}  // namespace taints

namespace labels {
inline constexpr const char* kHostname = "kubernetes.io/hostname";
inline constexpr const char* kOS = "kubernetes.io/os";
inline constexpr const char* kArch = "kubernetes.io/arch";
}  // namespace labels

}  // namespace daemonlet
