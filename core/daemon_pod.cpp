#include "core/daemon_pod.h"

#include <algorithm>

#include "core/decode.h"
#include "core/defaults.h"
#include "core/json_diff.h"
#include "core/taints.h"
#include "core/template_hash.h"

namespace daemonlet {

namespace {

// metav1.IsControlledBy: a controller ownerReference with this uid.
bool controlled_by(const Json& obj, const std::string& uid) {
    const Json& refs = json_member(json_member(obj, "metadata"), "ownerReferences");
    if (!refs.is_array() || uid.empty()) return false;
    for (const Json& r : refs)
        if (json_text(r, "uid") == uid && json_member(r, "controller") == Json(true)) return true;
    return false;
}

// v1.Toleration as encoding/json writes it (omitempty).
Json toleration_json(const Toleration& t) {
    Json o = Json::object();
    if (!t.key.empty()) o["key"] = t.key;
    if (!t.op.empty()) o["operator"] = t.op;
    if (!t.value.empty()) o["value"] = t.value;
    if (!t.effect.empty()) o["effect"] = t.effect;
    if (t.toleration_seconds) o["tolerationSeconds"] = *t.toleration_seconds;
    return o;
}

// ReplaceDaemonSetPodNodeNameNodeAffinity: the required node affinity
// becomes one term matching the node's metadata.name; preferred terms and
// pod (anti-)affinity stay.
void replace_node_name_affinity(Json& spec, const std::string& node_name) {
    const Json terms = Json::array(
        {{{"matchFields",
           Json::array(
               {{{"key", "metadata.name"}, {"operator", "In"}, {"values", Json::array({node_name})}}})}}});
    const Json selector = {{"nodeSelectorTerms", terms}};
    constexpr const char* kRequired = "requiredDuringSchedulingIgnoredDuringExecution";
    Json& affinity = spec["affinity"];
    if (!affinity.is_object()) {
        affinity = {{"nodeAffinity", {{kRequired, selector}}}};
    } else if (!affinity.contains("nodeAffinity") || !affinity["nodeAffinity"].is_object()) {
        affinity["nodeAffinity"] = {{kRequired, selector}};
    } else if (!affinity["nodeAffinity"].contains(kRequired) ||
               !affinity["nodeAffinity"][kRequired].is_object()) {
        affinity["nodeAffinity"][kRequired] = selector;
    } else {
        affinity["nodeAffinity"][kRequired]["nodeSelectorTerms"] = terms;
    }
}

}  // namespace

std::string label_selector_string(const LabelSelector& selector) {
    std::vector<std::pair<std::string, std::string>> reqs;  // key, text
    for (const auto& [k, v] : selector.match_labels) reqs.emplace_back(k, k + "=" + v);
    for (const auto& e : selector.match_expressions) {
        std::vector<std::string> values = e.values;
        std::sort(values.begin(), values.end());
        std::string list;
        for (const auto& v : values) list += (list.empty() ? "" : ",") + v;
        if (e.op == "In")
            reqs.emplace_back(e.key, e.key + " in (" + list + ")");
        else if (e.op == "NotIn")
            reqs.emplace_back(e.key, e.key + " notin (" + list + ")");
        else if (e.op == "Exists")
            reqs.emplace_back(e.key, e.key);
        else if (e.op == "DoesNotExist")
            reqs.emplace_back(e.key, "!" + e.key);
    }
    std::stable_sort(reqs.begin(), reqs.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    std::string out;
    for (const auto& r : reqs) out += (out.empty() ? "" : ",") + r.second;
    return out;
}

std::vector<ClusterRevision> cluster_revisions(const DaemonSet& ds, const Json& list) {
    std::vector<ClusterRevision> out;
    const Json& items = json_member(list, "items");
    if (!items.is_array()) return out;
    for (const Json& item : items) {
        if (!controlled_by(item, ds.metadata.uid)) continue;
        const Json& meta = json_member(item, "metadata");
        ClusterRevision rev;
        rev.name = json_text(meta, "name");
        rev.hash = json_text(json_member(meta, "labels"), kControllerRevisionHashLabel);
        const Json& number = json_member(item, "revision");
        if (number.is_number_integer()) rev.revision = number.get<std::int64_t>();
        Json tmpl = json_member(json_member(json_member(item, "data"), "spec"), "template");
        if (rev.hash.empty() || !tmpl.is_object()) continue;
        tmpl.erase("$patch");
        // The DaemonSet with this template, defaulted and decoded as the
        // board's own: the same defaults, the same hash, the typed spec.
        Json obj = ds.object;
        obj["spec"]["template"] = std::move(tmpl);
        default_daemonset(obj);
        DaemonSet typed;
        if (!decode_daemonset(obj, typed).empty()) continue;
        rev.pod_template = obj["spec"]["template"];
        rev.template_hash = template_hash(rev.pod_template, ds.status.collision_count);
        PodSpec spec = typed.spec.template_.spec;
        add_daemon_tolerations(spec);
        rev.tolerations = std::move(spec.tolerations);
        out.push_back(std::move(rev));
    }
    return out;
}

const ClusterRevision* revision_for(const std::vector<ClusterRevision>& revisions,
                                    const std::string& template_hash) {
    const ClusterRevision* best = nullptr;
    for (const auto& r : revisions)
        if (r.template_hash == template_hash && (!best || r.revision > best->revision)) best = &r;
    return best;
}

Json daemon_pod_object(const DaemonSet& ds, const ClusterRevision& rev, const std::string& node_name) {
    const Json& tmeta = json_member(rev.pod_template, "metadata");
    Json labels = json_member(tmeta, "labels").is_object() ? json_member(tmeta, "labels") : Json::object();
    const bool current = template_hash(json_member(json_member(ds.object, "spec"), "template"),
                                       ds.status.collision_count) == rev.template_hash;
    if (auto g = ds.metadata.annotations.find(kTemplateGenerationAnnotation);
        current && g != ds.metadata.annotations.end())
        labels[kPodTemplateGenerationLabel] = g->second;
    labels[kControllerRevisionHashLabel] = rev.hash;

    Json meta = {{"generateName", ds.metadata.name + "-"},
                 {"namespace", ds.metadata.namespace_},
                 {"labels", std::move(labels)}};
    for (const char* k : {"annotations", "finalizers"})
        if (!json_member(tmeta, k).is_null()) meta[k] = json_member(tmeta, k);
    meta["ownerReferences"] = Json::array({{{"apiVersion", "apps/v1"},
                                            {"kind", "DaemonSet"},
                                            {"name", ds.metadata.name},
                                            {"uid", ds.metadata.uid},
                                            {"controller", true},
                                            {"blockOwnerDeletion", true}}});
    Json spec = json_member(rev.pod_template, "spec").is_object() ? json_member(rev.pod_template, "spec")
                                                                  : Json::object();
    Json tolerations = Json::array();
    for (const auto& t : rev.tolerations) tolerations.push_back(toleration_json(t));
    spec["tolerations"] = std::move(tolerations);
    replace_node_name_affinity(spec, node_name);
    spec["nodeName"] = node_name;
    return Json{
        {"apiVersion", "v1"}, {"kind", "Pod"}, {"metadata", std::move(meta)}, {"spec", std::move(spec)}};
}

std::vector<Json> controlled_pods(const Json& list, const std::string& ds_uid, const std::string& node_name,
                                  bool include_deleting) {
    std::vector<Json> out;
    const Json& items = json_member(list, "items");
    if (!items.is_array()) return out;
    for (const Json& item : items) {
        if (!controlled_by(item, ds_uid) || json_text(json_member(item, "spec"), "nodeName") != node_name)
            continue;
        if (!include_deleting && !json_member(json_member(item, "metadata"), "deletionTimestamp").is_null())
            continue;
        out.push_back(item);
    }
    return out;
}

}  // namespace daemonlet
