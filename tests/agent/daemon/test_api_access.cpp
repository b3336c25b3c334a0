// The ApiAccess component's token binding (agent/daemon/api_access.h) over a
// real SQLite store and a real libuv loop, without an API server: what an
// offline boot mounts from the store once a pod's tokens were bound to its
// Pod (token_manager.go keys its cache by boundObjectRef; the kubelet has no
// cache across restarts, a board mounts the last token it had), and how a
// new Pod uid keeps the token in force until its own is issued.
#include <uv.h>

#include <memory>
#include <set>
#include <string>

#include "agent/daemon/api_access.h"
#include "core/json_parse.h"
#include "tests/agent/daemon/fake_clock.h"
#include "tests/store/store_fixture.h"

#include <CppUTest/TestHarness.h>

using namespace daemonlet;
using namespace daemonlet::testing;

namespace {

constexpr std::int64_t kNow = 1'767'225'600'000;  // FakeClock's wall time
constexpr const char* kMeta = "api.serviceAccountTokens";

// A token as the store keeps it, valid for an hour from kNow.
Json stored_token(const std::string& token, const BoundPod& bound) {
    Json t = {{"namespace", "it"},
              {"serviceAccount", "default"},
              {"audience", ""},
              {"requestedExpirationSeconds", 3607},
              {"token", token},
              {"expirationSeconds", 3607},
              {"expirationMs", kNow + 3'607'000}};
    if (!bound.empty()) t["boundPod"] = {{"name", bound.name}, {"uid", bound.uid}};
    return t;
}

}  // namespace

TEST_GROUP(ApiAccess) {
    TempDir dir;
    std::string path = dir.file("daemonlet.db");
    uv_loop_t loop{};
    FakeClock clock;
    std::unique_ptr<store::Store> store;
    std::unique_ptr<agent::ApiAccess> access;
    // The kube-api-access token key of pod "board-uid", as the volume asks it.
    const TokenRequestKey unbound{"it", "default", "", 3607, {}};
    const BoundPod pod_a{"tok-aaaaa", "uid-a"};
    void setup() override {
        uv_loop_init(&loop);
        store = MUST(store::Store::open(path, kNow, nullptr));
    }
    void start() {
        access = std::make_unique<agent::ApiAccess>(&loop, *store, clock, nullptr);
        access->load();
        access->set_link(nullptr, "offline");
    }
    void teardown() override {
        if (access) access->close();
        uv_run(&loop, UV_RUN_DEFAULT);  // the timer's close callback
        access.reset();
        CHECK_EQUAL(0, uv_loop_close(&loop));
    }
    std::string token_of(const std::string& pod_uid) {
        auto t = access->token(pod_uid, unbound);
        return t ? t.value() : "error: " + t.error().message;
    }
};

// An agent that bound its pod's token, restarted offline: the bound token
// and the binding come from the store and are mounted, podStatus on or off
// (off: the unbound token is in force, none is there, the bound one is).
TEST(ApiAccess, AnOfflineBootMountsTheStoredBoundToken) {
    start();
    access->set_bind_pods(true);
    CHECK_TRUE(access->bind("board-uid", pod_a));
    CHECK_FALSE(access->bind("board-uid", pod_a));  // the same Pod: the same key
    // The token issued meanwhile, as the store would have it.
    Json saved = parse_json(*MUST(store->get_meta(kMeta)));
    CHECK_EQUAL(std::string("uid-a"), saved["podBindings"]["board-uid"]["current"]["uid"].get<std::string>());
    saved["tokens"] = Json::array({stored_token("unbound.jwt", {}), stored_token("bound.jwt", pod_a)});
    CHECK_TRUE(MUST(store->put_meta(kMeta, saved.dump())));
    access->close();
    uv_run(&loop, UV_RUN_DEFAULT);

    start();  // the restart, offline
    access->set_bind_pods(true);
    CHECK_EQUAL(std::string("bound.jwt"), token_of("board-uid"));
    const std::set<TokenRequestKey> keys{unbound};
    const auto wanted = access->wanted_keys("board-uid", keys);
    CHECK_EQUAL(1u, wanted.size());
    CHECK_TRUE(wanted.begin()->bound == pod_a);  // refreshed bound to its Pod
    // Another pod, never bound: the unbound token.
    CHECK_EQUAL(std::string("unbound.jwt"), token_of("other-uid"));
    access->set_bind_pods(false);
    CHECK_EQUAL(std::string("unbound.jwt"), token_of("board-uid"));
}

// The Pod made again (another uid): a new key; until its token is issued
// the one in force stays mounted and refreshed; the pod gone, its bound
// tokens and binding go (DeleteServiceAccountToken).
TEST(ApiAccess, ANewPodUidKeepsTheTokenInForceUntilItsOwnAndAGonePodDropsItsTokens) {
    Json saved = {{"tokens", Json::array({stored_token("bound-a.jwt", pod_a)})},
                  {"rootCAs", Json::object()},
                  {"objects", Json::array()}};
    saved["podBindings"]["board-uid"]["current"] = {{"name", "tok-aaaaa"}, {"uid", "uid-a"}};
    CHECK_TRUE(MUST(store->put_meta(kMeta, saved.dump())));
    start();
    access->set_bind_pods(true);
    const BoundPod pod_b{"tok-bbbbb", "uid-b"};
    CHECK_TRUE(access->bind("board-uid", pod_b));
    CHECK_EQUAL(std::string("bound-a.jwt"), token_of("board-uid"));
    const auto wanted = access->wanted_keys("board-uid", {unbound});
    CHECK_EQUAL(2u, wanted.size());  // the new Pod's, and the one in force meanwhile
    std::set<std::string> uids;
    for (const auto& k : wanted) uids.insert(k.bound.uid);
    CHECK_TRUE((uids == std::set<std::string>{"uid-a", "uid-b"}));

    access->sweep({"board-uid"});  // live: kept
    CHECK_EQUAL(std::string("bound-a.jwt"), token_of("board-uid"));
    access->sweep({});  // gone while no agent ran
    CHECK_TRUE(token_of("board-uid").rfind("error: failed to fetch token: offline", 0) == 0);
    Json after = parse_json(*MUST(store->get_meta(kMeta)));
    CHECK_EQUAL(0u, after["tokens"].size());
    CHECK_FALSE(after.contains("podBindings"));
}

// A referenced ConfigMap of the cluster with a ca.crt key (my-ca, sorting
// after kube-root-ca.crt) is an object, not the namespace's CA: what is
// stored as kube-root-ca.crt, and what the next offline boot mounts as it,
// stays the cluster's root CA.
TEST(ApiAccess, AReferencedConfigMapWithACaCrtKeyIsNotStoredAsTheRootCA) {
    Json my_ca = {{"apiVersion", "v1"},
                  {"kind", "ConfigMap"},
                  {"metadata", {{"namespace", "it"}, {"name", "my-ca"}}},
                  {"data", {{"ca.crt", "OTHER CA"}}}};
    Json saved = {{"tokens", Json::array()},
                  {"rootCAs", {{"it", {{"pem", "ROOT CA"}, {"fromCluster", true}}}}},
                  {"objects", Json::array({{{"secret", false}, {"object", my_ca}}})}};
    CHECK_TRUE(MUST(store->put_meta(kMeta, saved.dump())));
    for (int boot = 0; boot < 2; ++boot) {
        start();
        auto root = access->objects().config_map("it", "kube-root-ca.crt");
        CHECK_TRUE(root != nullptr);
        CHECK_EQUAL(std::string("ROOT CA"), root->data.at("ca.crt"));
        Json after = parse_json(*MUST(store->get_meta(kMeta)));
        CHECK_EQUAL(std::string("ROOT CA"), after["rootCAs"]["it"]["pem"].get<std::string>());
        access->close();
        uv_run(&loop, UV_RUN_DEFAULT);
    }
}
