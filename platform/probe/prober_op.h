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

}  // namespace daemonlet::platform
