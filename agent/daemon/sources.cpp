// The sources of DaemonSets (sources.h): the manifest directory's files and
// the API server, merged by core's merge_sources.
//
// A file that no longer reads, parses or validates keeps its last good
// version in force (its errors are logged once per version); a removed file
// removes its DaemonSets. What the API server sends is compared ignoring
// status and bookkeeping (resourceVersion, managedFields), so that a status
// update or a relist after a reconnect changes nothing; a real change goes
// through load_manifest, the same decoding, defaulting and validation as a
// manifest file's. Deletions come only from a complete list or a DELETED
// event (core/reflector.h): a failed, refused or cut-off list removes nothing.
#include "agent/daemon/sources.h"

#include <algorithm>

#include "core/manifest.h"
#include "core/template_hash.h"
#include "platform/dir_watch.h"
#include "platform/file.h"
#include "platform/log.h"
#include "platform/system_info.h"

namespace daemonlet::agent {

using platform::Level;
using platform::log;

namespace {

// A manifest file from this size on is followed by return_free_heap().
constexpr std::size_t kLargeFile = 256 * 1024;

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

std::string joined(const std::vector<std::string>& lines) {
    std::string out;
    for (const auto& l : lines) out += (out.empty() ? "" : "\n") + l;
    return out;
}

std::vector<std::string> split_lines(const std::string& text) {
    std::vector<std::string> out;
    std::size_t start = 0;
    while (start < text.size()) {
        std::size_t end = text.find('\n', start);
        if (end == std::string::npos) end = text.size();
        out.push_back(text.substr(start, end - start));
        start = end + 1;
    }
    return out;
}

// ValidateConfigMapUpdate, ValidateSecretUpdate: a ConfigMap or Secret the
// file's version in force holds with `immutable: true` keeps its data and
// stays immutable (the API server refuses the update; removing it from the
// file and adding it back is a delete and a create, which it takes).
std::vector<std::string> immutable_changes(const ConfigObjects& held, const LoadedManifest& m,
                                           const std::string& path) {
    std::vector<std::string> out;
    auto check = [&](const ManifestObject& o, bool immutable, bool was_immutable, bool same_data,
                     bool same_binary) {
        if (!was_immutable) return;
        for (auto [field, same] : {std::pair{"immutable", immutable}, std::pair{"data", same_data},
                                   std::pair{"binaryData", same_binary}})
            if (!same)
                out.push_back(path + ": " + o.where + ": " + describe_object(o) + ": " + field +
                              ": Forbidden: field is immutable when `immutable` is set");
    };
    for (const auto& o : m.objects) {
        if (const auto* cm = std::get_if<ConfigMap>(&o.object)) {
            auto it = held.config_maps.find({cm->metadata.namespace_, cm->metadata.name});
            if (it != held.config_maps.end())
                check(o, cm->immutable, it->second->immutable, cm->data == it->second->data,
                      cm->binary_data == it->second->binary_data);
        } else if (const auto* sec = std::get_if<Secret>(&o.object)) {
            auto it = held.secrets.find({sec->metadata.namespace_, sec->metadata.name});
            if (it != held.secrets.end())
                check(o, sec->immutable, it->second->immutable, sec->data == it->second->data, true);
        }
    }
    return out;
}

}  // namespace

std::string meta_string(const Json& o, const char* key) {
    if (!o.contains("metadata") || !o["metadata"].is_object()) return {};
    const Json& m = o["metadata"];
    return m.contains(key) && m[key].is_string() ? m[key].get<std::string>() : std::string();
}

Sources::Sources(store::Store& store, const platform::Clock& clock, ApiOverridden api_overridden)
    : store_(store), clock_(clock), api_overridden_(std::move(api_overridden)) {}

void Sources::take_version(FileState& fs, LoadedManifest&& m, const std::string& path) {
    fs.good.clear();
    fs.pods.clear();
    fs.config = ConfigObjects{};
    std::string unused;
    std::size_t unused_count = 0;
    for (auto& o : m.objects) {
        if (auto* ds = std::get_if<DaemonSet>(&o.object)) {
            fs.good.push_back(std::make_shared<const DaemonSet>(std::move(*ds)));
        } else if (auto* cm = std::get_if<ConfigMap>(&o.object)) {
            // A later document of the same name replaces an earlier one, as
            // `kubectl apply -f` leaves the last one in the cluster.
            auto key = std::make_pair(cm->metadata.namespace_, cm->metadata.name);
            // Pods read `data` and `binaryData`; the document as read is
            // not kept: it held every value a second time (3 MiB for a
            // file of three ConfigMaps at upstream's 1 MiB, copied again
            // into the merged objects).
            cm->object = Json();
            fs.config.config_maps.insert_or_assign(key, std::make_shared<const ConfigMap>(std::move(*cm)));
        } else if (auto* secret = std::get_if<Secret>(&o.object)) {
            secret->object = Json();  // redacted already; not read either
            auto key = std::make_pair(secret->metadata.namespace_, secret->metadata.name);
            fs.config.secrets.insert_or_assign(key, std::make_shared<const Secret>(std::move(*secret)));
        } else if (std::holds_alternative<Node>(o.object)) {
            log(Level::Warning, path + ": " + o.where +
                                    ": a Node in the manifest directory is ignored; "
                                    "the node comes from the configuration");
        } else if (auto* pod = std::get_if<Pod>(&o.object)) {
            fs.pods.push_back(std::make_shared<const Pod>(std::move(*pod)));
        } else {
            ++unused_count;
            unused += (unused.empty() ? "" : ", ") + describe_object(o);
        }
    }
    // Once per file version: at the start that loads it from the store, or
    // when the file changed to it.
    if (!unused.empty())
        log(Level::Info, path + ": " + std::to_string(unused_count) +
                             (unused_count == 1 ? " object" : " objects") +
                             " not used on a board: " + unused);
    if (!fs.config.config_maps.empty() || !fs.config.secrets.empty())
        log(Level::Info, path + ": " + std::to_string(fs.config.config_maps.size()) + " ConfigMaps and " +
                             std::to_string(fs.config.secrets.size()) + " Secrets for pods");
}

namespace {

bool same_meta(const ObjectMeta& a, const ObjectMeta& b) {
    return a.labels == b.labels && a.annotations == b.annotations && a.uid == b.uid;
}

bool same_config(const ConfigObjects& a, const ConfigObjects& b) {
    // The same object (shared) is the same; another is compared by value.
    auto same_cm = [](const auto& x, const auto& y) {
        const ConfigMap &p = *x.second, &q = *y.second;
        return x.first == y.first &&
               (x.second == y.second || (p.data == q.data && p.binary_data == q.binary_data &&
                                         p.immutable == q.immutable && same_meta(p.metadata, q.metadata)));
    };
    auto same_secret = [](const auto& x, const auto& y) {
        const Secret &p = *x.second, &q = *y.second;
        return x.first == y.first &&
               (x.second == y.second || (p.data == q.data && p.type == q.type && p.immutable == q.immutable &&
                                         same_meta(p.metadata, q.metadata)));
    };
    return std::equal(a.config_maps.begin(), a.config_maps.end(), b.config_maps.begin(), b.config_maps.end(),
                      same_cm) &&
           std::equal(a.secrets.begin(), a.secrets.end(), b.secrets.begin(), b.secrets.end(), same_secret);
}

}  // namespace

bool Sources::merge_config_objects() {
    ConfigObjects merged;
    std::map<std::pair<std::string, std::string>, std::string> from;
    // files_ is ordered by path: the first file to define a name keeps it.
    auto take = [&](const char* kind, const std::string& path, const auto& objects, auto& into) {
        for (const auto& [key, object] : objects) {
            auto where = std::make_pair(std::string(kind), key.first + "/" + key.second);
            auto [it, fresh] = from.emplace(where, path);
            if (fresh) {
                into.emplace(key, object);  // shared, not copied
                continue;
            }
            if (reported_conflicts_.insert(where.first + " " + where.second + "|" + it->second + "|" + path)
                    .second)
                log(Level::Warning, std::string(kind) + " " + where.second + " is defined in both " +
                                        it->second + " and " + path + "; using " + it->second +
                                        " (its path sorts first)");
        }
    };
    for (const auto& [path, fs] : files_) {
        take("ConfigMap", path, fs.config.config_maps, merged.config_maps);
        take("Secret", path, fs.config.secrets, merged.secrets);
    }
    config_from_ = std::move(from);
    if (same_config(merged, config_objects_)) return false;
    config_objects_ = std::move(merged);
    return true;
}

void Sources::load(const ApiServerConfig& api) {
    auto files = store_.list_manifest_files();
    if (!files.ok()) log(Level::Err, "store: " + files.error().message);
    for (const auto& row : files.ok() ? files.value() : std::vector<store::StoredManifestFile>{}) {
        FileState& fs = files_[row.path];
        if (!row.good_content.empty()) {
            LoadedManifest m = load_manifest(row.good_content, row.path, ManifestLimits{});
            if (m.errors.empty()) {
                take_version(fs, std::move(m), row.path);
                fs.good_text = row.good_content;
            } else {
                log(Level::Warning, row.path + ": its stored last good version no longer loads; dropped");
            }
        }
        fs.content_hash = fnv1a64(fs.good_text);
        if (row.broken) fs.errors = split_lines(row.error);
        if (row.broken && fs.errors.empty()) fs.errors = {row.path + ": broken"};
    }
    (void)merge_config_objects();

    auto rows = store_.list_api_daemonsets();
    if (!rows.ok()) {
        log(Level::Err, "store: " + rows.error().message);
        return;
    }
    // Rows of namespaces no longer followed go, and so does a row that no
    // longer loads (a stricter check since it was written): left, nothing
    // would ever delete it, and every start would log it again.
    std::set<std::pair<std::string, std::string>> gone;
    for (const auto& row : rows.value()) {
        if (!api.enabled || !api.follows(row.namespace_)) {
            gone.emplace(row.namespace_, row.name);
            continue;
        }
        const std::string key = row.namespace_ + "/" + row.name;
        LoadedManifest m = load_manifest(row.object_json, "cached DaemonSet " + key);
        for (auto& o : m.objects)
            if (auto* ds = std::get_if<DaemonSet>(&o.object)) {
                const std::string uid = ds->metadata.uid;
                api_[key] = ApiObject{std::make_shared<const DaemonSet>(std::move(*ds)), {}, uid};
            }
        for (const auto& e : m.errors) log(Level::Err, e.to_string());
        if (!api_.count(key)) {
            log(Level::Warning,
                "cached DaemonSet " + key + " no longer loads; dropped until the API server lists it");
            gone.emplace(row.namespace_, row.name);
        }
    }
    save_api(gone);
    if (!api_.empty())
        log(Level::Info, std::to_string(api_.size()) + " DaemonSets from the API server's cache");
}

void Sources::save_api(const std::set<std::pair<std::string, std::string>>& names) {
    if (names.empty()) return;
    auto tx = store_.begin();  // one commit for a list's worth of changes
    if (!tx.ok()) {
        log(Level::Err, "store: " + tx.error().message);
        return;
    }
    for (const auto& [ns, name] : names) {
        auto it = api_.find(ns + "/" + name);
        auto w = it == api_.end() ? store_.delete_api_daemonset(ns, name)
                                  : store_.put_api_daemonset({ns, name, it->second.object->object.dump()});
        if (!w.ok()) log(Level::Err, "store: " + w.error().message);
    }
    if (auto st = tx.value()->commit(); !st.ok()) log(Level::Err, "store: " + st.error().message);
}

void Sources::save(const std::string& path, FileState& fs) {
    // The text (up to 3 MiB) is lent to the row and taken back, not copied.
    store::StoredManifestFile row{path, std::move(fs.good_text), !fs.errors.empty(), joined(fs.errors),
                                  clock_.wall_ms()};
    auto w = store_.put_manifest_file(row);
    fs.good_text = std::move(row.good_content);
    if (!w.ok()) log(Level::Err, "store: " + w.error().message);
}

void Sources::forget(const std::string& path) {
    if (auto w = store_.delete_manifest_file(path); !w.ok()) log(Level::Err, "store: " + w.error().message);
}

Sources::Changes Sources::rescan(const std::string& dir) {
    std::string list_error;
    auto entries = platform::list_manifest_files(dir, &list_error);
    if (!list_error.empty() && files_.empty()) {
        // Logged once per state: an absent directory is normal on a fresh board.
        if (list_error_ != list_error) log(Level::Warning, "manifest directory: " + list_error);
        list_error_ = list_error;
    }
    bool changed = false;
    bool large = false;  // a file this large leaves free heap worth returning
    std::set<std::string> seen;
    for (const auto& e : entries) {
        seen.insert(e.path);
        FileState& fs = files_[e.path];
        if (fs.mtime_ns == e.mtime_ns && fs.size == e.size) continue;
        fs.mtime_ns = e.mtime_ns;
        fs.size = e.size;
        ManifestLimits limits;
        auto data = platform::read_file(e.path, limits.max_bytes);
        if (!data.ok()) {
            fs.errors = {data.error().message};
            log(Level::Err, data.error().message + (in_force(fs) ? "; keeping its last good version" : ""));
            save(e.path, fs);
            continue;
        }
        large = large || data.value().size() >= kLargeFile;
        std::uint64_t h = fnv1a64(data.value());
        if (h == fs.content_hash && fs.errors.empty()) continue;  // touched, not changed
        fs.content_hash = h;
        LoadedManifest m = load_manifest(data.value(), e.path, limits);
        for (const auto& w : m.warnings) log(Level::Warning, w);
        std::vector<std::string> errors;
        for (const auto& err : m.errors) errors.push_back(err.to_string());
        if (errors.empty()) errors = immutable_changes(fs.config, m, e.path);
        if (!errors.empty()) {
            fs.errors = std::move(errors);
            for (const auto& err : fs.errors) log(Level::Err, err, {{"DAEMONLET_FILE", e.path}});
            if (in_force(fs))
                log(Level::Warning, e.path + ": keeping its last good version in force until it is fixed");
            save(e.path, fs);
            continue;
        }
        const bool was_broken = !fs.errors.empty();
        fs.errors.clear();
        if (!fs.good_text.empty() && fs.good_text == data.value()) {
            // Fixed back to the version in force: nothing else changes.
            if (was_broken) log(Level::Notice, e.path + ": loads again; it is the version in force");
            save(e.path, fs);
            continue;
        }
        take_version(fs, std::move(m), e.path);
        fs.good_text = std::move(data).value();  // up to 3 MiB: not copied
        save(e.path, fs);
        changed = true;
    }
    for (auto it = files_.begin(); it != files_.end();) {
        if (!seen.count(it->first)) {
            log(Level::Notice, it->first + ": removed; its DaemonSets and static pods go");
            large = large || it->second.size >= static_cast<std::int64_t>(kLargeFile);
            forget(it->first);
            it = files_.erase(it);
            changed = true;
        } else {
            ++it;
        }
    }
    Changes out;
    out.daemonsets = changed;
    if (changed) out.config_objects = merge_config_objects();
    // A large file's text, its parsed tree and what loading it made, or a
    // removed large file's objects (and the merged set's last version),
    // are freed by now; glibc keeps that memory unless told
    // (system_info.h): an API list page after it would not find it.
    if (large) platform::return_free_heap();
    return out;
}

bool Sources::apply_api(const std::string& scope, ReflectorChanges&& ch) {
    std::set<std::pair<std::string, std::string>> changed;  // stored once the changes are applied
    std::set<std::string> present;
    for (const Json& o : ch.objects) {
        const std::string ns = meta_string(o, "namespace"), name = meta_string(o, "name");
        const std::string key = ns + "/" + name;
        present.insert(key);
        std::string text = normalized(o);
        auto it = api_.find(key);
        if (it != api_.end() && it->second.normalized == text) continue;  // status or bookkeeping only
        LoadedManifest m = load_manifest(text, "API server DaemonSet " + key);
        const DaemonSet* ds = nullptr;
        for (auto& mo : m.objects) ds = std::get_if<DaemonSet>(&mo.object);
        if (!m.errors.empty() || !ds) {
            for (const auto& e : m.errors) log(Level::Err, e.to_string());
            if (it != api_.end()) {
                log(Level::Warning,
                    "API server DaemonSet " + key + ": keeping its last good version in force");
                it->second.normalized = text;  // reported once per version
            }
            continue;
        }
        if (it != api_.end() && it->second.object->object == ds->object) {
            it->second.normalized = text;  // the same object (the cache's, after a boot)
            continue;
        }
        log(Level::Info,
            std::string("API server: DaemonSet ") + key + (it == api_.end() ? " added" : " changed"));
        api_[key] = ApiObject{std::make_shared<const DaemonSet>(*ds), text, ds->metadata.uid};
        changed.emplace(ns, name);
    }
    auto drop = [&](const std::string& key, const char* why) {
        auto it = api_.find(key);
        if (it == api_.end()) return;
        changed.emplace(it->second.object->metadata.namespace_, it->second.object->metadata.name);
        api_.erase(it);
        log(Level::Notice, "API server: DaemonSet " + key + " " + why);
    };
    if (ch.replace) {
        // A complete list: what it does not have is gone from the cluster.
        std::vector<std::string> gone;
        for (const auto& [key, a] : api_)
            if ((scope.empty() || a.object->metadata.namespace_ == scope) && !present.count(key))
                gone.push_back(key);
        for (const auto& key : gone) drop(key, "is no longer in the cluster (a complete list)");
    }
    for (const Json& o : ch.deleted)
        drop(meta_string(o, "namespace") + "/" + meta_string(o, "name"), "deleted");
    save_api(changed);
    return !changed.empty();
}

void Sources::keep_followed(const ApiServerConfig& api) {
    std::set<std::pair<std::string, std::string>> gone;
    std::erase_if(api_, [&](const auto& kv) {
        const ObjectMeta& md = kv.second.object->metadata;
        if (api.enabled && api.follows(md.namespace_)) return false;
        gone.emplace(md.namespace_, md.name);
        return true;
    });
    save_api(gone);
}

std::map<std::string, SourcedDaemonSet> Sources::merge(const std::string& node_name) {
    std::vector<SourceCandidate> candidates;
    std::vector<std::shared_ptr<const DaemonSet>> objects;
    for (const auto& [path, fs] : files_)
        for (const auto& ds : fs.good) {
            candidates.push_back(
                {ds->metadata.namespace_ + "/" + ds->metadata.name, DaemonSetSource::file(path)});
            objects.push_back(ds);
        }
    for (const auto& [key, a] : api_) {
        candidates.push_back({key, DaemonSetSource::api_server()});
        objects.push_back(a.object);
    }
    SourceMerge merged = merge_sources(candidates);
    for (const SourceConflict& c : merged.conflicts) {
        if (!c.loser.from_api()) {
            if (reported_conflicts_.insert(c.key + "|" + c.winner.path + "|" + c.loser.path).second)
                log(Level::Warning, "DaemonSet " + c.key + " is defined in both " + c.winner.describe() +
                                        " and " + c.loser.describe() + "; using " + c.winner.describe() +
                                        " (its path sorts first)");
            continue;
        }
        if (!reported_conflicts_.insert(c.key + "|api|" + c.winner.path).second) continue;
        const std::string msg = "DaemonSet " + c.key + " is also defined by the manifest file " +
                                c.winner.describe() + " on node " + node_name + "; the local file wins";
        log(Level::Warning, msg);
        if (api_overridden_) api_overridden_(*api_.at(c.key).object, msg);
    }
    std::map<std::string, SourcedDaemonSet> out;
    for (const auto& [key, i] : merged.winners)
        out.emplace(key, SourcedDaemonSet{objects[i], candidates[i].source});
    return out;
}

std::vector<Sources::FilePod> Sources::static_pods() const {
    std::vector<FilePod> out;
    for (const auto& [path, fs] : files_)
        for (const auto& pod : fs.pods) out.push_back({pod, path});
    return out;
}

std::shared_ptr<const DaemonSet> Sources::file_daemonset(const std::string& path, const std::string& ns,
                                                         const std::string& name) const {
    auto f = files_.find(path);
    if (f == files_.end()) return nullptr;
    for (const auto& ds : f->second.good)
        if (ds->metadata.namespace_ == ns && ds->metadata.name == name) return ds;
    return nullptr;
}

Json Sources::status() const {
    Json broken = Json::array();
    for (const auto& [path, fs] : files_)
        if (!fs.errors.empty())
            broken.push_back({{"path", path}, {"errors", fs.errors}, {"lastGoodInForce", in_force(fs)}});
    return Json{{"files", files_.size()}, {"broken", broken}};
}

Json Sources::config_status() const {
    auto file_of = [&](const char* kind, const std::pair<std::string, std::string>& key) {
        auto it = config_from_.find({kind, key.first + "/" + key.second});
        return it == config_from_.end() ? std::string() : it->second;
    };
    Json maps = Json::array(), secrets = Json::array();
    for (const auto& [key, cm] : config_objects_.config_maps)
        maps.push_back({{"namespace", key.first},
                        {"name", key.second},
                        {"keys", cm->data.size() + cm->binary_data.size()},
                        {"file", file_of("ConfigMap", key)}});
    for (const auto& [key, s] : config_objects_.secrets)
        secrets.push_back({{"namespace", key.first},
                           {"name", key.second},
                           {"type", s->type},
                           {"keys", s->data.size()},
                           {"file", file_of("Secret", key)}});
    return Json{{"configMaps", maps}, {"secrets", secrets}};
}

}  // namespace daemonlet::agent
