#!/usr/bin/env bash
# Published DaemonSets' shapes under runc (issue 13 §6; shapes_lib.sh has
# the five DaemonSets and what the kubelet would give them): one agent
# following the test API server runs a CNI agent, a log shipper, a node
# exporter, a device plugin and a secret-keyed agent at once, each
# container reporting from the inside. test_shapes_cri.sh runs the same
# under containerd. Needs root, runc and busybox-static; skips without them.
set -uo pipefail
here=$(dirname "${BASH_SOURCE[0]}")
source "$here/lib.sh"
require_runc
command -v jq >/dev/null || { echo "jq is missing (scripts/setup.sh installs it)"; exit 1; }
runc_busybox_import
IMAGE_USER=app "$here/../data/make_busybox_image.sh" "$import/named.tar" example.com/edge/named:1 >/dev/null ||
    { echo "FAIL: cannot build the named-user image"; exit 1; }
fake=
trap '[[ -n ${KEEP_LOGS:-} ]] && cp -r "$work"/*.log "$work/shapes" "$KEEP_LOGS"/; [[ -n $fake ]] && kill "$fake" 2>/dev/null; runc_cleanup' EXIT

# Tokens of 5 s, refreshed at 4 s within the test (shapes_lib.sh's dynamic part).
test_apiserver_args=(--max-token-expiration-seconds 5)
start_test_apiserver
write_runc_config "$import"
follow_test_apiserver
# A reboot, as runc's containers see it: the shims and the containers gone
# (shapes_lib.sh then takes the agent's mounts and pod volumes).
shapes_reboot() {
    pkill -KILL -f "daemonlet-shim.*$work"
    local id
    for id in $(rc list -q 2>/dev/null); do rc delete --force "$id" >/dev/null 2>&1; done
}
source "$here/shapes_lib.sh"
run_shapes busybox
finish
