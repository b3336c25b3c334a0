#include "core/defaults.h"

#include <string>

namespace daemonlet {
namespace {

// A warning for every function here: ordered_json keeps an object's members
// in a vector of pair<const string, json>, which is copied, not moved, when
// it grows. Any insertion therefore invalidates every pointer and reference
// into that object's members, nested values included. Take values by copy,
// or look them up again, after inserting.

// The object member `key`, created empty when absent or null; nullptr when
// present with another type (the decoder will report that).
Json* child_object(Json& parent, const char* key) {
    if (!parent.is_object()) return nullptr;
    Json& v = parent[key];
    if (v.is_null()) v = Json::object();
    return v.is_object() ? &v : nullptr;
}

// An existing object member, or nullptr.
Json* existing_object(Json& parent, const char* key) {
    if (!parent.is_object()) return nullptr;
    auto it = parent.find(key);
    return it != parent.end() && it->is_object() ? &*it : nullptr;
}

void set_default(Json& obj, const char* key, Json value) {
    if (!obj.is_object()) return;
    auto it = obj.find(key);
    if (it == obj.end() || it->is_null()) obj[key] = std::move(value);
}

bool absent_or_empty_string(const Json& obj, const char* key) {
    auto it = obj.find(key);
    return it == obj.end() || it->is_null() || (it->is_string() && it->get<std::string>().empty());
}

template <class F>
void for_each_object(Json& parent, const char* key, F fn) {
    if (!parent.is_object()) return;
    auto it = parent.find(key);
    if (it == parent.end() || !it->is_array()) return;
    for (auto& e : *it)
        if (e.is_object()) fn(e);
}

// SetDefaults_HTTPGetAction, for probes and lifecycle handlers alike.
void default_handler(Json& h) {
    if (Json* get = existing_object(h, "httpGet")) {
        if (absent_or_empty_string(*get, "path")) (*get)["path"] = "/";
        if (absent_or_empty_string(*get, "scheme")) (*get)["scheme"] = "HTTP";
    }
}

// SetDefaults_Probe.
void default_probe(Json& c, const char* key) {
    Json* p = existing_object(c, key);
    if (!p) return;
    default_handler(*p);
    set_default(*p, "timeoutSeconds", 1);
    set_default(*p, "periodSeconds", 10);
    set_default(*p, "successThreshold", 1);
    set_default(*p, "failureThreshold", 3);
    // A zero is what the API server defaults too: it treats 0 as unset.
    for (const char* k : {"timeoutSeconds", "periodSeconds", "successThreshold", "failureThreshold"}) {
        const Json& v = (*p)[k];
        if (v.is_number_integer() && v.get<std::int64_t>() == 0)
            (*p)[k] = std::string(k) == "periodSeconds" ? 10 : std::string(k) == "failureThreshold" ? 3 : 1;
    }
}

void default_container(Json& c, bool host_network) {
    if (absent_or_empty_string(c, "imagePullPolicy")) {
        auto it = c.find("image");
        std::string image = it != c.end() && it->is_string() ? it->get<std::string>() : std::string();
        c["imagePullPolicy"] = default_image_pull_policy(image);
    }
    if (absent_or_empty_string(c, "terminationMessagePath"))
        c["terminationMessagePath"] = "/dev/termination-log";
    if (absent_or_empty_string(c, "terminationMessagePolicy")) c["terminationMessagePolicy"] = "File";
    for_each_object(c, "ports", [&](Json& port) {
        if (absent_or_empty_string(port, "protocol")) port["protocol"] = "TCP";
        // defaultHostNetworkPorts: on the host network a port is a host port.
        if (host_network) {
            auto hp = port.find("hostPort");
            bool unset = hp == port.end() || hp->is_null() ||
                         (hp->is_number_integer() && hp->get<std::int64_t>() == 0);
            auto cp = port.find("containerPort");
            if (unset && cp != port.end() && cp->is_number_integer()) {
                Json container_port = *cp;  // copy: the insertion below moves port's members
                port["hostPort"] = std::move(container_port);
            }
        }
    });
    for_each_object(c, "env", [](Json& env) {
        if (Json* from = existing_object(env, "valueFrom"))
            if (Json* ref = existing_object(*from, "fieldRef"))
                if (absent_or_empty_string(*ref, "apiVersion")) (*ref)["apiVersion"] = "v1";
    });
    default_probe(c, "livenessProbe");
    default_probe(c, "readinessProbe");
    default_probe(c, "startupProbe");
    if (Json* lc = existing_object(c, "lifecycle")) {
        if (Json* h = existing_object(*lc, "postStart")) default_handler(*h);
        if (Json* h = existing_object(*lc, "preStop")) default_handler(*h);
    }
}

// SetDefaults_Volume and the per-source defaults.
void default_volume(Json& v) {
    static const char* const kNotSources[] = {"name"};
    bool has_source = false;
    for (auto it = v.begin(); it != v.end(); ++it)
        if (it.key() != kNotSources[0] && !it.value().is_null()) has_source = true;
    if (!has_source) v["emptyDir"] = Json::object();
    if (Json* hp = existing_object(v, "hostPath")) set_default(*hp, "type", "");
    if (Json* cm = existing_object(v, "configMap")) set_default(*cm, "defaultMode", 420);
    if (Json* s = existing_object(v, "secret")) set_default(*s, "defaultMode", 420);
    // SetDefaults_DownwardAPIVolumeSource, SetDefaults_ProjectedVolumeSource,
    // SetDefaults_ServiceAccountTokenProjection, and SetDefaults_ObjectFieldSelector
    // on their files' fieldRefs.
    auto default_files = [](Json& source) {
        for_each_object(source, "items", [](Json& item) {
            if (Json* ref = existing_object(item, "fieldRef"))
                if (absent_or_empty_string(*ref, "apiVersion")) (*ref)["apiVersion"] = "v1";
        });
    };
    if (Json* d = existing_object(v, "downwardAPI")) {
        set_default(*d, "defaultMode", 420);
        default_files(*d);
    }
    if (Json* p = existing_object(v, "projected")) {
        set_default(*p, "defaultMode", 420);
        for_each_object(*p, "sources", [&](Json& src) {
            if (Json* d = existing_object(src, "downwardAPI")) default_files(*d);
            if (Json* t = existing_object(src, "serviceAccountToken"))
                set_default(*t, "expirationSeconds", 3600);
        });
    }
}

}  // namespace

const char* default_image_pull_policy(const std::string& image) {
    // parsers.ParseImageName: the tag follows the last ':' after the last '/';
    // a digest-only reference has no tag; no tag and no digest means latest.
    std::string name = image;
    bool digest = false;
    if (auto at = name.find('@'); at != std::string::npos) {
        name.resize(at);
        digest = true;
    }
    std::string tag;
    auto colon = name.rfind(':');
    auto slash = name.rfind('/');
    if (colon != std::string::npos && (slash == std::string::npos || colon > slash))
        tag = name.substr(colon + 1);
    if (image.empty()) return "IfNotPresent";
    if (tag.empty() && !digest) tag = "latest";
    return tag == "latest" ? "Always" : "IfNotPresent";
}

void default_pod_spec(Json& spec) {
    if (!spec.is_object()) return;
    if (absent_or_empty_string(spec, "dnsPolicy")) spec["dnsPolicy"] = "ClusterFirst";
    if (absent_or_empty_string(spec, "restartPolicy")) spec["restartPolicy"] = "Always";
    set_default(spec, "securityContext", Json::object());
    set_default(spec, "terminationGracePeriodSeconds", 30);
    if (absent_or_empty_string(spec, "schedulerName")) spec["schedulerName"] = "default-scheduler";
    auto hn = spec.find("hostNetwork");
    bool host_network = hn != spec.end() && hn->is_boolean() && hn->get<bool>();
    for_each_object(spec, "containers", [&](Json& c) { default_container(c, host_network); });
    for_each_object(spec, "initContainers", [&](Json& c) { default_container(c, host_network); });
    for_each_object(spec, "volumes", default_volume);
}

void default_legacy_daemonset(Json& obj, const std::string& api_version) {
    if (api_version != "extensions/v1beta1" || !obj.is_object()) return;
    Json* spec = child_object(obj, "spec");
    if (!spec) return;
    // extensions/v1beta1 SetDefaults_DaemonSet: selector and labels from the
    // template, OnDelete by default.
    Json* tmpl = existing_object(*spec, "template");
    Json* tmeta = tmpl ? existing_object(*tmpl, "metadata") : nullptr;
    if (tmeta && tmeta->contains("labels") && (*tmeta)["labels"].is_object()) {
        Json labels = (*tmeta)["labels"];  // copy: inserting into spec below invalidates tmeta
        set_default(*spec, "selector", Json{{"matchLabels", labels}});
        if (Json* meta = child_object(obj, "metadata")) {
            auto it = meta->find("labels");
            if (it == meta->end() || it->is_null() || (it->is_object() && it->empty()))
                (*meta)["labels"] = labels;
        }
    }
    if (Json* us = child_object(*spec, "updateStrategy"))
        if (absent_or_empty_string(*us, "type")) (*us)["type"] = "OnDelete";
    set_default(*spec, "templateGeneration", 1);
}

void default_namespace(Json& obj) {
    if (!obj.is_object()) return;
    if (Json* meta = child_object(obj, "metadata"))
        if (absent_or_empty_string(*meta, "namespace")) (*meta)["namespace"] = "default";
}

void default_secret(Json& obj) {
    default_namespace(obj);
    if (obj.is_object() && absent_or_empty_string(obj, "type")) obj["type"] = "Opaque";
}

void default_pod(Json& obj) {
    default_namespace(obj);
    if (Json* spec = existing_object(obj, "spec")) default_pod_spec(*spec);
}

void default_daemonset(Json& obj) {
    if (!obj.is_object()) return;
    default_namespace(obj);
    Json* spec = child_object(obj, "spec");
    if (!spec) return;
    // apps/v1 SetDefaults_DaemonSet.
    if (Json* us = child_object(*spec, "updateStrategy")) {
        if (absent_or_empty_string(*us, "type")) (*us)["type"] = "RollingUpdate";
        auto type = us->find("type");
        if (type->is_string() && type->get<std::string>() == "RollingUpdate") {
            if (Json* ru = child_object(*us, "rollingUpdate")) {
                set_default(*ru, "maxUnavailable", 1);
                set_default(*ru, "maxSurge", 0);
            }
        }
    }
    set_default(*spec, "revisionHistoryLimit", 10);
    if (Json* tmpl = existing_object(*spec, "template"))
        if (Json* ps = existing_object(*tmpl, "spec")) default_pod_spec(*ps);
}

}  // namespace daemonlet
