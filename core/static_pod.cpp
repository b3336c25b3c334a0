#include "core/static_pod.h"

#include <algorithm>
#include <cctype>
#include <cstdint>

#include "core/node_affinity.h"
#include "core/template_hash.h"

namespace daemonlet {

std::string static_pod_name(const std::string& name, const std::string& node_name) {
    std::string node = node_name;
    for (auto& c : node) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return name + "-" + node;
}

Pod make_static_pod(Pod pod, const std::string& node_name, const std::string& path) {
    const std::string written = canonical_json(pod.object);
    const std::string salted = written + "host:" + node_name + "file:" + path;
    const std::string uid = hex64(fnv1a64(salted)) + hex64(fnv1a64("daemonlet-static-pod\n" + salted));
    pod.metadata.uid = uid;
    pod.metadata.name = static_pod_name(pod.metadata.name, node_name);
    if (pod.metadata.namespace_.empty()) pod.metadata.namespace_ = "default";
    pod.spec.node_name = node_name;
    pod.metadata.annotations["kubernetes.io/config.hash"] = uid;
    // AddOrUpdateTolerationInPod: static pods tolerate every NoExecute
    // taint, so that node problems never evict them.
    Toleration no_execute;
    no_execute.op = "Exists";
    no_execute.effect = "NoExecute";
    if (std::find(pod.spec.tolerations.begin(), pod.spec.tolerations.end(), no_execute) ==
        pod.spec.tolerations.end()) {
        pod.spec.tolerations.push_back(no_execute);
        if (pod.object.is_object()) {
            Json& tolerations = pod.object["spec"]["tolerations"];
            if (!tolerations.is_array()) tolerations = Json::array();
            tolerations.push_back({{"operator", "Exists"}, {"effect", "NoExecute"}});
        }
    }
    pod.metadata.annotations["kubernetes.io/config.source"] = "file";
    if (pod.object.is_object()) {
        pod.object["metadata"]["uid"] = uid;
        pod.object["metadata"]["name"] = pod.metadata.name;
        pod.object["metadata"]["namespace"] = pod.metadata.namespace_;
        pod.object["metadata"]["annotations"]["kubernetes.io/config.hash"] = uid;
        pod.object["metadata"]["annotations"]["kubernetes.io/config.source"] = "file";
        pod.object["spec"]["nodeName"] = node_name;
    }
    return pod;
}

namespace {

// schedutil.GetContainerPorts and HostPortInfo's sanitize: host ports only,
// an empty hostIP is 0.0.0.0, an empty protocol TCP.
struct HostPort {
    std::string ip, protocol;
    std::int32_t port;
};
std::vector<HostPort> host_ports(const PodSpec& spec) {
    std::vector<HostPort> out;
    for (const auto& c : spec.containers)
        for (const auto& p : c.ports)
            if (p.host_port > 0)
                out.push_back({p.host_ip.empty() ? "0.0.0.0" : p.host_ip,
                               p.protocol.empty() ? "TCP" : p.protocol, p.host_port});
    return out;
}

// HostPortInfo.CheckConflict.
bool conflicts(const HostPort& a, const HostPort& b) {
    if (a.protocol != b.protocol || a.port != b.port) return false;
    return a.ip == b.ip || a.ip == "0.0.0.0" || b.ip == "0.0.0.0";
}

PodRejection rejected_by(const std::string& predicate) {
    return {predicate, "Pod was rejected: Predicate " + predicate + " failed"};
}

}  // namespace

std::optional<PodRejection> admit_static_pod(const Pod& pod, const Node& node,
                                             const std::vector<const PodSpec*>& active) {
    if (!match_required_node_affinity(pod.spec, node).matches) return rejected_by("NodeAffinity");
    const std::vector<HostPort> wanted = host_ports(pod.spec);
    for (const PodSpec* other : active)
        for (const HostPort& used : host_ports(*other))
            for (const HostPort& want : wanted)
                if (conflicts(want, used)) return rejected_by("NodePorts");
    return std::nullopt;
}

std::vector<StaticReadmission> readmit_static_pods(std::vector<AdoptedStaticPod> pods, const Node& node,
                                                   const SysctlAllowlist& sysctls,
                                                   std::vector<const PodSpec*> active) {
    // PodsByCreationTime, the name breaking a tie. An insertion sort: a
    // board has a few static pods, and std::sort's instantiation would cost
    // the agent's binary a kilobyte.
    auto before = [](const AdoptedStaticPod& a, const AdoptedStaticPod& b) {
        if (a.created_at_ms != b.created_at_ms) return a.created_at_ms < b.created_at_ms;
        return a.pod->metadata.name < b.pod->metadata.name;
    };
    for (std::size_t i = 1; i < pods.size(); ++i)
        for (std::size_t j = i; j > 0 && before(pods[j], pods[j - 1]); --j) std::swap(pods[j], pods[j - 1]);
    std::vector<StaticReadmission> out;
    for (const AdoptedStaticPod& p : pods) {
        std::optional<PodRejection> now = admit_sysctls(sysctls, p.pod->spec);
        if (!now) now = admit_static_pod(*p.pod, node, active);
        if (!now) {
            active.push_back(&p.pod->spec);
            if (p.rejected) out.push_back({p.pod->metadata.uid, std::nullopt});
        } else if (!p.rejected || p.rejected->reason != now->reason || p.rejected->message != now->message) {
            out.push_back({p.pod->metadata.uid, std::move(now)});
        }
    }
    return out;
}

}  // namespace daemonlet
