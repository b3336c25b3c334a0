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
#   3. maxSurge (update.go's surge path): the controller's Pod of the new
#      revision for the board starts the new pod, which takes that Pod;
#      the old pod runs on until its Pod is deleted;
#   4. rollouts: board: the same change rolls at once, as without a
#      cluster (the board deletes the old Pod itself);
#   5. a held rollout stays held across an agent restart and a SIGHUP that
#      makes a new link: not connected "yet" is no outage, nor is an old
#      pod whose Pod the new link has not listed yet "without its Pod".
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
source "$(dirname "${BASH_SOURCE[0]}")/cluster_lib.sh"
require_kubectl

start_notify_listener
start_fake
# DS's one Pod (not being deleted) as kubectl lists it, and the board's one pod of DS.
one() { jq -ce 'if length == 1 then .[0] else error("not one") end'; }
api_pod() { k get pods -n it -o json | jq -c --arg d "$1" '[.items[] | select(.metadata.ownerReferences[0].name == $d and .metadata.deletionTimestamp == null)]' | one; }
board_pods() { pods_json | jq -c --arg d "$1" '[.items[] | select(.metadata.ownerReferences[0].name == $d)]'; }
board_pod() { board_pods "$1" | one; }
# The board pod's uid and container id: a restart changes one.
board_ids() { board_pod "$1" | jq -r '.metadata.uid + " " + .status.containerStatuses[0].containerID'; }
# runs DS HASH: the board's one pod of DS runs, its Pod Running and Ready with controller-revision-hash HASH.
runs() {
    board_pod "$1" | jq -e '.status.phase == "Running"' >/dev/null &&
        api_pod "$1" | jq -e --arg h "$2" '.metadata.labels["controller-revision-hash"] == $h and .status.phase == "Running" and any(.status.conditions[]; .type == "Ready" and .status == "True")' >/dev/null
}
waiting() { status_json | jq -e --argjson w "$1" '.daemonSets.waitingForTheCluster == $w' >/dev/null; }
export -f k one api_pod board_pods board_pod runs waiting

# surge rolls with maxSurge 1, maxUnavailable 0 (update.go's surge path).
put_surge() {  # put_surge SCRIPT
    put_ds_body surge "$(ds_json surge "$1" | jq -c '.spec.updateStrategy = {type: "RollingUpdate", rollingUpdate: {maxUnavailable: 0, maxSurge: 1}}')"
}
write_config "{board: \"true\"}" "[]"
api_server_config "registerNode: true"
put_ds web 'exec sleep 600'
put_revision web 5d8c6f7b91 1
put_surge 'exec sleep 600'
put_revision surge 3a7e5c9d24 1
start_own_agent
wait_for "web's Pod Running and Ready, revision 1" 15 runs web 5d8c6f7b91
wait_for "surge's Pod Running and Ready, revision 1" 10 runs surge 3a7e5c9d24

# 1. New templates: held while the controller has neither deleted the old
# Pod nor (surge) made the new one.
ids=$(board_ids web)
surge_ids=$(board_ids surge)
old_pod=$(api_pod web | jq -r .metadata.name)
old_pod_uid=$(api_pod web | jq -r .metadata.uid)
put_ds web 'exec sleep 601'
put_revision web 7f9b4c2d63 2
put_surge 'exec sleep 601'
put_revision surge 8c4f2a6e13 2
wait_for "the agent reports both rollouts waiting for the DaemonSet controller" 10 waiting '["it/surge","it/web"]'
[[ $(board_ids web) == "$ids" && $(board_ids surge) == "$surge_ids" ]] && ok ||
    fail "the board replaced a pod without the controller: $ids, $surge_ids -> $(board_ids web), $(board_ids surge)"
runs web 5d8c6f7b91 && runs surge 3a7e5c9d24 && ok || fail "a Pod changed while held: $(k get pods -n it -o json | jq -c '[.items[].metadata.labels]')"
status_json | jq -e '.apiServer.rollouts == "cluster"' >/dev/null && ok || fail "status: apiServer.rollouts: $(status_json | jq -c .apiServer.rollouts)"
"$dl" status --config "$cfg" | grep -q "^  Rollouts waiting for the DaemonSet controller: it/surge, it/web$" && ok ||
    fail "daemonlet status does not show the hold: $("$dl" status --config "$cfg")"

# 3. surge: the controller makes the new revision's Pod for the board (its
# surge Pod): the board starts the new pod, which takes it; the old pod
# runs on until its own Pod is deleted.
old_surge=$(api_pod surge | jq -r .metadata.name)
ctl PUT pods/it/surge-n3w4p "$(jq -c '{metadata: {labels: (.spec.template.metadata.labels + {"controller-revision-hash": "8c4f2a6e13"}),
    ownerReferences: [{apiVersion: "apps/v1", kind: "DaemonSet", name: "surge", uid: .metadata.uid, controller: true, blockOwnerDeletion: true}]},
    spec: (.spec.template.spec + {nodeName: "it-node"}), status: {phase: "Pending"}}' "$work/ds/surge.json")" >/dev/null
surged() {  # two board pods of surge; the controller's Pod taken, Running and Ready; the old one's Pod there
    [[ $(board_pods surge | jq length) == 2 ]] &&
        k get pod -n it surge-n3w4p -o json | jq -e '.status.phase == "Running" and any(.status.conditions[]; .type == "Ready" and .status == "True")' >/dev/null &&
        k get pod -n it "$old_surge" -o json | jq -e '.metadata.deletionTimestamp == null and .status.phase == "Running"' >/dev/null
}
export -f surged
export old_surge
wait_for "surge: the controller's new Pod taken by a new board pod, the old one running on" 10 surged
wait_for "surge's old pod waits for the controller to delete its Pod" 5 waiting '["it/surge","it/web"]'
[[ $(board_pods surge | jq -r --arg o "${surge_ids%% *}" '[.[] | select(.metadata.uid == $o)] | length') == 1 ]] && ok ||
    fail "surge's old board pod is gone: $(board_pods surge | jq -c '[.[].metadata.uid]')"
k delete pod -n it "$old_surge" --timeout=15s >/dev/null 2>"$work/kdelete.err" && ok || fail "kubectl delete pod $old_surge: $(cat "$work/kdelete.err")"
wait_for "surge: one board pod left, its Pod the controller's, revision 2" 10 runs surge 8c4f2a6e13
[[ $(api_pod surge | jq -r .metadata.name) == surge-n3w4p ]] && ok || fail "surge's Pod is not the controller's: $(api_pod surge | jq -c .metadata)"

# 5. web is still held: an agent restart, then a reload with a changed
# apiServer key (a new link), leave its old pod alone.
before=$(ready_count)
stop_agent TERM
start_own_agent
wait_ready "$before"
wait_for "the restarted agent holds web's rollout" 10 waiting '["it/web"]'
[[ $(board_ids web) == "$ids" ]] && ok || fail "the restart rolled web: $ids -> $(board_ids web)"
since=$(status_json | jq -r .apiServer.since)
sed -i 's/requestTimeout: 3s/requestTimeout: 4s/' "$cfg"
kill -HUP "$agent"
relinked() { status_json | jq -e --arg s "$since" '.apiServer.state == "connected" and .apiServer.since != $s' >/dev/null; }
export -f relinked
export since
wait_for "the reload's new link connects" 10 relinked
wait_for "the reloaded agent holds web's rollout" 5 waiting '["it/web"]'
[[ $(board_ids web) == "$ids" ]] && ok || fail "the reload rolled web: $ids -> $(board_ids web)"

# 2. kubectl delete pod, as the controller deletes the old Pod: the old pod
# stops, the deletion is confirmed, the new revision runs with its Pod.
k delete pod -n it "$old_pod" --timeout=15s >/dev/null 2>"$work/kdelete.err" && ok || fail "kubectl delete pod $old_pod: $(cat "$work/kdelete.err")"
options=$(stats | jq -c .lastPodDelete)
jq -e --arg u "$old_pod_uid" '.preconditions.uid == $u and .gracePeriodSeconds == 0' <<<"$options" >/dev/null && ok ||
    fail "the deletion was not confirmed with grace 0 and the uid precondition: $options"
wait_for "the new revision runs, its Pod labelled controller-revision-hash 7f9b4c2d63" 10 runs web 7f9b4c2d63
[[ $(board_ids web) != "$ids" ]] && ok || fail "the board pod did not change"
[[ $(k get pods -n it -o json | jq --arg n "$old_pod" '[.items[] | select(.metadata.name == $n)] | length') == 0 ]] && ok ||
    fail "the old Pod $old_pod is still there"
wait_for "no rollout waits any more" 5 waiting '[]'

# 4. rollouts: board: the board rolls at once, deleting the old Pod itself.
stop_agent TERM
write_config "{board: \"true\"}" "[]"
api_server_config "registerNode: true" "rollouts: board"
before=$(ready_count)
start_own_agent
wait_ready "$before"
wait_for "the restarted agent keeps web's Pod" 10 runs web 7f9b4c2d63
ids=$(board_ids web)
deletes=$(stats | jq -r '.podWrites.graceful // 0')
put_ds web 'exec sleep 602'
put_revision web 2b6e8d4a57 3
wait_for "rollouts: board: the new revision runs at once, its Pod labelled 2b6e8d4a57" 10 runs web 2b6e8d4a57
[[ $(board_ids web) != "$ids" ]] && ok || fail "the board pod did not change"
[[ $(stats | jq -r '.podWrites.graceful // 0') == "$deletes" ]] && ok || fail "a Pod was deleted through the API (gracefully) in board mode"
status_json | jq -e '.apiServer.rollouts == "board" and .daemonSets.waitingForTheCluster == []' >/dev/null && ok ||
    fail "status in board mode: $(status_json | jq -c '[.apiServer.rollouts, .daemonSets]')"
finish
