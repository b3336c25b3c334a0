#include "agent/daemon/pod_workers.h"

#include <utility>

#include "core/lifecycle_hook.h"
#include "platform/log.h"

namespace daemonlet::agent {

namespace {

class LoopTimers final : public Timers {
  public:
    explicit LoopTimers(uv_loop_t* loop) : loop_(loop) {}
    // No uv call: the agent closes it (shutdown) before its loop closes,
    // and the loop may be closed by now.
    ~LoopTimers() override = default;

    Id after(std::int64_t delay_ms, std::function<void()> fire) override {
        const Id id = ++next_;
        if (closed_) return id;  // closed for good: never fires
        auto* t = new uv_timer_t;
        uv_timer_init(loop_, t);
        t->data = new Pending{this, id, std::move(fire)};
        timers_[id] = t;
        uv_timer_start(
            t,
            [](uv_timer_t* h) {
                auto* p = static_cast<Pending*>(h->data);
                std::function<void()> due = std::move(p->fire);
                p->self->release(p->id);  // before it fires: it may schedule another
                due();
            },
            static_cast<std::uint64_t>(delay_ms < 0 ? 0 : delay_ms), 0);
        return id;
    }
    void cancel(Id id) override { release(id); }
    void close() override {
        closed_ = true;
        while (!timers_.empty()) release(timers_.begin()->first);
    }

  private:
    struct Pending {
        LoopTimers* self;
        Id id;
        std::function<void()> fire;
    };
    // Closes the timer; it and its target are freed in the close callback.
    void release(Id id) {
        auto it = timers_.find(id);
        if (it == timers_.end()) return;
        uv_close(reinterpret_cast<uv_handle_t*>(it->second), [](uv_handle_t* h) {
            delete static_cast<Pending*>(h->data);
            delete reinterpret_cast<uv_timer_t*>(h);
        });
        timers_.erase(it);
    }

    uv_loop_t* loop_;
    Id next_ = 0;
    bool closed_ = false;
    std::map<Id, uv_timer_t*> timers_;
};

}  // namespace

std::unique_ptr<Timers> make_loop_timers(uv_loop_t* loop) { return std::make_unique<LoopTimers>(loop); }

PodWorkers::PodWorkers(Host& host, platform::Runtime& runtime, platform::OperationQueue& ops,
                       std::unique_ptr<Timers> timers, const platform::Clock& clock)
    : host_(host), runtime_(runtime), ops_(ops), timers_(std::move(timers)), clock_(clock) {}

bool PodWorkers::advance(const std::string& uid) {
    PodRecord* rec = host_.worker_pod(uid);
    if (!rec || rec->deleting) return false;
    // Finished (restartPolicy OnFailure or Never) or rejected: nothing starts.
    if (rec->phase == PodPhase::Succeeded || rec->phase == PodPhase::Failed) return false;
    const std::size_t n = container_count(*rec);
    bool changed = false;
    std::size_t from = 0;
    for (;;) {
        std::vector<bool> idle;
        bool held = false;  // a container before this one is in its postStart
        for (std::size_t i = 0; i < n; ++i) {
            const WorkerContainer& c = host_.worker_container(uid, i);
            idle.push_back(!held && c.id.empty() && !c.restart && !c.starting);
            held = held || host_.holds_next(uid, i);
        }
        const PodStartStep step = next_start_step(*rec, idle, from);
        for (std::size_t i : step.start) {
            start(uid, i);
            changed = true;
            if (host_.holds_next(uid, i)) return changed;  // the next ones after its postStart
        }
        if (!step.then_check_sidecar) return changed;
        if (host_.holds_next(uid, *step.then_check_sidecar)) return changed;
        // A sidecar just started: the next init container waits for its
        // startup probe, which its refreshed status says.
        host_.refresh_pod(uid);
        if (!sidecar_lets_next_start(container_at(*rec, *step.then_check_sidecar), pod_initialized(*rec)))
            return changed;
        from = *step.then_check_sidecar + 1;
    }
}

void PodWorkers::start(const std::string& uid, std::size_t index) {
    PodRecord* rec = host_.worker_pod(uid);
    if (!rec || rec->deleting || host_.agent_stopping()) return;
    WorkerContainer& c = host_.worker_container(uid, index);
    if (c.starting) {
        c.start_again = true;  // on_started sees to it
        return;
    }
    if (!c.id.empty()) return;  // one instance at a time
    std::optional<platform::ContainerLaunch> launch = host_.launch_of(uid, index);
    if (!launch) return;
    // Off the loop, behind the pod's earlier operations and within the
    // bound on parallel ones. Until it reports, the container shows as it
    // was (Waiting, ContainerCreating for a new pod, as kubelet's).
    c.starting = true;
    ops_.submit(uid, [this, uid, index,
                      what = std::move(*launch)](platform::OperationQueue::Finished finished) mutable {
        PodRecord* now = host_.worker_pod(uid);
        if (!now) return finished();
        if (now->deleting || host_.agent_stopping()) {
            // Removed, or the agent stops, before its turn: never started.
            host_.worker_container(uid, index).starting = false;
            finished();
            if (!host_.agent_stopping()) finish_if_stopped(uid);
            return;
        }
        Launched launched{what.container, what.env, what.grace_seconds};
        const std::uint64_t t0 = uv_hrtime();
        runtime_.start_async(std::move(what), [this, uid, index, launched = std::move(launched), finished,
                                               t0](Result<std::string> id) mutable {
            host_.runtime_operation_done("start_container", t0, id.ok());
            on_started(uid, index, std::move(launched), std::move(id));
            finished();
            if (host_.agent_stopping()) host_.operation_finished_while_stopping();
        });
    });
}

// A start's outcome, on the loop: the container runs (and is watched), or
// it waits, as the error says, to be started again.
void PodWorkers::on_started(const std::string& uid, std::size_t index, Launched launched,
                            Result<std::string> id) {
    PodRecord* rec = host_.worker_pod(uid);
    if (!rec) {
        // Cannot be: a pod waits for its starts before it goes.
        if (id.ok()) runtime_.stop_async(id.value(), [](Status) {});
        return;
    }
    ContainerStatus& cs = container_at(*rec, index);
    WorkerContainer& c = host_.worker_container(uid, index);
    c.starting = false;
    const bool again = std::exchange(c.start_again, false);
    if (id.ok()) {
        c.runtime_down_ms = 0;
        c.id = id.value();
        c.started_mono_ms = clock_.monotonic_ms();
        cs.runtime_id = c.id;
        watch(c.id, uid, index);
        cs.state = ContainerState::Running;
        cs.reason.clear();
        cs.message.clear();
        cs.started_at_ms = clock_.wall_ms();
        const std::string started = c.id;
        host_.container_started(uid, index, started, launched.spec, std::move(launched.env),
                                launched.grace_seconds);
        // Terminated while its start was in the runtime: it runs now, and is
        // killed as any running container (killPod after SyncPod: Killing,
        // preStop, the stop).
        if (PodRecord* now = host_.worker_pod(uid); now && now->deleting && !host_.agent_stopping())
            kill(uid, index, started, "pod " + now->name);
        return;
    }
    const bool stopping = host_.agent_stopping();
    if (rec->deleting || stopping) {
        if (!stopping) finish_if_stopped(uid);
        return;
    }
    // No reconcile here: one would start it again at once (a container
    // waiting for its image's pull is idle), and again, in a tight loop.
    on_start_error(uid, index, *launched.spec, id.error());
    if (again) {
        // What asked again (an import, a pull) came after this start
        // looked: the image may be there now.
        cancel_restart(c);
        start(uid, index);
    }
    host_.pod_changed(uid, false);
}

void PodWorkers::on_start_error(const std::string& uid, std::size_t index, const Container& spec,
                                const Error& error) {
    WorkerContainer& c = host_.worker_container(uid, index);
    if (error.code == ErrorCode::Unavailable) {
        // The runtime is down, not the container: no crash-loop backoff, a
        // retry within 5 s of the runtime's return (next_runtime_down_delay).
        ContainerStatus& cs = container_at(*host_.worker_pod(uid), index);
        cs.state = ContainerState::Waiting;
        cs.reason = "RunContainerError";
        cs.message = error.message;
        host_.runtime_unavailable(uid, index, error, c.runtime_down_ms == 0);  // once per outage
        c.runtime_down_ms = next_runtime_down_delay(c.runtime_down_ms);
        schedule_restart(uid, index, c.runtime_down_ms);
        return;
    }
    // An image that is not there says nothing of the runtime.
    if (error.code != ErrorCode::ImageNotFound) c.runtime_down_ms = 0;
    if (host_.container_start_failed(uid, index, spec, error))
        schedule_restart(uid, index, next_restart_delay(c.backoff, 0, policy_));
}

void PodWorkers::terminate(const std::string& uid, const std::string& reason) {
    PodRecord* rec = host_.worker_pod(uid);
    if (!rec || rec->deleting) return;
    rec->deleting = true;
    host_.pod_terminating(uid, reason);
    kill_all(uid, false);
    host_.pod_changed(uid, false);
    finish_if_stopped(uid);
}

void PodWorkers::resume_termination(const std::string& uid) {
    PodRecord* rec = host_.worker_pod(uid);
    if (!rec) return;
    rec->deleting = true;
    kill_all(uid, true);
    finish_if_stopped(uid);
}

void PodWorkers::kill_all(const std::string& uid, bool watched_only) {
    const PodRecord& rec = *host_.worker_pod(uid);
    const std::string why = "pod " + rec.name;
    for (std::size_t i = 0; i < container_count(rec); ++i) {
        WorkerContainer& c = host_.worker_container(uid, i);
        cancel_restart(c);
        host_.container_terminating(uid, i);
        if (!c.id.empty()) {
            // An exit already reported is not killed: its end, once asked,
            // finishes the pod.
            if (!watched_only || watched(c.id)) kill(uid, i, std::string(c.id), why);
        }
        // A start queued never runs (the pod is deleting); one in the
        // runtime is killed once it reports (on_started): no Killing Event
        // for a container not running yet (killContainersWithSyncResult
        // kills the running ones).
    }
}

void PodWorkers::kill(const std::string& uid, std::size_t index, const std::string& expected,
                      const std::string& why, bool killing) {
    // killContainer records Killing before its preStop hook and the stop.
    if (killing && host_.worker_pod(uid)) host_.container_killing(uid, index);
    const std::int64_t t0 = clock_.monotonic_ms();
    const bool hook = host_.run_pre_stop(
        uid, index, expected, [this, uid, index, why, t0](const std::string& id, std::int64_t grace) {
            // What the hook took comes out of the stop's grace period.
            stop(uid, index, id, why, grace_after_pre_stop(grace, clock_.monotonic_ms() - t0));
        });
    if (hook) return;  // the stop follows its preStop hook
    stop(uid, index, expected, why, host_.worker_pod(uid) ? host_.stop_grace(uid) : std::nullopt);
}

void PodWorkers::finish_if_stopped(const std::string& uid) {
    PodRecord* rec = host_.worker_pod(uid);
    if (!rec) return;
    const std::size_t n = container_count(*rec);
    for (std::size_t i = 0; i < n; ++i) {
        const WorkerContainer& c = host_.worker_container(uid, i);
        if (!c.id.empty() || c.starting) return;  // its exit (or start) brings us back here
    }
    for (std::size_t i = 0; i < n; ++i) cancel_restart(host_.worker_container(uid, i));
    host_.pod_terminated(uid);
}

void PodWorkers::stop_finished_sidecars(const std::string& uid) {
    PodRecord* rec = host_.worker_pod(uid);
    if (!rec || rec->deleting) return;
    for (std::size_t i : sidecars_to_stop(*rec, host_.pod_restart_policy(*rec))) {
        WorkerContainer& c = host_.worker_container(uid, i);
        ContainerStatus& cs = container_at(*rec, i);
        if (c.id.empty() && c.restart) {
            // Waiting out its back-off: not started again, terminated as it last ended.
            cancel_restart(c);
            if (!cs.termination_reason.empty()) {
                cs.state = ContainerState::Terminated;
                cs.reason = cs.termination_reason;
                cs.message.clear();
            }
            host_.save_pod_record(uid);
            continue;
        }
        if (c.id.empty() || c.finishing_id == c.id) continue;
        c.finishing_id = c.id;
        kill(uid, i, c.id, "pod " + rec->namespace_ + "/" + rec->name + " finished: sidecar " + cs.name);
    }
}

void PodWorkers::stop(const std::string& uid, std::size_t index, const std::string& expected,
                      const std::string& why, std::optional<std::int64_t> grace_seconds) {
    ops_.submit(
        uid, [this, uid, index, expected, why, grace_seconds](platform::OperationQueue::Finished finished) {
            PodRecord* rec = host_.worker_pod(uid);
            if (!rec || index >= container_count(*rec)) return finished();
            const std::string id = host_.worker_container(uid, index).id;
            // Gone already, or restarted since (a liveness kill that came late).
            if (id.empty() || (!expected.empty() && id != expected) || host_.agent_stopping())
                return finished();
            if (grace_seconds) runtime_.set_stop_grace(id, *grace_seconds);
            const std::uint64_t t0 = uv_hrtime();
            runtime_.stop_async(id, [this, why, finished, t0](Status s) {
                host_.runtime_operation_done("stop_container", t0, s.ok());
                if (!s.ok()) platform::log(platform::Level::Warning, why + ": " + s.error().message);
                finished();
                if (host_.agent_stopping()) host_.operation_finished_while_stopping();
            });
        });
}

void PodWorkers::schedule_restart(const std::string& uid, std::size_t index, std::int64_t delay_ms) {
    WorkerContainer& c = host_.worker_container(uid, index);
    if (c.restart) timers_->cancel(*c.restart);
    c.restart = timers_->after(delay_ms, [this, uid, index] {
        // Named by value: the pod may be gone by then.
        if (!host_.worker_pod(uid)) return;
        start(uid, index);
        host_.pod_changed(uid, true);
    });
}

void PodWorkers::cancel_restart(WorkerContainer& c) {
    if (c.restart) timers_->cancel(*c.restart);
    c.restart.reset();
}

void PodWorkers::on_exit(const std::string& id) {
    auto bit = by_id_.find(id);
    if (bit == by_id_.end()) return;
    auto [uid, index] = bit->second;
    by_id_.erase(bit);
    if (!host_.worker_pod(uid)) return;
    host_.container_exiting(uid, index);
    exited(uid, index, id);
}

void PodWorkers::exited(const std::string& uid, std::size_t index, const std::string& id) {
    // How it ended, asked off the loop (a CRI ContainerStatus); until then
    // the container keeps its id, so nothing starts it again.
    const std::uint64_t t0 = uv_hrtime();
    runtime_.inspect_async(id, [this, uid, index, id, t0](Result<platform::ContainerInfo> info) {
        host_.runtime_operation_done("container_status", t0, info.ok());
        on_exit_inspected(uid, index, id, info);
    });
}

void PodWorkers::on_exit_inspected(const std::string& uid, std::size_t index, const std::string& id,
                                   const Result<platform::ContainerInfo>& info) {
    if (host_.agent_stopping()) return;
    PodRecord* rec = host_.worker_pod(uid);
    if (!rec) return;
    WorkerContainer& c = host_.worker_container(uid, index);
    if (c.id != id) return;
    ContainerStatus& cs = container_at(*rec, index);
    cs.state = ContainerState::Terminated;
    cs.exit_code = info.ok() && info.value().exit_code ? *info.value().exit_code : -1;
    cs.reason = info.ok() ? info.value().reason : "Error";
    cs.finished_at_ms =
        info.ok() && info.value().finished_at_ms ? info.value().finished_at_ms : clock_.wall_ms();
    cs.ready = false;
    cs.termination_reason = cs.reason;  // CrashLoopBackOff below takes cs.reason, not lastState's
    cs.termination_started_at_ms = cs.started_at_ms;
    cs.termination_runtime_id = id;
    if (info.ok() && !info.value().image_ref.empty()) cs.image_id = info.value().image_ref;
    c.id.clear();
    const std::uint64_t t0 = uv_hrtime();
    runtime_.remove_async(id, [this, t0](Status r) {
        host_.runtime_operation_done("remove_container", t0, r.ok());
        if (!r.ok()) platform::log(platform::Level::Warning, r.error().message);
    });

    const ExitAction action = container_exit_action(*rec, index, host_.pod_restart_policy(*rec));
    switch (action) {
    case ExitAction::FinishPod: finish_if_stopped(uid); return;
    case ExitAction::InitCompleted:
        // Done: the next init container, or the app containers, start now.
        host_.container_exited(uid, index, action, 0, 0);
        c.backoff = {};
        advance(uid);
        host_.pod_changed(uid, true);
        return;
    case ExitAction::Done:
        // restartPolicy OnFailure or Never (a static pod): it stays
        // terminated; the pod is Succeeded or Failed once none runs.
        host_.container_exited(uid, index, action, 0, 0);
        host_.pod_changed(uid, false);
        stop_finished_sidecars(uid);
        host_.pod_finishing(uid);
        return;
    case ExitAction::Restart: break;
    }
    // restartPolicy Always (the only one a DaemonSet allows), or OnFailure
    // after a failure: restart, after the crash-loop back-off.
    const std::int64_t ran_for = clock_.monotonic_ms() - c.started_mono_ms;
    const std::int64_t delay = next_restart_delay(c.backoff, ran_for, policy_);
    cs.restart_count += 1;
    host_.container_exited(uid, index, action, ran_for, delay);  // says how it ended, before its Waiting
    if (delay > 0) set_crash_loop_waiting(cs, delay);
    schedule_restart(uid, index, delay);
    host_.pod_changed(uid, true);
}

}  // namespace daemonlet::agent
