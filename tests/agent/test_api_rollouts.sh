#!/usr/bin/env bash
# Rollouts the cluster paces, while connected (issue 14 §3,
# apiServer.rollouts): the real agent against the test API server, the
# cluster side driven with the real kubectl. Rules pinned:
#   1. rollouts: cluster (the default): a template change of a cluster
#      DaemonSet replaces nothing on the board: the DaemonSet controller's
#      rollingUpdate (update.go) deletes old Pods within maxUnavailable
#      across the fleet, and a kubelet only follows a Pod's deletion
#      (HandlePodUpdates). The board holds its old pod, says so in
#      `daemonlet status -o json` (daemonSets.waitingForTheCluster), and its
#      container is not restarted;
#   2. `kubectl delete pod` of the old Pod (as the controller deletes it):
#      the old pod stops within the grace, the deletion is confirmed (grace
#      0, the uid precondition), and the new revision's pod runs, its Pod
#      labelled with the new controller-revision-hash; the old Pod is gone;
#   3. rollouts: board: the same change rolls at once, as without a
#      cluster (the board deletes the old Pod itself).
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
source "$(dirname "${BASH_SOURCE[0]}")/cluster_lib.sh"
command -v kubectl >/dev/null || {
    echo "kubectl is missing"
    exit 1
}

"$listen" "$work/notify.sock" "$work/notify.log" &
listener=$!
wait_for "notify listener up" 5 test -S "$work/notify.sock"
start_fake
k() { kubectl --kubeconfig "$work/kubeconfig" --cache-dir "$work/kcache" --request-timeout 5s "$@"; }
# web's one Pod (not being deleted) as kubectl lists it, and the board's pod of web.
web_pod() { k get pods -n it -o json | jq -ce '[.items[] | select(.metadata.ownerReferences[0].name == "web" and .metadata.deletionTimestamp == null)] | if length == 1 then .[0] else error("not one") end'; }
board_web() { pods_json | jq -ce '[.items[] | select(.metadata.ownerReferences[0].name == "web")] | if length == 1 then .[0] else error("not one") end'; }
# The board pod's uid and container id: a restart changes one.
board_ids() { board_web | jq -r '.metadata.uid + " " + .status.containerStatuses[0].containerID'; }
# runs HASH: the board's one pod of web runs, its Pod Running and Ready with controller-revision-hash HASH.
runs() {
    board_web | jq -e '.status.phase == "Running"' >/dev/null &&
        web_pod | jq -e --arg h "$1" '.metadata.labels["controller-revision-hash"] == $h and .status.phase == "Running" and any(.status.conditions[]; .type == "Ready" and .status == "True")' >/dev/null
}
waiting() { status_json | jq -e --argjson w "$1" '.daemonSets.waitingForTheCluster == $w' >/dev/null; }
export -f k web_pod board_web runs waiting

write_config "{board: \"true\"}" "[]"
api_server_config "registerNode: true"
put_ds web 'exec sleep 600'
put_revision web 5d8c6f7b91 1
start_own_agent
wait_for "web's Pod Running and Ready, revision 1" 15 runs 5d8c6f7b91

# 1. A new template: held while the controller has not deleted the old Pod.
ids=$(board_ids)
old_pod=$(web_pod | jq -r .metadata.name)
old_pod_uid=$(web_pod | jq -r .metadata.uid)
put_ds web 'exec sleep 601'
put_revision web 7f9b4c2d63 2
wait_for "the agent reports web's rollout waiting for the DaemonSet controller" 10 waiting '["it/web"]'
[[ $(board_ids) == "$ids" ]] && ok || fail "the board replaced its pod without the controller: $ids -> $(board_ids)"
runs 5d8c6f7b91 && ok || fail "web's Pod changed while held: $(web_pod | jq -c .metadata)"
status_json | jq -e '.apiServer.rollouts == "cluster"' >/dev/null && ok || fail "status: apiServer.rollouts: $(status_json | jq -c .apiServer.rollouts)"
"$dl" status --config "$cfg" | grep -q "^  Rollouts waiting for the DaemonSet controller: it/web$" && ok ||
    fail "daemonlet status does not show the hold: $("$dl" status --config "$cfg")"

# 2. kubectl delete pod, as the controller deletes the old Pod: the old pod
# stops, the deletion is confirmed, the new revision runs with its Pod.
k delete pod -n it "$old_pod" --timeout=15s >/dev/null 2>"$work/kdelete.err" && ok || fail "kubectl delete pod $old_pod: $(cat "$work/kdelete.err")"
options=$(stats | jq -c .lastPodDelete)
jq -e --arg u "$old_pod_uid" '.preconditions.uid == $u and .gracePeriodSeconds == 0' <<<"$options" >/dev/null && ok ||
    fail "the deletion was not confirmed with grace 0 and the uid precondition: $options"
wait_for "the new revision runs, its Pod labelled controller-revision-hash 7f9b4c2d63" 10 runs 7f9b4c2d63
[[ $(board_ids) != "$ids" ]] && ok || fail "the board pod did not change"
[[ $(k get pods -n it -o json | jq --arg n "$old_pod" '[.items[] | select(.metadata.name == $n)] | length') == 0 ]] && ok ||
    fail "the old Pod $old_pod is still there"
wait_for "no rollout waits any more" 5 waiting '[]'

# 3. rollouts: board: the board rolls at once, deleting the old Pod itself.
stop_agent TERM
write_config "{board: \"true\"}" "[]"
api_server_config "registerNode: true" "rollouts: board"
before=$(ready_count)
start_own_agent
wait_ready "$before"
wait_for "the restarted agent keeps web's Pod" 10 runs 7f9b4c2d63
ids=$(board_ids)
deletes=$(stats | jq -r '.podWrites.graceful // 0')
put_ds web 'exec sleep 602'
put_revision web 2b6e8d4a57 3
wait_for "rollouts: board: the new revision runs at once, its Pod labelled 2b6e8d4a57" 10 runs 2b6e8d4a57
[[ $(board_ids) != "$ids" ]] && ok || fail "the board pod did not change"
[[ $(stats | jq -r '.podWrites.graceful // 0') == "$deletes" ]] && ok || fail "a Pod was deleted through the API (gracefully) in board mode"
status_json | jq -e '.apiServer.rollouts == "board" and .daemonSets.waitingForTheCluster == []' >/dev/null && ok ||
    fail "status in board mode: $(status_json | jq -c '[.apiServer.rollouts, .daemonSets]')"
finish
