// The Kubernetes API server as the second source of DaemonSets, and the
// board's autonomy when it is unreachable.
//
// - What the cluster sends (ClusterLink's reflectors) is compared with what
//   the agent has, ignoring status and bookkeeping (resourceVersion,
//   managedFields), so that a status update or a relist after a reconnect
//   changes nothing; a real change goes through load_manifest (the same
//   decoding, defaulting and validation as a manifest file) and then
//   rebuild_desired, where a manifest file of the same namespace/name wins.
// - Everything received is in the store (source "api"), with the
//   resourceVersion: a board that boots with no network runs its cached
//   DaemonSets before READY and without waiting for the API server.
// - Deletions come only from a complete list or a DELETED event
//   (core/reflector.h): a failed, refused or cut-off list removes nothing.
// - nodeFromCluster: the Node object's labels, taints and unschedulable over
//   the configuration (core merge_cluster_node); a change re-evaluates every
//   DaemonSet at once.
#include <algorithm>

#include "agent/agent.h"
#include "core/decode.h"
#include "core/local_node.h"
#include "platform/log.h"
#include "platform/system_info.h"

namespace daemonlet::agent {

using platform::Level;
using platform::log;

namespace {

constexpr const char* kNodeMeta = "api.node";      // the Node's labels, taints and unschedulable
constexpr const char* kEventsMeta = "api.events";  // Events not sent when the agent stopped
const std::string kRvMetaPrefix = "api.resourceVersion/";

// What is compared and stored of a cluster object: not its status, which
// the upstream controller rewrites, nor the server's bookkeeping. The keys
// are sorted: a list item gets its apiVersion and kind appended by the
// reflector while a watch event has them first, and Json (ordered_json)
// compares key order, so the same object would otherwise read as changed
// at every relist and be written to the store again.
std::string normalized(const Json& o) {
    Json n = o;
    n.erase("status");
    if (n.contains("metadata") && n["metadata"].is_object()) {
        n["metadata"].erase("managedFields");
        n["metadata"].erase("resourceVersion");
    }
    return nlohmann::json(n).dump();
}

std::string meta_string(const Json& o, const char* key) {
    if (!o.contains("metadata") || !o["metadata"].is_object()) return {};
    const Json& m = o["metadata"];
    return m.contains(key) && m[key].is_string() ? m[key].get<std::string>() : std::string();
}

// The Node fields the agent uses, as stored for an offline boot.
Json node_subset(const Json& node) {
    Json out = Json::object();
    out["apiVersion"] = "v1";
    out["kind"] = "Node";
    out["metadata"] = {{"name", meta_string(node, "name")}};
    if (node.contains("metadata") && node["metadata"].contains("labels"))
        out["metadata"]["labels"] = node["metadata"]["labels"];
    if (node.contains("spec") && node["spec"].is_object()) {
        Json spec = Json::object();
        for (const char* k : {"taints", "unschedulable"})
            if (node["spec"].contains(k)) spec[k] = node["spec"][k];
        out["spec"] = spec;
    }
    return out;
}

}  // namespace

// At start-up, before the manifests are read: the cluster's DaemonSets and
// Node as last received, so that an offline boot runs them.
void Agent::load_api_cache() {
    if (!config_.api_server.enabled) return;
    auto rows = store_->list_daemonsets();
    if (!rows.ok()) {
        log(Level::Err, "store: " + rows.error().message);
        return;
    }
    for (const auto& row : rows.value()) {
        if (row.source != "api" || !config_.api_server.follows(row.namespace_)) continue;
        const std::string key = row.namespace_ + "/" + row.name;
        LoadedManifest m = load_manifest(row.object_json, "cached DaemonSet " + key);
        for (auto& o : m.objects)
            if (auto* ds = std::get_if<DaemonSet>(&o.object)) {
                const std::string uid = ds->metadata.uid;
                api_ds_[key] = ApiObject{std::make_shared<const DaemonSet>(std::move(*ds)), {}, uid};
            }
        for (const auto& e : m.errors) log(Level::Err, e.to_string());
    }
    if (config_.api_server.node_from_cluster) {
        auto node = store_->get_meta(kNodeMeta);
        if (node.ok() && node.value() && !node.value()->empty()) {
            Json j = Json::parse(*node.value(), nullptr, false);
            if (j.is_object()) cluster_node_ = std::move(j);
        }
    }
    if (!api_ds_.empty())
        log(Level::Info, std::to_string(api_ds_.size()) + " DaemonSets from the API server's cache");
}

void Agent::start_cluster(bool start_now) {
    if (!config_.api_server.enabled || stopping_) return;
    ClusterHooks hooks;
    hooks.daemonsets = [this](const std::string& scope, ReflectorChanges&& ch) {
        on_api_daemonsets(scope, std::move(ch));
    };
    hooks.node = [this](ReflectorChanges&& ch) { on_api_node(std::move(ch)); };
    hooks.link = [this](LinkState s) { on_link(s); };
    auto link =
        ClusterLink::create(&loop_, config_.api_server, node_.metadata.name, std::move(hooks), clock_);
    if (!link.ok()) {
        // The cached DaemonSets keep running; SIGHUP after fixing it retries.
        cluster_error_ = link.error().message;
        log(Level::Err,
            "API server: " + cluster_error_ + "; running from the cache and the manifest directory");
        update_status();
        return;
    }
    cluster_error_.clear();
    cluster_ = std::move(link).value();
    // Events queued when the agent last stopped (an offline reboot): sent
    // with their original times once connected.
    auto saved = store_->get_meta(kEventsMeta);
    if (saved.ok() && saved.value() && !saved.value()->empty()) {
        Json arr = Json::parse(*saved.value(), nullptr, false);
        if (arr.is_array())
            for (const Json& e : arr) {
                if (!e.is_object()) continue;
                cluster_->add_event(ClusterEvent{e.value("namespace", ""), e.value("kind", ""),
                                                 e.value("name", ""), e.value("uid", ""), e.value("type", ""),
                                                 e.value("reason", ""), e.value("message", ""),
                                                 e.value("first", std::int64_t{0}),
                                                 e.value("last", std::int64_t{0}), e.value("count", 1)});
            }
        if (auto w = store_->put_meta(kEventsMeta, ""); !w.ok())
            log(Level::Warning, "store: " + w.error().message);
    }
    if (start_now) cluster_->start();
}

// At a stop: the Events the cluster has not had yet, for the next start.
void Agent::save_cluster_events() {
    if (!cluster_ || cluster_->queued_events().empty()) return;
    Json arr = Json::array();
    for (const auto& ev : cluster_->queued_events())
        arr.push_back({{"namespace", ev.namespace_},
                       {"kind", ev.kind},
                       {"name", ev.name},
                       {"uid", ev.uid},
                       {"type", ev.type},
                       {"reason", ev.reason},
                       {"message", ev.message},
                       {"first", ev.first_ms},
                       {"last", ev.last_ms},
                       {"count", ev.count}});
    if (auto w = store_->put_meta(kEventsMeta, arr.dump()); !w.ok())
        log(Level::Warning, "store: queued events not kept: " + w.error().message);
}

void Agent::on_api_daemonsets(const std::string& scope, ReflectorChanges&& ch) {
    if (stopping_) return;
    bool changed = false;
    std::set<std::string> present;
    for (const Json& o : ch.objects) {
        const std::string ns = meta_string(o, "namespace"), name = meta_string(o, "name");
        const std::string key = ns + "/" + name;
        present.insert(key);
        std::string text = normalized(o);
        auto it = api_ds_.find(key);
        if (it != api_ds_.end() && it->second.normalized == text) continue;  // status or bookkeeping only
        LoadedManifest m = load_manifest(text, "API server DaemonSet " + key);
        const DaemonSet* ds = nullptr;
        for (auto& mo : m.objects) ds = std::get_if<DaemonSet>(&mo.object);
        if (!m.errors.empty() || !ds) {
            for (const auto& e : m.errors) log(Level::Err, e.to_string());
            if (it != api_ds_.end()) {
                log(Level::Warning,
                    "API server DaemonSet " + key + ": keeping its last good version in force");
                it->second.normalized = text;  // reported once per version
            }
            continue;
        }
        if (it != api_ds_.end() && it->second.object->object == ds->object) {
            it->second.normalized = text;  // the same object (the cache's, after a boot)
            continue;
        }
        log(Level::Info,
            std::string("API server: DaemonSet ") + key + (it == api_ds_.end() ? " added" : " changed"));
        api_ds_[key] = ApiObject{std::make_shared<const DaemonSet>(*ds), text, ds->metadata.uid};
        changed = true;
    }
    auto drop = [&](const std::string& key, const char* why) {
        if (api_ds_.erase(key) == 0) return;
        log(Level::Notice, "API server: DaemonSet " + key + " " + why);
        changed = true;
    };
    if (ch.replace) {
        // A complete list: what it does not have is gone from the cluster.
        std::vector<std::string> gone;
        for (const auto& [key, a] : api_ds_)
            if ((scope.empty() || a.object->metadata.namespace_ == scope) && !present.count(key))
                gone.push_back(key);
        for (const auto& key : gone) drop(key, "is no longer in the cluster (a complete list)");
    }
    for (const Json& o : ch.deleted)
        drop(meta_string(o, "namespace") + "/" + meta_string(o, "name"), "deleted");
    if (changed) schedule_rebuild();
    // The resourceVersion to resume from, written with real changes only:
    // bookmarks and status updates do not wear the flash.
    if (!ch.resource_version.empty() && (changed || ch.replace))
        if (auto w = store_->put_meta(kRvMetaPrefix + scope, ch.resource_version); !w.ok())
            log(Level::Warning, "store: " + w.error().message);
}

void Agent::on_api_node(ReflectorChanges&& ch) {
    if (stopping_) return;
    std::optional<Json> next = cluster_node_;
    if (ch.replace || !ch.deleted.empty()) next.reset();
    for (const Json& o : ch.objects)
        if (meta_string(o, "name") == node_.metadata.name) next = node_subset(o);
    if (next == cluster_node_) return;
    if (!next && cluster_node_)
        log(Level::Notice, "API server: the Node " + node_.metadata.name +
                               " is gone from the cluster; the configuration alone describes the board");
    cluster_node_ = std::move(next);
    if (auto w = store_->put_meta(kNodeMeta, cluster_node_ ? cluster_node_->dump() : std::string()); !w.ok())
        log(Level::Warning, "store: " + w.error().message);
    refresh_node();
}

// The node as the configuration and (nodeFromCluster) the cluster describe
// it; a change re-evaluates every DaemonSet.
void Agent::refresh_node() {
    const std::string arch = goarch_from_machine(platform::machine());
    Node next = make_local_node(config_.node_name, config_.node_labels, config_.node_taints,
                                config_.node_unschedulable, "linux", arch);
    if (config_.api_server.node_from_cluster && cluster_node_) {
        Node cluster;
        FieldErrors errs = decode_node(*cluster_node_, cluster);
        if (errs.empty())
            next = merge_cluster_node(config_.node_name, config_.node_labels, config_.node_taints,
                                      config_.node_unschedulable, cluster, "linux", arch);
        else
            for (const auto& e : errs)
                log(Level::Err, "API server Node " + config_.node_name + ": " + e.to_string() +
                                    "; using the configuration's labels and taints");
    }
    const bool same = next.metadata.labels == node_.metadata.labels && next.taints == node_.taints &&
                      next.unschedulable == node_.unschedulable && !node_.metadata.name.empty();
    node_ = std::move(next);
    if (same) return;
    store::StoredNode sn{node_.metadata.labels, node_.taints, node_.unschedulable};
    if (auto w = store_->put_node(sn); !w.ok()) log(Level::Warning, w.error().message);
    if (reconcile_timer_) {
        log(Level::Notice,
            "node " + node_.metadata.name + ": labels or taints changed; re-evaluating every DaemonSet");
        schedule_reconcile();
    }
}

void Agent::on_link(LinkState) { update_status(); }

// Events go to the cluster for the DaemonSets it has (a file's own
// DaemonSet is not the cluster's business).
void Agent::send_cluster_event(const std::string& ns, const std::string& daemonset, const char* type,
                               const char* reason, const std::string& message) {
    if (!cluster_) return;
    auto it = api_ds_.find(ns + "/" + daemonset);
    if (it == api_ds_.end()) return;
    const std::int64_t now = clock_.wall_ms();
    cluster_->add_event(
        ClusterEvent{ns, "DaemonSet", daemonset, it->second.uid, type, reason, message, now, now, 1});
}

Json Agent::status_json() const {
    std::size_t running = 0, from_files = 0, from_api = 0;
    for (const auto& [uid, p] : pods_)
        if (p.rec.phase == PodPhase::Running) ++running;
    for (const auto& [key, d] : desired_) (d.from_api() ? from_api : from_files)++;
    Json api;
    if (cluster_)
        api = cluster_->status();
    else if (config_.api_server.enabled)
        api = Json{{"state", "error"}, {"lastError", cluster_error_}};
    else
        api = Json{{"state", "not configured"}};
    std::size_t shadowed = 0;
    for (const auto& [key, a] : api_ds_)
        if (auto d = desired_.find(key); d != desired_.end() && !d->second.from_api()) ++shadowed;
    api["cached"] = api_ds_.size();
    return Json{{"node", node_.metadata.name},
                {"daemonSets",
                 {{"total", desired_.size()},
                  {"fromFiles", from_files},
                  {"fromCluster", from_api},
                  {"overriddenByFiles", shadowed}}},
                {"pods", {{"total", pods_.size()}, {"running", running}}},
                {"apiServer", api}};
}

}  // namespace daemonlet::agent
