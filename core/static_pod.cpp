#include "core/static_pod.h"

#include <cctype>
#include <cstdio>

#include "core/node_affinity.h"
#include "core/template_hash.h"

namespace daemonlet {

namespace {

std::string hex64(std::uint64_t v) {
    char buf[17];
    std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
    return buf;
}

}  // namespace

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

std::optional<PodRejection> admit_static_pod(const Pod& pod, const Node& node) {
    if (!match_required_node_affinity(pod.spec, node).matches)
        return PodRejection{"NodeAffinity", "Pod was rejected: Predicate NodeAffinity failed"};
    return std::nullopt;
}

}  // namespace daemonlet
