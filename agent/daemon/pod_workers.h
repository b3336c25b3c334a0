// The PodWorkers component: kubelet's pod workers (pkg/kubelet/pod_workers.go
// with kuberuntime's SyncPod start order and killContainer). The per-pod
// sequencing of the containers' lifecycle: what starts next (init
// containers one at a time, sidecars gated by their startup probe, then the
// app containers), the start handed to the runtime as one launch
// description, its outcome, the exit and what follows it (done, the next
// init container, a restart after the crash-loop back-off), the restart
// timers; and the pod's termination (pod_workers.go's terminating, then
// terminated): every container killed (killContainer: the Killing Event,
// the preStop hook, then the stop with what the hook left of the grace
// period), and the pod finished once none runs or starts. The decisions are
// core's (core/pod_lifecycle.h, reconcile.h's back-offs, lifecycle_hook.h's
// grace); this is their order, over the Runtime and the agent's Host.
//
// The agent keeps what is not the sequence (Host): the pods' records and
// where they live, the launch description (config, images), the hooks
// themselves, probes, Events, logs, the store, and what a pod leaves
// behind when it goes.
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

#include "core/model.h"
#include "core/pod.h"
#include "core/pod_lifecycle.h"
#include "core/reconcile.h"
#include "platform/clock.h"
#include "platform/operation_queue.h"
#include "platform/runtime.h"

namespace daemonlet::agent {

// One-shot timers: uv timers on the loop (make_loop_timers), a fake in
// tests that fires them when its clock says.
class Timers {
  public:
    using Id = std::uint64_t;
    virtual ~Timers() = default;
    // `fire` once, `delay_ms` from now, unless cancel(id) comes first.
    virtual Id after(std::int64_t delay_ms, std::function<void()> fire) = 0;
    virtual void cancel(Id id) = 0;  // an id that fired or is unknown: nothing
    // Every timer, for good (the agent stops, before its loop closes):
    // after() does nothing since.
    virtual void close() = 0;
};
std::unique_ptr<Timers> make_loop_timers(uv_loop_t* loop);

// What the pod worker knows of one container: its instance, a start in
// flight, its back-offs and its restart.
struct WorkerContainer {
    std::string id;  // runtime id while it has one
    // A start is asked for and has not reported yet (queued, or the
    // runtime is making it): the container shows as it was (Waiting,
    // ContainerCreating for a new pod) and nothing else starts it.
    bool starting = false;
    // A start was asked for again while one was in flight (its image
    // arrived, its pull landed): if the one in flight fails, another
    // goes at once rather than after its back-off.
    bool start_again = false;
    std::int64_t started_mono_ms = 0;
    BackoffState backoff;
    std::int64_t runtime_down_ms = 0;  // the last wait for an unreachable runtime; 0: it answered
    // A restart timer, from its scheduling until it is cancelled (fired
    // or not): while it exists, nothing else starts the container.
    std::optional<Timers::Id> restart;
    std::string finishing_id;  // a finished pod's sidecar: the instance asked to stop
};

class PodWorkers {
  public:
    // The agent, as the pod workers need it.
    class Host {
      public:
        virtual ~Host() = default;
        // The pod's record; nullptr: no such pod (any more).
        virtual PodRecord* worker_pod(const std::string& uid) = 0;
        // Its container `index` (init containers first); the pod exists.
        virtual WorkerContainer& worker_container(const std::string& uid, std::size_t index) = 0;
        virtual bool agent_stopping() const = 0;
        // The pod's restartPolicy: a static pod's own, Always for a DaemonSet's.
        virtual std::string pod_restart_policy(const PodRecord& pod) const = 0;
        // Container `index` runs its postStart hook (or starts and has
        // one): the containers after it wait.
        virtual bool holds_next(const std::string& uid, std::size_t index) = 0;
        // The pod's containers' started and ready, as their probes say now.
        virtual void refresh_pod(const std::string& uid) = 0;
        // The launch description of container `index`: its pod's spec,
        // env, volumes, its expanded command, its image present; nullopt:
        // it waits (the Host set its status and says when to try again).
        virtual std::optional<platform::ContainerLaunch> launch_of(const std::string& uid,
                                                                   std::size_t index) = 0;
        // The container runs as `id` (its status says Running), `spec` as
        // launched with `env` and its grace period: its Events, probes,
        // postStart hook, saved.
        virtual void container_started(const std::string& uid, std::size_t index, const std::string& id,
                                       std::shared_ptr<const Container> spec,
                                       std::vector<std::pair<std::string, std::string>> env,
                                       std::int64_t grace_seconds) = 0;
        // Its start failed with `error` (not the runtime's unavailability,
        // which the worker handles): its status, Event and log. True: retry
        // with the crash-loop back-off; false: something else starts it (a pull).
        virtual bool container_start_failed(const std::string& uid, std::size_t index, const Container& spec,
                                            const Error& error) = 0;
        // The runtime is unreachable: the status says so; its Event and log.
        virtual void runtime_unavailable(const std::string& uid, std::size_t index, const Error& error,
                                         bool first) = 0;
        // A watched instance of container `index` exited (its pod exists):
        // its probes and hook go; how it ended is asked next.
        virtual void container_exiting(const std::string& uid, std::size_t index) = 0;
        // It exited (its status says how) and `action` follows; with a
        // Restart, after `delay_ms`, having run for `ran_for_ms`: its log,
        // metrics and Events.
        virtual void container_exited(const std::string& uid, std::size_t index, ExitAction action,
                                      std::int64_t ran_for_ms, std::int64_t delay_ms) = 0;
        // The pod's status changed: refreshed and saved; `reconcile`: and
        // planned again.
        virtual void pod_changed(const std::string& uid, bool reconcile) = 0;
        // Termination. The pod is to go (its record says deleting now):
        // its log line and Events.
        virtual void pod_terminating(const std::string& uid, const std::string& reason) = 0;
        // Container `index` of a terminating pod: its probes stop.
        virtual void container_terminating(const std::string& uid, std::size_t index) = 0;
        // killContainer's Killing Event ("Stopping container X").
        virtual void container_killing(const std::string& uid, std::size_t index) = 0;
        // The preStop hook of container `index`, if it runs `expected`
        // (non-empty) or any instance, has one and a grace period above 0:
        // true, and `done` is called on the loop once the hook ended, with
        // the instance it ran for and the grace period it had; or true and
        // never `done` when one runs already (its stop follows it). False:
        // none runs, the stop goes now.
        virtual bool run_pre_stop(
            const std::string& uid, std::size_t index, const std::string& expected,
            std::function<void(const std::string& id, std::int64_t grace_seconds)> done) = 0;
        // The stop's grace period when not the launch's: the one its Pod's
        // deletion set (core kill_grace_seconds); nullopt: the launch's.
        virtual std::optional<std::int64_t> stop_grace(const std::string& uid) = 0;
        // Nothing of the pod runs or starts any more: it goes (the store,
        // its volumes, probes, its record: worker_pod() says none since).
        virtual void pod_terminated(const std::string& uid) = 0;
        // A container of the pod finished for good (restartPolicy OnFailure
        // or Never), its finished pod's sidecars asked to stop: planned again.
        virtual void pod_finishing(const std::string& uid) = 0;
        // The pod's record changed (a sidecar of a finished pod terminated
        // as it last ended): saved as it is.
        virtual void save_pod_record(const std::string& uid) = 0;
        // A runtime operation ended (metrics); t0: uv_hrtime() at its start.
        virtual void runtime_operation_done(const char* what, std::uint64_t t0, bool ok) = 0;
        // A start or a stop finished while the agent stops: the runtime may close.
        virtual void operation_finished_while_stopping() = 0;
    };

    // Starts go through `ops` (one pod's in order, a bound on all).
    PodWorkers(Host& host, platform::Runtime& runtime, platform::OperationQueue& ops,
               std::unique_ptr<Timers> timers, const platform::Clock& clock);
    PodWorkers(const PodWorkers&) = delete;
    PodWorkers& operator=(const PodWorkers&) = delete;

    // The crash-loop back-off (core crash_loop_policy, a SIGHUP's new one).
    void set_backoff_policy(const BackoffPolicy& policy) { policy_ = policy; }

    // Starts what should run now and has neither a process nor a pending
    // restart (kubelet's computePodActions): the first init container that
    // has not completed, or, once all have, the app containers; a sidecar
    // lets the next one start once its startup probe passed. Returns
    // whether anything started.
    bool advance(const std::string& uid);
    // Asks for the container's start, queued behind the pod's earlier
    // runtime operations; its outcome comes back on the loop.
    void start(const std::string& uid, std::size_t index);
    // The runtime's exit handler: instance `id` exited. A watched one's
    // end is asked of the runtime, then what follows.
    void on_exit(const std::string& id);
    // Instance `id` of container `index` is watched (a start's, or one
    // adopted): its exit comes to on_exit.
    void watch(const std::string& id, const std::string& uid, std::size_t index) {
        by_id_[id] = {uid, index};
    }
    // Whether the exit of `id` is still to come (false: reported, its end
    // being read).
    bool watched(const std::string& id) const { return by_id_.count(id) != 0; }
    std::size_t watched_count() const { return by_id_.size(); }
    // kubelet's pod termination (the pod worker's terminating state): the
    // pod is marked deleting, its restarts cancelled, its probes stopped,
    // each container that runs killed (a start in the runtime: the
    // instance it makes, once it reported, with its Killing Event and
    // preStop hook; a start only queued never runs), and it finishes once
    // none is left. A pod unknown or deleting already: nothing.
    void terminate(const std::string& uid, const std::string& reason);
    // A pod the store says was terminating when the agent went away (a
    // stop lost with it: kill -9, or a stop during a preStop hook): its
    // termination runs again as kubelet's pod worker resumes killPod after
    // a restart, each running container killed again, its preStop hook
    // included (killContainer runs it whenever the grace period allows);
    // no second pod_terminating.
    void resume_termination(const std::string& uid);
    // killContainer: the Killing Event (`killing`; false: the caller
    // recorded its own), the preStop hook, then the stop with what the hook
    // left of its grace period (core grace_after_pre_stop); `expected` as
    // for stop().
    void kill(const std::string& uid, std::size_t index, const std::string& expected, const std::string& why,
              bool killing = true);
    // The terminated state: no container of the pod runs or starts any more
    // (each one's exit, or a start's end, calls it again): its restarts are
    // cancelled and the Host forgets it.
    void finish_if_stopped(const std::string& uid);
    // A finished pod's sidecars stop (core sidecars_to_stop), once each
    // instance; one waiting out its back-off is not started again and shows
    // as it last ended.
    void stop_finished_sidecars(const std::string& uid);
    // Stops the container, behind the pod's earlier operations (a start in
    // flight included: then the instance it made); `expected` (non-empty):
    // only if that instance still runs (a liveness kill that came late);
    // `grace_seconds`: the stop's grace period when not the launch's (a
    // preStop hook took some, the Pod's deletion set it). Its exit comes
    // through exited().
    void stop(const std::string& uid, std::size_t index, const std::string& expected, const std::string& why,
              std::optional<std::int64_t> grace_seconds);
    // A start again after `delay_ms` (0: on the next loop turn).
    void schedule_restart(const std::string& uid, std::size_t index, std::int64_t delay_ms);
    void cancel_restart(WorkerContainer& c);
    void close() { timers_->close(); }

  private:
    // terminate's kill loop: restarts cancelled, probes stopped, each
    // running container (`watched_only`: whose exit is still to come)
    // killed, a start in flight stopped once it is through.
    void kill_all(const std::string& uid, bool watched_only);
    struct Launched {
        std::shared_ptr<const Container> spec;
        std::vector<std::pair<std::string, std::string>> env;  // for an exec hook on the host
        std::int64_t grace_seconds = 30;
    };
    void on_started(const std::string& uid, std::size_t index, Launched launched, Result<std::string> id);
    void exited(const std::string& uid, std::size_t index, const std::string& id);
    void on_start_error(const std::string& uid, std::size_t index, const Container& spec, const Error& error);
    void on_exit_inspected(const std::string& uid, std::size_t index, const std::string& id,
                           const Result<platform::ContainerInfo>& info);

    Host& host_;
    platform::Runtime& runtime_;
    platform::OperationQueue& ops_;
    std::unique_ptr<Timers> timers_;
    const platform::Clock& clock_;
    BackoffPolicy policy_;
    std::map<std::string, std::pair<std::string, std::size_t>> by_id_;  // runtime id -> (uid, container)
};

}  // namespace daemonlet::agent
