#include "agent/daemon/lifecycle_hooks.h"

#include <algorithm>
#include <limits>

#include "core/lifecycle_hook.h"
#include "core/pod_network.h"
#include "platform/probe/prober.h"

namespace daemonlet::agent {

namespace {

struct TimerData {
    std::function<void()> fired;
};

std::string command_line(const std::vector<std::string>& argv) {
    std::string s;
    for (std::size_t i = 0; i < argv.size(); ++i) s += (i ? " " : "") + argv[i];
    return s;
}

}  // namespace

LifecycleHooks::LifecycleHooks(uv_loop_t* loop, platform::Runtime& runtime,
                               std::unique_ptr<ProbeRunner> runner)
    : loop_(loop), runtime_(runtime), runner_(std::move(runner)) {}

LifecycleHooks::~LifecycleHooks() { close(); }

void LifecycleHooks::close_timer(uv_timer_t*& t) {
    if (!t) return;
    uv_close(reinterpret_cast<uv_handle_t*>(t), [](uv_handle_t* h) {
        delete static_cast<TimerData*>(h->data);
        delete reinterpret_cast<uv_timer_t*>(h);
    });
    t = nullptr;
}

void LifecycleHooks::start_timer(Id id, std::int64_t ms, std::function<void()> fired) {
    Op& op = ops_[id];
    close_timer(op.timer);
    op.timer = new uv_timer_t;
    uv_timer_init(loop_, op.timer);
    op.timer->data = new TimerData{std::move(fired)};
    uv_timer_start(
        op.timer, [](uv_timer_t* t) { static_cast<TimerData*>(t->data)->fired(); },
        static_cast<std::uint64_t>(std::max<std::int64_t>(0, ms)), 0);
}

void LifecycleHooks::finish(Id id, Status s) {
    auto it = ops_.find(id);
    if (it == ops_.end()) return;
    Done done = std::move(it->second.done);
    close_timer(it->second.timer);
    ops_.erase(it);
    done(std::move(s));
}

LifecycleHooks::Id LifecycleHooks::run(const Handler& h, const HookContainer& c, std::int64_t timeout_ms,
                                       Done done) {
    const Id id = next_++;
    ops_[id].done = std::move(done);
    auto fail_later = [&](const std::string& error) {
        const std::string msg = hook_failure_message(h, c.spec ? c.spec->name : "", c.pod, error, "");
        start_timer(id, 0, [this, id, msg] { finish(id, Error{ErrorCode::Runtime, msg}); });
        return id;
    };
    if (closed_ || !c.spec) return fail_later("the agent is stopping");
    if (h.sleep_seconds) {
        // runSleepHandler: a timer; the grace period cuts it short (the
        // kubelet stops waiting for the preStop hook then).
        const std::int64_t ms = std::min(std::max<std::int64_t>(0, *h.sleep_seconds) * 1000, timeout_ms);
        start_timer(id, ms, [this, id] { finish(id, Ok()); });
        return id;
    }
    const auto timeout_s = static_cast<std::int32_t>(std::min<std::int64_t>(
        (std::max<std::int64_t>(timeout_ms, 1) + 999) / 1000, std::numeric_limits<std::int32_t>::max()));
    auto resolved = platform::resolve_probe_action(h, *c.spec, c.env, timeout_s);
    if (!resolved) return fail_later(resolved.error().message);
    platform::ProbeAction a = std::move(resolved).value();
    a.timeout_ms = std::max<std::int64_t>(1, timeout_ms);
    if (a.type == platform::ProbeAction::Type::Exec) {
        if (auto in = runtime_.exec_in(c.runtime_id, a.command)) {
            a.command = std::move(*in);
            a.env.clear();
            a.working_dir.clear();
        }
    } else {
        // The pod's address, as the kubelet's runHTTPHandler (status.PodIP
        // when the hook sets no host), from the pod's network.
        auto ns = runtime_.probe_netns(c.runtime_id);
        if (!ns) return fail_later(ns.error().message);
        a.netns = std::move(ns).value();
        auto net = runtime_.pod_network(c.runtime_id);
        if (!net) return fail_later(net.error().message);
        a.host = probe_host(a.host, net.value().host_network, net.value().ips);
        a.any_status = true;
    }
    const std::vector<std::string> command = h.exec ? h.exec->command : std::vector<std::string>{};
    Handler handler = h;
    auto run_id = runner_->run(a, [this, id, handler, c, command](platform::ProbeResult r) {
        auto it = ops_.find(id);
        if (it == ops_.end()) return;
        it->second.action.reset();
        if (r.outcome == ProbeOutcome::Success) return finish(id, Ok());
        std::string error = r.output;
        std::string output;
        if (handler.exec && r.exit_code > 0) {
            // The CRI's ExecSync error (remote_runtime.go): the command's
            // output goes to the message part.
            error =
                "command '" + command_line(command) + "' exited with " + std::to_string(r.exit_code) + ": ";
            output = r.command_output;
        }
        finish(id,
               Error{ErrorCode::Runtime, hook_failure_message(handler, c.spec->name, c.pod, error, output)});
    });
    if (!run_id) return fail_later(run_id.error().message);
    ops_[id].action = run_id.value();
    return id;
}

void LifecycleHooks::cancel(Id id) {
    auto it = ops_.find(id);
    if (it == ops_.end()) return;
    if (it->second.action) runner_->cancel(*it->second.action);
    close_timer(it->second.timer);
    ops_.erase(it);
}

void LifecycleHooks::close() {
    if (closed_) return;
    closed_ = true;
    std::vector<Id> ids;
    for (const auto& [id, op] : ops_) ids.push_back(id);
    for (Id id : ids) cancel(id);
    if (runner_) runner_->close();
}

}  // namespace daemonlet::agent
