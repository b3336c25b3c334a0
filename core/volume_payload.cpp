// Volume payloads after pkg/volume/configmap/configmap.go (MakePayload),
// pkg/volume/secret/secret.go (MakePayload), pkg/volume/downwardapi
// (CollectData) and pkg/volume/projected/projected.go (collectData).
#include "core/volume_payload.h"

#include <set>
#include <vector>

#include "core/security_context.h"
#include "core/service_account.h"

namespace daemonlet {
namespace {

// utilerrors.NewAggregate(errs).Error(): one message as is, several as
// "[a, b]" (duplicates once).
Error aggregate(const std::vector<Error>& errs) {
    if (errs.size() == 1) return errs.front();
    std::set<std::string> seen;
    std::string msg = "[";
    for (const auto& e : errs) {
        if (!seen.insert(e.message).second) continue;
        if (msg.size() > 1) msg += ", ";
        msg += e.message;
    }
    return Error{errs.front().code, msg + "]"};
}

// filepath.Clean for the relative paths validation lets through.
std::string clean_path(const std::string& p) {
    std::vector<std::string> parts;
    std::size_t i = 0;
    while (i <= p.size()) {
        std::size_t j = p.find('/', i);
        if (j == std::string::npos) j = p.size();
        std::string part = p.substr(i, j - i);
        if (part == "..") {
            if (!parts.empty() && parts.back() != "..")
                parts.pop_back();
            else
                parts.push_back(part);
        } else if (!part.empty() && part != ".") {
            parts.push_back(part);
        }
        i = j + 1;
    }
    std::string out;
    for (const auto& s : parts) out += (out.empty() ? "" : "/") + s;
    return out.empty() ? "." : out;
}

// MakePayload of configmap and secret: every key with defaultMode, or the
// listed items with their own mode. `binary` is a ConfigMap's binaryData
// (nullptr for a Secret, whose data is already bytes).
Result<VolumePayload> make_payload(const std::vector<KeyToPath>& items,
                                   const std::map<std::string, std::string>& data,
                                   const std::map<std::string, std::string>* binary,
                                   std::int32_t default_mode, bool optional,
                                   const char* missing_key_message) {
    VolumePayload out;
    if (items.empty()) {
        for (const auto& [k, v] : data) out[k] = {v, default_mode};
        if (binary)
            for (const auto& [k, v] : *binary) out[k] = {v, default_mode};
        return out;
    }
    for (const auto& ktp : items) {
        const std::string* value = nullptr;
        if (auto it = data.find(ktp.key); it != data.end())
            value = &it->second;
        else if (binary)
            if (auto b = binary->find(ktp.key); b != binary->end()) value = &b->second;
        if (!value) {
            if (optional) continue;
            return Error{ErrorCode::NotFound, std::string(missing_key_message) + ktp.key};
        }
        out[ktp.path] = {*value, ktp.mode.value_or(default_mode)};
    }
    return out;
}

Result<VolumePayload> config_map_payload(const std::string& name, const std::vector<KeyToPath>& items,
                                         std::optional<bool> optional_, std::int32_t mode,
                                         const PodFacts& pod) {
    bool optional = optional_.value_or(false);
    const ConfigMap* cm = find_config_map(pod, name);
    if (!cm) {
        if (!optional) return Error{ErrorCode::NotFound, "configmap \"" + name + "\" not found"};
        static const std::map<std::string, std::string> kEmpty;
        return make_payload(items, kEmpty, &kEmpty, mode, optional,
                            "configmap references non-existent config key: ");
    }
    return make_payload(items, cm->data, &cm->binary_data, mode, optional,
                        "configmap references non-existent config key: ");
}

Result<VolumePayload> secret_payload(const std::string& name, const std::vector<KeyToPath>& items,
                                     std::optional<bool> optional_, std::int32_t mode, const PodFacts& pod) {
    bool optional = optional_.value_or(false);
    const Secret* s = find_secret(pod, name);
    if (!s) {
        if (!optional) return Error{ErrorCode::NotFound, "secret \"" + name + "\" not found"};
        static const std::map<std::string, std::string> kEmpty;
        return make_payload(items, kEmpty, nullptr, mode, optional, "references non-existent secret key: ");
    }
    return make_payload(items, s->data, nullptr, mode, optional, "references non-existent secret key: ");
}

// downwardapi.CollectData: every item is written (an item whose value
// failed is still listed, empty), and the errors are aggregated.
Result<VolumePayload> downward_payload(const std::vector<DownwardAPIVolumeFile>& items, std::int32_t mode,
                                       const PodFacts& pod) {
    VolumePayload out;
    std::vector<Error> errs;
    static const Container kNoContainer;
    for (const auto& f : items) {
        FileProjection fp{{}, f.mode.value_or(mode)};
        if (f.field_ref) {
            auto v = extract_field_path(
                pod, f.field_ref->field_path == "spec.host" ? "spec.nodeName" : f.field_ref->field_path);
            if (v)
                fp.data = v.value();
            else
                errs.push_back(v.error());
        } else if (f.resource_field_ref) {
            auto v = container_resource_value(pod, *f.resource_field_ref, kNoContainer);
            if (v)
                fp.data = v.value();
            else
                errs.push_back(v.error());
        }
        out[clean_path(f.path)] = fp;
    }
    if (!errs.empty()) return aggregate(errs);
    return out;
}

// The projected plugin's serviceAccountToken source: the TokenRequest for
// the pod's service account, audience and expirationSeconds (defaulted to
// 3600, SetDefaults_ServiceAccountTokenProjection), bound to the pod's Pod
// by the source (token_lookup_keys), at its path as written.
Result<VolumePayload> token_payload(const ServiceAccountTokenProjection& p, std::int32_t mode,
                                    const PodFacts& pod) {
    TokenRequestKey key{pod.namespace_,
                        pod.service_account_name.empty() ? "default" : pod.service_account_name, p.audience,
                        p.expiration_seconds.value_or(3600), BoundPod{}};
    auto t = pod.tokens->token(pod.uid, key);
    if (!t && pod.start_without_token) return VolumePayload{};
    if (!t) return t.error();
    FileProjection f{std::move(t.value()), mode, std::nullopt};
    // collectData: 0600 when the file is one user's (FsUser) or the pod's
    // fsGroup's; SetVolumeOwnership adds the group's read for the latter.
    if (pod.spec) {
        f.fs_user = fs_user_from(*pod.spec);
        const bool fs_group = pod.spec->security_context && pod.spec->security_context->fs_group;
        if (f.fs_user || fs_group) f.mode = 0600;
    }
    return VolumePayload{{p.path, std::move(f)}};
}

void merge(VolumePayload& into, VolumePayload&& from) {
    for (auto& [k, v] : from) into[k] = std::move(v);
}

}  // namespace

bool has_payload(const Volume& v) {
    return v.source == Volume::Source::ConfigMap || v.source == Volume::Source::Secret ||
           v.source == Volume::Source::DownwardAPI || v.source == Volume::Source::Projected;
}

bool holds_secrets(const Volume& v) {
    if (v.source == Volume::Source::Secret) return true;
    if (v.source != Volume::Source::Projected) return false;
    for (const auto& s : v.projections)
        if (s.secret || s.service_account_token) return true;
    return false;
}

Result<VolumePayload> volume_payload(const Volume& v, const PodFacts& pod) {
    std::int32_t mode = v.default_mode.value_or(kDefaultVolumeFileMode);
    switch (v.source) {
    case Volume::Source::ConfigMap:
        return config_map_payload(v.config_map_name, v.items, v.optional, mode, pod);
    case Volume::Source::Secret: return secret_payload(v.secret_name, v.items, v.optional, mode, pod);
    case Volume::Source::DownwardAPI: return downward_payload(v.downward_api_items, mode, pod);
    case Volume::Source::Projected: break;
    default: return VolumePayload{};
    }
    // projected collectData: each source's payload merged in order, a
    // failing source skipped and its error aggregated.
    VolumePayload out;
    std::vector<Error> errs;
    for (const auto& s : v.projections) {
        Result<VolumePayload> part = VolumePayload{};
        if (s.secret)
            part = secret_payload(s.secret->name, s.secret->items, s.secret->optional, mode, pod);
        else if (s.config_map)
            // The cluster's CA, with start_without_token: as the token, not
            // there yet (a first boot offline, no CA in the kubeconfig)
            // projects nothing rather than holding the pod's start.
            part = config_map_payload(
                s.config_map->name, s.config_map->items,
                s.config_map->optional || (pod.start_without_token && s.config_map->name == kRootCAConfigMap),
                mode, pod);
        else if (s.downward_api)
            part = downward_payload(*s.downward_api, mode, pod);
        else if (s.service_account_token && pod.tokens)
            part = token_payload(*s.service_account_token, mode, pod);
        if (!part) {
            errs.push_back(part.error());
            continue;
        }
        merge(out, std::move(part.value()));
    }
    if (!errs.empty()) return aggregate(errs);
    return out;
}

std::uint32_t volume_ownership_mode(std::uint32_t mode, bool is_dir, bool read_only) {
    constexpr std::uint32_t kRwMask = 0660, kRoMask = 0440, kExecMask = 0110, kSetgid = 02000;
    std::uint32_t mask = read_only ? kRoMask : kRwMask;
    if (is_dir) mask |= kSetgid | kExecMask;
    return mode | mask;
}

}  // namespace daemonlet
