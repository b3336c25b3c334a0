// What the probe actions share (platform/probe/prober.cpp, probe_exec.cpp,
// probe_net.cpp); internal to platform. An operation owns its libuv handles
// and deletes itself once the last one is closed; its owner (the Prober)
// only knows it while its callback is still due.
#pragma once

#include <uv.h>

#include <cstddef>
#include <string>
#include <utility>

#include "platform/probe/prober.h"

namespace daemonlet::platform {

// kubelet pkg/probe: maxReadLength, for exec output and HTTP bodies.
inline constexpr std::size_t kProbeMaxOutput = 10 * 1024;

// kubelet's probes' User-Agent: kube-probe/<major>.<minor>.
inline constexpr const char* kUserAgent = "kube-probe/1.30";

inline std::string uv_text(int err) { return std::string(uv_strerror(err)); }

struct Prober::Op {
    Prober* owner = nullptr;  // null once the callback is delivered or cancelled
    Id id = 0;
    Callback cb;
    int open_handles = 0;
    virtual ~Op() = default;
    virtual void abort() = 0;  // cancel: stop the work; handles close as it ends

    void attach(Prober* p, Id i, Callback c) {
        owner = p;
        id = i;
        cb = std::move(c);
    }

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

// An HTTP exchange on the Prober's HttpClient (httpGet, grpc): it holds no
// handle of its own, so it is deleted when it ends or is cancelled.
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

// net.JoinHostPort: an IPv6 address in brackets.
inline std::string join_host_port(const std::string& host, int port) {
    if (host.find(':') != std::string::npos) return "[" + host + "]:" + std::to_string(port);
    return host + ":" + std::to_string(port);
}

}  // namespace daemonlet::platform
