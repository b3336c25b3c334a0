// makeEnvironmentVariables and the downward API values, after
// pkg/kubelet/kubelet_pods.go, pkg/fieldpath/fieldpath.go and
// pkg/api/v1/resource/helpers.go (Kubernetes 1.28 to 1.30).
#include "core/pod_env.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <map>
#include <set>

#include "core/expand.h"
#include "core/names.h"
#include "core/strings.h"

namespace daemonlet {
namespace {

Error not_found(std::string message) { return Error{ErrorCode::NotFound, std::move(message)}; }
Error invalid(std::string message) { return Error{ErrorCode::Invalid, std::move(message)}; }

bool is_ipv6(const std::string& ip) { return ip.find(':') != std::string::npos; }

// sortPodIPs: the pod's IPs in the node's IP family preference (the family
// of the first host IP first), otherwise in their order.
std::vector<std::string> sort_pod_ips(const PodFacts& pod) {
    std::vector<std::string> ips = pod.pod_ips;
    if (pod.host_ips.empty()) return ips;
    bool v6_first = is_ipv6(pod.host_ips.front());
    std::stable_partition(ips.begin(), ips.end(),
                          [&](const std::string& ip) { return is_ipv6(ip) == v6_first; });
    return ips;
}

// The container the selector names: containerName in the pod's containers
// and init containers (findContainerInPod), or `c` itself.
Result<const Container*> selected_container(const PodFacts& pod, const ResourceFieldSelector& fs,
                                            const Container& c) {
    if (fs.container_name.empty() || fs.container_name == c.name) return &c;
    if (pod.spec) {
        for (const auto& x : pod.spec->containers)
            if (x.name == fs.container_name) return &x;
        for (const auto& x : pod.spec->init_containers)
            if (x.name == fs.container_name) return &x;
    }
    return not_found("container " + fs.container_name + " not found");
}

std::int64_t ceil_div(std::int64_t a, std::int64_t b) {
    if (b == 0) return 0;
    std::int64_t q = a / b;
    if ((a % b != 0) && ((a > 0) == (b > 0))) ++q;
    return q;
}

// One key selector's value: the object's data (a ConfigMap's `data` only,
// as upstream: binaryData never reaches env), nullopt when optional and
// absent.
template <class Obj>
Result<std::optional<std::string>> key_value(const Obj* obj, const KeySelector& ks, const PodFacts& pod,
                                             const char* lower, const char* kind) {
    bool optional = ks.optional.value_or(false);
    if (!obj) {
        if (optional) return std::optional<std::string>();
        return not_found(std::string(lower) + " \"" + ks.name + "\" not found");
    }
    auto it = obj->data.find(ks.key);
    if (it == obj->data.end()) {
        if (optional) return std::optional<std::string>();
        return not_found("couldn't find key " + ks.key + " in " + kind + " " + pod.namespace_ + "/" +
                         ks.name);
    }
    return std::optional<std::string>(it->second);
}

// The ordered map the kubelet's tmpEnv is, keeping first-definition order.
class EnvMap {
  public:
    void set(const std::string& k, std::string v) {
        auto it = index_.find(k);
        if (it != index_.end()) {
            vars_[it->second].second = std::move(v);
            return;
        }
        index_[k] = vars_.size();
        vars_.emplace_back(k, std::move(v));
    }
    std::optional<std::string> get(const std::string& k) const {
        auto it = index_.find(k);
        if (it == index_.end()) return std::nullopt;
        return vars_[it->second].second;
    }
    std::vector<std::pair<std::string, std::string>> take() { return std::move(vars_); }

  private:
    std::map<std::string, std::size_t> index_;
    std::vector<std::pair<std::string, std::string>> vars_;
};

// One envFrom source's keys into env, invalid names skipped and reported.
template <class Obj>
void add_env_from(const Obj& obj, const EnvFromSource& from, const EnvFromRef& ref, const PodFacts& pod,
                  const char* what, EnvMap& env, ResolvedEnv& out) {
    std::vector<std::string> invalid_keys;
    for (const auto& [k, v] : obj.data) {
        std::string name = from.prefix + k;
        if (!names::is_env_var_name(name).empty()) {
            invalid_keys.push_back(name);
            continue;
        }
        env.set(name, v);
    }
    if (invalid_keys.empty()) return;
    std::sort(invalid_keys.begin(), invalid_keys.end());
    out.warnings.push_back("Keys [" + join(invalid_keys, ", ") + "] from the EnvFrom " + what + " " +
                           pod.namespace_ + "/" + ref.name +
                           " were skipped since they are considered invalid environment variable names.");
}

}  // namespace

const ConfigMap* find_config_map(const PodFacts& pod, const std::string& name) {
    const ConfigMap* cm = pod.objects ? pod.objects->config_map(pod.namespace_, name) : nullptr;
    if (!cm && pod.cluster_objects) cm = pod.cluster_objects->config_map(pod.namespace_, name);
    return cm;
}
const Secret* find_secret(const PodFacts& pod, const std::string& name) {
    const Secret* s = pod.objects ? pod.objects->secret(pod.namespace_, name) : nullptr;
    if (!s && pod.cluster_objects) s = pod.cluster_objects->secret(pod.namespace_, name);
    return s;
}

bool split_subscripted_path(const std::string& fp, std::string& path, std::string& subscript) {
    if (fp.size() < 2 || fp.compare(fp.size() - 2, 2, "']") != 0) return false;
    std::string s = fp.substr(0, fp.size() - 2);
    std::size_t open = s.find("['");
    if (open == std::string::npos || open == 0) return false;
    path = s.substr(0, open);
    subscript = s.substr(open + 2);
    return true;
}

std::string format_map(const Labels& m) {
    std::string out;
    for (const auto& [k, v] : m) {
        if (!out.empty()) out += "\n";
        out += k + "=" + go_quote(v);
    }
    return out;
}

Result<std::string> extract_field_path(const PodFacts& pod, const std::string& path) {
    std::string base, subscript;
    if (split_subscripted_path(path, base, subscript)) {
        if (base == "metadata.annotations" || base == "metadata.labels") {
            std::string key = base == "metadata.annotations" ? to_lower(subscript) : subscript;
            auto problems = names::is_qualified_name(key);
            if (!problems.empty())
                return invalid("invalid key subscript in " + path + ": " + join(problems, ";"));
            const Labels& m = base == "metadata.annotations" ? pod.annotations : pod.labels;
            auto it = m.find(subscript);
            return it == m.end() ? std::string() : it->second;
        }
        return invalid("fieldPath \"" + path + "\" does not support subscript");
    }
    if (path == "metadata.annotations") return format_map(pod.annotations);
    if (path == "metadata.labels") return format_map(pod.labels);
    if (path == "metadata.name") return pod.name;
    if (path == "metadata.namespace") return pod.namespace_;
    if (path == "metadata.uid") return pod.uid;
    return invalid("unsupported fieldPath: " + path);
}

Result<std::string> pod_field_value(const PodFacts& pod, const ObjectFieldSelector& fs) {
    if (fs.api_version != "v1" && !fs.api_version.empty())
        return invalid("unsupported pod version: " + fs.api_version);
    // ConvertDownwardAPIFieldLabel's one rename.
    std::string path = fs.field_path == "spec.host" ? "spec.nodeName" : fs.field_path;
    std::vector<std::string> pod_ips = sort_pod_ips(pod);
    if (path == "spec.nodeName") return pod.node_name;
    if (path == "spec.serviceAccountName") return pod.service_account_name;
    if (path == "status.hostIP" || path == "status.hostIPs") {
        // getHostIPsAnyWay over nodeutil.GetNodeHostIPs.
        if (pod.host_ips.empty()) return not_found("host IP unknown; known addresses: []");
        return path == "status.hostIP" ? pod.host_ips.front() : join(pod.host_ips, ",");
    }
    if (path == "status.podIP") return pod_ips.empty() ? std::string() : pod_ips.front();
    if (path == "status.podIPs") return join(pod_ips, ",");
    return extract_field_path(pod, path);
}

Result<std::string> container_resource_value(const PodFacts& pod, const ResourceFieldSelector& fs,
                                             const Container& c) {
    auto target = selected_container(pod, fs, c);
    if (!target) return target.error();
    const ResourceRequirements& res = target.value()->resources;
    std::int64_t divisor_milli = fs.divisor && fs.divisor->milli != 0 ? fs.divisor->milli : 1000;
    std::string kind, name;
    if (fs.resource.rfind("limits.", 0) == 0) {
        kind = "limits";
        name = fs.resource.substr(7);
    } else if (fs.resource.rfind("requests.", 0) == 0) {
        kind = "requests";
        name = fs.resource.substr(9);
    }
    bool known =
        name == "cpu" || name == "memory" || name == "ephemeral-storage" || name.rfind("hugepages-", 0) == 0;
    if (kind.empty() || !known) return invalid("unsupported container resource : " + fs.resource);
    const auto& list = kind == "limits" ? res.limits : res.requests;
    Quantity q;
    auto it = list.find(name);
    if (it != list.end()) q = it->second;
    // MergeContainerResourceLimits: a missing or zero cpu, memory or
    // ephemeral-storage limit is the node's allocatable (hugepages never are).
    if (kind == "limits" && q.milli == 0) {
        const std::optional<Quantity>* alloc = name == "cpu"      ? &pod.allocatable_cpu
                                               : name == "memory" ? &pod.allocatable_memory
                                               : name == "ephemeral-storage"
                                                   ? &pod.allocatable_ephemeral_storage
                                                   : nullptr;
        if (alloc && *alloc) q = **alloc;
    }
    if (name == "cpu") return std::to_string(ceil_div(q.milli, divisor_milli));  // convertResourceCPUToString
    // convertResourceMemoryToString and its ephemeral-storage / hugepages twins: whole units.
    Quantity d;
    d.milli = divisor_milli;
    return std::to_string(ceil_div(q.value(), d.value()));
}

Result<ResolvedEnv> make_environment_variables(const PodFacts& pod, const Container& c) {
    ResolvedEnv out;
    EnvMap env;
    for (const auto& from : c.env_from) {
        if (from.config_map_ref) {
            const EnvFromRef& ref = *from.config_map_ref;
            const ConfigMap* cm = find_config_map(pod, ref.name);
            if (!cm) {
                if (ref.optional.value_or(false)) continue;
                return not_found("configmap \"" + ref.name + "\" not found");
            }
            add_env_from(*cm, from, ref, pod, "configMap", env, out);
        } else if (from.secret_ref) {
            const EnvFromRef& ref = *from.secret_ref;
            const Secret* s = find_secret(pod, ref.name);
            if (!s) {
                if (ref.optional.value_or(false)) continue;
                return not_found("secret \"" + ref.name + "\" not found");
            }
            add_env_from(*s, from, ref, pod, "secret", env, out);
        }
    }
    // expansion.MappingFuncFor(tmpEnv, serviceEnv): the container's own
    // first, then the service env.
    auto lookup = [&](const std::string& n) -> std::optional<std::string> {
        if (auto v = env.get(n)) return v;
        for (const auto& [k, v] : pod.service_env)
            if (k == n) return v;
        return std::nullopt;
    };
    for (const auto& e : c.env) {
        std::string value = e.value;
        if (!value.empty()) {
            value = expand_vars(value, lookup);
        } else if (e.value_from) {
            const EnvVarSource& src = *e.value_from;
            if (src.field_ref) {
                auto v = pod_field_value(pod, *src.field_ref);
                if (!v) return v.error();
                value = v.value();
            } else if (src.resource_field_ref) {
                auto v = container_resource_value(pod, *src.resource_field_ref, c);
                if (!v) return v.error();
                value = v.value();
            } else if (src.config_map_key) {
                auto v = key_value(find_config_map(pod, src.config_map_key->name), *src.config_map_key, pod,
                                   "configmap", "ConfigMap");
                if (!v) return v.error();
                if (!v.value()) continue;
                value = *v.value();
            } else if (src.secret_key) {
                auto v = key_value(find_secret(pod, src.secret_key->name), *src.secret_key, pod, "secret",
                                   "Secret");
                if (!v) return v.error();
                if (!v.value()) continue;
                value = *v.value();
            }
        }
        env.set(e.name, std::move(value));
    }
    // "Append service env vars": those the container does not define.
    for (const auto& [k, v] : pod.service_env)
        if (!env.get(k)) env.set(k, v);
    out.vars = env.take();
    return out;
}

}  // namespace daemonlet
