// The pure half of the registry client. Challenge rows after distribution's
// registry/client/auth/challenge/authchallenge_test.go
// (TestAuthChallengeParse, TestAuthChallengeNormalization) and RFC 7235;
// token rows after registry/client/auth/session.go (fetchToken, getToken);
// auth-file rows after kubelet's pkg/credentialprovider (config.go
// readDockerConfigJSONFileFromBytes, keyring.go parseSchemelessURL and
// URLsMatch, keyring_test.go TestURLsMatch).

#include <string>
#include <vector>

#include "core/registry_auth.h"

#include <CppUTest/TestHarness.h>

using namespace daemonlet;

namespace {

using Params = std::map<std::string, std::string>;

struct ChallengeRow {
    const char* rule;
    std::string header;
    std::vector<AuthChallenge> want;
};

const ChallengeRow kChallengeRows[] = {
    {"authchallenge_test.go TestAuthChallengeParse: bearer with quoted params",
     "Bearer "
     "realm=\"https://auth.example.com/"
     "token\",service=\"registry.example.com\",other=fun,slashed=\"he\\\"l\\lo\"",
     {{"bearer", Params{{"realm", "https://auth.example.com/token"},
                        {"service", "registry.example.com"},
                        {"other", "fun"},
                        {"slashed", "he\"llo"}}}}},
    {"docker.io's own challenge, with a scope",
     "Bearer "
     "realm=\"https://auth.docker.io/token\",service=\"registry.docker.io\",scope=\"repository:library/"
     "busybox:pull\"",
     {{"bearer", Params{{"realm", "https://auth.docker.io/token"},
                        {"service", "registry.docker.io"},
                        {"scope", "repository:library/busybox:pull"}}}}},
    {"TestAuthChallengeNormalization: the scheme is case-insensitive",
     "BASIC realm=\"Registry Realm\"",
     {{"basic", Params{{"realm", "Registry Realm"}}}}},
    {"RFC 7235: parameter names are case-insensitive", "Basic Realm=x", {{"basic", Params{{"realm", "x"}}}}},
    {"docker-registry's htpasswd challenge",
     "Basic realm=\"basic-realm\"",
     {{"basic", Params{{"realm", "basic-realm"}}}}},
    {"RFC 7235 4.1: spaces around '=' and ','",
     "Bearer  realm = \"r\" ,  service = s",
     {{"bearer", Params{{"realm", "r"}, {"service", "s"}}}}},
    {"RFC 7235 4.1: two challenges in one header",
     "Basic realm=\"a\", Bearer realm=\"https://t/x\",service=s",
     {{"basic", Params{{"realm", "a"}}}, {"bearer", Params{{"realm", "https://t/x"}, {"service", "s"}}}}},
    {"a scheme without parameters", "Negotiate", {{"negotiate", Params{}}}},
    {"an empty header has no challenge", "", {}},
    {"a header that starts with no token has no challenge", "=realm", {}},
    {"parseValueAndParams: an unterminated quote ends the parameters",
     "Basic realm=\"open",
     {{"basic", Params{}}}},
};

}  // namespace

TEST_GROUP(RegistryChallenge){};

TEST(RegistryChallenge, ParsesEachRowAsDistributionDoes) {
    for (const auto& row : kChallengeRows) {
        auto got = parse_www_authenticate(row.header);
        CHECK_EQUAL_TEXT(row.want.size(), got.size(), row.rule);
        for (std::size_t i = 0; i < got.size(); ++i) {
            STRCMP_EQUAL_TEXT(row.want[i].scheme.c_str(), got[i].scheme.c_str(), row.rule);
            CHECK_TEXT(row.want[i].params == got[i].params, row.rule);
        }
    }
}

namespace {

struct TokenUrlRow {
    const char* rule;
    Params params;
    std::string scope;
    std::string want;   // "" for an error
    std::string error;  // substring
};

const TokenUrlRow kTokenUrlRows[] = {
    {"session.go fetchToken: realm?service=&scope=, query-escaped",
     {{"realm", "https://auth.docker.io/token"}, {"service", "registry.docker.io"}},
     "repository:library/busybox:pull",
     "https://auth.docker.io/token?service=registry.docker.io&scope=repository%3Alibrary%2Fbusybox%3Apull",
     ""},
    {"a realm with a query keeps it",
     {{"realm", "https://t/x?a=1"}},
     "repository:a:pull",
     "https://t/x?a=1&scope=repository%3Aa%3Apull",
     ""},
    {"no service: scope only", {{"realm", "http://127.0.0.1:1/t"}}, "s", "http://127.0.0.1:1/t?scope=s", ""},
    {"no realm is an error", {{"service", "x"}}, "s", "", "has no realm"},
    {"a realm that is not http(s) is refused",
     {{"realm", "file:///etc/passwd"}},
     "s",
     "",
     "not an http(s) URL"},
};

}  // namespace

TEST_GROUP(RegistryToken){};

TEST(RegistryToken, BuildsTheTokenRequestFromTheChallenge) {
    for (const auto& row : kTokenUrlRows) {
        auto got = bearer_token_url(AuthChallenge{"bearer", row.params}, row.scope);
        if (row.want.empty()) {
            CHECK_FALSE_TEXT(got.ok(), row.rule);
            CHECK_TEXT(got.error().message.find(row.error) != std::string::npos, row.rule);
        } else {
            CHECK_TEXT(got.ok(), row.rule);
            STRCMP_EQUAL_TEXT(row.want.c_str(), got.value().c_str(), row.rule);
        }
    }
}

TEST(RegistryToken, ReadsTokenOrAccessTokenAsSessionGoDoes) {
    struct Row {
        const char* rule;
        std::string json, want;
    };
    const Row rows[] = {
        {"getToken: token", R"({"token": "abc", "expires_in": 300})", "abc"},
        {"getToken: access_token (OAuth 2) when token is absent", R"({"access_token": "xyz"})", "xyz"},
        {"token wins over access_token", R"({"token": "a", "access_token": "b"})", "a"},
        {"no token is an error", R"({"expires_in": 300})", ""},
        {"not JSON is an error", "<html>", ""},
    };
    for (const auto& row : rows) {
        auto got = parse_token_response(row.json);
        CHECK_EQUAL_TEXT(!row.want.empty(), got.ok(), row.rule);
        if (got.ok()) STRCMP_EQUAL_TEXT(row.want.c_str(), got.value().c_str(), row.rule);
    }
}

TEST(RegistryToken, HostsScopesAndMediaTypes) {
    STRCMP_EQUAL("registry-1.docker.io", registry_api_host("docker.io").c_str());
    STRCMP_EQUAL("127.0.0.1:5000", registry_api_host("127.0.0.1:5000").c_str());
    STRCMP_EQUAL("repository:library/busybox:pull", pull_scope("library/busybox").c_str());
    // containerd's resolver Accept list: both manifest kinds of both formats.
    const std::string accept = manifest_accept_header();
    for (const char* t :
         {"application/vnd.oci.image.index.v1+json", "application/vnd.oci.image.manifest.v1+json",
          "application/vnd.docker.distribution.manifest.list.v2+json",
          "application/vnd.docker.distribution.manifest.v2+json"})
        CHECK_TEXT(accept.find(t) != std::string::npos, t);
}

namespace {

struct AuthRow {
    const char* rule;
    std::string json;
    std::string host;
    std::string want_key;  // "" none
    std::string error;     // substring, "" when valid
};

const AuthRow kAuthRows[] = {
    {"config.go: auths by host:port", R"({"auths": {"127.0.0.1:5000": {"auth": "dTpw"}}})", "127.0.0.1:5000",
     "127.0.0.1:5000", ""},
    {"parseSchemelessURL: a scheme and a path are ignored",
     R"({"auths": {"https://reg.example.com:5000/v1/": {"auth": "dTpw"}}})", "reg.example.com:5000",
     "https://reg.example.com:5000/v1/", ""},
    {"URLsMatch: ports must be equal", R"({"auths": {"reg.example.com:5000": {"auth": "dTpw"}}})",
     "reg.example.com:5001", "", ""},
    {"URLsMatch: no port is not any port", R"({"auths": {"reg.example.com": {"auth": "dTpw"}}})",
     "reg.example.com:5000", "", ""},
    {"URLsMatch: '*' matches one label", R"({"auths": {"*.example.com": {"auth": "dTpw"}}})",
     "reg.example.com", "*.example.com", ""},
    {"URLsMatch: '*' matches exactly one label", R"({"auths": {"*.example.com": {"auth": "dTpw"}}})",
     "a.b.example.com", "", ""},
    {"an exact key wins over a wildcard",
     R"({"auths": {"*.example.com": {"auth": "dTpw"}, "reg.example.com": {"auth": "dTpx"}}})",
     "reg.example.com", "reg.example.com", ""},
    {"Docker Hub: https://index.docker.io/v1/ serves registry-1.docker.io",
     R"({"auths": {"https://index.docker.io/v1/": {"auth": "dTpw"}}})", "registry-1.docker.io",
     "https://index.docker.io/v1/", ""},
    {"Docker Hub: docker.io is the same registry", R"({"auths": {"docker.io": {"auth": "dTpw"}}})",
     "registry-1.docker.io", "docker.io", ""},
    {"config.go: username and password instead of auth",
     R"({"auths": {"h:1": {"username": "u", "password": "p"}}})", "h:1", "h:1", ""},
    {"hosts are case-insensitive", R"({"auths": {"REG.example.com": {"auth": "dTpw"}}})", "reg.example.com",
     "REG.example.com", ""},
    {"no auths: no credentials", R"({"credsStore": "desktop"})", "h:1", "", ""},
    {"not JSON: an error naming the file", "{", "h:1", "", "auth.json: not a JSON object"},
    {"auths not an object", R"({"auths": []})", "h:1", "", "auth.json: auths: expected an object"},
    {"a non-string auth names the field", R"({"auths": {"h:1": {"auth": 5}}})", "h:1", "",
     "auth.json: auths[h:1].auth: expected a string"},
    {"an entry without auth or username", R"({"auths": {"h:1": {"email": "x"}}})", "h:1", "",
     "neither auth nor username"},
};

}  // namespace

TEST_GROUP(RegistryAuthFile){};

TEST(RegistryAuthFile, FindsTheRegistrysEntryAsKubeletsKeyringDoes) {
    for (const auto& row : kAuthRows) {
        auto got = find_registry_auth(row.json, row.host, "auth.json");
        if (!row.error.empty()) {
            CHECK_FALSE_TEXT(got.ok(), row.rule);
            CHECK_TEXT(got.error().message.find(row.error) != std::string::npos, row.rule);
            continue;
        }
        CHECK_TEXT(got.ok(), row.rule);
        CHECK_EQUAL_TEXT(!row.want_key.empty(), got.value().has_value(), row.rule);
        if (got.value()) STRCMP_EQUAL_TEXT(row.want_key.c_str(), got.value()->key.c_str(), row.rule);
    }
}

TEST(RegistryAuthFile, SplitsUserAndPasswordAtTheFirstColon) {
    auto a = split_basic_auth("user:pa:ss");
    CHECK(a.ok());
    STRCMP_EQUAL("user", a.value().first.c_str());
    STRCMP_EQUAL("pa:ss", a.value().second.c_str());
    auto empty_pass = split_basic_auth("user:");
    CHECK(empty_pass.ok());
    STRCMP_EQUAL("", empty_pass.value().second.c_str());
    CHECK_FALSE(split_basic_auth("nocolon").ok());
}
