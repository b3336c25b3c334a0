#include "platform/image/registry_client.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>

#include "core/registry_auth.h"
#include "platform/fd.h"
#include "platform/http/credentials.h"
#include "platform/http/curl_api.h"
#include "platform/image/sha256.h"

namespace daemonlet::platform {

namespace {

// A connection that makes no progress for this long is given up
// (unreachable); a large layer on a slow link may take as long as it needs.
constexpr long kConnectTimeoutMs = 15'000;
constexpr long kStallSeconds = 60;
constexpr long kMaxRedirects = 5;
// Debian's hashed system CA directory, kept next to a registry's own CA.
constexpr const char* kSystemCaPath = "/etc/ssl/certs";

// libcurl, loaded by RegistryClient::open (curl_api.h), which fails when it
// cannot be: every other call comes after a client was opened.
const CurlApi& lib() { return *curl_api().value(); }

struct CurlDeleter {
    void operator()(CURL* c) const { lib().easy_cleanup(c); }
};
struct SlistDeleter {
    void operator()(curl_slist* l) const { lib().slist_free_all(l); }
};

bool file_exists(const std::string& path) { return ::access(path.c_str(), R_OK) == 0; }

std::string header_value(std::string_view line, std::string_view name) {
    if (line.size() <= name.size() || line[name.size()] != ':') return {};
    for (std::size_t i = 0; i < name.size(); ++i)
        if (std::tolower(static_cast<unsigned char>(line[i])) != name[i]) return {};
    std::string v(line.substr(name.size() + 1));
    while (!v.empty() && (v.front() == ' ' || v.front() == '\t')) v.erase(v.begin());
    while (!v.empty() && (v.back() == '\r' || v.back() == '\n' || v.back() == ' ')) v.pop_back();
    return v;
}

struct Headers {
    std::string www_authenticate, content_type, docker_content_digest;
};

size_t on_header(char* data, size_t size, size_t n, void* user) {
    auto* h = static_cast<Headers*>(user);
    std::string_view line(data, size * n);
    // A new response (a redirect's, or after 100 Continue) starts afresh.
    if (line.rfind("HTTP/", 0) == 0) *h = Headers{};
    if (auto v = header_value(line, "www-authenticate"); !v.empty()) h->www_authenticate = v;
    if (auto v = header_value(line, "content-type"); !v.empty()) h->content_type = v;
    if (auto v = header_value(line, "docker-content-digest"); !v.empty()) h->docker_content_digest = v;
    return size * n;
}

}  // namespace

// Where a body goes: a string or a file, bounded, hashed when a file.
struct RegistryClient::Sink {
    std::string* text = nullptr;
    int fd = -1;
    std::optional<Sha256> hash;
    std::int64_t max_bytes = 0;
    std::int64_t written = 0;
    bool too_big = false;
    int write_errno = 0;
    long status = 0;  // only a 2xx body is kept
    CURL* curl = nullptr;

    void reset() {
        if (text) text->clear();
        if (fd >= 0) {
            ::ftruncate(fd, 0);
            ::lseek(fd, 0, SEEK_SET);
        }
        written = 0;
        too_big = false;
    }
    static size_t write(char* data, size_t size, size_t n, void* user) {
        auto* s = static_cast<Sink*>(user);
        const size_t len = size * n;
        long status = 0;
        lib().easy_getinfo(s->curl, CURLINFO_RESPONSE_CODE, &status);
        if (status < 200 || status >= 300) return len;  // an error page: dropped
        if (s->written + static_cast<std::int64_t>(len) > s->max_bytes) {
            s->too_big = true;
            return 0;  // curl stops with CURLE_WRITE_ERROR
        }
        s->written += static_cast<std::int64_t>(len);
        if (s->text) {
            s->text->append(data, len);
            return len;
        }
        s->hash->update(data, len);
        for (size_t done = 0; done < len;) {
            ssize_t w = ::write(s->fd, data + done, len - done);
            if (w < 0 && errno == EINTR) continue;
            if (w < 0) {
                s->write_errno = errno;
                return 0;
            }
            done += static_cast<size_t>(w);
        }
        return len;
    }
};

Result<RegistryClient> RegistryClient::open(const std::string& domain, const std::string& repository,
                                            const RegistryOptions& options) {
    // Loaded, not linked: daemonlet-image's imports and root filesystems
    // need no libcurl, and libcurl4 brings about 11 MiB of libraries
    // (Kerberos, LDAP, SSH, OpenSSL) to a board (docs/dependencies.md).
    if (auto api = curl_api(); !api) {
        const std::string& why = api.error().message;
        return Error{ErrorCode::PullFailed, "registry pulls need libcurl4: apt-get install libcurl4 (" +
                                                why.substr(0, why.find(": install libcurl4")) + ")"};
    }
    RegistryClient c;
    c.domain_ = domain;
    c.host_ = registry_api_host(domain);
    c.repository_ = repository;
    const auto& insecure = options.insecure_registries;
    const bool plain = std::find(insecure.begin(), insecure.end(), domain) != insecure.end() ||
                       std::find(insecure.begin(), insecure.end(), c.host_) != insecure.end();
    c.base_ = (plain ? "http://" : "https://") + c.host_ + "/v2/" + repository + "/";
    if (!options.certs_dir.empty()) {
        for (const std::string& h : {domain, c.host_}) {
            const std::string dir = options.certs_dir + "/" + h;
            if (c.ca_file_.empty() && file_exists(dir + "/ca.crt")) c.ca_file_ = dir + "/ca.crt";
            if (c.cert_file_.empty() && file_exists(dir + "/client.cert") &&
                file_exists(dir + "/client.key")) {
                c.cert_file_ = dir + "/client.cert";
                c.key_file_ = dir + "/client.key";
            }
        }
    }
    if (!options.auth_file.empty()) {
        auto file = read_credential(options.auth_file, true);
        if (!file) return Error{ErrorCode::Invalid, "runtime.registryAuthFile: " + file.error().message};
        if (!file.value().warning.empty()) c.warnings_.push_back(file.value().warning);
        auto entry = find_registry_auth(file.value().data, domain, options.auth_file);
        if (!entry) return Error{ErrorCode::Invalid, entry.error().message};
        if (entry.value()) {
            const RegistryAuthEntry& e = *entry.value();
            if (!e.auth.empty()) {
                auto decoded = base64_decode(e.auth);
                if (!decoded)
                    return Error{ErrorCode::Invalid,
                                 options.auth_file + ": auths[" + e.key + "].auth: not base64"};
                auto pair = split_basic_auth(decoded.value());
                if (!pair)
                    return Error{ErrorCode::Invalid,
                                 options.auth_file + ": auths[" + e.key + "]." + pair.error().message};
                c.credentials_ = pair.value();
            } else {
                c.credentials_ = std::pair{e.username, e.password};
            }
        }
    }
    return c;
}

Result<RegistryResponse> RegistryClient::attempt(const std::string& url, const std::string& accept,
                                                 Sink& sink, bool with_auth, std::string* challenge) {
    std::unique_ptr<CURL, CurlDeleter> curl(lib().easy_init());
    if (!curl) return Error{ErrorCode::PullFailed, "libcurl: cannot make a handle"};
    CURL* h = curl.get();
    sink.curl = h;
    sink.reset();
    Headers headers;
    std::unique_ptr<curl_slist, SlistDeleter> list;
    auto add = [&](const std::string& line) { list.reset(lib().slist_append(list.release(), line.c_str())); };
    if (!accept.empty()) add("Accept: " + accept);
    if (with_auth && !bearer_.empty()) add("Authorization: Bearer " + bearer_);
    lib().easy_setopt(h, CURLOPT_URL, url.c_str());
    lib().easy_setopt(h, CURLOPT_HTTPHEADER, list.get());
    lib().easy_setopt(h, CURLOPT_USERAGENT, "daemonlet-image");
    lib().easy_setopt(h, CURLOPT_FOLLOWLOCATION, 1L);
    lib().easy_setopt(h, CURLOPT_MAXREDIRS, kMaxRedirects);
    lib().easy_setopt(h, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
    lib().easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
    lib().easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    lib().easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, kConnectTimeoutMs);
    lib().easy_setopt(h, CURLOPT_LOW_SPEED_LIMIT, 1L);
    lib().easy_setopt(h, CURLOPT_LOW_SPEED_TIME, kStallSeconds);
    if (!ca_file_.empty()) {
        lib().easy_setopt(h, CURLOPT_CAINFO, ca_file_.c_str());
        lib().easy_setopt(h, CURLOPT_CAPATH, kSystemCaPath);
    }
    if (!cert_file_.empty()) {
        lib().easy_setopt(h, CURLOPT_SSLCERT, cert_file_.c_str());
        lib().easy_setopt(h, CURLOPT_SSLKEY, key_file_.c_str());
    }
    if (with_auth && basic_ && credentials_) {
        lib().easy_setopt(h, CURLOPT_HTTPAUTH, static_cast<long>(CURLAUTH_BASIC));
        lib().easy_setopt(h, CURLOPT_USERNAME, credentials_->first.c_str());
        lib().easy_setopt(h, CURLOPT_PASSWORD, credentials_->second.c_str());
    }
    lib().easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
    lib().easy_setopt(h, CURLOPT_HEADERDATA, &headers);
    lib().easy_setopt(h, CURLOPT_WRITEFUNCTION, Sink::write);
    lib().easy_setopt(h, CURLOPT_WRITEDATA, &sink);
    char errbuf[CURL_ERROR_SIZE] = {};
    lib().easy_setopt(h, CURLOPT_ERRORBUFFER, errbuf);
    CURLcode rc = lib().easy_perform(h);
    const std::string where = "registry " + host_;
    if (sink.too_big)
        return Error{ErrorCode::Invalid, where + ": " + url.substr(url.find("/v2/")) + ": larger than " +
                                             std::to_string(sink.max_bytes) + " bytes"};
    if (sink.write_errno)
        return Error{ErrorCode::PullFailed,
                     where + ": cannot write what it sent: " + std::strerror(sink.write_errno)};
    if (rc != CURLE_OK) {
        std::string why = errbuf[0] ? errbuf : lib().easy_strerror(rc);
        switch (rc) {
        case CURLE_PEER_FAILED_VERIFICATION:
        case CURLE_SSL_CACERT_BADFILE:
        case CURLE_SSL_CERTPROBLEM:
        case CURLE_SSL_CONNECT_ERROR:
            return Error{ErrorCode::Certificate, where + ": TLS certificate: " + why};
        case CURLE_COULDNT_RESOLVE_HOST:
        case CURLE_COULDNT_RESOLVE_PROXY:
        case CURLE_COULDNT_CONNECT:
        case CURLE_OPERATION_TIMEDOUT:
        case CURLE_SEND_ERROR:
        case CURLE_RECV_ERROR:
        case CURLE_GOT_NOTHING:
        case CURLE_PARTIAL_FILE: return Error{ErrorCode::Unreachable, where + " is unreachable: " + why};
        default: return Error{ErrorCode::PullFailed, where + ": " + why};
        }
    }
    RegistryResponse r;
    lib().easy_getinfo(h, CURLINFO_RESPONSE_CODE, &r.status);
    r.content_type = headers.content_type;
    r.docker_content_digest = headers.docker_content_digest;
    if (challenge) *challenge = headers.www_authenticate;
    return r;
}

Status RegistryClient::authenticate(const std::string& challenge_header) {
    const std::string where = "registry " + host_;
    auto challenges = parse_www_authenticate(challenge_header);
    for (const AuthChallenge& c : challenges) {
        if (c.scheme == "basic") {
            if (!credentials_)
                return Error{
                    ErrorCode::Unauthorized,
                    where + " asks for credentials (Basic) and the auth file has none for " + domain_};
            basic_ = true;
            return Ok{};
        }
        if (c.scheme == "bearer") {
            auto url = bearer_token_url(c, pull_scope(repository_));
            if (!url) return Error{ErrorCode::Unauthorized, where + ": " + url.error().message};
            // The token server may ask for the credentials itself (Basic).
            std::string body;
            Sink sink;
            sink.text = &body;
            sink.max_bytes = 1024 * 1024;
            basic_ = credentials_.has_value();
            bearer_.clear();
            auto r = attempt(url.value(), "", sink, true, nullptr);
            basic_ = false;
            if (!r) return r.error();
            if (r.value().status == 401 || r.value().status == 403)
                return Error{ErrorCode::Unauthorized,
                             where + ": the token server refused " +
                                 (credentials_ ? std::string("the credentials") : "an anonymous pull") +
                                 " (HTTP " + std::to_string(r.value().status) + ")"};
            if (r.value().status != 200)
                return Error{ErrorCode::PullFailed,
                             where + ": the token server answered HTTP " + std::to_string(r.value().status)};
            auto token = parse_token_response(body);
            if (!token) return Error{ErrorCode::Invalid, where + ": " + token.error().message};
            bearer_ = token.value();
            return Ok{};
        }
    }
    return Error{ErrorCode::Unauthorized, where + " answered 401 with no Basic or Bearer challenge"};
}

Result<RegistryResponse> RegistryClient::get(const std::string& path, const std::string& accept, Sink& sink) {
    const std::string url = base_ + path;
    const bool have_auth = basic_ || !bearer_.empty();
    std::string challenge;
    auto r = attempt(url, accept, sink, have_auth, &challenge);
    if (r && r.value().status == 401 && !have_auth) {
        if (auto s = authenticate(challenge); !s) return s.error();
        r = attempt(url, accept, sink, true, nullptr);
    }
    if (!r) return r.error();
    const long status = r.value().status;
    const std::string what = "registry " + host_ + ": " + repository_ + "/" + path;
    if (status == 401 || status == 403)
        return Error{ErrorCode::Unauthorized, what + ": unauthorized (HTTP " + std::to_string(status) + ")" +
                                                  (credentials_ ? ": the credentials were refused" : "")};
    if (status == 404) return Error{ErrorCode::NotFound, what + ": not found (HTTP 404)"};
    if (status == 502 || status == 503 || status == 504)
        return Error{ErrorCode::Unreachable,
                     what + ": the registry is unavailable (HTTP " + std::to_string(status) + ")"};
    if (status != 200) return Error{ErrorCode::PullFailed, what + ": HTTP " + std::to_string(status)};
    return r;
}

Result<RegistryResponse> RegistryClient::get_to_string(const std::string& path, const std::string& accept,
                                                       std::string& body, std::size_t max_bytes) {
    Sink sink;
    sink.text = &body;
    sink.max_bytes = static_cast<std::int64_t>(max_bytes);
    return get(path, accept, sink);
}

Result<RegistryResponse> RegistryClient::get_to_file(const std::string& path, const std::string& file,
                                                     std::int64_t max_bytes, std::string& sha256) {
    Fd fd(::open(file.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
    if (fd.get() < 0) return Error{ErrorCode::PullFailed, file + ": create: " + std::strerror(errno)};
    Sink sink;
    sink.fd = fd.get();
    sink.max_bytes = max_bytes;
    // Only a 2xx body is written and hashed (a 401's or a redirect's is
    // dropped), and only the last attempt can be a 2xx.
    auto hasher = Sha256::create();
    if (!hasher) return hasher.error();
    sink.hash = std::move(hasher).value();
    auto r = get(path, "", sink);
    if (!r) return r;
    sha256 = sink.hash->finish();
    return r;
}

}  // namespace daemonlet::platform
