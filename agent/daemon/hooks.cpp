// The agent's side of the lifecycle hooks: the wiring of PodHooks
// (pod_hooks.h), which decides when each container's postStart and preStop
// run, to the pods (their spec, env and grace), the pod workers (the next
// container's start, the stop after a failed postStart) and the Events.
#include "agent/daemon/agent.h"
#include "core/lifecycle_hook.h"
#include "platform/log.h"

namespace daemonlet::agent {

using platform::Level;
using platform::log;

bool Agent::holds_next(const std::string& uid, std::size_t index) {
    if (pod_hooks_ && pod_hooks_->post_start_running(uid, index)) return true;
    const LivePod& p = pods_.at(uid);
    if (!p.containers[index].starting) return false;
    const Container* spec = container_spec(p, index);
    return spec && spec->lifecycle && spec->lifecycle->post_start;
}

void Agent::post_start_failed(const std::string& uid, std::size_t index, const std::string& id,
                              const Error& error) {
    LivePod* found = pods_.find(uid);
    if (!found) return;
    LivePod& pod = *found;
    const std::string name = pod.rec.namespace_ + "/" + pod.rec.name;
    log(Level::Warning, error.message + "; stopping the container",
        {{"DAEMONLET_POD", name}, {"DAEMONLET_CONTAINER", pod.status(index).name}});
    ds_events_.record(pod.rec.namespace_, pod.rec.daemonset, "Warning", kFailedPostStartHook,
                      "PostStartHook failed");
    // startContainer: the hook's Event on the Pod, then killContainer's
    // Killing with the message "FailedPostStartHook".
    const std::int64_t now = clock_.wall_ms();
    const ContainerRef ref = container_ref(pod, index);
    record_pod_event(pod, warning_event(&ref, kFailedPostStartHook, "PostStartHook failed", now));
    PodEvent killing = killing_event(ref, nullptr, now);
    killing.message = kFailedPostStartHook;
    record_pod_event(pod, std::move(killing));
    workers_->kill(uid, index, id, "pod " + name + " (FailedPostStartHook)", false);
}

void Agent::post_start_ended(const std::string& uid) {
    LivePod* found = pods_.find(uid);
    if (!found || stopping_ || !workers_->advance(uid)) return;
    refresh_readiness(*found);
    pods_.save(*found);
}

// The hook only: PodWorkers::kill stops the container once `done` says
// it ended, with what it left of the grace period.
bool Agent::run_pre_stop(const std::string& uid, std::size_t index, const std::string& expected,
                         std::function<void(const std::string& id, std::int64_t grace_seconds)> done) {
    LivePod* found = pods_.find(uid);
    if (!found || !pod_hooks_ || stopping_ || index >= found->containers.size()) return false;
    const LivePod& p = *found;
    const std::string& id = p.containers[index].id;
    if (id.empty() || (!expected.empty() && id != expected)) return false;
    return pod_hooks_->pre_stop(uid, index, id, p.rec.deletion_grace_seconds, std::move(done));
}

// An adopted container (the agent restarted) runs the hooks of its pod's
// template.
std::optional<PodHooks::Target> Agent::hook_target_now(const std::string& uid, std::size_t index,
                                                       const std::string& id) {
    LivePod* found = pods_.find(uid);
    if (!found) return std::nullopt;
    LivePod& p = *found;
    const Container* spec = probed_spec(p, index);
    // The grace period of the pod's own spec (a static pod's file, or the
    // DaemonSet revision it runs), else of the current template.
    std::optional<std::int64_t> grace;
    if (const PodSource src = pod_source(p.rec); src.spec)
        grace = src.spec->termination_grace_period_seconds.value_or(30);
    else if (const Desired* d = desired_.for_pod(p.rec))
        grace = d->ds().spec.template_.spec.termination_grace_period_seconds.value_or(30);
    if (!spec || !grace) return std::nullopt;
    return PodHooks::target(p.rec, id, std::make_shared<const Container>(*spec), *grace);
}

std::optional<PodHooks::Env> Agent::hook_env(const std::string& uid, std::size_t /*index*/,
                                             const Container& spec) {
    LivePod* found = pods_.find(uid);
    if (!found) return std::nullopt;
    auto env = container_config_.container_env(*found, spec);
    if (!env) return std::nullopt;
    return std::move(env.value());
}

void Agent::pre_stop_failed(const std::string& uid, std::size_t index, const Error& error) {
    LivePod* found = pods_.find(uid);
    if (!found) return;
    LivePod& pod = *found;
    const std::string name = pod.rec.namespace_ + "/" + pod.rec.name;
    log(Level::Warning, error.message,
        {{"DAEMONLET_POD", name}, {"DAEMONLET_CONTAINER", pod.status(index).name}});
    ds_events_.record(pod.rec.namespace_, pod.rec.daemonset, "Warning", kFailedPreStopHook,
                      "PreStopHook failed");
    const ContainerRef ref = container_ref(pod, index);
    record_pod_event(pod, warning_event(&ref, kFailedPreStopHook, "PreStopHook failed", clock_.wall_ms()));
}

// As the kubelet, which kills a container with the spec of its pod, or
// without one with what its labels kept (killContainer,
// restoreSpecsFromContainerLabels): the store's DaemonSet and revision are
// there at the start (the DaemonSets are read after the adoption), and gone
// once its removal is seen; then each container's stop record (kept when it
// started, launch_of) has its preStop hook and the pod's grace period. The
// revision first: a container started by an older agent has no record.
void Agent::load_adopted_hooks(const std::string& uid, LivePod& p) {
    if (p.rec.is_static() || !pod_hooks_) return;  // StaticPods keeps its file's last version
    auto row = store_->get_daemonset(p.rec.namespace_, p.rec.daemonset);
    const Json object =
        row.ok() && row.value() ? Json::parse(row.value()->object_json, nullptr, false) : Json();
    const DaemonSet* ds = object.is_object() ? desired_.pod_revision(p.rec, object) : nullptr;
    for (std::size_t i = 0; i < p.containers.size(); ++i) {
        const std::string& id = p.containers[i].id;
        if (id.empty()) continue;
        const Container* c = ds ? find_container(ds->spec.template_.spec, p, i) : nullptr;
        if (c) {
            pod_hooks_->adopted(
                uid, i,
                PodHooks::target(p.rec, id, std::make_shared<const Container>(*c),
                                 ds->spec.template_.spec.termination_grace_period_seconds.value_or(30)));
        } else if (auto kept = restore_stop(p.status(i).stop_record, p.status(i).name)) {
            pod_hooks_->adopted(
                uid, i,
                PodHooks::target(p.rec, id, std::make_shared<const Container>(std::move(kept->container)),
                                 kept->grace_seconds));
        }
    }
}

}  // namespace daemonlet::agent
