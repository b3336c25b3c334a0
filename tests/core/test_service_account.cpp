// What a pod that talks to the API server gets (core/service_account.h),
// each row naming the upstream function or test it pins:
// pkg/kubelet/envvars/envvars_test.go (TestFromServices),
// pkg/kubelet/kubelet_pods_test.go (TestMakeEnvironmentVariables),
// plugin/pkg/admission/serviceaccount/admission_test.go and
// pkg/kubelet/token/token_manager_test.go (TestRequiresRefresh).
#include <string>
#include <utility>
#include <vector>

#include <functional>
#include <map>

#include "core/pod_env.h"
#include "core/service_account.h"
#include "core/volume_payload.h"

#include <CppUTest/TestHarness.h>

using namespace daemonlet;

namespace {

using Vars = std::vector<std::pair<std::string, std::string>>;

std::string value_of(const Vars& v, const std::string& name) {
    for (const auto& [k, x] : v)
        if (k == name) return x;
    return "<absent>";
}

}  // namespace

TEST_GROUP(ServiceAccount){};

TEST(ServiceAccount, ApiServerHostAndPortFromTheUrl) {
    struct Row {
        const char* url;
        const char* host;
        int port;
    };
    // url.Parse's host and port, as the kubeconfig's server is read.
    static const Row kRows[] = {
        {"https://10.0.0.1:6443", "10.0.0.1", 6443},
        {"https://api.example.com", "api.example.com", 443},
        {"https://[fd00::1]:6443/", "fd00::1", 6443},
        {"https://k8s.local:8443/prefix?x=1", "k8s.local", 8443},
        {"http://127.0.0.1", "127.0.0.1", 80},
    };
    for (const auto& r : kRows) {
        auto got = api_server_host_port(r.url);
        CHECK_TEXT(got.ok(), r.url);
        STRCMP_EQUAL_TEXT(r.host, got.value().first.c_str(), r.url);
        LONGS_EQUAL_TEXT(r.port, got.value().second, r.url);
    }
    for (const char* bad : {"https://:6443", "https://h:0", "https://h:x", "https://[::1"})
        CHECK_TEXT(!api_server_host_port(bad).ok(), bad);
}

// envvars_test.go TestFromServices: the `kubernetes` Service (one port,
// "https", TCP) gives _SERVICE_HOST, _SERVICE_PORT, _SERVICE_PORT_HTTPS and
// makeLinkVariables' Docker link variables.
TEST(ServiceAccount, KubernetesServiceEnvIsFromServices) {
    const Vars want = {
        {"KUBERNETES_PORT", "tcp://10.0.0.1:6443"},    {"KUBERNETES_PORT_6443_TCP", "tcp://10.0.0.1:6443"},
        {"KUBERNETES_PORT_6443_TCP_ADDR", "10.0.0.1"}, {"KUBERNETES_PORT_6443_TCP_PORT", "6443"},
        {"KUBERNETES_PORT_6443_TCP_PROTO", "tcp"},     {"KUBERNETES_SERVICE_HOST", "10.0.0.1"},
        {"KUBERNETES_SERVICE_PORT", "6443"},           {"KUBERNETES_SERVICE_PORT_HTTPS", "6443"},
    };
    CHECK(want == kubernetes_service_env("10.0.0.1", 6443));
    // net.JoinHostPort brackets an IPv6 address; _ADDR and _HOST do not.
    Vars v6 = kubernetes_service_env("fd00::1", 443);
    STRCMP_EQUAL("tcp://[fd00::1]:443", value_of(v6, "KUBERNETES_PORT").c_str());
    STRCMP_EQUAL("fd00::1", value_of(v6, "KUBERNETES_SERVICE_HOST").c_str());
}

// kubelet_pods_test.go TestMakeEnvironmentVariables ("api server = Y,
// kubelet = Y"): the container's own definition wins over the service's,
// $(VAR) sees the service env, and the service env comes after the
// container's own.
TEST(ServiceAccount, ServiceEnvComesLastAndTheContainerWins) {
    PodFacts pod;
    pod.name = "p";
    pod.namespace_ = "ns";
    pod.service_env = kubernetes_service_env("10.0.0.1", 6443);
    Container c;
    c.name = "main";
    c.env = {EnvVar{"KUBERNETES_SERVICE_HOST", "mine", std::nullopt},
             EnvVar{"URL", "https://$(KUBERNETES_SERVICE_HOST):$(KUBERNETES_SERVICE_PORT)", std::nullopt}};
    auto got = make_environment_variables(pod, c);
    CHECK(got.ok());
    const Vars& vars = got.value().vars;
    LONGS_EQUAL(2 + 7, vars.size());
    STRCMP_EQUAL("KUBERNETES_SERVICE_HOST", vars[0].first.c_str());
    STRCMP_EQUAL("mine", vars[0].second.c_str());
    STRCMP_EQUAL("URL", vars[1].first.c_str());
    STRCMP_EQUAL("https://mine:6443", vars[1].second.c_str());
    STRCMP_EQUAL("6443", value_of(vars, "KUBERNETES_SERVICE_PORT_HTTPS").c_str());
    // Without a cluster: none.
    pod.service_env.clear();
    auto none = make_environment_variables(pod, c);
    STRCMP_EQUAL("<absent>", value_of(none.value().vars, "KUBERNETES_PORT").c_str());
}

// admission.go TokenVolumeSource: the projected volume's exact shape.
TEST(ServiceAccount, ApiAccessVolumeIsTokenVolumeSource) {
    Volume v = api_access_volume("kube-api-access-abcde");
    STRCMP_EQUAL("kube-api-access-abcde", v.name.c_str());
    CHECK(v.source == Volume::Source::Projected);
    LONGS_EQUAL(0644, v.default_mode.value());
    LONGS_EQUAL(3, v.projections.size());
    const auto& t = v.projections[0].service_account_token;
    CHECK(t.has_value());
    STRCMP_EQUAL("token", t->path.c_str());
    STRCMP_EQUAL("", t->audience.c_str());             // the API server's own audiences
    LONGS_EQUAL(3607, t->expiration_seconds.value());  // WarnOnlyBoundTokenExpirationSeconds
    const auto& ca = v.projections[1].config_map;
    CHECK(ca.has_value());
    STRCMP_EQUAL("kube-root-ca.crt", ca->name.c_str());
    LONGS_EQUAL(1, ca->items.size());
    STRCMP_EQUAL("ca.crt", ca->items[0].key.c_str());
    STRCMP_EQUAL("ca.crt", ca->items[0].path.c_str());
    const auto& ns = v.projections[2].downward_api;
    CHECK(ns.has_value());
    LONGS_EQUAL(1, ns->size());
    STRCMP_EQUAL("namespace", (*ns)[0].path.c_str());
    STRCMP_EQUAL("metadata.namespace", (*ns)[0].field_ref->field_path.c_str());
    STRCMP_EQUAL("kube-root-ca.crt",
                 v.raw["projected"]["sources"][1]["configMap"]["name"].get<std::string>().c_str());
}

// names.SimpleNameGenerator: the prefix and 5 of utilrand's characters;
// here the same for the same pod.
TEST(ServiceAccount, VolumeNameIsStablePerPod) {
    std::string a = api_access_volume_name("uid-1");
    LONGS_EQUAL(std::string("kube-api-access-").size() + 5, a.size());
    STRCMP_EQUAL(a.c_str(), api_access_volume_name("uid-1").c_str());
    CHECK(a != api_access_volume_name("uid-2"));
    for (char ch : a.substr(16))
        CHECK(std::string("bcdfghjklmnpqrstvwxz2456789").find(ch) != std::string::npos);
}

// admission_test.go: TestAutomountsAPIToken, TestRespectsExistingMount,
// TestAutomountsAPITokenForInitContainers; shouldAutomount with the pod's
// automountServiceAccountToken false (TestDoNotAddSecretVolumesIfAutomountDisabled... the pod's half).
TEST(ServiceAccount, MountServiceAccountTokenAsAdmission) {
    struct Row {
        const char* name;
        std::function<void(PodSpec&)> setup;
        bool changed;
        std::vector<bool> mounted;  // init containers then containers: has our mount
        std::size_t volumes;
    };
    // Not static: the leak detector counts what a test allocates.
    const Row kRows[] = {
        {"TestAutomountsAPIToken: every container, the volume added",
         [](PodSpec&) {},
         true,
         {true, true, true},
         1},
        {"TestRespectsExistingMount: a container's own mount at the path stays",
         [](PodSpec& s) {
             s.containers[0].volume_mounts.push_back({"mine", kServiceAccountMountPath, "", false, ""});
         },
         true,
         {true, false, true},
         1},
        {"an existing kube-api-access-* volume is mounted, not a second one",
         [](PodSpec& s) { s.volumes.push_back(api_access_volume("kube-api-access-zzzzz")); },
         true,
         {true, true, true},
         1},
        {"every container mounts the path already: no volume",
         [](PodSpec& s) {
             for (auto* cs : {&s.init_containers, &s.containers})
                 for (auto& c : *cs)
                     c.volume_mounts.push_back({"mine", kServiceAccountMountPath, "", true, ""});
         },
         false,
         {false, false, false},
         0},
    };
    for (const auto& r : kRows) {
        PodSpec s;
        s.init_containers.resize(1);
        s.containers.resize(2);
        r.setup(s);
        CHECK_EQUAL_TEXT(r.changed, mount_service_account_token(s, "kube-api-access-abcde"), r.name);
        LONGS_EQUAL_TEXT(r.volumes, s.volumes.size(), r.name);
        std::size_t i = 0;
        for (auto* cs : {&s.init_containers, &s.containers})
            for (const auto& c : *cs) {
                bool ours = false;
                for (const auto& m : c.volume_mounts)
                    if (m.name.rfind("kube-api-access-", 0) == 0) {
                        ours = true;
                        CHECK_TEXT(m.read_only, r.name);
                        STRCMP_EQUAL_TEXT(kServiceAccountMountPath, m.mount_path.c_str(), r.name);
                        STRCMP_EQUAL_TEXT(s.volumes.back().name.c_str(), m.name.c_str(), r.name);
                    }
                CHECK_EQUAL_TEXT(r.mounted[i], ours, r.name);
                ++i;
            }
    }
    CHECK(!should_automount(
        Json::parse(R"({"spec":{"template":{"spec":{"automountServiceAccountToken":false}}}})")));
    CHECK(should_automount(
        Json::parse(R"({"spec":{"template":{"spec":{"automountServiceAccountToken":true}}}})")));
    CHECK(should_automount(Json::parse(R"({"spec":{"template":{"spec":{}}}})")));
    CHECK(should_automount(Json()));
}

// token_manager_test.go TestRequiresRefresh: issued at `start`,
// expirationSeconds = exp - start.
TEST(ServiceAccount, RequiresRefreshAsTokenManager) {
    struct Row {
        const char* name;
        std::int64_t now_min, exp_min;
        bool refresh;
        bool no_expiration_seconds = false;
    };
    constexpr std::int64_t kHour = 60;
    static const Row kRows[] = {
        {"TestRequiresRefresh[0]: 10 of 60 minutes: no", 10, 60, false},
        {"TestRequiresRefresh[1]: 50 of 60 minutes, within 20% of the TTL: yes", 50, 60, true},
        {"TestRequiresRefresh[2]: 25 h of 60 h, older than maxTTL: yes", 25 * kHour, 60 * kHour, true},
        {"TestRequiresRefresh[3]: expired: yes", 70, 60, true},
        {"TestRequiresRefresh[4]: ExpirationSeconds nil: never", 0, 60, false, true},
        {"80% of the TTL exactly: not yet (now.After)", 48, 60, false},
    };
    const std::int64_t start = 1'800'000'000'000;
    for (const auto& r : kRows) {
        ServiceAccountToken t{"t", r.no_expiration_seconds ? 0 : r.exp_min * 60, start + r.exp_min * 60'000};
        CHECK_EQUAL_TEXT(r.refresh, token_requires_refresh(t, start + r.now_min * 60'000, 0), r.name);
    }
    // The jitter brings the refresh earlier.
    ServiceAccountToken t{"t", 3600, start + 3'600'000};
    CHECK(!token_requires_refresh(t, start + 2'875'000, 0));
    CHECK(token_requires_refresh(t, start + 2'875'000, 10'000));
    LONGS_EQUAL(start + 2'880'000, token_refresh_due_ms(t, 0));
}

TEST(ServiceAccount, TokenRequestBodyAndAnswer) {
    Json body = token_request_object({"ns", "default", "", 3607, {}});
    STRCMP_EQUAL("authentication.k8s.io/v1", body["apiVersion"].get<std::string>().c_str());
    LONGS_EQUAL(3607, body["spec"]["expirationSeconds"].get<std::int64_t>());
    CHECK(!body["spec"].contains("audiences"));
    CHECK(!body["spec"].contains("boundObjectRef"));  // the pod has no Pod in the API
    Json aud = token_request_object({"ns", "sa", "vault", 600, {}});
    STRCMP_EQUAL("vault", aud["spec"]["audiences"][0].get<std::string>().c_str());
    // projected.go collectData: BoundObjectReference{APIVersion: "v1", Kind: "Pod", Name, UID}.
    Json bound = token_request_object({"ns", "default", "", 3607, {"ds-x7k2p", "uid-1"}});
    STRCMP_EQUAL(R"({"apiVersion":"v1","kind":"Pod","name":"ds-x7k2p","uid":"uid-1"})",
                 bound["spec"]["boundObjectRef"].dump().c_str());

    Json answer = Json::parse(R"({"spec":{"expirationSeconds":3607},
        "status":{"token":"a.b.c","expirationTimestamp":"2027-01-15T08:30:05Z"}})");
    auto t = parse_token_request(answer);
    CHECK(t.ok());
    STRCMP_EQUAL("a.b.c", t.value().token.c_str());
    LONGS_EQUAL(3607, t.value().expiration_seconds);
    CHECK(t.value().expiration_ms == 1'800'001'805'000);
    CHECK(!parse_token_request(Json::parse(R"({"status":{"expirationTimestamp":"2027-01-15T08:30:05Z"}})"))
               .ok());
    CHECK(!parse_token_request(Json::parse(R"({"status":{"token":"x","expirationTimestamp":"soon"}})")).ok());

    CHECK(parse_rfc3339("1970-01-01T00:00:01.5Z").value() == 1500);
    CHECK(parse_rfc3339("1970-01-01T01:00:00+01:00").value() == 0);
    CHECK(!parse_rfc3339("1970-02-30T00:00:00Z").ok());
}

namespace {
struct FakeTokens : ServiceAccountTokenSource {
    std::map<TokenRequestKey, std::string> tokens;
    Result<std::string> token(const std::string&, const TokenRequestKey& k) const override {
        auto it = tokens.find(k);
        if (it == tokens.end()) return Error{ErrorCode::NotFound, "failed to fetch token: not yet"};
        return it->second;
    }
};
}  // namespace

// projected.go collectData over TokenVolumeSource: the token at "token",
// kube-root-ca.crt's ca.crt (the cluster's, after the manifest
// directory's), the namespace; without the token the pod waits with the
// plugin's message; without a cluster (no token source) nothing is
// projected for the token.
TEST(ServiceAccount, ApiAccessVolumePayload) {
    ConfigObjects cluster;
    ConfigMap ca;
    ca.metadata = {};
    ca.data = {{"ca.crt", "PEM"}};
    cluster.config_maps[{"ns", "kube-root-ca.crt"}] = std::make_shared<const ConfigMap>(ca);
    FakeTokens tokens;
    tokens.tokens[{"ns", "agent", "", 3607, {}}] = "h.p.s";
    PodFacts pod;
    pod.name = "p";
    pod.namespace_ = "ns";
    pod.uid = "u";
    pod.service_account_name = "agent";
    pod.cluster_objects = &cluster;
    pod.tokens = &tokens;
    Volume v = api_access_volume("kube-api-access-abcde");
    CHECK(holds_secrets(v));
    auto got = volume_payload(v, pod);
    CHECK_TEXT(got.ok(), got.ok() ? "" : got.error().message.c_str());
    LONGS_EQUAL(3, got.value().size());
    STRCMP_EQUAL("h.p.s", got.value().at("token").data.c_str());
    LONGS_EQUAL(0644, got.value().at("token").mode);
    STRCMP_EQUAL("PEM", got.value().at("ca.crt").data.c_str());
    STRCMP_EQUAL("ns", got.value().at("namespace").data.c_str());
    CHECK(!got.value().at("token").fs_user);

    // FsUser (volume/util FsUserFrom): every container runs as one
    // runAsUser, the token is that user's, 0600; the others files not.
    PodSpec spec;
    spec.containers.resize(2);
    spec.security_context.emplace().run_as_user = 1234;
    pod.spec = &spec;
    auto owned = volume_payload(v, pod);
    CHECK_TEXT(owned.ok(), owned.ok() ? "" : owned.error().message.c_str());
    LONGS_EQUAL(0600, owned.value().at("token").mode);
    LONGS_EQUAL(1234, owned.value().at("token").fs_user.value_or(-1));
    LONGS_EQUAL(0644, owned.value().at("ca.crt").mode);
    CHECK(!owned.value().at("ca.crt").fs_user);
    // One container as another user: no FsUser, the volume's mode.
    spec.containers[1].security_context.emplace().run_as_user = 1000;
    auto mixed = volume_payload(v, pod);
    LONGS_EQUAL(0644, mixed.value().at("token").mode);
    CHECK(!mixed.value().at("token").fs_user);
    // The pod's fsGroup without one user (collectData: 0600 when fsUser or
    // fsGroup is set; SetVolumeOwnership then adds the group's read):
    // 0600, no owner; the others at the volume's mode.
    spec.security_context->fs_group = 2500;
    auto grouped = volume_payload(v, pod);
    LONGS_EQUAL(0600, grouped.value().at("token").mode);
    CHECK(!grouped.value().at("token").fs_user);
    LONGS_EQUAL(0644, grouped.value().at("ca.crt").mode);
    pod.spec = nullptr;

    pod.service_account_name = "other";
    auto waiting = volume_payload(v, pod);
    CHECK(!waiting.ok());
    STRCMP_EQUAL("failed to fetch token: not yet", waiting.error().message.c_str());
    // daemonlet's departure (PodFacts::start_without_token): the volume
    // without its token, the rest projected, so that the pod starts.
    pod.start_without_token = true;
    auto without = volume_payload(v, pod);
    CHECK_TEXT(without.ok(), without.ok() ? "" : without.error().message.c_str());
    CHECK(without.value().count("token") == 0);
    STRCMP_EQUAL("ns", without.value().at("namespace").data.c_str());
    // ... and without the cluster's CA (none read, none in the kubeconfig).
    const ConfigObjects* cluster_objects = pod.cluster_objects;
    ConfigObjects no_objects;
    pod.cluster_objects = &no_objects;
    auto no_ca = volume_payload(v, pod);
    CHECK_TEXT(no_ca.ok(), no_ca.ok() ? "" : no_ca.error().message.c_str());
    CHECK(no_ca.value().count("ca.crt") == 0);
    pod.start_without_token = false;
    CHECK(!volume_payload(v, pod).ok());  // the kubelet's projected plugin: the volume fails
    pod.cluster_objects = cluster_objects;

    pod.tokens = nullptr;
    auto none = volume_payload(v, pod);
    CHECK(none.ok());
    CHECK(none.value().count("token") == 0);
}

// token_manager.go keyFunc keys the cache by boundObjectRef (the pod's uid
// with it): a Pod made again (another uid) is another key, so another
// token; the same Pod seen again is the same key. A board pod's Pod is
// first known after it starts and may be made again while it runs: the
// binding before is kept for the token mounted meanwhile.
TEST(ServiceAccount, PodTokenBindingFollowsThePodsUid) {
    struct Row {
        const char* name;
        PodTokenBinding before;
        std::optional<BoundPod> pod;
        bool current_issued;  // a token bound to `before.current` was issued
        bool changed;
        PodTokenBinding after;
    };
    // Not static: the leak detector counts what a test allocates.
    const BoundPod a{"ds-aaaaa", "uid-a"}, b{"ds-bbbbb", "uid-b"};
    const Row kRows[] = {
        {"no Pod known: unbound stays unbound", {}, std::nullopt, true, false, {}},
        {"an empty Pod (no uid) binds nothing", {}, BoundPod{"ds-aaaaa", ""}, true, false, {}},
        {"the Pod made or taken: bound to it, the unbound token its fallback", {}, a, false, true, {a, {}}},
        {"the same Pod seen again (keyFunc: same key)", {a, {}}, a, true, false, {a, {}}},
        {"the Pod being made again (none known): the binding stays",
         {a, {}},
         std::nullopt,
         true,
         false,
         {a, {}}},
        {"made again with another uid: a new key, the old one the fallback", {a, {}}, b, true, true, {b, a}},
        {"made again before its token was issued: the token mounted (unbound) stays the fallback",
         {a, {}},
         b,
         false,
         true,
         {b, {}}},
        {"and again: only the one before is kept",
         {b, a},
         BoundPod{"ds-ccccc", "uid-c"},
         true,
         true,
         {BoundPod{"ds-ccccc", "uid-c"}, b}},
        {"and again, b's token never issued: a's, mounted, stays the fallback",
         {b, a},
         BoundPod{"ds-ccccc", "uid-c"},
         false,
         true,
         {BoundPod{"ds-ccccc", "uid-c"}, a}},
    };
    for (const auto& r : kRows) {
        PodTokenBinding got = r.before;
        CHECK_EQUAL_TEXT(r.changed, rebind_pod_tokens(got, r.pod, r.current_issued), r.name);
        CHECK_TEXT(got == r.after, r.name);
    }
}

// The keys a pod's token is looked up by: the binding in force first (the
// kubelet's, bound to the pod), then the token it replaces, mounted until
// the first is issued; with podStatus off the unbound one is in force.
TEST(ServiceAccount, TokenLookupKeysBindingFirstThenItsFallback) {
    struct Row {
        const char* name;
        PodTokenBinding binding;
        bool bind_pods;
        std::vector<BoundPod> keys;  // the keys' boundObjectRef, in order
    };
    // Not static: the leak detector counts what a test allocates.
    const BoundPod a{"ds-aaaaa", "uid-a"}, b{"ds-bbbbb", "uid-b"};
    const Row kRows[] = {
        {"podStatus off, never bound: unbound only (today's token)", {}, false, {{}}},
        {"podStatus on, no Pod yet: unbound only", {}, true, {{}}},
        {"bound to its Pod: that token, then the unbound one", {a, {}}, true, {a, {}}},
        {"its Pod made again: the new Pod's, then the old Pod's", {b, a}, true, {b, a}},
        {"podStatus turned off: unbound, then the last bound one", {b, a}, false, {{}, b}},
    };
    for (const auto& r : kRows) {
        const TokenRequestKey unbound{"ns", "default", "", 3607, {}};
        const auto got = token_lookup_keys(unbound, r.binding, r.bind_pods);
        LONGS_EQUAL_TEXT(r.keys.size(), got.size(), r.name);
        for (std::size_t i = 0; i < got.size() && i < r.keys.size(); ++i) {
            CHECK_TEXT(got[i].bound == r.keys[i], r.name);
            TokenRequestKey same = got[i];
            same.bound = {};
            CHECK_TEXT(same == unbound, r.name);  // only the binding differs
        }
    }
}
