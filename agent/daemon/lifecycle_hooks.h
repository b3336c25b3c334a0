// The LifecycleHooks component: the kubelet's HandlerRunner
// (pkg/kubelet/lifecycle/handlers.go), which runs a container's postStart
// and preStop handlers. The actions are the prober's (platform/probe):
// exec in the container (runc exec, ctr tasks exec; on the host with the
// container's env under the exec runtime), httpGet to the pod's address (any
// response succeeds, as runHTTPHandler returns only the transport's error),
// and sleep (PodLifecycleSleepAction) as a timer. Nothing waits on the
// loop: every run is a libuv operation that calls back.
//
// When each container's hooks run, and what for, is PodHooks's
// (pod_hooks.h): postStart right after a container started, its failure
// stops the container (event FailedPostStartHook, restarted as its
// restartPolicy says); preStop before the stop signal, bounded by the
// pod's terminationGracePeriodSeconds, the rest of which goes to the stop
// (core/lifecycle_hook.h grace_after_pre_stop).
#pragma once

#include <uv.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "agent/daemon/prober_manager.h"
#include "core/model.h"
#include "core/result.h"
#include "platform/runtime.h"

namespace daemonlet::agent {

// The container a hook runs for.
struct HookContainer {
    std::string pod;  // kubelet's format.Pod: name_namespace(uid), for the message
    std::string runtime_id;
    std::shared_ptr<const Container> spec;
    std::vector<std::pair<std::string, std::string>> env;  // for an exec hook on the host
};

// What runs one hook (LifecycleHooks; a fake in tests, which answers as
// the test says).
class HookRunner {
  public:
    using Id = std::uint64_t;
    // Ok, or (ErrorCode::Runtime) the kubelet's failure message
    // (core/lifecycle_hook.h hook_failure_message); an action that ran out
    // of `timeout_ms` was killed and failed.
    using Done = std::function<void(Status)>;
    virtual ~HookRunner() = default;
    // Runs handler `h` of container `c` for at most `timeout_ms`. `done` is
    // called exactly once, from the loop (never inside run()), unless
    // cancel(id) comes first.
    virtual Id run(const Handler& h, const HookContainer& c, std::int64_t timeout_ms, Done done) = 0;
    // The callback is not called; an exec hook's process is killed.
    virtual void cancel(Id id) = 0;
};

class LifecycleHooks final : public HookRunner {
  public:
    LifecycleHooks(uv_loop_t* loop, platform::Runtime& runtime, std::unique_ptr<ProbeRunner> runner);
    LifecycleHooks(const LifecycleHooks&) = delete;
    LifecycleHooks& operator=(const LifecycleHooks&) = delete;
    ~LifecycleHooks() override;

    // HookRunner; after close() no callback comes.
    Id run(const Handler& h, const HookContainer& c, std::int64_t timeout_ms, Done done) override;
    void cancel(Id id) override;
    void close();

  private:
    struct Op {
        Done done;
        std::optional<ProbeRunner::Id> action;
        uv_timer_t* timer = nullptr;  // sleep, or the deadline of an action
    };
    void finish(Id id, Status s);
    void start_timer(Id id, std::int64_t ms, std::function<void()> fired);
    static void close_timer(uv_timer_t*& t);

    uv_loop_t* loop_;
    platform::Runtime& runtime_;
    std::unique_ptr<ProbeRunner> runner_;
    std::map<Id, Op> ops_;
    Id next_ = 1;
    bool closed_ = false;
};

}  // namespace daemonlet::agent
