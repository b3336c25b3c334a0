// The files' ConfigMaps and Secrets (Sources::config_objects()) as pods use
// them.
#include "agent/daemon/agent.h"

namespace daemonlet::agent {

void Agent::on_config_objects_changed() {
    // volumes/env consumers react here: for now a reconcile, which reads
    // sources_->config_objects() afresh.
    schedule_reconcile();
}

}  // namespace daemonlet::agent
