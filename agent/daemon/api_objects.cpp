// The ConfigMaps and Secrets from the cluster (api_access.h): watched per
// object as the kubelet's watch-based manager watches them.
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

// A bound on what pods can make the agent watch and keep: every watch is a
// request held open. Over HTTP/2 it is a stream: kube-apiserver allows 100
// per connection since the HTTP/2 rapid-reset fix (kubernetes#121120, 1.29;
// 250 before), and libcurl opens another connection when one is full, so
// that 250 watches take about 3 connections; over HTTP/1.1 each is a TCP
// and TLS connection of its own. An object past it is not read.
constexpr std::size_t kMaxObjects = 250;

std::string describe(const ObjectRef& r) {
    return std::string(r.secret ? "secret " : "configmap ") + r.namespace_ + "/" + r.name;
}

}  // namespace

void ApiAccess::refresh_objects(const std::set<ObjectRef>& wanted) {
    for (auto it = cluster_objects_.begin(); it != cluster_objects_.end();) {
        const ObjectRef& ref = it->first;
        if (!wanted.count(ref)) {
            // No pod uses it any more: its watch stops and it is forgotten,
            // as the manager's UnregisterPod stops an object's reflector
            // with its last pod.
            if (link_ && it->second.watch) link_->unwatch(it->second.watch);
            if (ref.secret)
                objects_.secrets.erase({ref.namespace_, ref.name});
            else
                objects_.config_maps.erase({ref.namespace_, ref.name});
            it = cluster_objects_.erase(it);
            continue;
        }
        ++it;
    }
    // Pods adopted from the previous agent start no container here: their
    // objects are watched from this pass on.
    need_objects(wanted);
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
    for (const auto& ref : refs) {
        if (!ref.secret && ref.name == kRootCAConfigMap) {
            // The CA's own path (the kubeconfig's until the cluster's is read).
            if (!objects_.config_map(ref.namespace_, kRootCAConfigMap) && link_ && !link_->ca_pem().empty())
                set_root_ca(ref.namespace_, link_->ca_pem(), false);
            watch_root_ca(ref.namespace_);
            continue;
        }
        auto it = cluster_objects_.find(ref);
        if (it == cluster_objects_.end()) {
            if (cluster_objects_.size() >= kMaxObjects) {
                if (!said_object_bound_)
                    log(Level::Warning, describe(ref) +
                                            ": not read from the API server: the pods use more than " +
                                            std::to_string(kMaxObjects) +
                                            " ConfigMaps and Secrets from the cluster (the agent's bound); "
                                            "define them in the manifest directory instead");
                said_object_bound_ = true;
                continue;
            }
            it = cluster_objects_.emplace(ref, ObjectEntry{}).first;
        }
        watch_object(ref, it->second);
    }
    arm();
}

// The watch-based manager's reflector for one object: its namespace's
// collection listed and watched with fieldSelector metadata.name=NAME
// (watch_based_manager.go NewWatchBasedManager's listObject/watchObject).
void ApiAccess::watch_object(const ObjectRef& ref, ObjectEntry& e) {
    if (!link_ || e.watch || e.immutable) return;
    const std::string path =
        "/api/v1/namespaces/" + ref.namespace_ + (ref.secret ? "/secrets" : "/configmaps");
    e.watch = link_->watch(
        object_watch_target(path, ref.secret ? "Secret" : "ConfigMap", ref.name), describe(ref),
        [this, ref](ReflectorChanges&& ch) { on_object_changes(ref, std::move(ch)); },
        [this, ref](const std::string& why) {
            // The link logs it (once per distinct reason); kept for `status`.
            if (auto it = cluster_objects_.find(ref); it != cluster_objects_.end())
                it->second.last_error = why;
        });
}

void ApiAccess::on_object_changes(const ObjectRef& ref, ReflectorChanges&& ch) {
    auto it = cluster_objects_.find(ref);
    if (it == cluster_objects_.end()) return;  // no pod uses it any more
    ObjectWatchOutcome o = object_watch_outcome(std::move(ch), ref.name);
    if (o.kind == ObjectWatchOutcome::Kind::Present) object_read(ref, it->second, std::move(o.object));
    if (o.kind == ObjectWatchOutcome::Kind::Gone) object_gone(ref, it->second);
}

void ApiAccess::object_gone(const ObjectRef& ref, ObjectEntry& e) {
    // Gone from the cluster: gone for the pods (a running pod's volume
    // keeps its last content, a container to start waits for it).
    const bool had = !e.object.is_null();
    e.object = Json();
    e.last_error.clear();
    if (ref.secret)
        objects_.secrets.erase({ref.namespace_, ref.name});
    else
        objects_.config_maps.erase({ref.namespace_, ref.name});
    if (!had) return;
    log(Level::Notice, describe(ref) + ": deleted in the cluster");
    save();
    if (changed_) changed_();
}

void ApiAccess::object_read(const ObjectRef& ref, ObjectEntry& e, Json obj) {
    if (obj.is_object() && obj.contains("metadata") && obj["metadata"].is_object())
        obj["metadata"].erase("managedFields");
    e.last_error.clear();
    if (take_object(ref, obj)) {
        e.object = std::move(obj);
        save();
        if (changed_) changed_();
    }
    const ConfigMap* cm = ref.secret ? nullptr : objects_.config_map(ref.namespace_, ref.name);
    const Secret* secret = ref.secret ? objects_.secret(ref.namespace_, ref.name) : nullptr;
    const bool immutable = (cm && cm->immutable) || (secret && secret->immutable);
    if (immutable && e.watch) {
        // It cannot change any more: its reflector stops, as the manager's
        // Get stops an immutable object's (objectCacheItem.stop).
        if (link_) link_->unwatch(e.watch);
        e.watch = 0;
        e.immutable = true;
    }
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
