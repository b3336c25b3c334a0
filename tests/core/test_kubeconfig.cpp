// kubeconfig files as client-go's clientcmd reads them (v1 Config): the
// current context's cluster and user, relative paths against the file's
// directory (ResolveLocalPaths), and clientcmd validation's errors
// (validation.go validateClusterInfo, validateAuthInfo).
#include <string>

#include "core/kubeconfig.h"

#include <CppUTest/TestHarness.h>

using namespace daemonlet;

namespace {

const char* const kBase = R"(apiVersion: v1
kind: Config
current-context: edge
contexts:
  - name: other
    context: {cluster: other, user: nobody}
  - name: edge
    context: {cluster: prod, user: board, namespace: kube-system}
clusters:
  - name: other
    cluster: {server: "https://other:6443"}
  - name: prod
    cluster:
      server: https://10.0.0.1:6443/
      certificate-authority: pki/ca.crt
users:
  - name: nobody
    user: {}
  - name: board
    user:
      client-certificate: pki/board.crt
      client-key: /etc/daemonlet/board.key
)";

// The base file with one section replaced: the cluster "prod" and the user
// "board" become `cluster` and `user` (YAML flow mappings).
std::string with(const std::string& cluster, const std::string& user) {
    return "kind: Config\ncurrent-context: edge\n"
           "contexts: [{name: edge, context: {cluster: prod, user: board}}]\n"
           "clusters: [{name: prod, cluster: " +
           cluster + "}]\nusers: [{name: board, user: " + user + "}]\n";
}

}  // namespace

TEST_GROUP(Kubeconfig){};

TEST(Kubeconfig, TheCurrentContextChoosesClusterUserAndNamespace) {
    auto r = parse_kubeconfig(kBase, "/etc/daemonlet/kubeconfig", "/etc/daemonlet");
    CHECK_TEXT(r.ok(), r.ok() ? "" : r.error().message.c_str());
    const ApiEndpoint& e = r.value();
    STRCMP_EQUAL("edge", e.context.c_str());
    STRCMP_EQUAL("https://10.0.0.1:6443", e.server.c_str());  // the trailing slash goes
    STRCMP_EQUAL("kube-system", e.namespace_.c_str());
    // Relative paths are relative to the kubeconfig's directory; absolute ones stay.
    STRCMP_EQUAL("/etc/daemonlet/pki/ca.crt", e.certificate_authority.c_str());
    STRCMP_EQUAL("/etc/daemonlet/pki/board.crt", e.client_certificate.c_str());
    STRCMP_EQUAL("/etc/daemonlet/board.key", e.client_key.c_str());
    CHECK_FALSE(e.insecure_skip_tls_verify);
}

TEST(Kubeconfig, AnExplicitContextOverridesTheCurrentOne) {
    auto r = parse_kubeconfig(kBase, "k", "/d", "other");
    CHECK(r.ok());
    STRCMP_EQUAL("https://other:6443", r.value().server.c_str());
    STRCMP_EQUAL("", r.value().client_certificate.c_str());
}

TEST(Kubeconfig, InlineDataAndTokensAreKeptAsGiven) {
    auto r = parse_kubeconfig(with("{server: 'https://a:6443', certificate-authority-data: Q0E=}",
                                   "{token: abc.def, tokenFile: /var/run/token}"),
                              "k", "/d");
    CHECK_TEXT(r.ok(), r.ok() ? "" : r.error().message.c_str());
    STRCMP_EQUAL("Q0E=", r.value().certificate_authority_data.c_str());
    STRCMP_EQUAL("abc.def", r.value().token.c_str());
    // client-go: an inline token wins over tokenFile.
    STRCMP_EQUAL("", r.value().token_file.c_str());

    auto f = parse_kubeconfig(with("{server: 'https://a:6443'}", "{tokenFile: token}"), "k", "/d");
    CHECK(f.ok());
    STRCMP_EQUAL("/d/token", f.value().token_file.c_str());
}

TEST(Kubeconfig, BadFilesAreErrorsNamingFileFieldAndReason) {
    struct Row {
        const char* name;
        std::string text;
        const char* context;
        const char* expected;  // a part of the message
    };
    const Row rows[] = {
        {"not yaml", "kind: [", "", "k: "},
        {"another kind", "kind: Pod\n", "", "k: kind: \"Pod\": expected Config"},
        {"no current context", "kind: Config\n", "", "k: current-context: not set"},
        {"unknown context", kBase, "nope", "k: contexts: no entry named \"nope\""},
        {"missing cluster", "kind: Config\ncurrent-context: a\ncontexts: [{name: a, context: {user: u}}]\n",
         "", "k: contexts[0].context.cluster: required"},
        {"cluster not listed",
         "kind: Config\ncurrent-context: a\ncontexts: [{name: a, context: {cluster: c}}]\n", "",
         "k: clusters: expected a list with an entry named \"c\""},
        {"no server", with("{certificate-authority: ca}", "{}"), "",
         "k: clusters[0].cluster.server: required"},
        {"server not a URL", with("{server: 'a:6443'}", "{}"), "",
         "k: clusters[0].cluster.server: \"a:6443\": expected an https:// URL"},
        {"wrong type", with("{server: 'https://a', insecure-skip-tls-verify: 'yes please'}", "{}"), "",
         "k: clusters[0].cluster.insecure-skip-tls-verify: expected true or false, got string"},
        // validateClusterInfo
        {"CA twice",
         with("{server: 'https://a', certificate-authority: ca, certificate-authority-data: Q0E=}", "{}"), "",
         "certificate-authority-data and certificate-authority are both specified"},
        {"CA and insecure",
         with("{server: 'https://a', certificate-authority: ca, insecure-skip-tls-verify: true}", "{}"), "",
         "specifying a root certificates file with the insecure flag is not allowed"},
        // validateAuthInfo
        {"cert twice",
         with("{server: 'https://a'}",
              "{client-certificate: c, client-certificate-data: Yw==, client-key: k}"),
         "", "k: users[0].user: client-cert-data and client-cert are both specified"},
        {"cert without key", with("{server: 'https://a'}", "{client-certificate: c}"), "",
         "k: users[0].user.client-key: client-certificate and client-key must be given together"},
        {"token and basic", with("{server: 'https://a'}", "{token: t, username: u, password: p}"), "",
         "more than one authentication method found"},
        // What daemonlet cannot do is said, not silently ignored.
        {"exec plugin", with("{server: 'https://a'}", "{exec: {command: aws}}"), "",
         "k: users[0].user.exec: credential plugins are not supported"},
        {"auth provider", with("{server: 'https://a'}", "{auth-provider: {name: gcp}}"), "",
         "k: users[0].user.auth-provider: not supported"},
    };
    for (const auto& row : rows) {
        auto r = parse_kubeconfig(row.text, "k", "/d", row.context);
        CHECK_TEXT(!r.ok(), row.name);
        if (r.ok()) continue;
        std::string msg = std::string(row.name) + ": " + r.error().message;
        CHECK_TEXT(r.error().message.find(row.expected) != std::string::npos, msg.c_str());
    }
}

TEST(Kubeconfig, InClusterUsesTheServiceAccountAndBracketsIPv6) {
    auto r = in_cluster_endpoint("10.96.0.1", "443");
    CHECK(r.ok());
    STRCMP_EQUAL("https://10.96.0.1:443", r.value().server.c_str());
    STRCMP_EQUAL("/var/run/secrets/kubernetes.io/serviceaccount/token", r.value().token_file.c_str());
    STRCMP_EQUAL("/var/run/secrets/kubernetes.io/serviceaccount/ca.crt",
                 r.value().certificate_authority.c_str());
    auto v6 = in_cluster_endpoint("fd00::1", "6443", "/sa");
    CHECK(v6.ok());
    STRCMP_EQUAL("https://[fd00::1]:6443", v6.value().server.c_str());
    STRCMP_EQUAL("/sa/token", v6.value().token_file.c_str());
    auto none = in_cluster_endpoint("", "443");
    CHECK_FALSE(none.ok());
    CHECK(none.error().message.find("KUBERNETES_SERVICE_HOST") != std::string::npos);
}
