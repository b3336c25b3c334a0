#!/usr/bin/env bash
# Published DaemonSets' shapes under containerd (issue 13 §6; shapes_lib.sh
# has the five DaemonSets and what the kubelet would give them): one agent
# following the test API server runs a CNI agent, a log shipper, a node
# exporter, a device plugin and a secret-keyed agent at once through the
# CRI, each container reporting from the inside. test_shapes_runc.sh runs
# the same under runc. The pods not on the host network need a pod IP
# under containerd (its CNI result's eth0): a bridge network in a network
# namespace of containerd's own (cri_lib.sh CRI_BRIDGE_SUBNET). Needs root,
# containerd, ip, nsenter and the bridge plugin; skips without them.
set -uo pipefail
here=$(dirname "${BASH_SOURCE[0]}")
source "$here/lib.sh"
require_containerd
command -v ip >/dev/null && command -v nsenter >/dev/null || { echo "SKIPPED: ip or nsenter is missing"; exit 0; }
for plugin in bridge host-local loopback portmap; do
    [[ -x /usr/lib/cni/$plugin ]] || { echo "SKIPPED: /usr/lib/cni/$plugin is missing (apt-get install containernetworking-plugins)"; exit 0; }
done
CRI_BRIDGE_SUBNET=10.213.78.0/24
command -v jq >/dev/null || { echo "jq is missing (scripts/setup.sh installs it)"; exit 1; }
source "$here/cri_lib.sh"
fake=
trap '[[ -n ${KEEP_LOGS:-} ]] && cp -r "$work"/*.log "$work/shapes" "$KEEP_LOGS"/; [[ -n $fake ]] && kill "$fake" 2>/dev/null; cri_cleanup' EXIT

start_containerd
IMAGE_USER=app "$here/../data/make_busybox_image.sh" "$work/named.tar" example.com/edge/named:1 >/dev/null ||
    { echo "FAIL: cannot build the named-user image"; exit 1; }
# Tokens of 5 s, refreshed at 4 s within the test (shapes_lib.sh's dynamic part).
test_apiserver_args=(--max-token-expiration-seconds 5)
start_test_apiserver
follow_test_apiserver
wait_for "containerd answers on its socket" 20 containerd_up
import_images && c images import --snapshotter native "$work/named.tar" >/dev/null && ok ||
    fail "ctr cannot import the test images"
# A reboot, as containerd's pods see it: every task (the containers and
# the sandboxes' pause processes) killed, so that the sandboxes are not
# ready and the containers exited (shapes_lib.sh then takes the agent's
# mounts and pod volumes).
no_task_runs() { local out; out=$(c tasks ls 2>/dev/null) && ! grepq RUNNING <<<"$out"; }
shapes_reboot() {
    local id
    for id in $(c tasks ls -q 2>/dev/null); do c tasks kill -s KILL "$id" >/dev/null 2>&1; done
    wait_for "every task of containerd has stopped" 10 no_task_runs
}
source "$here/shapes_lib.sh"
run_shapes busybox:latest
finish
