// The PodHooks component: the lifecycle hooks of the pods' containers, as
// kuberuntime runs them around a container's start and stop
// (pkg/kubelet/kuberuntime/kuberuntime_container.go), over the handler
// runner (HookRunner: LifecycleHooks, lifecycle_hooks.h):
//
//   postStart  right after the container started (startContainer). A
//              failure is logged with the handler's message, recorded as a
//              FailedPostStartHook event ("PostStartHook failed": the kubelet
//              keeps the message out of the event, lest it leak a secret),
//              and the container is stopped; the exit path restarts it with
//              crash-loop back-off, as restartPolicy Always says (the Host's
//              post_start_failed). The containers after it wait for it
//              (SyncPod starts them one by one, each startContainer
//              returning after its postStart).
//   preStop    before the stop signal, whatever stops the container (pod
//              removal, a liveness or startup failure, a failed postStart),
//              when the grace period is above 0 (killContainer,
//              executePreStopHook). It has the pod's
//              terminationGracePeriodSeconds (or its Pod's deletion grace);
//              what it leaves (at least 2 s) is the stop's grace between
//              SIGTERM and SIGKILL (PodWorkers::kill, core/lifecycle_hook.h
//              grace_after_pre_stop). A failure is a FailedPreStopHook event
//              ("PreStopHook failed"); the stop goes on. One still running
//              when the grace period ends is killed (the kubelet stops
//              waiting for it) and the stop goes on.
//
// It owns, per container (pod uid, index), what its hooks run as: the
// instance, its spec and env, its pod's grace period, whether its env is
// still to be computed (an adopted container), and the hook running. The
// agent wires it (hooks.cpp): it says that a container started, was
// adopted, exits or must stop, and hears back through the Host what a
// failed hook does and when the next container may start. Nothing here
// waits: each hook is a HookRunner operation that calls back on the loop.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "agent/daemon/lifecycle_hooks.h"
#include "core/model.h"
#include "core/pod.h"
#include "core/result.h"

namespace daemonlet::agent {

class PodHooks {
  public:
    using Env = std::vector<std::pair<std::string, std::string>>;
    // What a container's hooks run for (its env aside, see adopted()), and
    // its pod's terminationGracePeriodSeconds.
    struct Target {
        HookContainer container;
        std::int64_t grace_seconds = 30;
    };
    // preStop is over (either way): stop instance `id` with what is left
    // of `grace_seconds`.
    using PreStopDone = std::function<void(const std::string& id, std::int64_t grace_seconds)>;

    // The agent, as the hooks need it.
    class Host {
      public:
        virtual ~Host() = default;
        // The env container `index` of pod `uid` running `spec` has now (its
        // pod's ConfigMaps, Secrets, the downward API); nullopt: it cannot
        // be resolved now (the hook has none).
        virtual std::optional<Env> hook_env(const std::string& uid, std::size_t index,
                                            const Container& spec) = 0;
        // What instance `id` of container `index`, for which no target was
        // given (started by an earlier agent, neither its revision nor its
        // stop record known at adoption), runs as now: its pod's spec;
        // nullopt: unknown, no hook.
        virtual std::optional<Target> hook_target_now(const std::string& uid, std::size_t index,
                                                      const std::string& id) = 0;
        // The postStart of instance `id` failed with `error`: its log,
        // Events, and the container's stop.
        virtual void post_start_failed(const std::string& uid, std::size_t index, const std::string& id,
                                       const Error& error) = 0;
        // A postStart ended (either way): the containers after it may start.
        virtual void post_start_ended(const std::string& uid) = 0;
        // A preStop failed with `error`: its log and Events (the stop follows).
        virtual void pre_stop_failed(const std::string& uid, std::size_t index, const Error& error) = 0;
    };

    // What instance `id` of a container of pod `rec` running `spec` runs
    // its hooks as (env aside), with its pod's grace period.
    static Target target(const PodRecord& rec, const std::string& id, std::shared_ptr<const Container> spec,
                         std::int64_t grace_seconds);

    PodHooks(Host& host, HookRunner& runner) : host_(host), runner_(runner) {}
    PodHooks(const PodHooks&) = delete;
    PodHooks& operator=(const PodHooks&) = delete;

    // Container `index` started as `target` (its env as launched);
    // `post_start`: its postStart hook, if it has one, runs now (false: its
    // pod is deleting or the agent stops).
    void started(const std::string& uid, std::size_t index, Target target, bool post_start);
    // An adopted container runs `target`: its hooks' env is computed when
    // a hook runs, once the sources are loaded (at adoption they are not).
    void adopted(const std::string& uid, std::size_t index, Target target);
    // Its postStart runs: the containers after it wait.
    bool post_start_running(const std::string& uid, std::size_t index) const;
    // killContainer's preStop for instance `id` (it runs now), with the
    // Pod's deletion grace `grace_override` if set: true, and `done` is
    // called on the loop once the hook ended; or true and never `done`
    // when one runs already (its stop follows it). False: no hook (none,
    // a grace of 0, the spec unknown), the stop goes now. A postStart
    // still running is cancelled.
    bool pre_stop(const std::string& uid, std::size_t index, const std::string& id,
                  std::optional<std::int64_t> grace_override, PreStopDone done);
    // The instance exits: its hook (if any) is cancelled, no callback comes.
    void cancel(const std::string& uid, std::size_t index);
    // The pod is gone: what its containers ran as is forgotten.
    void forget(const std::string& uid);

  private:
    struct State {
        Target target;
        bool env_pending = false;
        std::optional<HookRunner::Id> hook;  // its postStart or preStop, running
        bool pre_stopping = false;           // its preStop runs: its stop follows
    };
    using Key = std::pair<std::string, std::size_t>;
    void run_post_start(const std::string& uid, std::size_t index, State& s);
    void cancel_hook(State& s);
    State* find(const std::string& uid, std::size_t index);

    Host& host_;
    HookRunner& runner_;
    std::map<Key, State> containers_;
};

}  // namespace daemonlet::agent
