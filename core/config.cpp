#include "core/config.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <type_traits>

#include "core/field_error.h"
#include "core/image_reference.h"
#include "core/manifest.h"
#include "core/metrics.h"
#include "core/names.h"
#include "core/node_ips.h"
#include "core/quantity.h"
#include "core/strings.h"
#include "core/sysctl.h"

namespace daemonlet {

std::string image_import_dir_of(const AgentConfig& c) {
    return c.image_import_dir.empty() ? c.state_dir + "/import" : c.image_import_dir;
}

std::string seccomp_profile_root_of(const AgentConfig& c) {
    return c.seccomp_profile_root.empty() ? c.state_dir + "/seccomp" : c.seccomp_profile_root;
}

Result<std::int64_t> parse_duration_ms(std::string_view s) {
    const std::string original(s);
    auto bad = [&] { return Error{ErrorCode::Invalid, "invalid duration " + render_string(original)}; };
    if (s.empty()) return bad();
    if (s == "0") return std::int64_t{0};
    bool negative = false;
    if (s[0] == '-' || s[0] == '+') {
        negative = s[0] == '-';
        s.remove_prefix(1);
    }
    double total_ms = 0;
    while (!s.empty()) {
        std::size_t i = 0;
        while (i < s.size() && ((s[i] >= '0' && s[i] <= '9') || s[i] == '.')) ++i;
        if (i == 0) return bad();
        double v = 0;
        auto [p, ec] = std::from_chars(s.data(), s.data() + i, v);
        if (ec != std::errc() || p != s.data() + i) return bad();
        s.remove_prefix(i);
        std::size_t u = 0;
        while (u < s.size() && !((s[u] >= '0' && s[u] <= '9') || s[u] == '.')) ++u;
        std::string_view unit = s.substr(0, u);
        s.remove_prefix(u);
        double scale = 0;
        if (unit == "ns")
            scale = 1e-6;
        else if (unit == "us" || unit == "\xC2\xB5s" || unit == "\xCE\xBCs")
            scale = 1e-3;
        else if (unit == "ms")
            scale = 1;
        else if (unit == "s")
            scale = 1e3;
        else if (unit == "m")
            scale = 60e3;
        else if (unit == "h")
            scale = 3600e3;
        else
            return Error{ErrorCode::Invalid, "invalid duration " + render_string(original) +
                                                 ": unknown unit " + render_string(std::string(unit)) +
                                                 " (use ms, s, m or h)"};
        total_ms += v * scale;
    }
    if (total_ms > 9e15) return bad();
    auto ms = static_cast<std::int64_t>(std::floor(total_ms));
    return negative ? -ms : ms;
}

namespace {

class ConfigReader {
  public:
    ConfigReader(const std::string& file, std::vector<std::string>& errors) : file_(file), errors_(errors) {}

    void error(const std::string& path, const std::string& reason) {
        errors_.push_back(file_ + ": " + path + ": " + reason);
    }

    // Reports every key of `obj` not in `known`.
    void unknown_keys(const Json& obj, const std::string& prefix, std::initializer_list<const char*> known) {
        for (auto it = obj.begin(); it != obj.end(); ++it) {
            bool ok = false;
            for (const char* k : known) ok = ok || it.key() == k;
            if (!ok) error(prefix + it.key(), "unknown key");
        }
    }

    bool string(const Json& v, const std::string& path, std::string& out) {
        if (!v.is_string()) {
            error(path, "expected a string, got " + std::string(v.type_name()));
            return false;
        }
        out = v.get<std::string>();
        return true;
    }

    void duration(const Json& v, const std::string& path, std::int64_t& out_ms) {
        std::string s;
        if (!string(v, path, s)) return;
        auto d = parse_duration_ms(s);
        if (!d.ok()) return error(path, d.error().message);
        if (d.value() <= 0) return error(path, "must be greater than zero");
        out_ms = d.value();
    }

  private:
    const std::string& file_;
    std::vector<std::string>& errors_;
};

void parse_taints(ConfigReader& r, const Json& v, const std::string& key, std::vector<Taint>& out);

void parse_api_server(ConfigReader& r, const Json& v, const std::string& base_dir, ApiServerConfig& a) {
    if (!v.is_object()) return r.error("apiServer", "expected {kubeconfig: PATH} or {inCluster: true}");
    a.enabled = true;
    r.unknown_keys(v, "apiServer.",
                   {"kubeconfig", "inCluster", "serviceAccountDir", "context", "namespaces", "labelSelector",
                    "nodeFromCluster", "leaseNamespace", "requestTimeout", "registerNode",
                    "registerWithTaints", "podStatus", "rollouts"});
    auto boolean = [&](const char* key, bool& out) {
        if (!v.contains(key)) return;
        if (!v[key].is_boolean()) return r.error(std::string("apiServer.") + key, "expected true or false");
        out = v[key].get<bool>();
    };
    auto path = [&](const char* key, std::string& out) {
        if (v.contains(key) && r.string(v[key], std::string("apiServer.") + key, out))
            out = resolve_path(base_dir, out);
    };
    path("kubeconfig", a.kubeconfig);
    path("serviceAccountDir", a.service_account_dir);
    boolean("inCluster", a.in_cluster);
    boolean("nodeFromCluster", a.node_from_cluster);
    boolean("registerNode", a.register_node);
    // podStatus: on by default with registerNode. A Pod bound to a Node that
    // does not exist is deleted by the pod garbage collector
    // (pkg/controller/podgc gcOrphaned): refused without a Node.
    a.pod_status = a.register_node;
    boolean("podStatus", a.pod_status);
    if (a.pod_status && !a.register_node && !a.node_from_cluster)
        r.error("apiServer.podStatus",
                "needs the board's Node (registerNode: true, or nodeFromCluster: true with a Node an admin "
                "created): the pod garbage collector deletes Pods bound to a Node that does not exist");
    if (std::string rollouts;
        v.contains("rollouts") && r.string(v["rollouts"], "apiServer.rollouts", rollouts)) {
        if (rollouts == "cluster" || rollouts == "board")
            a.cluster_paces_rollouts = rollouts == "cluster";
        else
            r.error("apiServer.rollouts", "expected cluster or board (got \"" + rollouts + "\")");
    }
    if (v.contains("registerWithTaints"))
        parse_taints(r, v["registerWithTaints"], "apiServer.registerWithTaints", a.register_with_taints);
    if (v.contains("context")) r.string(v["context"], "apiServer.context", a.context);
    if (v.contains("labelSelector"))
        r.string(v["labelSelector"], "apiServer.labelSelector", a.label_selector);
    if (v.contains("requestTimeout"))
        r.duration(v["requestTimeout"], "apiServer.requestTimeout", a.request_timeout_ms);
    if (a.kubeconfig.empty() == !a.in_cluster)
        r.error("apiServer", a.in_cluster ? "kubeconfig and inCluster: true are exclusive: choose one"
                                          : "kubeconfig: required (or inCluster: true)");
    if (v.contains("leaseNamespace") &&
        r.string(v["leaseNamespace"], "apiServer.leaseNamespace", a.lease_namespace))
        for (const auto& m : names::is_dns1123_label(a.lease_namespace))
            r.error("apiServer.leaseNamespace", m);
    if (v.contains("namespaces")) {
        const Json& ns = v["namespaces"];
        if (!ns.is_array()) return r.error("apiServer.namespaces", "expected a list of namespaces");
        for (std::size_t i = 0; i < ns.size(); ++i) {
            const std::string p = "apiServer.namespaces[" + std::to_string(i) + "]";
            std::string n;
            if (!r.string(ns[i], p, n)) continue;
            for (const auto& m : names::is_dns1123_label(n)) r.error(p, m);
            a.namespaces.push_back(n);
        }
    }
}

// runtime.insecureRegistries: each a registry host[:port] as an image
// reference's domain is written (distribution/reference's domain grammar).
// runtime.imageGC: kubelet's imageGCHighThresholdPercent,
// imageGCLowThresholdPercent and imageMinimumGCAge (in seconds here), with
// NewImageGCManager's checks (validate_image_gc_policy).
void parse_image_gc(ConfigReader& r, const Json& v, ImageGcPolicy& out) {
    if (!v.is_object())
        return r.error(
            "runtime.imageGC",
            "expected {highThresholdPercent: 85, lowThresholdPercent: 80, minimumAgeSeconds: 120}");
    r.unknown_keys(v, "runtime.imageGC.",
                   {"highThresholdPercent", "lowThresholdPercent", "minimumAgeSeconds"});
    ImageGcPolicy p = out;
    bool typed = true;
    auto integer = [&](const char* key, auto& target) {
        if (!v.contains(key)) return;
        const Json& x = v[key];
        if (!x.is_number_integer()) {
            r.error(std::string("runtime.imageGC.") + key, "expected an integer (got " + x.dump() + ")");
            typed = false;
            return;
        }
        target = static_cast<std::remove_reference_t<decltype(target)>>(
            std::clamp<std::int64_t>(x.get<std::int64_t>(), -(std::int64_t{1} << 30), std::int64_t{1} << 30));
    };
    integer("highThresholdPercent", p.high_threshold_percent);
    integer("lowThresholdPercent", p.low_threshold_percent);
    integer("minimumAgeSeconds", p.minimum_age_s);
    if (!typed) return;
    if (auto s = validate_image_gc_policy(p); !s) {
        const std::string& m = s.error().message;
        std::size_t colon = m.find(": ");
        return r.error(m.substr(0, colon), m.substr(colon + 2));
    }
    out = p;
}

void parse_insecure_registries(ConfigReader& r, const Json& v, AgentConfig& c) {
    if (!v.is_array()) {
        r.error("runtime.insecureRegistries", "expected a list of registry host[:port]");
        return;
    }
    for (std::size_t i = 0; i < v.size(); ++i) {
        const std::string p = "runtime.insecureRegistries[" + std::to_string(i) + "]";
        std::string host;
        if (!r.string(v[i], p, host)) continue;
        auto ref = normalize_image_reference(host + "/x");
        if (!ref.ok() || ref.value().domain != host) {
            r.error(p, render_string(host) + ": not a registry host[:port]");
            continue;
        }
        c.insecure_registries.push_back(host);
    }
}

// nodeTaints and apiServer.registerWithTaints: a list of {key, value, effect}
// as a Node's spec.taints is validated (ValidateNodeSpec's taints rules).
void parse_taints(ConfigReader& r, const Json& v, const std::string& key, std::vector<Taint>& out) {
    if (!v.is_array()) return r.error(key, "expected a list of {key, value, effect}");
    for (std::size_t i = 0; i < v.size(); ++i) {
        const std::string p = key + "[" + std::to_string(i) + "]";
        const Json& t = v[i];
        if (!t.is_object()) {
            r.error(p, "expected {key, value, effect}");
            continue;
        }
        r.unknown_keys(t, p + ".", {"key", "value", "effect"});
        Taint taint;
        if (t.contains("key")) r.string(t["key"], p + ".key", taint.key);
        if (t.contains("value")) r.string(t["value"], p + ".value", taint.value);
        if (t.contains("effect")) r.string(t["effect"], p + ".effect", taint.effect);
        for (const auto& m : names::is_qualified_name(taint.key)) r.error(p + ".key", m);
        for (const auto& m : names::is_valid_label_value(taint.value)) r.error(p + ".value", m);
        if (taint.effect != "NoSchedule" && taint.effect != "PreferNoSchedule" && taint.effect != "NoExecute")
            r.error(p + ".effect",
                    "Unsupported value: " + render_string(taint.effect) +
                        ": supported values: \"NoSchedule\", \"PreferNoSchedule\", \"NoExecute\"");
        for (const auto& other : out)
            if (other.key == taint.key && other.effect == taint.effect)
                r.error(p, "taints must be unique by key and effect pair");
        out.push_back(std::move(taint));
    }
}

}  // namespace

ConfigResult parse_agent_config(std::string_view text, const std::string& file, const std::string& base_dir) {
    ConfigResult out;
    ConfigReader r(file, out.errors);
    ManifestLimits limits;
    limits.max_bytes = 1024 * 1024;
    auto docs = parse_documents(text, file, limits);
    if (!docs.ok()) {
        out.errors.push_back(docs.error().message);
        return out;
    }
    if (docs.value().size() > 1) {
        out.errors.push_back(file + ": expected one YAML document, found " +
                             std::to_string(docs.value().size()));
        return out;
    }
    if (docs.value().empty()) return out;  // all defaults
    const Json& doc = docs.value().front().value;
    if (!doc.is_object()) {
        out.errors.push_back(file + ": expected a mapping of configuration keys");
        return out;
    }
    AgentConfig& c = out.config;
    r.unknown_keys(doc, "",
                   {"nodeName", "nodeLabels", "nodeTaints", "nodeUnschedulable", "nodeIP", "manifestDir",
                    "stateDir", "runtime", "fileCheckFrequency", "crashLoopBackoff", "containerLogMaxSize",
                    "containerLogMaxFiles", "apiServer", "seccompProfileRoot", "clusterDNS", "clusterDomain",
                    "metricsBindAddress", "allowedUnsafeSysctls"});
    for (auto it = doc.begin(); it != doc.end(); ++it) {
        const std::string& k = it.key();
        const Json& v = it.value();
        if (k == "nodeName") {
            if (r.string(v, k, c.node_name))
                for (const auto& m : names::is_dns1123_subdomain(c.node_name)) r.error(k, m);
        } else if (k == "nodeLabels") {
            if (!v.is_object()) {
                r.error(k, "expected a map of label keys to values");
                continue;
            }
            for (auto l = v.begin(); l != v.end(); ++l) {
                const std::string p = k + "[" + l.key() + "]";
                std::string value;
                if (!r.string(l.value(), p, value)) continue;
                for (const auto& m : names::is_qualified_name(l.key())) r.error(p, "key: " + m);
                for (const auto& m : names::is_valid_label_value(value))
                    r.error(p, "value " + render_string(value) + ": " + m);
                c.node_labels[l.key()] = value;
            }
        } else if (k == "metricsBindAddress") {
            if (!r.string(v, k, c.metrics_bind_address) || c.metrics_bind_address.empty()) continue;
            if (auto a = parse_bind_address(c.metrics_bind_address); !a.ok()) r.error(k, a.error().message);
        } else if (k == "nodeIP") {
            std::string value;
            if (!r.string(v, k, value)) continue;
            auto ips = parse_node_ip(value);
            if (!ips.ok())
                r.error(k, ips.error().message);
            else
                c.node_ips = std::move(ips).value();
        } else if (k == "nodeTaints") {
            parse_taints(r, v, k, c.node_taints);
        } else if (k == "nodeUnschedulable") {
            if (!v.is_boolean())
                r.error(k, "expected true or false");
            else
                c.node_unschedulable = v.get<bool>();
        } else if (k == "clusterDNS") {
            // kubelet's clusterDNS: the cluster's DNS servers' IPs, for
            // ClusterFirst pods (core/pod_dns.h).
            if (!v.is_array()) {
                r.error(k, "expected a list of IP addresses");
                continue;
            }
            for (std::size_t i = 0; i < v.size(); ++i) {
                std::string ip;
                if (!r.string(v[i], k + "[" + std::to_string(i) + "]", ip)) continue;
                if (!parse_node_ip(ip).ok()) {
                    r.error(k + "[" + std::to_string(i) + "]", render_string(ip) + " is not an IP address");
                    continue;
                }
                c.cluster_dns.push_back(ip);
            }
        } else if (k == "allowedUnsafeSysctls") {
            // kubelet's allowedUnsafeSysctls: NewAllowlist's checks, which
            // keep a kubelet from starting.
            if (!v.is_array()) {
                r.error(k, "expected a list of sysctl names or patterns ending in '*'");
                continue;
            }
            for (std::size_t i = 0; i < v.size(); ++i) {
                const std::string p = k + "[" + std::to_string(i) + "]";
                std::string name;
                if (!r.string(v[i], p, name)) continue;
                if (auto w = new_sysctl_allowlist({name}); !w.ok()) {
                    r.error(p, w.error().message);
                    continue;
                }
                c.allowed_unsafe_sysctls.push_back(name);
            }
        } else if (k == "clusterDomain") {
            if (r.string(v, k, c.cluster_domain))
                for (const auto& m : names::is_dns1123_subdomain(c.cluster_domain)) r.error(k, m);
        } else if (k == "manifestDir" || k == "stateDir" || k == "seccompProfileRoot") {
            std::string p;
            if (!r.string(v, k, p)) continue;
            if (p.empty()) {
                r.error(k, "must not be empty");
                continue;
            }
            (k == "manifestDir" ? c.manifest_dir
             : k == "stateDir"  ? c.state_dir
                                : c.seccomp_profile_root) = resolve_path(base_dir, p);
        } else if (k == "runtime") {
            if (!v.is_object()) {
                r.error(k,
                        "expected {type: exec}, {type: runc, imageImportDir: DIR, runcPath: PATH, rootfs: "
                        "auto|overlay|copy} or {type: cri, endpoint: unix:///PATH, imageImportDir: DIR, "
                        "snapshotter: NAME}");
                continue;
            }
            r.unknown_keys(
                v, "runtime.",
                {"type", "imageImportDir", "runcPath", "rootfs", "registryAuthFile", "registryCertsDir",
                 "insecureRegistries", "endpoint", "snapshotter", "imageGC", "maxParallelOperations"});
            if (v.contains("type") && r.string(v["type"], "runtime.type", c.runtime_type) &&
                c.runtime_type != "exec" && c.runtime_type != "runc" && c.runtime_type != "cri")
                r.error("runtime.type", "Unsupported value: " + render_string(c.runtime_type) +
                                            ": supported values: \"cri\", \"exec\", \"runc\"");
            if (v.contains("endpoint") && r.string(v["endpoint"], "runtime.endpoint", c.cri_endpoint) &&
                (c.cri_endpoint.rfind("unix:///", 0) != 0 || c.cri_endpoint.size() <= 8))
                r.error("runtime.endpoint", render_string(c.cri_endpoint) +
                                                ": expected unix:///<absolute path of the CRI socket>, like "
                                                "unix:///run/containerd/containerd.sock");
            for (auto [key, target] :
                 {std::pair{"imageImportDir", &c.image_import_dir}, std::pair{"runcPath", &c.runc_path},
                  std::pair{"registryAuthFile", &c.registry_auth_file},
                  std::pair{"registryCertsDir", &c.registry_certs_dir},
                  std::pair{"snapshotter", &c.cri_snapshotter}}) {
                const std::string path = std::string("runtime.") + key;
                if (!v.contains(key) || !r.string(v[key], path, *target)) continue;
                if (target->empty()) r.error(path, "must not be empty");
            }
            if (!c.image_import_dir.empty()) c.image_import_dir = resolve_path(base_dir, c.image_import_dir);
            if (v.contains("rootfs") && r.string(v["rootfs"], "runtime.rootfs", c.runtime_rootfs) &&
                c.runtime_rootfs != "auto" && c.runtime_rootfs != "overlay" && c.runtime_rootfs != "copy")
                r.error("runtime.rootfs", "Unsupported value: " + render_string(c.runtime_rootfs) +
                                              ": supported values: \"auto\", \"overlay\", \"copy\"");
            if (!c.registry_auth_file.empty())
                c.registry_auth_file = resolve_path(base_dir, c.registry_auth_file);
            if (!c.registry_certs_dir.empty())
                c.registry_certs_dir = resolve_path(base_dir, c.registry_certs_dir);
            if (v.contains("insecureRegistries")) parse_insecure_registries(r, v["insecureRegistries"], c);
            if (v.contains("imageGC")) parse_image_gc(r, v["imageGC"], c.image_gc);
            if (v.contains("maxParallelOperations")) {
                const Json& m = v["maxParallelOperations"];
                if (!m.is_number_integer() || m.get<std::int64_t>() < 1 || m.get<std::int64_t>() > 64)
                    r.error("runtime.maxParallelOperations",
                            "expected an integer from 1 to 64 (got " + m.dump() + ")");
                else
                    c.max_parallel_operations = m.get<std::uint32_t>();
            }
        } else if (k == "fileCheckFrequency") {
            r.duration(v, k, c.file_check_frequency_ms);
        } else if (k == "crashLoopBackoff") {
            if (!v.is_object()) {
                r.error(k, "expected {initial: DURATION, max: DURATION}");
                continue;
            }
            r.unknown_keys(v, "crashLoopBackoff.", {"initial", "max"});
            if (v.contains("initial"))
                r.duration(v["initial"], "crashLoopBackoff.initial", c.backoff_initial_ms);
            if (v.contains("max")) r.duration(v["max"], "crashLoopBackoff.max", c.backoff_max_ms);
            if (c.backoff_max_ms < c.backoff_initial_ms)
                r.error("crashLoopBackoff.max", "must not be less than crashLoopBackoff.initial");
        } else if (k == "containerLogMaxSize") {
            std::string s = v.is_string() ? v.get<std::string>() : v.is_number_integer() ? v.dump() : "";
            auto q = parse_quantity(s);
            if (!q.ok() || q.value().value() < 4096)
                r.error(k, "expected a size of at least 4Ki, like 10Mi (got " + v.dump() + ")");
            else
                c.container_log_max_size = static_cast<std::uint64_t>(q.value().value());
        } else if (k == "apiServer") {
            parse_api_server(r, v, base_dir, c.api_server);
        } else if (k == "containerLogMaxFiles") {
            if (!v.is_number_integer() || v.get<std::int64_t>() < 2 || v.get<std::int64_t>() > 100)
                r.error(k, "expected an integer from 2 to 100 (kubelet requires at least 2)");
            else
                c.container_log_max_files = v.get<std::uint32_t>();
        }
    }
    return out;
}

}  // namespace daemonlet
