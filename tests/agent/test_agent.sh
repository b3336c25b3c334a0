#!/usr/bin/env bash
# The agent end to end, as a board runs it: the real daemonlet and
# daemonlet-shim, a temporary configuration, manifest directory and state
# directory, driven through files, signals and the CLI. Every wait is a
# predicate polled until a deadline, never a fixed sleep.
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

start_notify_listener

loop='trap \"exit 0\" TERM; while true; do sleep 0.2; done'
# The agent now running (`daemonlet status` answers only then) has N pods, all running.
agent_has_running() { "$dl" status -o json --config "$cfg" | jq -e --argjson n "$1" '.pods.total == $n and .pods.running == $n'; }

write_config "{disktype: ssd}" "[]"
write_ds always.yaml always 'trap \"exit 0\" TERM; while true; do sleep 0.2; done'
# ssd-only has a preStop hook that leaves a file; its container says at its
# stop signal whether the hook ran before it.
write_ds ssd-only.yaml ssd-only \
    "trap 'if [ -e $work/ssd.prestop ]; then echo hook-first; else echo signal-first; fi >$work/ssd.order; exit 0' TERM; while true; do sleep 0.2; done" \
    "nodeSelector: {disktype: ssd}" "" \
    "          lifecycle: {preStop: {exec: {command: [/bin/sh, -c, 'touch $work/ssd.prestop']}}}"
start_own_agent

# 1. Start: both DaemonSets run; READY=1 reaches the notify socket.
wait_for "pod of always runs" 10 pod_running it always
wait_for "pod of ssd-only runs" 10 pod_running it ssd-only
wait_for "READY=1 sent to NOTIFY_SOCKET" 5 grep -q 'READY=1' "$work/notify.log"
wait_for "STATUS= sent" 5 grep -q 'STATUS=' "$work/notify.log"
always_pid=$(pid_of always)
[[ -n $always_pid ]] && ok || fail "no process for always"

# daemonlet logs prints the container's output without the CRI prefix.
write_ds talker.yaml talker 'while true; do echo hello-from-talker; sleep 0.1; done'
wait_for "talker runs" 10 pod_running it talker
talker=$(get_pods | awk '$2 ~ /^talker-/ {print $2}')
wait_for "daemonlet logs shows the output" 10 bash -c "'$dl' logs '$talker' -n it --config '$cfg' | grep -qx hello-from-talker"
rm -f "$man/talker.yaml"
wait_for "talker stops" 10 no_pod it talker

# 2. A label change (SIGHUP) stops the pod that no longer matches.
write_config "{disktype: hdd}" "[]"
kill -HUP "$agent"
wait_for "ssd-only stops when the label changes" 10 no_pod it ssd-only
# ...and a label change back starts it again.
write_config "{disktype: ssd}" "[]"
kill -HUP "$agent"
wait_for "ssd-only starts again" 10 pod_running it ssd-only

# 3. Taints: NoSchedule keeps running pods; NoExecute stops them.
write_config "{disktype: ssd}" "[{key: maint, effect: NoSchedule}]"
kill -HUP "$agent"
# The agent stored the tainted node: always is no longer desired here
# (shouldRun false), though it may continue running (daemon_controller's
# NodeShouldRunDaemonPod: NoSchedule is not NoExecute).
wait_for "the agent applied the NoSchedule taint" 30 bash -c "'$dl' get ds -A -o json --config '$cfg' | jq -e '.items | any(.metadata.name == \"always\" and .status.desiredNumberScheduled == 0)'"
# A barrier: a DaemonSet added after that is stored only after the
# reconcile the reload asked for has run.
write_ds barrier.yaml barrier "$loop" "nodeSelector: {barrier: none}"
wait_for "the barrier DaemonSet is stored" 30 bash -c "'$dl' get ds -A -o json --config '$cfg' | jq -e '.items | any(.metadata.name == \"barrier\")'"
pod_running it always >/dev/null && ok || fail "NoSchedule must not stop a running pod"
[[ $(pid_of always) == "$always_pid" ]] && ok || fail "NoSchedule restarted a running pod"
rm -f "$man/barrier.yaml"
write_config "{disktype: ssd}" "[{key: maint, effect: NoExecute}]"
kill -HUP "$agent"
wait_for "NoExecute stops always" 10 no_pod it always
write_config "{disktype: ssd}" "[]"
kill -HUP "$agent"
wait_for "always runs again without the taint" 10 pod_running it always
always_pid=$(pid_of always)

# 4. A malformed manifest is reported; everything else keeps running.
printf 'apiVersion: apps/v1\nkind: DaemonSet\nmetadata: {name: broken\n' >"$man/broken.yaml"
wait_for "the malformed file is reported with its name" 30 bash -c "'$dl' status -o json --config '$cfg' | jq -e --arg p '$man/broken.yaml' '.manifests.broken | any(.path == \$p and (.errors[0] | contains(\"broken.yaml: document 1: line\")))'"
[[ $(pid_of always) == "$always_pid" ]] && ok || fail "a malformed file restarted an unrelated pod"
rm -f "$man/broken.yaml"

# 5. kill -9 of the agent and a restart: the same processes, adopted.
kill -9 "$agent"
wait "$agent" 2>/dev/null
start_own_agent
# The new agent answers for both pods, running: adopted (the same process below).
wait_for "the new agent adopts the running pods" 30 agent_has_running 2
[[ $(pid_of always) == "$always_pid" ]] && ok || fail "kill -9 and restart changed the pod's process"

# 6. SIGTERM: the agent stops, the pods keep running.
kill -TERM "$agent"
wait "$agent" 2>/dev/null
agent=
wait_for "STOPPING=1 sent" 5 grep -q 'STOPPING=1' "$work/notify.log"
[[ $(pid_of always) == "$always_pid" ]] && ok || fail "SIGTERM of the agent stopped a pod"
start_own_agent
wait_for "adopted again after SIGTERM" 30 agent_has_running 2
[[ $(pid_of always) == "$always_pid" ]] && ok || fail "the restart after SIGTERM changed the pod's process"

# 7. Removing the file stops the pod: an adopted one (the restarts above)
# too, with the preStop hook of the revision it runs before its stop
# signal, as the kubelet kills with its pod's spec (killContainer), though
# the DaemonSet and its history are gone from the store by then.
ssd_pid=$(pid_of ssd-only)
rm -f "$work/ssd.prestop" "$work/ssd.order"  # those of its stops in 2. and 3.
rm -f "$man/ssd-only.yaml"
wait_for "removing the file stops its pod" 10 no_pod it ssd-only
wait_for "...and its process is gone" 10 bash -c "! kill -0 $ssd_pid"
[[ -e $work/ssd.prestop && $(cat "$work/ssd.order" 2>/dev/null) == hook-first ]] && ok ||
    fail "the adopted pod's preStop hook did not run before its stop signal ($(cat "$work/ssd.order" 2>&1))"

# 7b. A pod still in its preStop hook when the agent is killed -9, its
# DaemonSet's removal already seen (the DaemonSet and its history gone from
# the store): the next agent stops it with the hook (run again: delivery is
# at least once) and the pod's grace period (4 s, not the default 30), from
# what was kept with the pod when it started, as the kubelet restores them
# from the container's labels (kuberuntime labels.go,
# restoreSpecsFromContainerLabels). The hook's first run waits to be killed
# with its agent; the second leaves the mark the container looks for at its
# stop signal, which it then ignores (only SIGKILL at the grace ends it).
cat >"$work/slow-hook.sh" <<EOF
if [ -e $work/slow.hook1 ]; then touch $work/slow.prestop; exit 0; fi
touch $work/slow.hook1
i=0
while [ ! -e $work/slow.release ] && [ \$i -lt 200 ]; do sleep 0.05; i=\$((i + 1)); done
EOF
DS_GRACE=4 write_ds slow.yaml slow \
    "trap 'if [ -e $work/slow.prestop ]; then echo hook-first; else echo signal-first; fi >$work/slow.order' TERM; while true; do sleep 0.2; done" \
    "" "" "          lifecycle: {preStop: {exec: {command: [/bin/sh, $work/slow-hook.sh]}}}"
wait_for "slow runs" 10 pod_running it slow
slow_pid=$(pid_of slow)
rm -f "$man/slow.yaml"
wait_for "slow's preStop hook runs" 10 test -e "$work/slow.hook1"
kill -9 "$agent"
wait "$agent" 2>/dev/null
touch "$work/slow.release"
t0=$(date +%s%N)
start_own_agent
# Its 4 s, not 30 (the default) nor 2 (write_ds's): the stop begins after
# the start, and the container leaves only at the grace's SIGKILL.
wait_for "the next agent stops slow" 15 bash -c "! kill -0 $slow_pid"
slow_ms=$((($(date +%s%N) - t0) / 1000000))
[[ $(cat "$work/slow.order" 2>/dev/null) == hook-first ]] && ok ||
    fail "the pod whose DaemonSet is gone did not get its preStop hook before its stop signal ($(cat "$work/slow.order" 2>&1))"
((slow_ms >= 4000)) && ok || fail "slow stopped ${slow_ms} ms after the restart: not its 4 s grace"
wait_for "slow's pod is gone" 5 no_pod it slow

# 8. A template change rolls: without surge the old pod stops before the new starts.
write_ds always.yaml always 'trap \"exit 0\" TERM; while true; do sleep 0.3; done'
wait_for "the new revision runs" 15 bash -c "'$dl' get pods -A --config '$cfg' | grep -E '^it +always-.* Running' && p=\$(pgrep -f '^/bin/sh -c .* it-marker-$$-always\$' | head -1) && [[ -n \$p && \$p != '$always_pid' ]] && grep -q 'created for DaemonSet always revision 2' '$agent_log'"
stop_line=$(grep -n 'always-.* stopped' "$agent_log" | tail -1 | cut -d: -f1)
create_line=$(grep -n 'created for DaemonSet always revision 2' "$agent_log" | tail -1 | cut -d: -f1)
[[ -n $stop_line && -n $create_line && $stop_line -lt $create_line ]] && ok ||
    fail "non-surge rollout: old stopped at line ${stop_line:-?}, new created at ${create_line:-?}"

# 9. With maxSurge the new pod starts first and the old one stops after.
write_ds surge.yaml surge 'trap \"exit 0\" TERM; while true; do sleep 0.2; done' "" \
    "updateStrategy: {type: RollingUpdate, rollingUpdate: {maxSurge: 1, maxUnavailable: 0}}"
wait_for "surge pod runs" 10 pod_running it surge
write_ds surge.yaml surge 'trap \"exit 0\" TERM; while true; do sleep 0.25; done' "" \
    "updateStrategy: {type: RollingUpdate, rollingUpdate: {maxSurge: 1, maxUnavailable: 0}}"
wait_for "surge rollout finishes" 15 bash -c "grep -q 'created for DaemonSet surge revision 2' '$agent_log' && grep -q 'surge-.* stopped' '$agent_log'"
create_line=$(grep -n 'created for DaemonSet surge revision 2' "$agent_log" | tail -1 | cut -d: -f1)
stop_line=$(grep -n 'surge-.* stopping' "$agent_log" | tail -1 | cut -d: -f1)
[[ -n $stop_line && -n $create_line && $create_line -lt $stop_line ]] && ok ||
    fail "surge rollout: new created at line ${create_line:-?}, old stopping at ${stop_line:-?}"

# 10. A crashing container restarts with growing delays.
write_ds crash.yaml crash 'exit 3'
wait_for "crash restarts at least 3 times" 15 bash -c "[[ \$(grep -c 'crash-.* container main exited with 3' '$agent_log') -ge 4 ]]"
delays=$(grep -o 'crash-.* restarting in [0-9.]* s' "$agent_log" | grep -o '[0-9.]* s$' | tr -d ' s' | head -4 | tr '\n' ' ')
read -r d1 d2 d3 d4 <<<"$delays"
awk -v a="$d2" -v b="$d3" -v c="$d4" 'BEGIN { exit !(a < b && b < c) }' && ok ||
    fail "crash-loop delays do not grow: $delays"
rm -f "$man/crash.yaml"

# 11. A corrupt database is moved aside and rebuilt; the pods run on.
always_pid=$(pid_of always)
kill -TERM "$agent"
wait "$agent" 2>/dev/null
head -c 8192 /dev/urandom >"$state/daemonlet.db"
rm -f "$state/daemonlet.db-wal" "$state/daemonlet.db-shm"
start_own_agent
wait_for "the corrupt database is reported and moved aside" 10 grep -q 'moved aside' "$agent_log"
ls "$state"/daemonlet.db.corrupt-* >/dev/null 2>&1 && ok || fail "the corrupt database was not kept for inspection"
wait_for "always runs after the rebuild" 15 pod_running it always
# ...as the same process: the pod was rebuilt from its container's labels
# and adopted, not restarted.
[[ $(pid_of always) == "$always_pid" ]] && ok || fail "the rebuild restarted always's container"
grep -q 'rebuilt from its running containers' "$agent_log" && ok || fail "the rebuild of always's pod was not logged"

finish
