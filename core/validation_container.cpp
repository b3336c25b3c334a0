// Container validation: validateContainers, validateInitContainers,
// validateContainerCommon and what they call (ports, volume mounts,
// probes, lifecycle handlers, security context; env vars are in
// validation_env.cpp) from
// pkg/apis/core/validation/validation.go, Kubernetes 1.25 to 1.30.
#include <cctype>
#include <limits>
#include <string>

#include "core/names.h"
#include "core/validation_internal.h"

namespace daemonlet::validation {
namespace {

// ---- ports ---------------------------------------------------------------

// util/validation IsValidPortNum.
void validate_port_number(std::int64_t port, const FieldPath& p, FieldErrors& errs) {
    if (port < 1 || port > 65535)
        errs.push_back(invalid(p, render_int(port), inclusive_range_error(1, 65535)));
}

// validateContainerPorts.
void validate_container_ports(const std::vector<ContainerPort>& ports, const FieldPath& p,
                              FieldErrors& errs) {
    std::set<std::string> names_seen;
    for (std::size_t i = 0; i < ports.size(); ++i) {
        const ContainerPort& port = ports[i];
        FieldPath ip = p.index(i);
        if (!port.name.empty()) {
            auto msgs = names::is_valid_port_name(port.name);
            if (!msgs.empty())
                invalid_each(errs, ip.child("name"), render_string(port.name), msgs);
            else if (!names_seen.insert(port.name).second)
                errs.push_back(duplicate(ip.child("name"), render_string(port.name)));
        }
        if (port.container_port == 0)
            errs.push_back(required(ip.child("containerPort")));
        else
            validate_port_number(port.container_port, ip.child("containerPort"), errs);
        if (port.host_port != 0) validate_port_number(port.host_port, ip.child("hostPort"), errs);
        if (port.protocol.empty())
            errs.push_back(required(ip.child("protocol")));
        else if (port.protocol != "TCP" && port.protocol != "UDP" && port.protocol != "SCTP")
            errs.push_back(
                not_supported(ip.child("protocol"), render_string(port.protocol), {"SCTP", "TCP", "UDP"}));
    }
}

// AccumulateUniqueHostPorts: protocol/hostIP/hostPort must be unique.
void check_host_port_conflicts(const std::vector<const Container*>& containers, const FieldPath& p,
                               FieldErrors& errs) {
    std::set<std::string> seen;
    for (std::size_t ci = 0; ci < containers.size(); ++ci) {
        const auto& ports = containers[ci]->ports;
        for (std::size_t pi = 0; pi < ports.size(); ++pi) {
            if (ports[pi].host_port == 0) continue;
            std::string key =
                ports[pi].protocol + "/" + ports[pi].host_ip + "/" + std::to_string(ports[pi].host_port);
            if (!seen.insert(key).second)
                errs.push_back(
                    duplicate(p.index(ci).child("ports").index(pi).child("hostPort"), render_string(key)));
        }
    }
}

// ---- volume mounts -------------------------------------------------------

// ValidateVolumeMounts. Upstream reports subPath and mountPropagation
// problems under the list's path, without the index: so do we.
void validate_volume_mounts(const Container& c, const std::set<std::string>& volumes, const FieldPath& p,
                            FieldErrors& errs) {
    std::set<std::string> mount_points;
    for (std::size_t i = 0; i < c.volume_mounts.size(); ++i) {
        const VolumeMount& m = c.volume_mounts[i];
        FieldPath ip = p.index(i);
        if (m.name.empty()) errs.push_back(required(ip.child("name")));
        if (!volumes.count(m.name)) errs.push_back(not_found(ip.child("name"), render_string(m.name)));
        if (m.mount_path.empty()) errs.push_back(required(ip.child("mountPath")));
        if (!mount_points.insert(m.mount_path).second)
            errs.push_back(invalid(ip.child("mountPath"), render_string(m.mount_path), "must be unique"));
        if (!m.sub_path.empty()) validate_local_descending_path(m.sub_path, p.child("subPath"), errs);
        if (!m.mount_propagation.empty()) {
            FieldPath mp = p.child("mountPropagation");
            const std::string& mode = m.mount_propagation;
            if (mode != "Bidirectional" && mode != "HostToContainer" && mode != "None")
                errs.push_back(
                    not_supported(mp, render_string(mode), {"Bidirectional", "HostToContainer", "None"}));
            bool privileged = c.security_context && c.security_context->privileged.value_or(false);
            if (mode == "Bidirectional" && !privileged)
                errs.push_back(forbidden(
                    mp, "Bidirectional mount propagation is available only to privileged containers"));
        }
    }
}

// ---- probes and lifecycle --------------------------------------------------

// ValidatePortNumOrName.
void validate_port_num_or_name(const IntOrString& port, const FieldPath& p, FieldErrors& errs) {
    if (port.type == IntOrString::Type::Int)
        validate_port_number(port.int_val, p, errs);
    else
        invalid_each(errs, p, render_string(port.str_val), names::is_valid_port_name(port.str_val));
}

// util/validation IsHTTPHeaderName.
bool is_http_header_name(const std::string& v) {
    if (v.empty()) return false;
    for (char c : v)
        if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-') return false;
    return true;
}

// validateHandler: exactly one action. Probes know exec, httpGet, tcpSocket
// and grpc; lifecycle handlers exec, httpGet, tcpSocket and sleep.
void validate_handler(const Handler& h, bool lifecycle, const std::optional<std::int64_t>& grace,
                      const FieldPath& p, FieldErrors& errs) {
    int handlers = 0;
    auto one_more = [&](const char* name) {
        if (handlers > 0) {
            errs.push_back(forbidden(p.child(name), "may not specify more than 1 handler type"));
            return false;
        }
        ++handlers;
        return true;
    };
    if (h.exec && one_more("exec") && h.exec->command.empty())
        errs.push_back(required(p.child("exec").child("command")));
    if (h.http_get && one_more("httpGet")) {
        FieldPath hp = p.child("httpGet");
        if (h.http_get->path.empty()) errs.push_back(required(hp.child("path")));
        validate_port_num_or_name(h.http_get->port, hp.child("port"), errs);
        if (h.http_get->scheme != "HTTP" && h.http_get->scheme != "HTTPS")
            errs.push_back(
                not_supported(hp.child("scheme"), render_string(h.http_get->scheme), {"HTTP", "HTTPS"}));
        for (const auto& header : h.http_get->http_headers)
            if (!is_http_header_name(header.name))
                errs.push_back(
                    invalid(hp.child("httpHeaders"), render_string(header.name),
                            regex_error("a valid HTTP header must consist of alphanumeric characters or '-'",
                                        "[-A-Za-z0-9]+", {"X-Header-Name"})));
    }
    if (h.tcp_socket && one_more("tcpSocket"))
        validate_port_num_or_name(h.tcp_socket->port, p.child("tcpSocket").child("port"), errs);
    // validateGRPCAction: ValidatePortNumOrName of the port as a number.
    if (!lifecycle && h.grpc && one_more("grpc"))
        validate_port_number(h.grpc->port, p.child("grpc").child("port"), errs);
    // The sleep action (PodLifecycleSleepAction, on by default from 1.30).
    if (lifecycle && h.sleep_seconds && one_more("sleep") && grace) {
        if (*h.sleep_seconds <= 0 || *h.sleep_seconds > *grace)
            errs.push_back(invalid(p.child("sleep"), render_int(*h.sleep_seconds),
                                   "must be greater than 0 and less than terminationGracePeriodSeconds (" +
                                       std::to_string(*grace) + ")"));
    }
    if (handlers == 0) errs.push_back(required(p, "must specify a handler type"));
}

void validate_lifecycle(const Lifecycle& l, const std::optional<std::int64_t>& grace, const FieldPath& p,
                        FieldErrors& errs) {
    if (l.post_start) validate_handler(*l.post_start, true, grace, p.child("postStart"), errs);
    if (l.pre_stop) validate_handler(*l.pre_stop, true, grace, p.child("preStop"), errs);
}

enum class ProbeKind { Liveness, Readiness, Startup };

// validateProbe plus validateLivenessProbe / validateReadinessProbe /
// validateStartupProbe.
void validate_probe(const std::optional<Probe>& probe, ProbeKind kind,
                    const std::optional<std::int64_t>& grace, const FieldPath& p, FieldErrors& errs) {
    if (!probe) return;
    validate_handler(probe->handler, false, grace, p, errs);
    validate_nonnegative(probe->initial_delay_seconds, p.child("initialDelaySeconds"), errs);
    validate_nonnegative(probe->timeout_seconds, p.child("timeoutSeconds"), errs);
    validate_nonnegative(probe->period_seconds, p.child("periodSeconds"), errs);
    validate_nonnegative(probe->success_threshold, p.child("successThreshold"), errs);
    validate_nonnegative(probe->failure_threshold, p.child("failureThreshold"), errs);
    if (probe->termination_grace_period_seconds && *probe->termination_grace_period_seconds <= 0)
        errs.push_back(invalid(p.child("terminationGracePeriodSeconds"),
                               render_int(*probe->termination_grace_period_seconds),
                               "must be greater than 0"));
    if (kind == ProbeKind::Readiness && probe->termination_grace_period_seconds)
        errs.push_back(invalid(p.child("terminationGracePeriodSeconds"),
                               render_int(*probe->termination_grace_period_seconds),
                               "must not be set for readinessProbes"));
    if (kind != ProbeKind::Readiness && probe->success_threshold != 1)
        errs.push_back(
            invalid(p.child("successThreshold"), render_int(probe->success_threshold), "must be 1"));
}

// ---- security context ----------------------------------------------------

// core.SecurityContext is printed with %#v upstream, pointer fields as
// addresses; we print the fields that are set as compact JSON instead.
std::string render_security_context(const SecurityContext& sc) {
    Json j = Json::object();
    if (sc.privileged) j["privileged"] = *sc.privileged;
    if (sc.run_as_user) j["runAsUser"] = *sc.run_as_user;
    if (sc.run_as_group) j["runAsGroup"] = *sc.run_as_group;
    if (sc.run_as_non_root) j["runAsNonRoot"] = *sc.run_as_non_root;
    if (sc.read_only_root_filesystem) j["readOnlyRootFilesystem"] = *sc.read_only_root_filesystem;
    if (sc.allow_privilege_escalation) j["allowPrivilegeEscalation"] = *sc.allow_privilege_escalation;
    if (!sc.capabilities_add.empty() || !sc.capabilities_drop.empty())
        j["capabilities"] = Json{{"add", sc.capabilities_add}, {"drop", sc.capabilities_drop}};
    return render_value(j);
}

// ValidateSecurityContext. Privileged containers are allowed: every
// distribution runs the API server with --allow-privileged=true.
void validate_security_context(const std::optional<SecurityContext>& sc, const FieldPath& p,
                               FieldErrors& errs) {
    if (!sc) return;
    constexpr std::int64_t kMaxId = std::numeric_limits<std::int32_t>::max();
    if (sc->run_as_user && (*sc->run_as_user < 0 || *sc->run_as_user > kMaxId))
        errs.push_back(
            invalid(p.child("runAsUser"), render_int(*sc->run_as_user), inclusive_range_error(0, kMaxId)));
    if (sc->run_as_group && (*sc->run_as_group < 0 || *sc->run_as_group > kMaxId))
        errs.push_back(
            invalid(p.child("runAsGroup"), render_int(*sc->run_as_group), inclusive_range_error(0, kMaxId)));
    if (sc->seccomp_profile)
        validate_seccomp_profile_field(*sc->seccomp_profile, p.child("seccompProfile"), errs);
    if (sc->allow_privilege_escalation && !*sc->allow_privilege_escalation) {
        if (sc->privileged.value_or(false))
            errs.push_back(
                invalid(p, render_security_context(*sc),
                        "cannot set `allowPrivilegeEscalation` to false and `privileged` to true"));
        for (const auto& cap : sc->capabilities_add)
            if (cap == "CAP_SYS_ADMIN")
                errs.push_back(invalid(
                    p, render_security_context(*sc),
                    "cannot set `allowPrivilegeEscalation` to false and `capabilities.Add` CAP_SYS_ADMIN"));
    }
}

// ---- containers ------------------------------------------------------------

// validateContainerCommon.
void validate_container_common(const Container& c, const std::set<std::string>& volumes, const FieldPath& p,
                               FieldErrors& errs) {
    if (c.name.empty())
        errs.push_back(required(p.child("name")));
    else
        validate_dns1123_label(c.name, p.child("name"), errs);
    if (c.image.empty()) errs.push_back(required(p.child("image")));
    const std::string& tmp = c.termination_message_policy;
    if (tmp.empty())
        errs.push_back(required(p.child("terminationMessagePolicy")));
    else if (tmp != "File" && tmp != "FallbackToLogsOnError")
        errs.push_back(not_supported(p.child("terminationMessagePolicy"), render_string(tmp),
                                     {"File", "FallbackToLogsOnError"}));
    validate_container_ports(c.ports, p.child("ports"), errs);
    validate_env(c.env, p.child("env"), errs);
    validate_env_from(c.env_from, p.child("envFrom"), errs);
    validate_volume_mounts(c, volumes, p.child("volumeMounts"), errs);
    const std::string& pull = c.image_pull_policy;
    if (pull.empty())
        errs.push_back(required(p.child("imagePullPolicy")));
    else if (pull != "Always" && pull != "IfNotPresent" && pull != "Never")
        errs.push_back(not_supported(p.child("imagePullPolicy"), render_string(pull),
                                     {"Always", "IfNotPresent", "Never"}));
    validate_resource_requirements(c.resources, p.child("resources"), errs);
    validate_security_context(c.security_context, p.child("securityContext"), errs);
}

// The container's restartPolicy as written (the typed model does not keep
// it), or nullptr.
const Json* raw_restart_policy(const Json& raw_spec, const char* list, std::size_t i) {
    const Json* l = member(raw_spec, list);
    if (!l || !l->is_array() || i >= l->size()) return nullptr;
    return member((*l)[i], "restartPolicy");
}

}  // namespace

// validateSeccompProfileField.
void validate_seccomp_profile_field(const SeccompProfile& sp, const FieldPath& p, FieldErrors& errs) {
    if (sp.type == "Localhost") {
        if (sp.localhost_profile.empty())
            errs.push_back(
                required(p.child("localhostProfile"), "must be set when seccomp type is Localhost"));
        else  // never a path out of seccompProfileRoot
            validate_local_descending_path(sp.localhost_profile, p.child("localhostProfile"), errs);
    } else if (sp.type == "RuntimeDefault" || sp.type == "Unconfined") {
        if (!sp.localhost_profile.empty())
            errs.push_back(invalid(p.child("localhostProfile"), render_string(sp.localhost_profile),
                                   "can only be set when seccomp type is Localhost"));
    } else if (sp.type.empty()) {
        errs.push_back(required(p.child("type")));
    } else {
        errs.push_back(not_supported(p.child("type"), render_string(sp.type),
                                     {"Localhost", "RuntimeDefault", "Unconfined"}));
    }
}

void validate_containers(const PodSpec& spec, const std::set<std::string>& volumes, const Json& raw_spec,
                         const FieldPath& p, FieldErrors& errs) {
    if (spec.containers.empty()) {
        errs.push_back(required(p));
        return;
    }
    const auto& grace = spec.termination_grace_period_seconds;
    std::set<std::string> all_names;
    std::vector<const Container*> list;
    for (std::size_t i = 0; i < spec.containers.size(); ++i) {
        const Container& c = spec.containers[i];
        FieldPath cp = p.index(i);
        validate_container_common(c, volumes, cp, errs);
        if (!all_names.insert(c.name).second)
            errs.push_back(duplicate(cp.child("name"), render_string(c.name)));
        if (c.lifecycle) validate_lifecycle(*c.lifecycle, grace, cp.child("lifecycle"), errs);
        validate_probe(c.liveness_probe, ProbeKind::Liveness, grace, cp.child("livenessProbe"), errs);
        validate_probe(c.readiness_probe, ProbeKind::Readiness, grace, cp.child("readinessProbe"), errs);
        validate_probe(c.startup_probe, ProbeKind::Startup, grace, cp.child("startupProbe"), errs);
        if (raw_restart_policy(raw_spec, "containers", i))
            errs.push_back(forbidden(cp.child("restartPolicy"), "may not be set for non-init containers"));
        list.push_back(&c);
    }
    check_host_port_conflicts(list, p, errs);
}

void validate_init_containers(const PodSpec& spec, const std::set<std::string>& volumes, const Json& raw_spec,
                              const FieldPath& p, FieldErrors& errs) {
    const auto& grace = spec.termination_grace_period_seconds;
    std::set<std::string> all_names;
    for (const auto& c : spec.containers) all_names.insert(c.name);
    for (std::size_t i = 0; i < spec.init_containers.size(); ++i) {
        const Container& c = spec.init_containers[i];
        FieldPath ip = p.index(i);
        validate_container_common(c, volumes, ip, errs);
        // A sidecar (restartPolicy: Always) may have probes and lifecycle hooks.
        bool restart_always = false;
        if (const Json* rp = raw_restart_policy(raw_spec, "initContainers", i)) {
            std::string v = rp->is_string() ? rp->get<std::string>() : std::string();
            restart_always = v == "Always";
            if (!restart_always)
                errs.push_back(not_supported(ip.child("restartPolicy"), render_string(v), {"Always"}));
        }
        if (all_names.count(c.name))
            errs.push_back(duplicate(ip.child("name"), render_string(c.name)));
        else if (!c.name.empty())
            all_names.insert(c.name);
        // Init containers run one by one: their host ports are checked one
        // container at a time, and upstream reports them at index 0.
        check_host_port_conflicts({&c}, p, errs);
        if (restart_always) {
            if (c.lifecycle) validate_lifecycle(*c.lifecycle, grace, ip.child("lifecycle"), errs);
            validate_probe(c.liveness_probe, ProbeKind::Liveness, grace, ip.child("livenessProbe"), errs);
            validate_probe(c.readiness_probe, ProbeKind::Readiness, grace, ip.child("readinessProbe"), errs);
            validate_probe(c.startup_probe, ProbeKind::Startup, grace, ip.child("startupProbe"), errs);
        } else {
            const char* const kMsg = "may not be set for init containers without restartPolicy=Always";
            if (c.lifecycle) errs.push_back(forbidden(ip.child("lifecycle"), kMsg));
            if (c.liveness_probe) errs.push_back(forbidden(ip.child("livenessProbe"), kMsg));
            if (c.readiness_probe) errs.push_back(forbidden(ip.child("readinessProbe"), kMsg));
            if (c.startup_probe) errs.push_back(forbidden(ip.child("startupProbe"), kMsg));
        }
    }
}

}  // namespace daemonlet::validation
