// After plugin/pkg/admission/serviceaccount/admission.go,
// pkg/kubelet/envvars/envvars.go and pkg/kubelet/token/token_manager.go.
#include "core/service_account.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>

namespace daemonlet {

Result<std::pair<std::string, int>> api_server_host_port(const std::string& server_url) {
    auto bad = [&](const char* why) {
        return Error{ErrorCode::Invalid, "API server URL \"" + server_url + "\": " + why};
    };
    std::string rest = server_url;
    int port = 443;
    if (auto s = rest.find("://"); s != std::string::npos) {
        if (rest.substr(0, s) == "http") port = 80;
        rest = rest.substr(s + 3);
    }
    rest = rest.substr(0, rest.find_first_of("/?#"));
    if (auto at = rest.rfind('@'); at != std::string::npos) rest = rest.substr(at + 1);
    std::string host = rest;
    std::string port_text;
    if (!rest.empty() && rest.front() == '[') {
        auto close = rest.find(']');
        if (close == std::string::npos) return bad("unclosed [ in the host");
        host = rest.substr(1, close - 1);
        if (close + 1 < rest.size()) {
            if (rest[close + 1] != ':') return bad("junk after the IPv6 address");
            port_text = rest.substr(close + 2);
        }
    } else if (auto colon = rest.find(':'); colon != std::string::npos) {
        host = rest.substr(0, colon);
        port_text = rest.substr(colon + 1);
    }
    if (host.empty()) return bad("no host");
    if (!port_text.empty()) {
        char* end = nullptr;
        long p = std::strtol(port_text.c_str(), &end, 10);
        if (*end != '\0' || p < 1 || p > 65535) return bad("the port is not a number from 1 to 65535");
        port = static_cast<int>(p);
    }
    return std::make_pair(host, port);
}

std::vector<std::pair<std::string, std::string>> kubernetes_service_env(const std::string& host, int port) {
    const std::string p = std::to_string(port);
    // net.JoinHostPort: an IPv6 address in brackets.
    const std::string host_port = (host.find(':') != std::string::npos ? "[" + host + "]" : host) + ":" + p;
    const std::string port_prefix = "KUBERNETES_PORT_" + p + "_TCP";
    std::vector<std::pair<std::string, std::string>> env = {
        {"KUBERNETES_SERVICE_HOST", host},
        {"KUBERNETES_SERVICE_PORT", p},
        // The Service's port is named "https".
        {"KUBERNETES_SERVICE_PORT_HTTPS", p},
        {"KUBERNETES_PORT", "tcp://" + host_port},
        {port_prefix, "tcp://" + host_port},
        {port_prefix + "_PROTO", "tcp"},
        {port_prefix + "_PORT", p},
        {port_prefix + "_ADDR", host},
    };
    std::sort(env.begin(), env.end());
    return env;
}

bool should_automount(const Json& ds) {
    const Json* v = &ds;
    for (const char* k : {"spec", "template", "spec", "automountServiceAccountToken"}) {
        if (!v->is_object() || !v->contains(k)) return true;
        v = &(*v)[k];
    }
    return !(v->is_boolean() && !v->get<bool>());
}

std::string api_access_volume_name(const std::string& pod_uid) {
    // utilrand.String's alphabet (no vowels, no confusable digits).
    static const char kAlphabet[] = "bcdfghjklmnpqrstvwxz2456789";
    std::uint64_t h = 1469598103934665603ULL;  // FNV-1a: stable across builds and machines
    for (unsigned char c : pod_uid) h = (h ^ c) * 1099511628211ULL;
    std::string out = kApiAccessVolumePrefix;
    for (int i = 0; i < 5; ++i) {
        out += kAlphabet[h % (sizeof kAlphabet - 1)];
        h /= (sizeof kAlphabet - 1);
    }
    return out;
}

Volume api_access_volume(const std::string& name) {
    Volume v;
    v.name = name;
    v.source = Volume::Source::Projected;
    v.default_mode = 0644;  // corev1.ProjectedVolumeSourceDefaultMode, set explicitly (#104464)
    VolumeProjection token;
    token.service_account_token =
        ServiceAccountTokenProjection{"", kApiAccessTokenExpirationSeconds, "token"};
    VolumeProjection ca;
    ca.config_map = KeyProjection{kRootCAConfigMap, {KeyToPath{kRootCAKey, kRootCAKey, std::nullopt}}, {}};
    VolumeProjection ns;
    ns.downward_api = std::vector<DownwardAPIVolumeFile>{
        DownwardAPIVolumeFile{"namespace", ObjectFieldSelector{"v1", "metadata.namespace"}, {}, {}}};
    v.projections = {token, ca, ns};
    v.raw =
        Json{{"name", name},
             {"projected",
              {{"defaultMode", 0644},
               {"sources",
                Json::array({{{"serviceAccountToken",
                               {{"expirationSeconds", kApiAccessTokenExpirationSeconds}, {"path", "token"}}}},
                             {{"configMap",
                               {{"name", kRootCAConfigMap},
                                {"items", Json::array({{{"key", kRootCAKey}, {"path", kRootCAKey}}})}}}},
                             {{"downwardAPI",
                               {{"items", Json::array({{{"path", "namespace"},
                                                        {"fieldRef",
                                                         {{"apiVersion", "v1"},
                                                          {"fieldPath", "metadata.namespace"}}}}})}}}}})}}}};
    return v;
}

bool mount_service_account_token(PodSpec& spec, const std::string& volume_name) {
    // An existing kube-api-access-* volume is the one to mount.
    std::string name = volume_name;
    bool has_volume = false;
    for (const auto& v : spec.volumes)
        if (v.name.rfind(kApiAccessVolumePrefix, 0) == 0) {
            name = v.name;
            has_volume = true;
            break;
        }
    bool needs_volume = false;
    auto add_mounts = [&](std::vector<Container>& containers) {
        for (auto& c : containers) {
            // A mount at the path already (the pod's own) prevents ours.
            bool taken =
                std::any_of(c.volume_mounts.begin(), c.volume_mounts.end(),
                            [](const VolumeMount& m) { return m.mount_path == kServiceAccountMountPath; });
            if (taken) continue;
            c.volume_mounts.push_back(VolumeMount{name, kServiceAccountMountPath, "", true, ""});
            needs_volume = true;
        }
    };
    add_mounts(spec.init_containers);
    add_mounts(spec.containers);
    if (!has_volume && needs_volume) spec.volumes.push_back(api_access_volume(name));
    return needs_volume;
}

Json token_request_object(const TokenRequestKey& key) {
    Json spec = {{"expirationSeconds", key.expiration_seconds}};
    if (!key.audience.empty()) spec["audiences"] = Json::array({key.audience});
    // projected.go collectData's BoundObjectReference.
    if (!key.bound.empty())
        spec["boundObjectRef"] = {
            {"apiVersion", "v1"}, {"kind", "Pod"}, {"name", key.bound.name}, {"uid", key.bound.uid}};
    return Json{{"apiVersion", "authentication.k8s.io/v1"}, {"kind", "TokenRequest"}, {"spec", spec}};
}

bool rebind_pod_tokens(PodTokenBinding& b, const std::optional<BoundPod>& pod, bool current_issued) {
    if (!pod || pod->empty() || *pod == b.current) return false;
    if (current_issued || b.current.empty()) b.previous = b.current;
    b.current = *pod;
    return true;
}

std::vector<TokenRequestKey> token_lookup_keys(const TokenRequestKey& unbound, const PodTokenBinding& b,
                                               bool bind_pods) {
    TokenRequestKey first = unbound;
    first.bound = bind_pods ? b.current : BoundPod{};
    TokenRequestKey second = unbound;
    second.bound = bind_pods ? b.previous : b.current;
    if (second.bound == first.bound) return {first};
    return {first, second};
}

Result<std::int64_t> parse_rfc3339(const std::string& t) {
    auto bad = [&] { return Error{ErrorCode::Invalid, "\"" + t + "\" is not an RFC 3339 time"}; };
    int y = 0, mo = 0, d = 0, h = 0, mi = 0, s = 0, n = 0;
    if (std::sscanf(t.c_str(), "%4d-%2d-%2d%*1[Tt ]%2d:%2d:%2d%n", &y, &mo, &d, &h, &mi, &s, &n) != 6 ||
        n < 19)
        return bad();
    if (mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || s > 60) return bad();
    std::size_t i = static_cast<std::size_t>(n);
    std::int64_t frac_ms = 0;
    if (i < t.size() && t[i] == '.') {
        std::int64_t scale = 100;
        for (++i; i < t.size() && t[i] >= '0' && t[i] <= '9'; ++i, scale /= 10)
            frac_ms += (t[i] - '0') * scale;
    }
    std::int64_t offset_s = 0;
    if (i < t.size() && (t[i] == 'Z' || t[i] == 'z')) {
        ++i;
    } else if (i < t.size() && (t[i] == '+' || t[i] == '-')) {
        int oh = 0, om = 0;
        if (std::sscanf(t.c_str() + i + 1, "%2d:%2d", &oh, &om) != 2) return bad();
        offset_s = (oh * 3600 + om * 60) * (t[i] == '+' ? 1 : -1);
        i += 6;
    } else {
        return bad();
    }
    if (i != t.size()) return bad();
    const std::chrono::year_month_day ymd{std::chrono::year{y}, std::chrono::month{static_cast<unsigned>(mo)},
                                          std::chrono::day{static_cast<unsigned>(d)}};
    if (!ymd.ok()) return bad();
    const std::int64_t days = std::chrono::sys_days{ymd}.time_since_epoch().count();
    return (days * 86400 + h * 3600 + mi * 60 + s - offset_s) * 1000 + frac_ms;
}

bool token_requires_refresh(const ServiceAccountToken& t, std::int64_t now_ms, std::int64_t jitter_ms) {
    return now_ms > token_refresh_due_ms(t, jitter_ms);
}

std::int64_t token_refresh_due_ms(const ServiceAccountToken& t, std::int64_t jitter_ms) {
    if (t.expiration_seconds <= 0) return INT64_MAX;
    const std::int64_t iat = t.expiration_ms - t.expiration_seconds * 1000;
    // (ExpirationSeconds * 20) / 100 whole seconds, as upstream computes it.
    const std::int64_t near_expiry = t.expiration_ms - (t.expiration_seconds * 20 / 100) * 1000 - jitter_ms;
    return std::min(iat + kTokenMaxTtlMs - jitter_ms, near_expiry);
}

Result<ServiceAccountToken> parse_token_request(const Json& r) {
    auto bad = [](const std::string& why) { return Error{ErrorCode::Invalid, "TokenRequest: " + why}; };
    if (!r.is_object() || !r.contains("status") || !r["status"].is_object()) return bad("no status");
    const Json& st = r["status"];
    ServiceAccountToken out;
    if (!st.contains("token") || !st["token"].is_string() || st["token"].get<std::string>().empty())
        return bad("status.token: missing");
    out.token = st["token"].get<std::string>();
    if (!st.contains("expirationTimestamp") || !st["expirationTimestamp"].is_string())
        return bad("status.expirationTimestamp: missing");
    auto exp = parse_rfc3339(st["expirationTimestamp"].get<std::string>());
    if (!exp) return bad("status.expirationTimestamp: " + exp.error().message);
    out.expiration_ms = exp.value();
    if (r.contains("spec") && r["spec"].is_object() && r["spec"].contains("expirationSeconds") &&
        r["spec"]["expirationSeconds"].is_number_integer())
        out.expiration_seconds = r["spec"]["expirationSeconds"].get<std::int64_t>();
    return out;
}

}  // namespace daemonlet
