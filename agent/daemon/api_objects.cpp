// The ConfigMaps and Secrets from the cluster (api_access.h): read by name
// as the kubelet's cache-based manager reads them.
#include <algorithm>
#include <cstdint>

#include "agent/daemon/api_access.h"
#include "agent/daemon/sources.h"
#include "core/decode.h"
#include "core/json_parse.h"
#include "platform/log.h"

namespace daemonlet::agent {

using platform::Level;
using platform::log;

namespace {

// The kubelet's cache-based manager's defaultTTL: an object a pod uses is
// read again once it is a minute old.
constexpr std::int64_t kObjectTtlMs = 60'000;
// An object not read (absent, or the read failed with nothing read before)
// is asked for again sooner, as the manager's Get does at each pod sync
// while it holds an error rather than an object.
constexpr std::int64_t kMissingObjectRetryMs = 5'000;
std::int64_t object_period(const Json& object) {
    return object.is_null() ? kMissingObjectRetryMs : kObjectTtlMs;
}
constexpr std::size_t kMaxObjects = 1000;  // a bound on what pods can make the agent read and keep

std::string describe(const ObjectRef& r) {
    return std::string(r.secret ? "secret " : "configmap ") + r.namespace_ + "/" + r.name;
}

}  // namespace

void ApiAccess::refresh_objects(const std::set<ObjectRef>& wanted, std::int64_t mono) {
    for (auto it = cluster_objects_.begin(); it != cluster_objects_.end();) {
        const ObjectRef& ref = it->first;
        ObjectEntry& e = it->second;
        if (!wanted.count(ref)) {
            // No pod uses it any more: forgotten, as the manager's
            // UnregisterPod drops an object with its last pod.
            if (ref.secret)
                objects_.secrets.erase({ref.namespace_, ref.name});
            else
                objects_.config_maps.erase({ref.namespace_, ref.name});
            it = cluster_objects_.erase(it);
            continue;
        }
        if (!e.inflight && (e.fetched_ms < 0 || mono - e.fetched_ms >= object_period(e.object)))
            fetch_object(ref);
        ++it;
    }
}

std::int64_t ApiAccess::objects_due_in(std::int64_t mono) const {
    std::int64_t delay = INT64_MAX;
    for (const auto& [r, e] : cluster_objects_)
        if (!e.inflight && e.fetched_ms >= 0)
            delay = std::min(delay, e.fetched_ms + object_period(e.object) - mono);
    return delay;
}

std::set<ObjectRef> ApiAccess::refs_of(const std::string& ns, const PodSpec& spec) {
    std::set<ObjectRef> out;
    auto add = [&](bool secret, const std::string& name) {
        if (!name.empty()) out.insert({secret, ns, name});
    };
    for (const auto& v : spec.volumes) {
        if (v.source == Volume::Source::ConfigMap) add(false, v.config_map_name);
        if (v.source == Volume::Source::Secret) add(true, v.secret_name);
        for (const auto& p : v.projections) {
            if (p.config_map) add(false, p.config_map->name);
            if (p.secret) add(true, p.secret->name);
        }
    }
    for (const auto* cs : {&spec.init_containers, &spec.containers})
        for (const auto& c : *cs) {
            for (const auto& e : c.env)
                if (e.value_from) {
                    if (e.value_from->config_map_key) add(false, e.value_from->config_map_key->name);
                    if (e.value_from->secret_key) add(true, e.value_from->secret_key->name);
                }
            for (const auto& f : c.env_from) {
                if (f.config_map_ref) add(false, f.config_map_ref->name);
                if (f.secret_ref) add(true, f.secret_ref->name);
            }
        }
    return out;
}

void ApiAccess::need_objects(const std::set<ObjectRef>& refs) {
    const std::int64_t mono = clock_.monotonic_ms();
    for (const auto& ref : refs) {
        if (!ref.secret && ref.name == kRootCAConfigMap) {
            // The CA's own path (the kubeconfig's until the cluster's is read).
            if (!objects_.config_map(ref.namespace_, kRootCAConfigMap) && link_ && !link_->ca_pem().empty())
                set_root_ca(ref.namespace_, link_->ca_pem(), false);
            if (!ca_from_cluster_[ref.namespace_]) fetch_root_ca(ref.namespace_);
            continue;
        }
        auto it = cluster_objects_.find(ref);
        if (it == cluster_objects_.end()) {
            if (cluster_objects_.size() >= kMaxObjects) continue;
            it = cluster_objects_.emplace(ref, ObjectEntry{}).first;
        }
        ObjectEntry& e = it->second;
        if (!e.inflight && (e.fetched_ms < 0 || mono - e.fetched_ms >= object_period(e.object)))
            fetch_object(ref);
    }
    arm();
}

void ApiAccess::fetch_object(const ObjectRef& ref) {
    ObjectEntry& e = cluster_objects_[ref];
    const std::int64_t now = clock_.monotonic_ms();
    if (!link_ || (e.inflight && now - e.inflight_since_ms < kInflightMaxMs)) return;
    const std::string target =
        "/api/v1/namespaces/" + ref.namespace_ + (ref.secret ? "/secrets/" : "/configmaps/") + ref.name;
    e.inflight = link_->call("GET", target, "",
                             [this, ref](Result<platform::HttpResponse> r) { on_object(ref, std::move(r)); });
    if (e.inflight) e.inflight_since_ms = now;
}

void ApiAccess::on_object(const ObjectRef& ref, Result<platform::HttpResponse> r) {
    auto it = cluster_objects_.find(ref);
    if (it == cluster_objects_.end()) return;  // no pod uses it any more
    ObjectEntry& e = it->second;
    e.inflight = false;
    e.fetched_ms = clock_.monotonic_ms();
    std::string error;
    if (!r.ok()) {
        error = r.error().message;
    } else if (r.value().status == 404) {
        // Gone from the cluster: gone for the pods (a running pod's volume
        // keeps its last content, a container to start waits for it).
        const bool had = !e.object.is_null();
        e.object = Json();
        e.last_error.clear();
        if (ref.secret)
            objects_.secrets.erase({ref.namespace_, ref.name});
        else
            objects_.config_maps.erase({ref.namespace_, ref.name});
        if (had) {
            log(Level::Notice, describe(ref) + ": deleted in the cluster");
            save();
            if (changed_) changed_();
        }
        arm();
        return;
    } else if (r.value().status != 200) {
        error = describe_status(r.value().status, r.value().body);
        if (r.value().status == 403)
            error += std::string(" (check the RBAC in dist/rbac.yaml: ") +
                     (ref.secret ? "secrets" : "configmaps") + " get)";
    } else {
        Json obj = parse_json(r.value().body);
        if (obj.is_object() && obj.contains("metadata") && obj["metadata"].is_object())
            obj["metadata"].erase("managedFields");
        e.last_error.clear();
        if (take_object(ref, obj)) {
            e.object = std::move(obj);
            save();
            if (changed_) changed_();
        }
        arm();
        return;
    }
    if (error != e.last_error)
        log(Level::Warning, describe(ref) + ": not read from the API server: " + error +
                                (e.object.is_null() ? "" : "; pods keep the version read before") +
                                ", trying again");
    e.last_error = error;
    arm();
}

bool ApiAccess::take_object(const ObjectRef& ref, const Json& obj) {
    const auto key = std::make_pair(ref.namespace_, ref.name);
    if (ref.secret) {
        Secret s;
        if (auto errs = decode_secret(obj, s); !errs.empty()) {
            log(Level::Warning, describe(ref) + ": " + errs.front().to_string() + "; ignoring it");
            return false;
        }
        auto old = objects_.secrets.find(key);
        if (old != objects_.secrets.end() && old->second->data == s.data && old->second->type == s.type &&
            old->second->immutable == s.immutable)
            return false;
        objects_.secrets[key] = std::make_shared<const Secret>(std::move(s));
        return true;
    }
    ConfigMap cm;
    if (auto errs = decode_config_map(obj, cm); !errs.empty()) {
        log(Level::Warning, describe(ref) + ": " + errs.front().to_string() + "; ignoring it");
        return false;
    }
    auto old = objects_.config_maps.find(key);
    if (old != objects_.config_maps.end() && old->second->data == cm.data &&
        old->second->binary_data == cm.binary_data && old->second->immutable == cm.immutable)
        return false;
    objects_.config_maps[key] = std::make_shared<const ConfigMap>(std::move(cm));
    return true;
}

}  // namespace daemonlet::agent
