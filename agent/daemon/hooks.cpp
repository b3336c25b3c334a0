// The agent's side of the lifecycle hooks (lifecycle_hooks.h), as the
// kubelet runs them (pkg/kubelet/kuberuntime/kuberuntime_container.go):
//
//   postStart  right after the container started (startContainer). A
//              failure is logged with the handler's message, recorded as a
//              FailedPostStartHook event ("PostStartHook failed": the kubelet
//              keeps the message out of the event, lest it leak a secret),
//              and the container is stopped; the exit path restarts it with
//              crash-loop back-off, as restartPolicy Always says.
//   preStop    before the stop signal, whatever stops the container (pod
//              removal, a liveness or startup failure, a failed postStart),
//              when the grace period is above 0 (killContainer). It has the
//              pod's terminationGracePeriodSeconds; what it leaves (at least
//              2 s) is the stop's grace between SIGTERM and SIGKILL
//              (PodWorkers::kill, core/lifecycle_hook.h grace_after_pre_stop). A failure is a
//              FailedPreStopHook event ("PreStopHook failed"); the stop goes
//              on. One still running when the grace period ends is killed
//              (the kubelet stops waiting for it) and the stop goes on.
//
// Nothing here waits: each hook is a LifecycleHooks operation that calls
// back on the loop.
#include "agent/daemon/agent.h"
#include "core/lifecycle_hook.h"
#include "platform/log.h"

namespace daemonlet::agent {

using platform::Level;
using platform::log;

namespace {

// The kubelet gives a postStart hook no deadline (RunInContainer with
// timeout 0); this one is only the bound on what a manifest can make the
// agent wait for. The container's exit or stop ends it sooner.
constexpr std::int64_t kPostStartLimitMs = 24LL * 3600 * 1000;

}  // namespace

void Agent::started_for_hooks(const std::string& uid, std::size_t index,
                              std::shared_ptr<const Container> spec,
                              std::vector<std::pair<std::string, std::string>> env,
                              std::int64_t grace_seconds) {
    auto pit = pods_.find(uid);
    if (pit == pods_.end() || !hooks_) return;
    LivePod& p = pit->second;
    LiveContainer& lc = p.containers[index];
    if (lc.id.empty()) return;
    lc.hook_target.pod = pod_ref(p.rec.name, p.rec.namespace_, p.rec.uid);
    lc.hook_target.runtime_id = lc.id;
    lc.hook_target.spec = std::move(spec);
    lc.hook_target.env = std::move(env);
    lc.hook_env_pending = false;
    lc.grace_seconds = grace_seconds;
    if (!p.rec.deleting && !stopping_) run_post_start(uid, index);
}

void Agent::run_post_start(const std::string& uid, std::size_t index) {
    LivePod& p = pods_[uid];
    LiveContainer& lc = p.containers[index];
    const auto& spec = lc.hook_target.spec;
    if (!spec || !spec->lifecycle || !spec->lifecycle->post_start) return;
    cancel_hook(lc);
    const std::string id = lc.id;
    lc.hook = hooks_->run(
        *spec->lifecycle->post_start, lc.hook_target, kPostStartLimitMs, [this, uid, index, id](Status s) {
            auto pit = pods_.find(uid);
            if (pit == pods_.end()) return;
            LivePod& pod = pit->second;
            pod.containers[index].hook.reset();
            if (!s.ok()) {
                const std::string name = pod.rec.namespace_ + "/" + pod.rec.name;
                log(Level::Warning, s.error().message + "; stopping the container",
                    {{"DAEMONLET_POD", name}, {"DAEMONLET_CONTAINER", pod.status(index).name}});
                record_event(pod.rec.namespace_, pod.rec.daemonset, "Warning", kFailedPostStartHook,
                             "PostStartHook failed");
                // startContainer: the hook's Event on the Pod, then
                // killContainer's Killing with the message "FailedPostStartHook".
                const std::int64_t now = clock_.wall_ms();
                const ContainerRef ref = container_ref(pod, index);
                record_pod_event(pod, warning_event(&ref, kFailedPostStartHook, "PostStartHook failed", now));
                PodEvent killing = killing_event(ref, nullptr, now);
                killing.message = kFailedPostStartHook;
                record_pod_event(pod, std::move(killing));
                workers_->kill(uid, index, id, "pod " + name + " (FailedPostStartHook)", false);
            }
            // The containers after it start now (SyncPod goes on
            // after a failed start too).
            continue_after_post_start(uid);
        });
}

void Agent::continue_after_post_start(const std::string& uid) {
    auto pit = pods_.find(uid);
    if (pit == pods_.end() || stopping_ || !workers_->advance(uid)) return;
    refresh_readiness(pit->second);
    save_pod(pit->second);
}

bool Agent::post_start_pending(const LivePod& p, std::size_t index) const {
    const LiveContainer& lc = p.containers[index];
    if (lc.hook && !lc.pre_stopping) return true;
    if (!lc.starting) return false;
    const Container* spec = container_spec(p, index);
    return spec && spec->lifecycle && spec->lifecycle->post_start;
}

// The hook only: PodWorkers::kill stops the container once `done` says
// it ended, with what it left of the grace period.
bool Agent::run_pre_stop(const std::string& uid, std::size_t index, const std::string& expected,
                         std::function<void(const std::string& id, std::int64_t grace_seconds)> done) {
    auto pit = pods_.find(uid);
    if (pit == pods_.end() || !hooks_ || stopping_ || index >= pit->second.containers.size()) return false;
    LivePod& p = pit->second;
    LiveContainer& lc = p.containers[index];
    if (lc.id.empty() || (!expected.empty() && lc.id != expected)) return false;
    if (lc.pre_stopping) return true;  // one stop, after the hook already running
    // An adopted container (the agent restarted) runs the hooks of its
    // pod's template.
    if (!lc.hook_target.spec || lc.hook_target.runtime_id != lc.id) {
        const Container* spec = probed_spec(p, index);
        // The grace period of the pod's own spec (a static pod's file, or
        // the DaemonSet revision it runs), else of the current template.
        std::optional<std::int64_t> grace;
        if (const PodSource src = pod_source(p.rec); src.spec)
            grace = src.spec->termination_grace_period_seconds.value_or(30);
        else if (const Desired* d = desired_for(p.rec))
            grace = d->ds().spec.template_.spec.termination_grace_period_seconds.value_or(30);
        if (!spec || !grace) return false;
        set_hook_target(p, index, *spec, *grace);
    }
    if (std::exchange(lc.hook_env_pending, false))
        if (auto env = container_env(p, *lc.hook_target.spec)) lc.hook_target.env = std::move(env.value());
    if (p.grace_override) lc.grace_seconds = *p.grace_override;  // its Pod's deletion grace
    const auto& spec = lc.hook_target.spec;
    if (!spec->lifecycle || !spec->lifecycle->pre_stop || lc.grace_seconds <= 0) return false;
    cancel_hook(lc);  // a postStart still running
    lc.pre_stopping = true;
    const std::string id = lc.id;
    const std::int64_t grace = lc.grace_seconds;
    lc.hook = hooks_->run(
        *spec->lifecycle->pre_stop, lc.hook_target, grace * 1000,
        [this, uid, index, id, grace, done = std::move(done)](Status s) {
            auto it = pods_.find(uid);
            if (it == pods_.end()) return;
            LivePod& pod = it->second;
            LiveContainer& c = pod.containers[index];
            c.hook.reset();
            c.pre_stopping = false;
            if (!s.ok()) {
                const std::string name = pod.rec.namespace_ + "/" + pod.rec.name;
                log(Level::Warning, s.error().message,
                    {{"DAEMONLET_POD", name}, {"DAEMONLET_CONTAINER", pod.status(index).name}});
                record_event(pod.rec.namespace_, pod.rec.daemonset, "Warning", kFailedPreStopHook,
                             "PreStopHook failed");
                const ContainerRef ref = container_ref(pod, index);
                record_pod_event(
                    pod, warning_event(&ref, kFailedPreStopHook, "PreStopHook failed", clock_.wall_ms()));
            }
            done(id, grace);
        });
    return true;
}

void Agent::set_hook_target(LivePod& p, std::size_t index, const Container& spec, std::int64_t grace_seconds,
                            bool env_now) {
    LiveContainer& lc = p.containers[index];
    lc.hook_target.pod = pod_ref(p.rec.name, p.rec.namespace_, p.rec.uid);
    lc.hook_target.runtime_id = lc.id;
    lc.hook_target.spec = std::make_shared<const Container>(spec);
    lc.hook_target.env.clear();
    lc.hook_env_pending = !env_now;
    if (env_now)
        if (auto env = container_env(p, spec)) lc.hook_target.env = std::move(env.value());
    lc.grace_seconds = grace_seconds;
}

// As the kubelet, which kills a container with the spec of its pod, or
// without one with what its labels kept (killContainer,
// restoreSpecsFromContainerLabels): the store's DaemonSet and revision are
// there at the start (the DaemonSets are read after the adoption), and gone
// once its removal is seen; then each container's stop record (kept when it
// started, launch_of) has its preStop hook and the pod's grace period. The
// revision first: a container started by an older agent has no record.
void Agent::load_adopted_hooks(LivePod& p) {
    if (p.rec.is_static()) return;  // static_pods_ keeps its file's last version
    auto row = store_->get_daemonset(p.rec.namespace_, p.rec.daemonset);
    const Json object =
        row.ok() && row.value() ? Json::parse(row.value()->object_json, nullptr, false) : Json();
    const DaemonSet* ds = object.is_object() ? stored_revision(p.rec, object) : nullptr;
    for (std::size_t i = 0; i < p.containers.size(); ++i) {
        if (p.containers[i].id.empty()) continue;
        const Container* c = ds ? find_container(ds->spec.template_.spec, p, i) : nullptr;
        if (c) {
            set_hook_target(p, i, *c, ds->spec.template_.spec.termination_grace_period_seconds.value_or(30),
                            false);
        } else if (auto kept = restore_stop(p.status(i).stop_record, p.status(i).name)) {
            set_hook_target(p, i, kept->container, kept->grace_seconds, false);
        }
    }
}

void Agent::cancel_hook(LiveContainer& lc) {
    if (lc.hook && hooks_) hooks_->cancel(*lc.hook);
    lc.hook.reset();
    lc.pre_stopping = false;
}

}  // namespace daemonlet::agent
