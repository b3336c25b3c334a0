#include "agent/daemon/pod_hooks.h"

#include "core/lifecycle_hook.h"

namespace daemonlet::agent {

namespace {

// The kubelet gives a postStart hook no deadline (RunInContainer with
// timeout 0); this one is only the bound on what a manifest can make the
// agent wait for. The container's exit or stop ends it sooner.
constexpr std::int64_t kPostStartLimitMs = 24LL * 3600 * 1000;

}  // namespace

PodHooks::Target PodHooks::target(const PodRecord& rec, const std::string& id,
                                  std::shared_ptr<const Container> spec, std::int64_t grace_seconds) {
    Target t;
    t.container.pod = pod_ref(rec.name, rec.namespace_, rec.uid);
    t.container.runtime_id = id;
    t.container.spec = std::move(spec);
    t.grace_seconds = grace_seconds;
    return t;
}

PodHooks::State* PodHooks::find(const std::string& uid, std::size_t index) {
    auto it = containers_.find({uid, index});
    return it == containers_.end() ? nullptr : &it->second;
}

void PodHooks::started(const std::string& uid, std::size_t index, Target target, bool post_start) {
    State& s = containers_[{uid, index}];
    s.target = std::move(target);
    s.env_pending = false;
    if (post_start) run_post_start(uid, index, s);
}

void PodHooks::adopted(const std::string& uid, std::size_t index, Target target) {
    State& s = containers_[{uid, index}];
    s.target = std::move(target);
    s.target.container.env.clear();
    s.env_pending = true;
}

void PodHooks::run_post_start(const std::string& uid, std::size_t index, State& s) {
    const auto& spec = s.target.container.spec;
    if (!spec || !spec->lifecycle || !spec->lifecycle->post_start) return;
    cancel_hook(s);
    const std::string id = s.target.container.runtime_id;
    s.hook = runner_.run(*spec->lifecycle->post_start, s.target.container, kPostStartLimitMs,
                         [this, uid, index, id](Status st) {
                             State* c = find(uid, index);
                             if (!c || c->target.container.runtime_id != id)
                                 return;  // another instance's now
                             c->hook.reset();
                             if (!st.ok()) host_.post_start_failed(uid, index, id, st.error());
                             // The containers after it start now (SyncPod
                             // goes on after a failed start too).
                             host_.post_start_ended(uid);
                         });
}

bool PodHooks::post_start_running(const std::string& uid, std::size_t index) const {
    auto it = containers_.find({uid, index});
    return it != containers_.end() && it->second.hook && !it->second.pre_stopping;
}

bool PodHooks::pre_stop(const std::string& uid, std::size_t index, const std::string& id,
                        std::optional<std::int64_t> grace_override, PreStopDone done) {
    State* found = find(uid, index);
    if (found && found->pre_stopping) return true;  // one stop, after the hook already running
    // An instance the agent did not see start nor could place at adoption
    // runs the hooks of its pod's spec now, its env computed now.
    if (!found || !found->target.container.spec || found->target.container.runtime_id != id) {
        auto now = host_.hook_target_now(uid, index, id);
        if (!now) return false;
        found = &containers_[{uid, index}];
        found->target = std::move(*now);
        found->target.container.env.clear();
        found->env_pending = true;
    }
    if (std::exchange(found->env_pending, false)) {
        // The Host is asked with the entry's spec held here, and the entry
        // found again after it (a Host may come back into this map).
        const std::shared_ptr<const Container> asked = found->target.container.spec;
        auto env = host_.hook_env(uid, index, *asked);
        found = find(uid, index);
        if (!found) return false;
        if (env) found->target.container.env = std::move(*env);
    }
    State& s = *found;
    if (grace_override) s.target.grace_seconds = *grace_override;  // its Pod's deletion grace
    const auto& spec = s.target.container.spec;
    if (!spec->lifecycle || !spec->lifecycle->pre_stop || s.target.grace_seconds <= 0) return false;
    cancel_hook(s);  // a postStart still running
    s.pre_stopping = true;
    const std::int64_t grace = s.target.grace_seconds;
    s.hook = runner_.run(*spec->lifecycle->pre_stop, s.target.container, grace * 1000,
                         [this, uid, index, id, grace, done = std::move(done)](Status st) {
                             State* c = find(uid, index);
                             if (!c || c->target.container.runtime_id != id) return;
                             c->hook.reset();
                             c->pre_stopping = false;
                             if (!st.ok()) host_.pre_stop_failed(uid, index, st.error());
                             done(id, grace);
                         });
    return true;
}

void PodHooks::cancel(const std::string& uid, std::size_t index) {
    if (State* s = find(uid, index)) cancel_hook(*s);
}

void PodHooks::cancel_hook(State& s) {
    if (s.hook) runner_.cancel(*s.hook);
    s.hook.reset();
    s.pre_stopping = false;
}

void PodHooks::forget(const std::string& uid) {
    // A hook still running (its container's exit normally cancelled it
    // before the pod could go) is cancelled: it ends unheard.
    auto first = containers_.lower_bound({uid, 0});
    auto last = containers_.upper_bound({uid, SIZE_MAX});
    for (auto it = first; it != last; ++it) cancel_hook(it->second);
    containers_.erase(first, last);
}

}  // namespace daemonlet::agent
