// TokenRequests, kube-root-ca.crt and the admitted spec (api_access.h).
#include "agent/daemon/api_access.h"

#include <algorithm>
#include <cstdint>

#include "agent/daemon/sources.h"
#include "core/json_parse.h"
#include "platform/log.h"

namespace daemonlet::agent {

using platform::Level;
using platform::log;

namespace {

constexpr const char* kTokensMeta = "api.serviceAccountTokens";  // tokens and CAs, for an offline boot
constexpr std::int64_t kFirstRetryMs = 5'000;
constexpr std::int64_t kMaxRetryMs = 120'000;
constexpr std::int64_t kWallRecheckMs = 60'000;
constexpr std::int64_t kObjectSweepMs = 60'000;
std::string describe(const TokenRequestKey& k) {
    return "service account " + k.namespace_ + "/" + k.service_account +
           (k.audience.empty() ? std::string() : " (audience " + k.audience + ")") +
           (k.bound.empty() ? std::string() : " bound to pod " + k.bound.name + " (uid " + k.bound.uid + ")");
}
Json bound_json(const BoundPod& b) { return Json{{"name", b.name}, {"uid", b.uid}}; }
BoundPod bound_of(const Json& j) {
    if (!j.is_object()) return {};
    return BoundPod{j.value("name", ""), j.value("uid", "")};
}

}  // namespace

ApiAccess::ApiAccess(uv_loop_t* loop, store::Store& store, const platform::Clock& clock,
                     std::function<void()> changed)
    : loop_(loop), store_(store), clock_(clock), changed_(std::move(changed)) {
    timer_ = new uv_timer_t;
    uv_timer_init(loop_, timer_);
    timer_->data = this;
}

ApiAccess::~ApiAccess() = default;

void ApiAccess::close() {
    if (!timer_) return;
    uv_close(reinterpret_cast<uv_handle_t*>(timer_),
             [](uv_handle_t* h) { delete reinterpret_cast<uv_timer_t*>(h); });
    timer_ = nullptr;
    link_ = nullptr;
}

void ApiAccess::load() {
    struct Done {
        bool& flag;
        ~Done() { flag = true; }
    } done{loaded_};
    auto saved = store_.get_meta(kTokensMeta);
    if (!saved.ok()) {
        log(Level::Warning, "store: " + saved.error().message);
        return;
    }
    if (!saved.value() || saved.value()->empty()) return;
    saved_ = *saved.value();
    Json j = parse_json(saved_);
    if (!j.is_object()) return;
    if (j.contains("tokens") && j["tokens"].is_array())
        for (const Json& t : j["tokens"]) {
            if (!t.is_object()) continue;
            TokenRequestKey k{t.value("namespace", ""), t.value("serviceAccount", ""),
                              t.value("audience", ""),
                              t.value("requestedExpirationSeconds", std::int64_t{3600}),
                              bound_of(t.contains("boundPod") ? t["boundPod"] : Json())};
            ServiceAccountToken tok{t.value("token", ""), t.value("expirationSeconds", std::int64_t{0}),
                                    t.value("expirationMs", std::int64_t{0})};
            if (k.namespace_.empty() || tok.token.empty()) continue;
            tokens_[k].token = std::move(tok);
        }
    if (j.contains("objects") && j["objects"].is_array())
        for (const Json& o : j["objects"]) {
            if (!o.is_object() || !o.contains("object")) continue;
            const Json& obj = o["object"];
            ObjectRef ref{o.value("secret", false), meta_string(obj, "namespace"), meta_string(obj, "name")};
            if (ref.namespace_.empty() || ref.name.empty()) continue;
            if (take_object(ref, obj)) cluster_objects_[ref].object = obj;
        }
    if (j.contains("podBindings") && j["podBindings"].is_object())
        for (auto it = j["podBindings"].begin(); it != j["podBindings"].end(); ++it)
            if (it->is_object())
                bindings_[it.key()] = {bound_of(it->contains("current") ? (*it)["current"] : Json()),
                                       bound_of(it->contains("previous") ? (*it)["previous"] : Json())};
    if (j.contains("rootCAs") && j["rootCAs"].is_object())
        for (auto it = j["rootCAs"].begin(); it != j["rootCAs"].end(); ++it)
            if (it->is_object()) set_root_ca(it.key(), it->value("pem", ""), it->value("fromCluster", false));
}

void ApiAccess::save() {
    Json tokens = Json::array();
    for (const auto& [k, e] : tokens_) {
        if (!e.token) continue;
        Json t = {{"namespace", k.namespace_},
                  {"serviceAccount", k.service_account},
                  {"audience", k.audience},
                  {"requestedExpirationSeconds", k.expiration_seconds},
                  {"token", e.token->token},
                  {"expirationSeconds", e.token->expiration_seconds},
                  {"expirationMs", e.token->expiration_ms}};
        if (!k.bound.empty()) t["boundPod"] = bound_json(k.bound);
        tokens.push_back(std::move(t));
    }
    Json bindings = Json::object();
    for (const auto& [uid, b] : bindings_)
        bindings[uid] = {{"current", bound_json(b.current)}, {"previous", bound_json(b.previous)}};
    Json cas = Json::object();
    for (const auto& [key, cm] : objects_.config_maps) {
        // Only kube-root-ca.crt: a referenced ConfigMap of the cluster with
        // a ca.crt key (my-ca) is kept with the objects, not as the CA.
        if (key.second != kRootCAConfigMap) continue;
        auto it = cm->data.find(kRootCAKey);
        if (it == cm->data.end()) continue;
        cas[key.first] = {{"pem", it->second}, {"fromCluster", ca_from_cluster_[key.first]}};
    }
    Json objects = Json::array();
    for (const auto& [ref, e] : cluster_objects_)
        if (!e.object.is_null()) objects.push_back({{"secret", ref.secret}, {"object", e.object}});
    Json all{{"tokens", tokens}, {"rootCAs", cas}, {"objects", objects}};
    if (!bindings.empty()) all["podBindings"] = std::move(bindings);
    std::string text = all.dump();
    if (text == saved_) return;  // flash: write only what changed
    if (auto w = store_.put_meta(kTokensMeta, text); !w.ok()) {
        log(Level::Warning, "store: service-account tokens: " + w.error().message);
        return;
    }
    saved_ = std::move(text);
}

void ApiAccess::set_link(ClusterLink* link, std::string why_not) {
    link_ = link;
    why_no_link_ = std::move(why_not);
    for (auto& [k, e] : tokens_) e.inflight = false;  // the old link's requests are abandoned
    ca_watches_.clear();
    // The old link's watches went with it; the objects in use (those of
    // the last run, at a boot) are watched on the new one, as are the CAs
    // of the namespaces with a token (sync_root_ca_watches's, which stops
    // them with the tokens; a stored CA alone is no reason to watch).
    for (auto& [r, e] : cluster_objects_) e.watch = 0;
    for (auto& [r, e] : cluster_objects_) watch_object(r, e);
    if (link_) {
        // Namespaces with no CA from the cluster yet: the kubeconfig's, until read.
        for (auto& [key, cm] : objects_.config_maps)
            if (key.second == kRootCAConfigMap && !ca_from_cluster_[key.first] && !link_->ca_pem().empty())
                set_root_ca(key.first, link_->ca_pem(), false);
        for (const auto& [k, e] : tokens_) watch_root_ca(k.namespace_);
    }
    arm();
}

std::set<TokenRequestKey> ApiAccess::keys_of(const std::string& ns, const PodSpec& spec) {
    std::set<TokenRequestKey> out;
    const std::string sa = spec.service_account_name.empty() ? "default" : spec.service_account_name;
    for (const auto& v : spec.volumes)
        if (v.source == Volume::Source::Projected)
            for (const auto& p : v.projections)
                if (p.service_account_token)
                    out.insert({ns, sa, p.service_account_token->audience,
                                p.service_account_token->expiration_seconds.value_or(3600), BoundPod{}});
    return out;
}

std::vector<TokenRequestKey> ApiAccess::lookup_keys(const std::string& pod_uid,
                                                    const TokenRequestKey& key) const {
    auto b = bindings_.find(pod_uid);
    return token_lookup_keys(key, b == bindings_.end() ? PodTokenBinding{} : b->second, bind_pods_);
}

const ServiceAccountToken* ApiAccess::issued(const TokenRequestKey& key) const {
    auto it = tokens_.find(key);
    return it != tokens_.end() && it->second.token ? &*it->second.token : nullptr;
}

bool ApiAccess::bind(const std::string& pod_uid, const BoundPod& pod) {
    PodTokenBinding& b = bindings_[pod_uid];
    const bool current_issued =
        !b.current.empty() && std::any_of(tokens_.begin(), tokens_.end(), [&](const auto& t) {
            return t.first.bound == b.current && t.second.token;
        });
    if (!rebind_pod_tokens(b, pod, current_issued)) return false;
    log(Level::Info, "pod uid " + pod_uid + ": its service-account tokens are bound to the Pod " + pod.name +
                         " (uid " + pod.uid + ") from now on");
    save();
    return true;
}

std::set<TokenRequestKey> ApiAccess::wanted_keys(const std::string& pod_uid,
                                                 const std::set<TokenRequestKey>& keys) const {
    std::set<TokenRequestKey> out;
    for (const auto& k : keys) {
        const auto lookup = lookup_keys(pod_uid, k);
        out.insert(lookup.front());
        // The token it replaces stays mounted, and refreshed, until the new
        // one is issued.
        if (lookup.size() > 1 && !issued(lookup.front()) && issued(lookup[1])) out.insert(lookup[1]);
    }
    return out;
}

void ApiAccess::need(const std::string& pod_uid, const std::set<TokenRequestKey>& unbound) {
    bool any = false;
    for (const auto& u : unbound) {
        const TokenRequestKey k = lookup_keys(pod_uid, u).front();
        Entry& e = tokens_[k];
        if (!objects_.config_map(k.namespace_, kRootCAConfigMap)) {
            if (link_ && !link_->ca_pem().empty()) set_root_ca(k.namespace_, link_->ca_pem(), false);
        }
        watch_root_ca(k.namespace_);
        if (e.token && !token_requires_refresh(*e.token, clock_.wall_ms(), 0)) continue;
        if (e.retry_at_ms > clock_.monotonic_ms()) continue;
        fetch(k, e);
        any = true;
    }
    if (any) arm();
}

Result<std::string> ApiAccess::token(const std::string& pod_uid, const TokenRequestKey& unbound) const {
    const auto keys = lookup_keys(pod_uid, unbound);
    for (const auto& k : keys)
        if (const ServiceAccountToken* t = issued(k)) return t->token;
    auto it = tokens_.find(keys.front());
    std::string why = it == tokens_.end() || it->second.last_error.empty()
                          ? (link_ ? std::string("waiting for the API server's answer") : why_no_link_)
                          : it->second.last_error;
    return Error{ErrorCode::NotFound, "failed to fetch token: " + why};
}

void ApiAccess::fetch(const TokenRequestKey& key, Entry& e) {
    const std::int64_t now = clock_.monotonic_ms();
    if (e.inflight && now - e.inflight_since_ms < kInflightMaxMs) return;
    e.inflight = false;
    if (!link_) {
        e.last_error = why_no_link_;
        e.retry_at_ms = now + kMaxRetryMs;  // asked again only as rarely as a failure would be
        return;
    }
    const std::string target =
        "/api/v1/namespaces/" + key.namespace_ + "/serviceaccounts/" + key.service_account + "/token";
    e.inflight = link_->call("POST", target, token_request_object(key).dump(),
                             [this, key](Result<platform::HttpResponse> r) { on_token(key, std::move(r)); });
    if (e.inflight) {
        e.inflight_since_ms = now;
        ++e.fetches;
    }
}

void ApiAccess::on_token(const TokenRequestKey& key, Result<platform::HttpResponse> r) {
    if (!key.bound.empty() && std::none_of(bindings_.begin(), bindings_.end(), [&](const auto& b) {
            return b.second.current == key.bound || b.second.previous == key.bound;
        })) {
        // Asked for a pod forgotten since (forget): dropped, not kept.
        tokens_.erase(key);
        return;
    }
    Entry& e = tokens_[key];
    e.inflight = false;
    std::string error;
    if (!r.ok()) {
        error = r.error().message;
    } else if (r.value().status != 200 && r.value().status != 201) {
        error = describe_status(r.value().status, r.value().body);
        if (r.value().status == 403)
            error += " (check the RBAC in dist/rbac.yaml: serviceaccounts/token create)";
        else if (!key.bound.empty() && (r.value().status == 404 || r.value().status == 409))
            error += " (the pod's Pod is gone or made again: its new Pod gets a new token)";
    } else {
        auto t = parse_token_request(parse_json(r.value().body));
        if (!t)
            error = t.error().message;
        else {
            const bool fresh = !e.token;
            e.token = std::move(t.value());
            e.last_error.clear();
            e.retry_at_ms = 0;
            e.backoff_ms = 0;
            log(Level::Info, describe(key) + ": token " + (fresh ? "issued" : "refreshed") + ", expires " +
                                 rfc3339(e.token->expiration_ms));
            if (token_requires_refresh(*e.token, clock_.wall_ms(), 0)) {
                // Due as soon as issued: the board's clock runs ahead of the
                // server's. Asked again as a failure would be, not at once.
                e.retry_at_ms = clock_.monotonic_ms() + kMaxRetryMs;
                log(Level::Warning, describe(key) +
                                        ": the token is due for a refresh as soon as issued (the "
                                        "board's clock reads " +
                                        rfc3339(clock_.wall_ms()) + "; is it ahead of the API server's?)");
            }
            save();
            arm();
            if (changed_) changed_();
            return;
        }
    }
    e.backoff_ms = e.backoff_ms ? std::min(kMaxRetryMs, e.backoff_ms * 2) : kFirstRetryMs;
    e.retry_at_ms = clock_.monotonic_ms() + e.backoff_ms;
    if (error != e.last_error)
        log(Level::Warning, describe(key) + ": TokenRequest failed: " + error +
                                (e.token ? "; the token in force stays mounted" : "; its pods wait") +
                                ", retrying with back-off");
    e.last_error = error;
    arm();
}

void ApiAccess::watch_root_ca(const std::string& ns) {
    if (!link_ || ca_watches_.count(ns)) return;
    const std::string what = std::string("configmap ") + ns + "/" + kRootCAConfigMap;
    ca_watches_[ns] = link_->watch(
        object_watch_target("/api/v1/namespaces/" + ns + "/configmaps", "ConfigMap", kRootCAConfigMap), what,
        [this, ns, what](ReflectorChanges&& ch) {
            ObjectWatchOutcome o = object_watch_outcome(std::move(ch), kRootCAConfigMap);
            if (o.kind == ObjectWatchOutcome::Kind::Nothing) return;
            std::string why = "not found";
            if (o.kind == ObjectWatchOutcome::Kind::Present) {
                const Json& cm = o.object;
                if (cm.contains("data") && cm["data"].is_object() && cm["data"].contains(kRootCAKey) &&
                    cm["data"][kRootCAKey].is_string()) {
                    set_root_ca(ns, cm["data"][kRootCAKey].get<std::string>(), true);
                    return;
                }
                why = "no data." + std::string(kRootCAKey);
            }
            if (ca_said_.insert(ns).second)
                log(Level::Notice,
                    what + ": not read (" + why + "); pods get " +
                        (ca_from_cluster_[ns] ? "the one read before" : "the kubeconfig's CA"));
        },
        [](const std::string&) {});  // the link logs a failure (once per distinct reason)
}

void ApiAccess::sync_root_ca_watches(const Wanted& wanted) {
    std::set<std::string> used;
    for (const auto& k : wanted.tokens) used.insert(k.namespace_);
    for (const auto& r : wanted.objects)
        if (!r.secret && r.name == kRootCAConfigMap) used.insert(r.namespace_);
    for (auto it = ca_watches_.begin(); it != ca_watches_.end();) {
        if (used.count(it->first)) {
            ++it;
            continue;
        }
        if (link_) link_->unwatch(it->second);
        it = ca_watches_.erase(it);
    }
    for (const auto& ns : used) watch_root_ca(ns);
}

void ApiAccess::set_root_ca(const std::string& ns, const std::string& pem, bool from_cluster) {
    if (pem.empty()) return;
    if (!from_cluster && ca_from_cluster_[ns] && objects_.config_map(ns, kRootCAConfigMap)) return;
    auto& slot = objects_.config_maps[{ns, kRootCAConfigMap}];
    ConfigMap cm = slot ? *slot : ConfigMap{};  // replaced, not changed in place (model.h)
    const bool same = cm.data[kRootCAKey] == pem && ca_from_cluster_[ns] == from_cluster;
    cm.metadata.namespace_ = ns;
    cm.metadata.name = kRootCAConfigMap;
    cm.data[kRootCAKey] = pem;
    slot = std::make_shared<const ConfigMap>(std::move(cm));
    ca_from_cluster_[ns] = from_cluster;
    if (same) return;
    save();
    // A token of the namespace on its way brings the volumes up to date
    // when it comes; until then a rewrite would only meet its absence.
    const bool token_coming = std::any_of(tokens_.begin(), tokens_.end(), [&](const auto& t) {
        return t.first.namespace_ == ns && t.second.inflight && !t.second.token;
    });
    if (changed_ && from_cluster && loaded_ && !token_coming) changed_();
}

// The token manager's periodic pass, for the keys the live pods use.
void ApiAccess::refresh() {
    const Wanted wanted = wanted_ ? wanted_() : Wanted{};
    const std::int64_t wall = clock_.wall_ms();
    const std::int64_t mono = clock_.monotonic_ms();
    // A key a pod wants that has no entry yet (its binding changed, or
    // podStatus was turned on or off): asked for in this pass.
    for (const auto& k : wanted.tokens) tokens_.try_emplace(k);
    for (auto it = tokens_.begin(); it != tokens_.end();) {
        Entry& e = it->second;
        if (!wanted.tokens.count(it->first)) {
            // cleanup(): a token no pod uses goes once expired (here: once
            // it would need a refresh, which nothing asks for any more).
            if (!e.inflight && (!e.token || token_requires_refresh(*e.token, wall, 0))) {
                it = tokens_.erase(it);
                continue;
            }
        } else if ((!e.token || token_requires_refresh(*e.token, wall, 0)) && e.retry_at_ms <= mono) {
            fetch(it->first, e);
        }
        ++it;
    }
    objects_sweep_due_ = false;
    sync_root_ca_watches(wanted);
    refresh_objects(wanted.objects);
    save();
    arm();
}

void ApiAccess::arm() {
    if (!timer_) return;
    const std::int64_t wall = clock_.wall_ms();
    const std::int64_t mono = clock_.monotonic_ms();
    std::int64_t delay = INT64_MAX;
    for (const auto& [k, e] : tokens_) {
        if (e.inflight) continue;
        if (e.retry_at_ms > mono) {
            delay = std::min(delay, e.retry_at_ms - mono);
        } else if (e.token) {
            const std::int64_t due = token_refresh_due_ms(*e.token, 0);
            if (due != INT64_MAX) delay = std::min(delay, due - wall + 1);
        } else if (link_) {
            delay = std::min(delay, kFirstRetryMs);
        }
    }
    // A token's due time is on the wall clock, the timer on the monotonic
    // one: looked at again each minute, so that a step of the wall clock
    // (NTP setting a board's clock) moves the refresh with it.
    if (!tokens_.empty()) delay = std::min(delay, kWallRecheckMs);
    // The objects no live pod uses any more are dropped by the same pass:
    // a second after a pod left, and each minute (pods adopted at a boot);
    // so are the CA watches (a pod that mounts kube-root-ca.crt without a
    // token).
    if (objects_sweep_due_)
        delay = std::min<std::int64_t>(delay, 1000);
    else if (!cluster_objects_.empty() || !ca_watches_.empty())
        delay = std::min(delay, kObjectSweepMs);
    if (delay == INT64_MAX) {
        uv_timer_stop(timer_);
        return;
    }
    // At least a second apart: a token due in the past (a board's clock
    // stepped) is asked for once per back-off, never in a loop.
    uv_timer_start(
        timer_, [](uv_timer_t* t) { static_cast<ApiAccess*>(t->data)->refresh(); },
        static_cast<std::uint64_t>(std::max<std::int64_t>(1000, delay)), 0);
}

std::shared_ptr<const PodSpec> ApiAccess::admitted(const std::string& uid,
                                                   const std::shared_ptr<const PodSpec>& spec,
                                                   bool automount) {
    if (!spec || !automount) return spec;
    auto it = admitted_.find(uid);
    if (it != admitted_.end() && it->second.source == spec) return it->second.spec;
    auto copy = std::make_shared<PodSpec>(*spec);
    if (!mount_service_account_token(*copy, api_access_volume_name(uid))) return spec;
    admitted_[uid] = {spec, copy};
    return copy;
}

Json ApiAccess::status() const {
    Json tokens = Json::array();
    for (const auto& [k, e] : tokens_) {
        Json t = {{"namespace", k.namespace_},
                  {"serviceAccount", k.service_account},
                  {"audience", k.audience},
                  {"expires", e.token ? rfc3339(e.token->expiration_ms) : std::string()},
                  {"requests", e.fetches},
                  {"lastError", e.last_error}};
        if (!k.bound.empty())
            t["boundObjectRef"] = {{"kind", "Pod"}, {"name", k.bound.name}, {"uid", k.bound.uid}};
        tokens.push_back(std::move(t));
    }
    Json objects = Json::array();
    for (const auto& [r, e] : cluster_objects_)
        objects.push_back({{"kind", r.secret ? "Secret" : "ConfigMap"},
                           {"namespace", r.namespace_},
                           {"name", r.name},
                           {"read", !e.object.is_null()},
                           {"watched", e.watch != 0},
                           {"immutable", e.immutable},
                           {"lastError", e.last_error}});
    Json cas = Json::object();
    for (const auto& [ns, from_cluster] : ca_from_cluster_) cas[ns] = from_cluster ? "cluster" : "kubeconfig";
    return Json{{"serviceAccountTokens", tokens}, {"objects", objects}, {"rootCAs", cas}};
}

void ApiAccess::forget(const std::string& uid) {
    admitted_.erase(uid);
    said_no_cluster_.erase(uid);
    if (!cluster_objects_.empty() || !ca_watches_.empty()) {
        objects_sweep_due_ = true;
        arm();
    }
    auto b = bindings_.find(uid);
    if (b == bindings_.end()) return;
    // DeleteServiceAccountToken: the pod is gone, the tokens bound to its
    // Pods go with it (a request on its way is dropped when it answers:
    // on_token).
    const PodTokenBinding gone = b->second;
    bindings_.erase(b);
    std::erase_if(tokens_, [&](const auto& t) {
        return !t.first.bound.empty() && !t.second.inflight &&
               (t.first.bound == gone.current || t.first.bound == gone.previous);
    });
    save();
}

void ApiAccess::sweep(const std::set<std::string>& live) {
    std::vector<std::string> gone;
    for (const auto& [uid, b] : bindings_)
        if (!live.count(uid)) gone.push_back(uid);
    for (const auto& uid : gone) forget(uid);
    // A pass a second later watches the CAs and objects the adopted pods
    // use (set_link watches only the tokens' namespaces) and stops the rest.
    objects_sweep_due_ = true;
    arm();
}

}  // namespace daemonlet::agent
