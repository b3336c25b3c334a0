// The desired state: what the sources (sources.h) merge to, made the
// DaemonSets in force, with rollbacks applied, in the store with its
// revision history (DesiredDaemonSets, desired_daemonsets.h), and the
// files' static pods (StaticPods, static_pods.h); what the rollbacks
// (Rollbacks, rollbacks.h) reach of the agent.
#include "agent/daemon/agent.h"
#include "core/pod_network.h"
#include "platform/log.h"

namespace daemonlet::agent {

using platform::Level;
using platform::log;

void Agent::rescan_manifests() {
    if (stopping_) return;
    Sources::Changes changes = sources_->rescan(config_.manifest_dir);
    if (changes.daemonsets) rebuild_desired();
    if (changes.config_objects) on_config_objects_changed();
}

void Agent::schedule_rebuild() {
    if (!rebuild_timer_ || stopping_) return;
    uv_timer_start(
        rebuild_timer_, [](uv_timer_t* t) { static_cast<Agent*>(t->data)->rebuild_desired(); }, 0, 0);
}

void Agent::rebuild_desired() {
    // First: a store that fails below must not leave the static pods
    // without their files (the reconcile would stop them all).
    static_pods_.rebuild(sources_->static_pods(), node_state_->name(), config_.runtime_type);
    if (!desired_.rebuild(sources_->merge(node_state_->name())).applied) return;
    schedule_reconcile();
}

// Once per template: hostPorts the runtime cannot map.
void Agent::template_in_force(const std::string& key, const Desired& d) {
    if (auto why = unmapped_host_ports(d.ds().spec.template_.spec, config_.runtime_type); !why.empty())
        log(Level::Warning, "DaemonSet " + key + ": " + why);
}

void Agent::record_rollback_event(const std::string& ns, const std::string& daemonset, const char* type,
                                  const char* reason, const std::string& message) {
    ds_events_.record(ns, daemonset, type, reason, message);
}

std::shared_ptr<const DaemonSet> Agent::manifest_daemonset(const std::string& path, const std::string& ns,
                                                           const std::string& name) const {
    return sources_->file_daemonset(path, ns, name);
}

// An undo changed what applies to `key`: rebuilt now.
void Agent::rollback_changed(const std::string& key) {
    desired_.reapply(key);
    rebuild_desired();
}

}  // namespace daemonlet::agent
