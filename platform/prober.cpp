// The probe actions on libuv; see platform/prober.h for the semantics and the
// kubelet rules they follow. Each operation owns its handles and frees
// itself once every handle is closed; the Prober only knows the operations
// whose callback is still due.
#include "platform/prober.h"

#include <signal.h>

#include <cerrno>
#include <cstring>

#include <unistd.h>

#include "platform/shim_protocol.h"

namespace daemonlet::platform {

namespace {

// kubelet pkg/probe: maxReadLength, for exec output and HTTP bodies.
constexpr std::size_t kMaxOutput = 10 * 1024;
constexpr int kMaxRedirects = 10;
constexpr const char* kUserAgent = "kube-probe/1.30";

std::string uv_text(int err) { return std::string(uv_strerror(err)); }

std::string join_host_port(const std::string& host, int port) {
    if (host.find(':') != std::string::npos) return "[" + host + "]:" + std::to_string(port);
    return host + ":" + std::to_string(port);
}

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

// probe.ResolveContainerPort: a number, or a port name of the container
// (then, as a last effort, a number written as a string).
Result<int> resolve_port(const IntOrString& p, const Container& c) {
    std::int64_t port = -1;
    if (p.type == IntOrString::Type::Int) {
        port = p.int_val;
    } else {
        for (const auto& cp : c.ports)
            if (cp.name == p.str_val) port = cp.container_port;
        if (port < 0) {
            char* end = nullptr;
            errno = 0;
            long v = std::strtol(p.str_val.c_str(), &end, 10);
            if (p.str_val.empty() || *end != '\0' || errno != 0)
                return Error{"invalid", "couldn't find port: " + p.str_val + " in container " + c.name};
            port = v;
        }
    }
    if (port <= 0 || port >= 65536) return Error{"invalid", "invalid port number: " + std::to_string(port)};
    return static_cast<int>(port);
}

}  // namespace

Result<ProbeAction> resolve_probe_action(const Handler& h, const Container& c,
                                         const std::vector<std::pair<std::string, std::string>>& env,
                                         std::int32_t timeout_seconds) {
    ProbeAction a;
    a.timeout_ms = static_cast<std::int64_t>(timeout_seconds > 0 ? timeout_seconds : 1) * 1000;
    if (h.exec) {
        a.type = ProbeAction::Type::Exec;
        a.command = h.exec->command;
        a.env = env;
        a.working_dir = c.working_dir;
        if (a.command.empty()) return Error{"invalid", "exec probe without a command"};
        return a;
    }
    if (h.tcp_socket) {
        a.type = ProbeAction::Type::TcpSocket;
        auto port = resolve_port(h.tcp_socket->port, c);
        if (!port) return port.error();
        a.port = port.value();
        a.host = h.tcp_socket->host;
        return a;
    }
    if (h.http_get) {
        a.type = ProbeAction::Type::HttpGet;
        auto port = resolve_port(h.http_get->port, c);
        if (!port) return port.error();
        a.port = port.value();
        a.host = h.http_get->host;
        a.scheme = h.http_get->scheme.empty() ? "HTTP" : h.http_get->scheme;
        a.path = h.http_get->path;
        for (const auto& hd : h.http_get->http_headers) a.headers.emplace_back(hd.name, hd.value);
        return a;
    }
    return Error{"unsupported", "grpc probes are not supported by the exec runtime"};
}

// ---- operations -------------------------------------------------------------

struct Prober::Op {
    Prober* owner = nullptr;  // null once the callback is delivered or cancelled
    Id id = 0;
    Callback cb;
    int open_handles = 0;
    virtual ~Op() = default;
    virtual void abort() = 0;  // cancel: stop the work; handles close as it ends

    void deliver(ProbeResult r) {
        if (!owner) return;
        Prober* p = owner;
        owner = nullptr;
        p->finish(id, std::move(r));
    }
    // A uv_close callback for a handle whose data is this op.
    static void handle_closed(uv_handle_t* h) {
        auto* op = static_cast<Op*>(h->data);
        if (--op->open_handles == 0) delete op;
    }
    void close(uv_handle_t* h) {
        if (!uv_is_closing(h)) uv_close(h, handle_closed);
    }
};

namespace {

struct ExecOp : Prober::Op {
    uv_process_t proc{};
    uv_pipe_t out{};
    uv_timer_t timer{};
    std::string output;
    std::string command_text;
    std::string spawn_error;
    bool running = false, exited = false, eof = false, timed_out = false, done = false;
    std::int64_t exit_status = 0;
    int term_signal = 0;
    char buf[4096];

    void kill_group() {
        if (running && !exited && proc.pid > 0) ::kill(-proc.pid, SIGKILL);
    }
    void abort() override {
        kill_group();
        maybe_done();  // a spawn failure or a finished process: close now
    }
    void maybe_done() {
        if (!exited || !eof || done) return;
        done = true;
        ProbeResult r;
        r.output = output;
        if (!spawn_error.empty()) {
            r.outcome = ProbeOutcome::Failure;
            r.output = spawn_error;
        } else if (timed_out) {
            r.outcome = ProbeOutcome::Failure;
            r.output = "command \"" + command_text + "\" timed out";
        } else if (exit_status == 0 && term_signal == 0) {
            r.outcome = ProbeOutcome::Success;
        } else {
            r.outcome = ProbeOutcome::Failure;
            if (r.output.empty())
                r.output = term_signal ? "command killed by signal " + std::to_string(term_signal)
                                       : "command exited with " + std::to_string(exit_status);
        }
        close(reinterpret_cast<uv_handle_t*>(&timer));
        close(reinterpret_cast<uv_handle_t*>(&proc));
        close(reinterpret_cast<uv_handle_t*>(&out));
        deliver(std::move(r));
    }
};

struct TcpOp : Prober::Op {
    uv_tcp_t tcp{};
    uv_timer_t timer{};
    uv_connect_t connect{};
    uv_getaddrinfo_t resolve{};
    std::string target;
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

struct HttpOp : Prober::Op {
    HttpClient* http = nullptr;
    HttpClient::RequestId req = 0;
    bool in_flight = false;
    void abort() override {
        if (in_flight) http->cancel(req);
        in_flight = false;
        delete this;
    }
};

}  // namespace

Prober::Prober(uv_loop_t* loop) : loop_(loop), http_(loop), deferred_timer_(new uv_timer_t) {
    uv_timer_init(loop_, deferred_timer_);
    deferred_timer_->data = this;
}

Prober::~Prober() { close(); }

void Prober::finish(Id id, ProbeResult r) {
    auto it = ops_.find(id);
    if (it == ops_.end()) return;
    Callback cb = std::move(it->second->cb);
    ops_.erase(it);
    if (in_run_) {
        // An operation that ended inside run() (a request that could not
        // start) still calls back from the loop.
        deferred_[id] = {std::move(cb), std::move(r)};
        uv_timer_start(
            deferred_timer_,
            [](uv_timer_t* t) {
                auto* self = static_cast<Prober*>(t->data);
                auto pending = std::move(self->deferred_);
                self->deferred_.clear();
                for (auto& [pid, entry] : pending) {
                    if (self->closed_) return;
                    entry.first(std::move(entry.second));
                }
            },
            0, 0);
        return;
    }
    cb(std::move(r));
}

Result<Prober::Id> Prober::run(const ProbeAction& action, Callback cb) {
    if (closed_) return Error{"closed", "prober is closed"};
    const Id id = next_++;
    in_run_ = true;
    Result<Id> r = Error{"invalid", "unknown probe type"};
    switch (action.type) {
    case ProbeAction::Type::Exec: r = run_exec(id, action, std::move(cb)); break;
    case ProbeAction::Type::TcpSocket: r = run_tcp(id, action, std::move(cb)); break;
    case ProbeAction::Type::HttpGet: r = run_http(id, action, std::move(cb)); break;
    }
    in_run_ = false;
    return r;
}

void Prober::cancel(Id id) {
    deferred_.erase(id);
    auto it = ops_.find(id);
    if (it == ops_.end()) return;
    Op* op = it->second;
    ops_.erase(it);
    op->owner = nullptr;
    op->abort();
}

void Prober::close() {
    if (closed_) return;
    closed_ = true;
    while (!ops_.empty()) cancel(ops_.begin()->first);
    deferred_.clear();
    http_.close();
    uv_close(reinterpret_cast<uv_handle_t*>(deferred_timer_),
             [](uv_handle_t* h) { delete reinterpret_cast<uv_timer_t*>(h); });
    deferred_timer_ = nullptr;
}

Result<Prober::Id> Prober::run_exec(Id id, const ProbeAction& a, Callback cb) {
    auto* op = new ExecOp;
    op->owner = this;
    op->id = id;
    op->cb = std::move(cb);
    for (const auto& c : a.command) op->command_text += (op->command_text.empty() ? "" : " ") + c;

    std::vector<std::string> env_strings;
    bool has_path = false;
    for (const auto& [k, v] : a.env) {
        env_strings.push_back(k + "=" + v);
        has_path = has_path || k == "PATH";
    }
    // As the runtimes do for a container without PATH (shim_protocol.h).
    if (!has_path) env_strings.push_back(std::string("PATH=") + shim::kDefaultPath);
    std::vector<char*> envp, argv;
    for (auto& s : env_strings) envp.push_back(s.data());
    envp.push_back(nullptr);
    std::vector<std::string> args = a.command;
    for (auto& s : args) argv.push_back(s.data());
    argv.push_back(nullptr);
    const std::string cwd = a.working_dir.empty() ? "/" : a.working_dir;

    // One pipe for stdout and stderr (kubelet keeps the combined output).
    uv_file fds[2] = {-1, -1};
    if (int prc = uv_pipe(fds, 0, 0); prc != 0) {
        delete op;
        return Error{"io", "exec probe: pipe: " + uv_text(prc)};
    }
    uv_pipe_init(loop_, &op->out, 0);
    op->out.data = op;
    ++op->open_handles;
    uv_pipe_open(&op->out, fds[0]);
    uv_stdio_container_t stdio[3];
    stdio[0].flags = UV_IGNORE;
    stdio[1].flags = UV_INHERIT_FD;
    stdio[1].data.fd = fds[1];
    stdio[2].flags = UV_INHERIT_FD;
    stdio[2].data.fd = fds[1];
    uv_process_options_t opts{};
    opts.file = argv[0];
    opts.args = argv.data();
    opts.env = envp.data();
    opts.cwd = cwd.c_str();
    opts.stdio = stdio;
    opts.stdio_count = 3;
    // Its own process group, so that a timeout kills what it started too.
    opts.flags = UV_PROCESS_DETACHED;
    opts.exit_cb = [](uv_process_t* p, std::int64_t status, int sig) {
        auto* o = static_cast<ExecOp*>(p->data);
        o->running = false;
        // Strays of the probe that still hold the pipe open go with it.
        if (!o->eof) ::kill(-p->pid, SIGKILL);
        o->exited = true;
        o->exit_status = status;
        o->term_signal = sig;
        o->maybe_done();
    };
    op->proc.data = op;
    uv_timer_init(loop_, &op->timer);
    op->timer.data = op;
    ++op->open_handles;
    ++op->open_handles;  // the process handle: closed even when uv_spawn fails
    ops_[id] = op;
    int rc = uv_spawn(loop_, &op->proc, &opts);
    ::close(fds[1]);  // the child has its copy; EOF comes when it and its children exit
    if (rc != 0) {
        // A command that cannot be started fails the probe, as a runtime's
        // exec does (exit 126/127), rather than being an error kubelet
        // throws away: otherwise a probe with a typo would never fail. The
        // failure is called back from the loop, not from inside run().
        op->exited = op->eof = true;
        op->spawn_error = "exec " + op->command_text + ": " + uv_text(rc);
        uv_timer_start(
            &op->timer, [](uv_timer_t* t) { static_cast<ExecOp*>(t->data)->maybe_done(); }, 0, 0);
        return id;
    }
    op->running = true;
    uv_timer_start(
        &op->timer,
        [](uv_timer_t* t) {
            auto* o = static_cast<ExecOp*>(t->data);
            o->timed_out = true;
            o->kill_group();
        },
        static_cast<std::uint64_t>(a.timeout_ms), 0);
    uv_read_start(
        reinterpret_cast<uv_stream_t*>(&op->out),
        [](uv_handle_t* h, std::size_t, uv_buf_t* b) {
            auto* o = static_cast<ExecOp*>(h->data);
            *b = uv_buf_init(o->buf, sizeof o->buf);
        },
        [](uv_stream_t* s, ssize_t n, const uv_buf_t* b) {
            auto* o = static_cast<ExecOp*>(s->data);
            if (n > 0) {
                std::size_t room = kMaxOutput - std::min(kMaxOutput, o->output.size());
                o->output.append(b->base, std::min(room, static_cast<std::size_t>(n)));
                return;
            }
            if (n < 0) {
                uv_read_stop(s);
                o->eof = true;
                o->maybe_done();
            }
        });
    return id;
}

Result<Prober::Id> Prober::run_tcp(Id id, const ProbeAction& a, Callback cb) {
    auto* op = new TcpOp;
    op->owner = this;
    op->id = id;
    op->cb = std::move(cb);
    const std::string host = a.host.empty() ? "127.0.0.1" : a.host;
    op->target = join_host_port(host, a.port);
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
    op->owner = this;
    op->id = id;
    op->cb = std::move(cb);
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
    req.max_body_bytes = kMaxOutput;
    req.truncate_body = true;
    req.fresh_connection = true;
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
        if (resp.status >= 200 && resp.status < 400) {
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
