#!/usr/bin/env bash
# The manifest directory across restarts (issue 12): what the agent keeps of
# each file in the store answers after a restart as the running agent did.
# (a) a file that stops parsing while the agent is down keeps its last good
#     version in force: the same pod process, the DaemonSet still listed,
#     the file reported broken;
# (b) a file removed while the agent is down: its pod stops and
#     `daemonlet get ds` no longer lists it, at that start and every later one.
# Both through a SIGTERM and a kill -9 of the agent. Oracles: `get ds -o json`,
# `get pods -o json`, `status -o json` and the pods' process ids; each agent
# process writes its own log.
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

start_notify_listener 30

loop='trap \"exit 0\" TERM; while true; do sleep 0.2; done'
write_config "{}" "[]"

ds_listed() { ds_list_json | jq -e --arg n "$1" '.items | any(.metadata.name == $n)'; }
ds_not_listed() { ds_list_json | jq -e --arg n "$1" '.items | all(.metadata.name != $n)'; }
pod_json_running() {
    pods_json | jq -e --arg n "$1" '.items | any(.metadata.ownerReferences[0].name == $n and .status.phase == "Running")'
}
no_pod_json() { pods_json | jq -e --arg n "$1" '.items | all(.metadata.ownerReferences[0].name != $n)'; }
# The agent answers and reports FILE broken with its last good version in force.
reports_broken() {
    status_json | jq -e --arg p "$man/$1" '.manifests.broken | any(.path == $p and .lastGoodInForce and (.errors | length) > 0)'
}
reports_nothing_broken() { status_json | jq -e '.manifests.broken == []'; }

for signal in TERM KILL; do
    write_ds keep.yaml keep "$loop"
    write_ds gone.yaml gone "$loop"
    start_own_agent
    wait_for "[$signal] keep runs" 30 pod_json_running keep
    wait_for "[$signal] gone runs" 30 pod_json_running gone
    wait_for "[$signal] gone is listed" 30 ds_listed gone
    keep_pid=$(pid_of keep)
    [[ -n $keep_pid ]] && ok || fail "[$signal] no process for keep"

    # While the agent is down: keep.yaml stops parsing, gone.yaml goes.
    stop_agent "$signal"
    printf 'spec: [\n' >>"$man/keep.yaml"
    rm -f "$man/gone.yaml"
    for start in 1 2; do
        start_own_agent
        wait_for "[$signal, start $start] keep.yaml is reported broken, its last good version in force" 30 \
            reports_broken keep.yaml
        wait_for "[$signal, start $start] gone's pod stops" 30 no_pod_json gone
        wait_for "[$signal, start $start] get ds no longer lists gone" 30 ds_not_listed gone
        ds_listed keep >/dev/null && ok || fail "[$signal, start $start] get ds no longer lists keep"
        pod_json_running keep >/dev/null && ok || fail "[$signal, start $start] keep's pod is not running"
        [[ $(pid_of keep) == "$keep_pid" ]] && ok ||
            fail "[$signal, start $start] keep's pod was restarted (pid $keep_pid -> $(pid_of keep))"
        # The next start finds the same: nothing new to apply.
        stop_agent "$signal"
    done
    # The store alone, the agent down: what get ds lists is the last answer.
    ds_not_listed gone >/dev/null && ok || fail "[$signal] get ds lists gone with the agent down"

    # Fixed back to its last good version: reported fixed, the pod untouched.
    start_own_agent
    write_ds keep.yaml keep "$loop"
    wait_for "[$signal] the fixed keep.yaml is no longer reported broken" 30 reports_nothing_broken
    [[ $(pid_of keep) == "$keep_pid" ]] && ok || fail "[$signal] fixing keep.yaml restarted its pod"
    stop_agent "$signal"
done

# A container started by an agent killed before it recorded the container's
# id (found by the kill -9 storm, test_storm.sh): the next agent adopts that
# instance and starts no second one. The store is made as such an agent
# leaves it: the pod's container without its id, waiting to be created.
write_ds once.yaml once "$loop"
start_own_agent
wait_for "once runs" 30 pod_json_running once
once_pid=$(pid_of once)
container_id() { pods_json | jq -r '.items[] | select(.metadata.ownerReferences[0].name == "once") | .status.containerStatuses[0].containerID // ""'; }
once_id=$(container_id)
stop_agent KILL
sqlite3 "$state/daemonlet.db" "UPDATE pods SET containers_json = json_set(containers_json, '\$[0].runtimeId', '',
    '\$[0].state', 'Waiting', '\$[0].reason', 'ContainerCreating') WHERE daemonset = 'once'"
[[ -z $(container_id) ]] && ok || fail "the store still names once's container"
readies=$(ready_count)
start_own_agent
wait_for "the unrecorded instance of once's container is adopted" 30 bash -c "[[ \$('$dl' get pods -A -o json --config '$cfg' | jq -r '.items[] | select(.metadata.ownerReferences[0].name == \"once\") | .status.containerStatuses[0].containerID') == '$once_id' ]]"
wait_ready "$readies"
[[ $(pgrep -fc "^/bin/sh -c .* it-marker-$$-once\$") == 1 && $(pid_of once) == "$once_pid" ]] && ok ||
    fail "once runs $(pgrep -fc "^/bin/sh -c .* it-marker-$$-once\$") processes (pid $once_pid before)"
[[ $(container_id) == "$once_id" ]] && ok || fail "once's container was started again ($once_id -> $(container_id))"
rm -f "$man/once.yaml"
wait_for "once's pod stops" 30 no_pod_json once
stop_agent TERM

# Removed while the agent runs, for comparison: the same answer at once.
start_own_agent
wait_for "keep runs again" 30 pod_json_running keep
rm -f "$man/keep.yaml"
wait_for "a removal seen while running stops the pod" 30 no_pod_json keep
wait_for "...and get ds no longer lists it" 30 ds_not_listed keep
stop_agent TERM
ds_not_listed keep >/dev/null && ok || fail "get ds lists keep after a stop"

finish
