#include "core/kubeconfig.h"

#include "core/field_error.h"
#include "core/manifest.h"
#include "core/strings.h"

namespace daemonlet {
namespace {

// Reads the fields of one kubeconfig section, naming each by its path. The
// first bad field is kept as the section's error.
class Fields {
  public:
    Fields(const std::string& file, std::string path, const Json& obj)
        : file_(file), path_(std::move(path)), obj_(obj) {}

    void str(const char* key, std::string& out) {
        auto it = obj_.find(key);
        if (it == obj_.end() || it->is_null()) return;
        if (!it->is_string()) return fail(key, "expected a string, got " + std::string(it->type_name()));
        out = it->get<std::string>();
    }
    void boolean(const char* key, bool& out) {
        auto it = obj_.find(key);
        if (it == obj_.end() || it->is_null()) return;
        if (!it->is_boolean())
            return fail(key, "expected true or false, got " + std::string(it->type_name()));
        out = it->get<bool>();
    }
    bool has(const char* key) const {
        auto it = obj_.find(key);
        return it != obj_.end() && !it->is_null();
    }
    void fail(const std::string& key, const std::string& reason) {
        if (!error_.empty()) return;
        error_ = file_ + ": " + path_ + (key.empty() ? "" : (path_.empty() ? "" : ".") + key) + ": " + reason;
    }
    Status fail_status(const std::string& key, const std::string& reason) {
        fail(key, reason);
        return status();
    }
    Status status() const {
        if (error_.empty()) return Ok{};
        return Error{ErrorCode::Invalid, error_};
    }

  private:
    const std::string& file_;
    std::string path_;
    const Json& obj_;
    std::string error_;
};

// The entry of a named list (clusters, users, contexts) with this name, and
// its path for errors ("clusters[2].cluster").
struct Named {
    const Json* value = nullptr;
    std::string path;
};
Result<Named> find_named(const Json& doc, const std::string& file, const char* list, const char* inner,
                         const std::string& name) {
    auto it = doc.find(list);
    if (it == doc.end() || !it->is_array())
        return Error{ErrorCode::Invalid,
                     file + ": " + list + ": expected a list with an entry named " + render_string(name)};
    for (std::size_t i = 0; i < it->size(); ++i) {
        const Json& e = (*it)[i];
        if (!e.is_object()) continue;
        auto n = e.find("name");
        if (n == e.end() || !n->is_string() || n->get<std::string>() != name) continue;
        std::string path = std::string(list) + "[" + std::to_string(i) + "]." + inner;
        auto v = e.find(inner);
        if (v == e.end() || !v->is_object())
            return Error{ErrorCode::Invalid, file + ": " + path + ": expected a mapping"};
        return Named{&*v, path};
    }
    return Error{ErrorCode::Invalid, file + ": " + list + ": no entry named " + render_string(name)};
}

Status read_cluster(Fields& f, const std::string& base, ApiEndpoint& e) {
    f.str("server", e.server);
    if (!f.status().ok()) return f.status();
    if (e.server.empty()) return f.fail_status("server", "required: the API server's URL");
    if (e.server.rfind("https://", 0) != 0 && e.server.rfind("http://", 0) != 0)
        return f.fail_status("server", render_string(e.server) + ": expected an https:// URL");
    while (e.server.size() > 8 && e.server.back() == '/') e.server.pop_back();
    f.str("certificate-authority", e.certificate_authority);
    e.certificate_authority = resolve_path(base, e.certificate_authority);
    f.str("certificate-authority-data", e.certificate_authority_data);
    f.str("tls-server-name", e.tls_server_name);
    f.boolean("insecure-skip-tls-verify", e.insecure_skip_tls_verify);
    if (!f.status().ok()) return f.status();
    // clientcmd's validateClusterInfo.
    if (!e.certificate_authority.empty() && !e.certificate_authority_data.empty())
        return f.fail_status("", "certificate-authority-data and certificate-authority are both specified");
    if (e.insecure_skip_tls_verify &&
        (!e.certificate_authority.empty() || !e.certificate_authority_data.empty()))
        return f.fail_status("insecure-skip-tls-verify",
                             "specifying a root certificates file with the insecure flag is not allowed");
    if (f.has("proxy-url")) return f.fail_status("proxy-url", "not supported by daemonlet");
    return Ok{};
}

Status read_user(Fields& f, const std::string& base, ApiEndpoint& e) {
    if (f.has("exec"))
        return f.fail_status("exec",
                             "credential plugins are not supported by daemonlet: use a token, tokenFile or a "
                             "client certificate");
    if (f.has("auth-provider"))
        return f.fail_status("auth-provider",
                             "not supported by daemonlet: use a token, tokenFile or a client certificate");
    f.str("client-certificate", e.client_certificate);
    e.client_certificate = resolve_path(base, e.client_certificate);
    f.str("client-certificate-data", e.client_certificate_data);
    f.str("client-key", e.client_key);
    e.client_key = resolve_path(base, e.client_key);
    f.str("client-key-data", e.client_key_data);
    f.str("token", e.token);
    f.str("tokenFile", e.token_file);
    e.token_file = resolve_path(base, e.token_file);
    f.str("username", e.username);
    f.str("password", e.password);
    if (!f.status().ok()) return f.status();
    // clientcmd's validateAuthInfo.
    if (!e.client_certificate.empty() && !e.client_certificate_data.empty())
        return f.fail_status("", "client-cert-data and client-cert are both specified");
    if (!e.client_key.empty() && !e.client_key_data.empty())
        return f.fail_status("", "client-key-data and client-key are both specified");
    bool has_cert = !e.client_certificate.empty() || !e.client_certificate_data.empty();
    bool has_key = !e.client_key.empty() || !e.client_key_data.empty();
    if (has_cert != has_key)
        return f.fail_status(has_cert ? "client-key" : "client-certificate",
                             "client-certificate and client-key must be given together");
    bool has_token = !e.token.empty() || !e.token_file.empty();
    bool has_basic = !e.username.empty() || !e.password.empty();
    if (has_token && has_basic)
        return f.fail_status("", "more than one authentication method found: token and username/password");
    if (!e.token.empty()) e.token_file.clear();  // client-go: an inline token wins
    return Ok{};
}

}  // namespace

Result<ApiEndpoint> parse_kubeconfig(std::string_view text, const std::string& file,
                                     const std::string& base_dir, const std::string& context) {
    ManifestLimits limits;
    limits.max_bytes = 1024 * 1024;
    auto docs = parse_documents(text, file, limits);
    if (!docs.ok()) return docs.error();
    if (docs.value().size() != 1 || !docs.value().front().value.is_object())
        return Error{ErrorCode::Invalid, file + ": expected one kubeconfig document (kind: Config)"};
    const Json& doc = docs.value().front().value;
    Fields top(file, "", doc);
    std::string kind;
    top.str("kind", kind);
    if (!top.status().ok()) return top.status().error();
    if (!kind.empty() && kind != "Config")
        return Error{ErrorCode::Invalid, file + ": kind: " + render_string(kind) + ": expected Config"};

    ApiEndpoint e;
    e.context = context;
    if (e.context.empty()) top.str("current-context", e.context);
    if (!top.status().ok()) return top.status().error();
    if (e.context.empty())
        return Error{ErrorCode::Invalid, file + ": current-context: not set, and no context was chosen"};
    auto ctx = find_named(doc, file, "contexts", "context", e.context);
    if (!ctx.ok()) return ctx.error();
    Fields cf(file, ctx.value().path, *ctx.value().value);
    std::string cluster_name, user_name;
    cf.str("cluster", cluster_name);
    cf.str("user", user_name);
    cf.str("namespace", e.namespace_);
    if (!cf.status().ok()) return cf.status().error();
    if (cluster_name.empty()) return cf.fail_status("cluster", "required").error();

    auto cluster = find_named(doc, file, "clusters", "cluster", cluster_name);
    if (!cluster.ok()) return cluster.error();
    Fields clf(file, cluster.value().path, *cluster.value().value);
    if (auto s = read_cluster(clf, base_dir, e); !s.ok()) return s.error();
    if (!user_name.empty()) {
        auto user = find_named(doc, file, "users", "user", user_name);
        if (!user.ok()) return user.error();
        Fields uf(file, user.value().path, *user.value().value);
        if (auto s = read_user(uf, base_dir, e); !s.ok()) return s.error();
    }
    return e;
}

Result<ApiEndpoint> in_cluster_endpoint(const std::string& host, const std::string& port,
                                        const std::string& service_account_dir) {
    if (host.empty() || port.empty())
        return Error{ErrorCode::Invalid,
                     "unable to load in-cluster configuration, KUBERNETES_SERVICE_HOST and "
                     "KUBERNETES_SERVICE_PORT must be defined"};
    ApiEndpoint e;
    e.context = "in-cluster";
    // net.JoinHostPort: an IPv6 address is bracketed.
    e.server = "https://" + (host.find(':') != std::string::npos ? "[" + host + "]" : host) + ":" + port;
    e.token_file = service_account_dir + "/token";
    e.certificate_authority = service_account_dir + "/ca.crt";
    return e;
}

}  // namespace daemonlet
