// Pod template and pod spec validation: ValidatePodTemplateSpec,
// ValidatePodSpecificAnnotations and ValidatePodSpec from
// pkg/apis/core/validation/validation.go (Kubernetes 1.25 to 1.30), for a
// template embedded in a DaemonSet (PodValidationOptions as the apps
// strategy sets them on create: ResourceIsPod off, deletion cost checked).
// Containers live in validation_container.cpp, volumes in
// validation_volumes.cpp, affinity and tolerations in validation_scheduling.cpp.
#include <arpa/inet.h>

#include <limits>
#include <string>

#include "core/names.h"
#include "core/validation.h"
#include "core/validation_internal.h"

namespace daemonlet::validation {
namespace {

constexpr const char* kMirrorPodAnnotation = "kubernetes.io/config.mirror";
constexpr const char* kPodDeletionCost = "controller.kubernetes.io/pod-deletion-cost";
constexpr const char* kSeccompPodAnnotation = "seccomp.security.alpha.kubernetes.io/pod";
constexpr const char* kSeccompContainerPrefix = "container.seccomp.security.alpha.kubernetes.io/";
constexpr const char* kAppArmorContainerPrefix = "container.apparmor.security.beta.kubernetes.io/";

bool starts_with(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }

// helper.GetDeletionCostFromPodAnnotations: a 32-bit integer without a plus
// sign or leading zeros.
bool is_valid_deletion_cost(const std::string& v) {
    if (v.empty()) return false;
    if (!(v[0] == '-' || v == "0" || (v[0] >= '1' && v[0] <= '9'))) return false;
    std::size_t i = v[0] == '-' ? 1 : 0;
    if (i == v.size()) return false;
    std::int64_t n = 0;
    for (; i < v.size(); ++i) {
        if (v[i] < '0' || v[i] > '9') return false;
        n = n * 10 + (v[i] - '0');
        if (n > std::int64_t{std::numeric_limits<std::int32_t>::max()} + 1) return false;
    }
    return v[0] == '-' ? n <= std::int64_t{std::numeric_limits<std::int32_t>::max()} + 1
                       : n <= std::numeric_limits<std::int32_t>::max();
}

// ValidateSeccompProfile (the deprecated seccomp annotations).
void validate_seccomp_profile(const std::string& v, const FieldPath& p, FieldErrors& errs) {
    if (v == "runtime/default" || v == "docker/default" || v == "unconfined") return;
    if (starts_with(v, "localhost/")) {
        validate_local_descending_path(v.substr(10), p, errs);
        return;
    }
    errs.push_back(invalid(p, render_string(v), "must be a valid seccomp profile"));
}

bool has_container(const PodSpec& spec, const std::string& name) {
    for (const auto& c : spec.containers)
        if (c.name == name) return true;
    for (const auto& c : spec.init_containers)
        if (c.name == name) return true;
    return false;
}

// ValidatePodSpecificAnnotations. The legacy tolerations annotation
// (scheduler.alpha.kubernetes.io/tolerations) is not checked: its errors
// would be Go JSON decoder messages, which we cannot reproduce.
void validate_pod_specific_annotations(const Labels& a, const PodSpec& spec, const FieldPath& p,
                                       FieldErrors& errs) {
    if (auto it = a.find(kMirrorPodAnnotation); it != a.end() && spec.node_name.empty())
        errs.push_back(invalid(p.key(kMirrorPodAnnotation), render_string(it->second),
                               "must set spec.nodeName if mirror pod annotation is set"));
    if (auto it = a.find(kPodDeletionCost); it != a.end() && !is_valid_deletion_cost(it->second))
        errs.push_back(
            invalid(p.key(kPodDeletionCost), render_string(it->second), "must be a 32bit integer"));
    // ValidateSeccompPodAnnotations: note Child, not Key, upstream.
    for (const auto& [k, v] : a)
        if (k == kSeccompPodAnnotation || starts_with(k, kSeccompContainerPrefix))
            validate_seccomp_profile(v, p.child(k), errs);
    // ValidateAppArmorPodAnnotations.
    for (const auto& [k, v] : a) {
        if (!starts_with(k, kAppArmorContainerPrefix)) continue;
        std::string container = k.substr(std::string(kAppArmorContainerPrefix).size());
        if (!has_container(spec, container))
            errs.push_back(invalid(p.key(k), render_string(container), "container not found"));
        if (!(v.empty() || v == "runtime/default" || v == "unconfined" || starts_with(v, "localhost/")))
            errs.push_back(
                invalid(p.key(k), render_string(v), "invalid AppArmor profile name: " + render_string(v)));
    }
}

// validatePodHostNetworkDeps for a template (ResourceIsPod off): hostPort 0
// is allowed, defaulting fills it in the pod; any other value must equal
// containerPort. Regular containers only.
void validate_host_network_deps(const PodSpec& spec, const FieldPath& p, FieldErrors& errs) {
    if (!spec.host_network) return;
    for (std::size_t i = 0; i < spec.containers.size(); ++i) {
        const auto& ports = spec.containers[i].ports;
        for (std::size_t j = 0; j < ports.size(); ++j)
            if (ports[j].host_port != 0 && ports[j].host_port != ports[j].container_port)
                errs.push_back(invalid(
                    p.child("containers").index(i).child("ports").index(j).child("hostPort"),
                    render_int(ports[j].host_port), "must match `containerPort` when `hostNetwork` is true"));
    }
}

// validateRestartPolicy.
void validate_restart_policy(const std::string& v, const FieldPath& p, FieldErrors& errs) {
    if (v == "Always" || v == "OnFailure" || v == "Never") return;
    if (v.empty())
        errs.push_back(required(p));
    else
        errs.push_back(not_supported(p, render_string(v), {"Always", "OnFailure", "Never"}));
}

// validateDNSPolicy, and the parts of validatePodDNSConfig that tie the two
// (dnsPolicy None needs a dnsConfig with a nameserver) and check the
// nameservers' IP syntax. The search list limits are not checked here.
void validate_dns(const std::string& policy, const Json& raw_spec, const FieldPath& p, FieldErrors& errs) {
    FieldPath pp = p.child("dnsPolicy");
    if (policy.empty()) {
        errs.push_back(required(pp));
    } else if (policy != "ClusterFirstWithHostNet" && policy != "ClusterFirst" && policy != "Default" &&
               policy != "None") {
        errs.push_back(not_supported(pp, render_string(policy),
                                     {"ClusterFirstWithHostNet", "ClusterFirst", "Default", "None"}));
    }
    const Json* config = member(raw_spec, "dnsConfig");
    // validatePodDNSConfig: each nameserver an IP (IsValidIP), so a
    // published file's `__PILLAR__DNS__SERVER__` gets the API server's error.
    // inet_pton refuses the leading zeros ParseIPSloppy accepts ("010.0.0.1").
    const Json* listed = config ? member(*config, "nameservers") : nullptr;
    if (listed && listed->is_array())
        for (std::size_t i = 0; i < listed->size(); ++i) {
            if (!(*listed)[i].is_string()) continue;
            const std::string ip = (*listed)[i].get<std::string>();
            unsigned char buf[16];
            if (inet_pton(AF_INET, ip.c_str(), buf) != 1 && inet_pton(AF_INET6, ip.c_str(), buf) != 1)
                errs.push_back(invalid(p.child("dnsConfig").child("nameservers").index(i), render_string(ip),
                                       "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)"));
        }
    if (policy != "None") return;
    if (!config) {
        errs.push_back(required(p.child("dnsConfig"), "must provide `dnsConfig` when `dnsPolicy` is None"));
        return;
    }
    const Json* servers = member(*config, "nameservers");
    if (!servers || !servers->is_array() || servers->empty())
        errs.push_back(required(p.child("dnsConfig").child("nameservers"),
                                "must provide at least one DNS nameserver when `dnsPolicy` is None"));
}

void validate_subdomain_name(const std::string& v, const FieldPath& p, FieldErrors& errs) {
    if (!v.empty()) invalid_each(errs, p, render_string(v), name_is_dns_subdomain(v, false));
}

// ValidatePodSpec, for the fields the model carries.
// validatePodSpecSecurityContext: user and group IDs in range
// (IsValidUserID, IsValidGroupID), the seccomp profile
// (validateSeccompProfileField).
void validate_pod_security_context(const PodSecurityContext& sc, const FieldPath& p, FieldErrors& errs) {
    constexpr std::int64_t kMaxId = std::numeric_limits<std::int32_t>::max();
    auto id = [&](const std::optional<std::int64_t>& v, const FieldPath& fp) {
        if (v && (*v < 0 || *v > kMaxId))
            errs.push_back(invalid(fp, render_int(*v), inclusive_range_error(0, kMaxId)));
    };
    id(sc.run_as_user, p.child("runAsUser"));
    id(sc.run_as_group, p.child("runAsGroup"));
    id(sc.fs_group, p.child("fsGroup"));
    for (std::size_t i = 0; i < sc.supplemental_groups.size(); ++i)
        id(sc.supplemental_groups[i], p.child("supplementalGroups").index(i));
    if (sc.seccomp_profile)
        validate_seccomp_profile_field(*sc.seccomp_profile, p.child("seccompProfile"), errs);
}

void validate_pod_spec(const PodSpec& spec, const Json& raw_spec, const FieldPath& p, FieldErrors& errs) {
    if (spec.security_context)
        validate_pod_security_context(*spec.security_context, p.child("securityContext"), errs);
    // Defaulted to 30; only a missing value is an error (a negative one is
    // accepted and treated as 1 by the pod strategy).
    if (!spec.termination_grace_period_seconds)
        errs.push_back(required(p.child("terminationGracePeriodSeconds")));
    std::set<std::string> volumes = validate_volumes(spec.volumes, p.child("volumes"), errs);
    validate_containers(spec, volumes, raw_spec, p.child("containers"), errs);
    validate_init_containers(spec, volumes, raw_spec, p.child("initContainers"), errs);
    validate_host_network_deps(spec, p, errs);
    validate_restart_policy(spec.restart_policy, p.child("restartPolicy"), errs);
    validate_dns(spec.dns_policy, raw_spec, p, errs);
    validate_labels(spec.node_selector, p.child("nodeSelector"), errs);
    if (spec.affinity) validate_affinity(*spec.affinity, p.child("affinity"), errs);
    validate_subdomain_name(spec.service_account_name, p.child("serviceAccountName"), errs);
    validate_subdomain_name(spec.node_name, p.child("nodeName"), errs);
    if (spec.active_deadline_seconds) {
        std::int64_t v = *spec.active_deadline_seconds;
        if (v < 1 || v > std::numeric_limits<std::int32_t>::max())
            errs.push_back(invalid(p.child("activeDeadlineSeconds"), render_int(v),
                                   inclusive_range_error(1, std::numeric_limits<std::int32_t>::max())));
    }
    if (!spec.tolerations.empty()) validate_tolerations(spec.tolerations, p.child("tolerations"), errs);
    validate_subdomain_name(spec.priority_class_name, p.child("priorityClassName"), errs);
}

}  // namespace

void validate_pod_template_spec(const PodTemplateSpec& t, const Json& raw_spec, const FieldPath& p,
                                FieldErrors& errs) {
    // Upstream validates the template's labels under `labels`, not
    // `metadata.labels`.
    validate_labels(t.metadata.labels, p.child("labels"), errs);
    validate_annotations(t.metadata.annotations, p.child("annotations"), errs);
    validate_pod_specific_annotations(t.metadata.annotations, t.spec, p.child("annotations"), errs);
    validate_pod_spec(t.spec, raw_spec, p.child("spec"), errs);
    const Json* ephemeral = member(raw_spec, "ephemeralContainers");
    if (ephemeral && ephemeral->is_array() && !ephemeral->empty())
        errs.push_back(forbidden(p.child("spec").child("ephemeralContainers"),
                                 "ephemeral containers not allowed in pod template"));
}

}  // namespace daemonlet::validation

namespace daemonlet {

// ValidatePodCreate for a static pod: ObjectMeta with NameIsDNSSubdomain,
// the pod-specific annotations and ValidatePodSpec. The spec rules are the
// template's (PodValidationOptions as for a DaemonSet's template): hostPort
// is defaulted before, so ResourceIsPod changes nothing here.
FieldErrors validate_pod(const Pod& pod, const Json& raw_spec) {
    using namespace validation;
    FieldErrors errs;
    FieldPath meta("metadata");
    validate_object_meta(pod.metadata, true, meta, errs);
    validate_pod_specific_annotations(pod.metadata.annotations, pod.spec, meta.child("annotations"), errs);
    validate_pod_spec(pod.spec, raw_spec, FieldPath("spec"), errs);
    const Json* ephemeral = member(raw_spec, "ephemeralContainers");
    if (ephemeral && ephemeral->is_array() && !ephemeral->empty())
        errs.push_back(forbidden(FieldPath("spec").child("ephemeralContainers"), "cannot be set on create"));
    return errs;
}

}  // namespace daemonlet
