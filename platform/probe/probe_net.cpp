// The network probes: tcpSocket (pkg/probe/tcp: a connect within the
// timeout) and httpGet (pkg/probe/http: DoHTTPProbe, RedirectChecker) over
// HttpClient.
#include <strings.h>
#include <unistd.h>

#include "platform/netns.h"
#include "platform/probe/prober_op.h"

namespace daemonlet::platform {

namespace {

constexpr int kMaxRedirects = 10;

// The host name of an absolute http(s) URL, without port or brackets.
std::string url_hostname(const std::string& url) {
    auto start = url.find("://");
    if (start == std::string::npos) return {};
    start += 3;
    auto end = url.find_first_of("/?#", start);
    std::string authority = url.substr(start, end == std::string::npos ? std::string::npos : end - start);
    if (auto at = authority.rfind('@'); at != std::string::npos) authority = authority.substr(at + 1);
    if (!authority.empty() && authority[0] == '[') return authority.substr(1, authority.find(']') - 1);
    return authority.substr(0, authority.find(':'));
}

struct TcpOp : Prober::Op {
    uv_tcp_t tcp{};
    uv_timer_t timer{};
    uv_connect_t connect{};
    uv_getaddrinfo_t resolve{};
    std::string target;
    std::string netns;
    int pending_reqs = 0;  // the connect and resolve requests always call back
    bool done = false;
    bool resolving = false;

    void abort() override { end({ProbeOutcome::Unknown, "cancelled"}); }
    void end(ProbeResult r) {
        if (done) return;
        done = true;
        if (resolving) uv_cancel(reinterpret_cast<uv_req_t*>(&resolve));
        close(reinterpret_cast<uv_handle_t*>(&timer));
        close(reinterpret_cast<uv_handle_t*>(&tcp));
        deliver(std::move(r));
    }
    static void req_done(TcpOp* op) {
        // Handles are counted in open_handles; requests hold one extra count.
        if (--op->open_handles == 0) delete op;
    }
    void start_connect(const sockaddr* addr) {
        if (!netns.empty()) {
            // The container's own network: the socket is made in it.
            auto fd = socket_in_netns(netns, addr->sa_family, SOCK_STREAM, 0);
            if (!fd) return end({ProbeOutcome::Failure, "dial tcp " + target + ": " + fd.error().message});
            if (int rc = uv_tcp_open(&tcp, fd.value()); rc != 0) {
                ::close(fd.value());
                return end({ProbeOutcome::Failure, "dial tcp " + target + ": " + uv_text(rc)});
            }
        }
        ++open_handles;
        int rc = uv_tcp_connect(&connect, &tcp, addr, [](uv_connect_t* req, int status) {
            auto* op = static_cast<TcpOp*>(req->data);
            if (status == 0)
                op->end({ProbeOutcome::Success, ""});
            else if (status != UV_ECANCELED)
                op->end({ProbeOutcome::Failure, "dial tcp " + op->target + ": connect: " + uv_text(status)});
            req_done(op);
        });
        connect.data = this;
        if (rc != 0) {
            --open_handles;
            end({ProbeOutcome::Failure, "dial tcp " + target + ": " + uv_text(rc)});
        }
    }
};

}  // namespace

Result<Prober::Id> Prober::run_tcp(Id id, const ProbeAction& a, Callback cb) {
    auto* op = new TcpOp;
    op->attach(this, id, std::move(cb));
    const std::string host = a.host.empty() ? "127.0.0.1" : a.host;
    op->target = join_host_port(host, a.port);
    op->netns = a.netns;
    uv_tcp_init(loop_, &op->tcp);
    op->tcp.data = op;
    uv_timer_init(loop_, &op->timer);
    op->timer.data = op;
    op->open_handles = 2;
    ops_[id] = op;
    // kubelet's DialTimeout: "dial tcp HOST:PORT: i/o timeout".
    uv_timer_start(
        &op->timer,
        [](uv_timer_t* t) {
            auto* o = static_cast<TcpOp*>(t->data);
            o->end({ProbeOutcome::Failure, "dial tcp " + o->target + ": i/o timeout"});
        },
        static_cast<std::uint64_t>(a.timeout_ms), 0);
    sockaddr_storage addr{};
    if (uv_ip4_addr(host.c_str(), a.port, reinterpret_cast<sockaddr_in*>(&addr)) == 0 ||
        uv_ip6_addr(host.c_str(), a.port, reinterpret_cast<sockaddr_in6*>(&addr)) == 0) {
        op->start_connect(reinterpret_cast<const sockaddr*>(&addr));
        return id;
    }
    // A name: resolved on libuv's thread pool, under the same timeout.
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    op->resolve.data = op;
    op->resolving = true;
    ++op->open_handles;
    int rc = uv_getaddrinfo(
        loop_, &op->resolve,
        [](uv_getaddrinfo_t* req, int status, addrinfo* res) {
            auto* o = static_cast<TcpOp*>(req->data);
            o->resolving = false;
            if (!o->done) {
                if (status != 0 || !res)
                    o->end({ProbeOutcome::Failure, "dial tcp " + o->target + ": lookup: " + uv_text(status)});
                else
                    o->start_connect(res->ai_addr);
            }
            uv_freeaddrinfo(res);
            TcpOp::req_done(o);
        },
        host.c_str(), std::to_string(a.port).c_str(), &hints);
    if (rc != 0) {
        op->resolving = false;
        --op->open_handles;
        op->end({ProbeOutcome::Failure, "dial tcp " + op->target + ": lookup: " + uv_text(rc)});
    }
    return id;
}

Result<Prober::Id> Prober::run_http(Id id, const ProbeAction& a, Callback cb) {
    auto* op = new HttpOp;
    op->attach(this, id, std::move(cb));
    op->http = &http_;
    ops_[id] = op;
    std::string scheme = a.scheme == "HTTPS" ? "https" : "http";
    std::string path = a.path.empty() || a.path[0] != '/' ? "/" + a.path : a.path;
    const std::string host = a.host.empty() ? "127.0.0.1" : a.host;
    std::string url = scheme + "://" + join_host_port(host, a.port) + path;
    http_attempt(id, url, a, 0, url_hostname(url));
    return id;
}

void Prober::http_attempt(Id id, std::string url, const ProbeAction& a, int redirects,
                          std::string first_host) {
    auto it = ops_.find(id);
    if (it == ops_.end()) return;
    auto* op = static_cast<HttpOp*>(it->second);
    HttpRequest req;
    req.url = url;
    req.timeout_ms = a.timeout_ms;
    req.tls.verify = false;  // kubelet: InsecureSkipVerify
    req.max_body_bytes = kProbeMaxOutput;
    req.truncate_body = true;
    req.fresh_connection = true;
    req.netns = a.netns;
    bool has_ua = false, has_accept = false;
    for (const auto& [k, v] : a.headers) {
        has_ua = has_ua || strcasecmp(k.c_str(), "User-Agent") == 0;
        has_accept = has_accept || strcasecmp(k.c_str(), "Accept") == 0;
        req.headers.emplace_back(k, v);
    }
    if (!has_ua) req.headers.emplace_back("User-Agent", kUserAgent);
    if (!has_accept) req.headers.emplace_back("Accept", "*/*");
    ProbeAction copy = a;
    auto rid = http_.request(req, [this, id, copy, redirects, first_host, url](Result<HttpResponse> r) {
        auto oit = ops_.find(id);
        if (oit == ops_.end()) return;
        auto* o = static_cast<HttpOp*>(oit->second);
        o->in_flight = false;
        if (!r) {
            // DoHTTPProbe: a transport error is a failure with its text.
            o->deliver({ProbeOutcome::Failure, "Get \"" + url + "\": " + r.error().message});
            delete o;
            return;
        }
        const HttpResponse& resp = r.value();
        // RedirectChecker: same host only, at most 10; elsewhere the 3xx is
        // the answer.
        if (resp.status >= 300 && resp.status < 400 && !resp.redirect_url.empty() &&
            url_hostname(resp.redirect_url) == first_host) {
            if (redirects + 1 >= kMaxRedirects) {
                o->deliver(
                    {ProbeOutcome::Failure, "Get \"" + resp.redirect_url + "\": stopped after 10 redirects"});
                delete o;
                return;
            }
            http_attempt(id, resp.redirect_url, copy, redirects + 1, first_host);
            return;
        }
        ProbeResult pr;
        if ((resp.status >= 200 && resp.status < 400) || copy.any_status) {
            pr.outcome = ProbeOutcome::Success;
            pr.output =
                resp.status >= 300 ? "Probe terminated redirects, Response body: " + resp.body : resp.body;
        } else {
            pr.outcome = ProbeOutcome::Failure;
            pr.output = "HTTP probe failed with statuscode: " + std::to_string(resp.status);
        }
        o->deliver(std::move(pr));
        delete o;
    });
    if (!rid) {
        op->deliver({ProbeOutcome::Failure, rid.error().message});
        delete op;
        return;
    }
    op->req = rid.value();
    op->in_flight = true;
}

}  // namespace daemonlet::platform
