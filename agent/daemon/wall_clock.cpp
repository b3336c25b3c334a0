// A step of the wall clock (core/wall_clock.h): a board without a real-time
// clock boots at 1970 and NTP sets the clock decades later, or back. The
// agent's timers never notice (they run on the monotonic clock); the times
// it recorded for people do: each one recorded since the board booted (by
// this agent or an earlier one) moves by the step, so that AGE, startedAt, an Event's time and a
// revision's age stay what the monotonic clock measured. Checked every two
// seconds and before each reconcile (Linux's timerfd
// TFD_TIMER_CANCEL_ON_SET would say it at once, but a clock faked in user
// space, as the tests run it, does not reach the kernel).
#include "agent/daemon/agent.h"
#include "platform/log.h"

namespace daemonlet::agent {

using platform::Level;
using platform::log;

namespace {
constexpr std::uint64_t kWallClockCheckMs = 2'000;
}  // namespace

void Agent::start_wall_clock_watch() {
    wall_clock_timer_ = new uv_timer_t;
    uv_timer_init(&loop_, wall_clock_timer_);
    wall_clock_timer_->data = this;
    uv_timer_start(
        wall_clock_timer_, [](uv_timer_t* t) { static_cast<Agent*>(t->data)->check_wall_clock(); },
        kWallClockCheckMs, kWallClockCheckMs);
    // Idle timers do not keep the loop alive at shutdown.
    uv_unref(reinterpret_cast<uv_handle_t*>(wall_clock_timer_));
}

void Agent::check_wall_clock() {
    if (!wall_steps_) return;
    auto step = wall_steps_->observe(clock_.wall_ms(), clock_.since_boot_ms());
    if (!step) return;
    for (auto& [uid, p] : pods_) {
        p.rec.created_at_ms = rebase(p.rec.created_at_ms, *step);
        for (auto* list : {&p.rec.init_containers, &p.rec.containers})
            for (ContainerStatus& c : *list) {
                c.started_at_ms = rebase(c.started_at_ms, *step);
                c.finished_at_ms = rebase(c.finished_at_ms, *step);
                c.termination_started_at_ms = rebase(c.termination_started_at_ms, *step);
            }
        pods_.save(p);
    }
    if (auto moved = store_->rebase_wall_times(step->from_ms, step->to_ms, step->delta_ms); !moved.ok())
        log(Level::Err, "store: " + moved.error().message);
    if (cluster_) cluster_->rebase_wall_times(*step);
    pod_events_.rebase(*step);
    ds_events_.rebase(*step);
    if (images_) images_->rebase_wall_times(*step);
    log(Level::Notice,
        "the wall clock stepped by " + step_text(step->delta_ms) +
            " (NTP setting the clock?); the times recorded since the board booted moved with it");
}

}  // namespace daemonlet::agent
