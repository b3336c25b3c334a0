#!/usr/bin/env bash
# A board paused past the node lifecycle controller's grace (issue 14 §1):
# the test API server's controller (fake_apiserver --controllers,
# tryUpdateNodeHealth / doNoExecuteTaintingPass) sets its Node Ready=Unknown
# and taints it node.kubernetes.io/unreachable; resumed, the agent's Lease
# renewal comes late (core/node_status.h lease_gap_reposts_status) and it
# posts the Node's status at once, as the kubelet's tryUpdateNodeStatus
# would on its next GET: Ready=True, the taints gone, within 15 s rather
# than at the 5-minute report. Its pod keeps running (no restart).
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
source "$(dirname "${BASH_SOURCE[0]}")/cluster_lib.sh"
require_kubectl

agent=
cleanup_pause() {
    [[ -n $agent ]] && kill -CONT "$agent" 2>/dev/null && kill -9 "$agent" 2>/dev/null && wait "$agent" 2>/dev/null
    cleanup_cluster
}
trap cleanup_pause EXIT

# The grace must exceed the agent's Lease renew interval (10 s).
fake_extra=(--controllers --node-grace-seconds 11)
start_fake
write_config "{board: \"true\"}" "[]"
api_server_config "registerNode: true" "podStatus: true"
put_ds_body web "$(ds_json web 'exec sleep 600' '{"nodeSelector": {"board": "true"}}')"
"$dl" run --config "$cfg" >>"$work/agent.log" 2>&1 &
agent=$!

# The Node's Ready status and its unreachable taints' effects: "True " when
# healthy, "Unknown NoExecute,NoSchedule" when the controller took it.
node_health() {
    k get node it-node -o json | jq -r '([.status.conditions[]? | select(.type == "Ready") | .status][0] // "none") + " " +
        ([.spec.taints[]? | select(.key == "node.kubernetes.io/unreachable") | .effect] | sort | join(","))'
}
# The board's pod of web: its uid, container id and restart count.
pod_ids() {
    "$dl" get pods -A -o json --config "$cfg" |
        jq -r '[.items[] | select(.metadata.ownerReferences[0].name == "web")] | if length == 1 then .[0] |
            .metadata.uid + " " + .status.containerStatuses[0].containerID + " \(.status.containerStatuses[0].restartCount)" else "none" end'
}
running() { "$dl" get pods -A -o json --config "$cfg" | jq -e '[.items[] | select(.status.phase == "Running")] | length == 1' >/dev/null; }
export -f k node_health pod_ids running
export cfg

wait_for "the Node Ready, not tainted" 15 bash -c '[[ $(node_health) == "True " ]]'
wait_for "the board runs web's pod" 15 running
ids=$(pod_ids)

# Paused past the grace: Unknown and tainted; kept paused 16 s in all so
# that its next renewal comes more than 1.5 renew intervals after its last.
kill -STOP "$agent"
stopped_at=$(date +%s)
wait_for "the controller: Ready Unknown, the unreachable taints" 20 bash -c \
    '[[ $(node_health) == "Unknown NoExecute,NoSchedule" ]]'
wait_for "16 s paused" 16 bash -c "((\$(date +%s) - $stopped_at >= 16))"
echo "# paused $(($(date +%s) - stopped_at)) s"
kill -CONT "$agent"
resumed_at=$SECONDS
wait_for "the Node Ready again, the taints gone" 15 bash -c '[[ $(node_health) == "True " ]]'
echo "# Ready again $((SECONDS - resumed_at)) s after SIGCONT"
[[ $(pod_ids) == "$ids" ]] && ok || fail "the pod restarted across the pause: $ids -> $(pod_ids)"
finish
