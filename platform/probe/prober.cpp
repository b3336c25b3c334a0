// The Prober: runs, cancels and closes probe operations, and resolves a
// probe's action against its container; see platform/probe/prober.h. The actions
// themselves are in probe_exec.cpp and probe_net.cpp.
#include "platform/probe/prober.h"

#include <cerrno>
#include <cstdlib>

#include "platform/probe/prober_op.h"

namespace daemonlet::platform {

namespace {

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
                return Error{ErrorCode::Invalid,
                             "couldn't find port: " + p.str_val + " in container " + c.name};
            port = v;
        }
    }
    if (port <= 0 || port >= 65536)
        return Error{ErrorCode::Invalid, "invalid port number: " + std::to_string(port)};
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
        if (a.command.empty()) return Error{ErrorCode::Invalid, "exec probe without a command"};
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
    if (h.grpc) {
        // GRPCAction.Port is a number (validateGRPCAction); no named ports.
        a.type = ProbeAction::Type::Grpc;
        if (h.grpc->port <= 0 || h.grpc->port >= 65536)
            return Error{ErrorCode::Invalid, "invalid port number: " + std::to_string(h.grpc->port)};
        a.port = h.grpc->port;
        a.service = h.grpc->service;
        return a;
    }
    return Error{ErrorCode::Invalid, "the handler has no action"};
}

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
    if (closed_) return Error{ErrorCode::Closed, "prober is closed"};
    const Id id = next_++;
    in_run_ = true;
    Result<Id> r = Error{ErrorCode::Invalid, "unknown probe type"};
    switch (action.type) {
    case ProbeAction::Type::Exec: r = run_exec(id, action, std::move(cb)); break;
    case ProbeAction::Type::TcpSocket: r = run_tcp(id, action, std::move(cb)); break;
    case ProbeAction::Type::HttpGet: r = run_http(id, action, std::move(cb)); break;
    case ProbeAction::Type::Grpc: r = run_grpc(id, action, std::move(cb)); break;
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

}  // namespace daemonlet::platform
