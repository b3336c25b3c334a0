#!/usr/bin/env bash
# runtime: {type: runc}: a container the kernel's OOM killer ends in its
# memory cgroup reports reason OOMKilled, as kubelet over containerd's CRI
# shows it (pkg/cri/server/events.go: TaskOOM sets the container's reason
# to "OOMKilled"; kuberuntime_container.go toKubeContainerStatus keeps the
# runtime's reason; lastState is kubelet's lastTerminationState). The
# crash-loop back-off restarts it as any failed container; a container
# killed with kill -9 from outside, with no OOM kill in its cgroup, still
# says Error; and an OOM kill while the agent is down is reported OOMKilled
# once a new agent adopts the exited container.
# Needs root, runc and busybox-static; skips without them. This machine is
# cgroup v1 (memory.oom_control); tests/systemd/vm_cgroup2_check.sh checks
# the same report on cgroup v2 (memory.events).
set -uo pipefail
here=$(dirname "${BASH_SOURCE[0]}")
source "$here/lib.sh"
require_runc

runc_import_busybox
data=$work/data
mkdir -p "$data"

# write_runc_config with a short back-off: the OOM-killed container comes
# back within seconds, again and again.
cat >"$cfg" <<EOF
nodeName: it-node
manifestDir: $man
stateDir: $state
metricsBindAddress: $metrics_bind
runtime: {type: runc, imageImportDir: $import}
fileCheckFrequency: 2s
crashLoopBackoff: {initial: 500ms, max: 2s}
EOF

# A 32 MiB limit. busybox tail keeps its last lines in memory, and
# /dev/zero has no newline: tail's one line grows until the OOM killer
# kills it inside the container's cgroup (memory.oom_control oom_kill 1),
# and the container's shell exits 137 (128 + SIGKILL) with it.
hog='/bin/busybox head -c 200m /dev/zero | /bin/busybox tail'
write_oom_ds() { # write_oom_ds FILE NAME SCRIPT
    DS_IMAGE=busybox write_ds "$1" "$2" "$3" "volumes: [{name: data, hostPath: {path: $data}}]" "" \
        "          volumeMounts: [{name: data, mountPath: /data}]
          resources: {limits: {memory: 32Mi}}
          imagePullPolicy: Never"
}
get_pods_json() { "$dl" get pods -A -o json --config "$cfg"; }
# status_of NAME JQ_PATH: that field of the DaemonSet NAME's pod's first container status.
status_of() {
    get_pods_json | jq -r --arg ds "$1" '.items[] | select(.metadata.name | startswith($ds + "-"))
        | .status.containerStatuses[0] | '"$2"
}
last_terminated() { # last_terminated NAME REASON: lastState.terminated is REASON, exit code 137
    [[ $(status_of "$1" '.lastState.terminated | "\(.reason) \(.exitCode)"') == "$2 137" ]]
}
restarted_at_least() { (($(status_of "$1" .restartCount) >= $2)); }

write_oom_ds oom.yaml oom "$hog"
write_oom_ds victim.yaml victim 'while :; do sleep 1; done'
start_agent

# 1. The container that allocates beyond its limit: OOMKilled, 137, and the
# crash-loop back-off restarts it (restartPolicy Always).
wait_for "oom's lastState.terminated says OOMKilled with exit code 137" 60 last_terminated oom OOMKilled
wait_for "oom is restarted again and again (restartCount 2)" 30 restarted_at_least oom 2
grepq -E "pod it/oom-[a-z0-9]+ container main exited with 137 \(OOMKilled\) after" "$work/agent.log" &&
    ok || fail "the agent's log does not say the container exited with 137 (OOMKilled)"
# Every exit reports the same: never Error for this container.
grepq -E "pod it/oom-[a-z0-9]+ container main exited with 137 \(Error\)" "$work/agent.log" &&
    fail "an OOM kill of oom was reported as Error" || ok

# 2. kill -9 from outside, no OOM kill in the cgroup: Error, not OOMKilled.
wait_for "victim runs" 20 pod_running it victim
victim_pid=$(pid_of victim)
[[ -n $victim_pid ]] && ok || fail "no process of victim found"
kill -9 "$victim_pid"
wait_for "victim's lastState.terminated says Error with exit code 137" 20 last_terminated victim Error
grepq -E "pod it/victim-[a-z0-9]+ container main exited with 137 \(Error\)" "$work/agent.log" &&
    ok || fail "the agent's log does not say victim exited with 137 (Error)"

# 3. The agent is down when the OOM kill happens: the shim records the exit
# (137, as runc run reported it), runc's stopped container and its cgroup
# stay until `runc delete`, and the new agent's adoption reads its
# counter: OOMKilled. What the store kept for oom stays.
write_oom_ds later.yaml later "while [ ! -e /data/go ]; do sleep 0.2; done; $hog"
wait_for "later runs, waiting for its signal" 20 pod_running it later
later_id=$(status_of later .containerID | sed 's|^runc://||')
[[ -n $later_id ]] && ok || fail "later has no containerID"
kill -9 "$agent"
wait "$agent" 2>/dev/null
agent=
touch "$data/go"
later_stopped() { rc state "$later_id" 2>/dev/null | grepq '"status": "stopped"'; }
wait_for "later's runc container stops (the OOM kill) and is kept while no agent runs" 30 later_stopped
later_ooms() { sed -n 's/^oom_kill //p' "/sys/fs/cgroup/memory/daemonlet/$later_id/memory.oom_control"; }
if [[ -d /sys/fs/cgroup/memory ]]; then
    (($(later_ooms) > 0)) && ok || fail "later's cgroup counts no OOM kill: $(later_ooms)"
fi
wait_for "the shim recorded later's exit" 10 test -s "$state/runtime/containers/$later_id/exit.json"
start_agent
wait_for "after the restart, later's lastState.terminated says OOMKilled" 30 last_terminated later OOMKilled
# (polled: a container adopted as exited is Terminated, without a lastState,
# until its restart a moment later)
wait_for "oom's lastState still says OOMKilled after the restart" 10 last_terminated oom OOMKilled
wait_for "the adopted exit's runc container and cgroup are deleted" 10 test ! -e "$runc_root/$later_id"
[[ ! -d /sys/fs/cgroup/memory/daemonlet/$later_id ]] && ok || fail "later's old cgroup is still there"

# 4. Nothing kept behind: the exited containers are deleted from runc (only
# running ones, at most three, are left).
no_stopped() { ! rc list 2>/dev/null | awk 'NR > 1 && $3 == "stopped" {found = 1} END {exit !found}'; }
rm -f "$man/oom.yaml" "$man/later.yaml"
wait_for "oom and later stop when their files go" 20 bash -c "! '$dl' get pods -A --config '$cfg' | grep -E '^it +(oom|later)-'"
wait_for "no stopped runc container is left" 10 no_stopped

finish
