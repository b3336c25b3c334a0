#!/usr/bin/env bash
# runtime: {type: runc}: daemonlet-shim makes each container detached, as
# conmon and containerd's runc shim do (`runc create`, then `runc start`;
# the shim the container's subreaper and the holder of its stdio): no runc
# process stays per container, the pid the shim records is the container's
# init (its child), and the pod is Running only once that process exists.
# What the container does is reported as before: its log (the CRI format),
# its exit code, a graceful stop's SIGTERM, a start that runc refuses
# (StartError with runc's message), and an exit while the agent is down,
# once a new agent adopts it. An agent stopped while a start waits for a
# crash's leftover to be deleted makes no container after SIGTERM.
# Needs root, runc and busybox-static; skips without them.
set -uo pipefail
here=$(dirname "${BASH_SOURCE[0]}")
source "$here/lib.sh"
require_runc

runc_import_busybox
write_runc_config "$import"
# A short back-off: the exiting containers come back within seconds.
sed -i 's/^crashLoopBackoff: .*/crashLoopBackoff: {initial: 300ms, max: 2s}/' "$cfg"
write_image_ds() { # write_image_ds FILE NAME SCRIPT
    DS_IMAGE=busybox write_ds "$1" "$2" "$3" "" "" "          imagePullPolicy: Never"
}
# status_of NAME JQ_PATH: that field of the DaemonSet NAME's pod's first container status.
status_of() {
    "$dl" get pods -A -o json --config "$cfg" | jq -r --arg ds "$1" '.items[]
        | select(.metadata.name | startswith($ds + "-")) | .status.containerStatuses[0] | '"$2"
}
id_of() { status_of "$1" '.containerID // empty' | sed 's|^runc://||'; }
shim_field() { jq -r ".$2" "$state/runtime/containers/$1/state.json" 2>/dev/null; }
ppid_of() { ps -o ppid= -p "$1" | tr -d ' '; }
# Any runc process that makes, starts or runs container ID (runc exec, the
# exec probes' way in, is not one).
runc_of() { ps -eo args= | grep -E "^[^ ]*runc .* (run|create|start) .*$1" | grep -v grep; }

# 1. A container that traps SIGTERM, as a graceful stop needs of a PID 1.
write_image_ds sleeper.yaml sleeper "trap 'echo terminated; exit 0' TERM; echo hello; while :; do sleep 1 & wait \$!; done"
start_agent
first_running() { [[ -n $(status_of sleeper '.state.running.startedAt // empty') && -n $(id_of sleeper) ]]; }
wait_for "sleeper is reported running" 20 first_running
id=$(id_of sleeper)
pid=$(shim_field "$id" pid)
# At the first report of Running, runc has made and started the container,
# and the pid recorded is its init, which exists.
[[ $(rc state "$id" 2>/dev/null | jq -r '"\(.status) \(.pid)"') == "running $pid" ]] && ok ||
    fail "Running was reported before the container ran: runc says $(rc state "$id" 2>&1), the shim recorded $pid"
kill -0 "$pid" 2>/dev/null && ok || fail "the recorded pid $pid is no process"
[[ $(readlink "/proc/$pid/ns/pid") != "$(readlink /proc/self/ns/pid)" ]] && ok ||
    fail "pid $pid is not in the container's PID namespace: not the container's init"
[[ $(ppid_of "$pid") == "$(shim_field "$id" shimPid)" ]] && ok ||
    fail "the container's init $pid is the child of $(ppid_of "$pid"), not of its shim $(shim_field "$id" shimPid)"
[[ -z $(runc_of "$id") ]] && ok || fail "a runc process stays for the container: $(runc_of "$id")"
log_has() { cat "$state"/runtime/logs/it_"$1"-*/main/*.log 2>/dev/null | grepq -E "$2"; }
wait_for "the container's stdout is in its CRI log" 10 log_has sleeper '^[0-9T:.-]+Z stdout F hello$'

# 2. An exit code, and the next start after it.
write_image_ds three.yaml three 'echo bye >&2; exit 3'
three_exited() { [[ $(status_of three '.lastState.terminated // .state.terminated | "\(.exitCode) \(.reason)"') == "3 Error" ]]; }
wait_for "three's exit code 3 is reported (Error)" 20 three_exited
wait_for "three's stderr is in its CRI log" 10 log_has three '^[0-9T:.-]+Z stderr F bye$'

# 3. A command runc cannot start: StartError with runc's reason, no runc left.
cat >"$man/.nope" <<EOF
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: nope, namespace: it}
spec:
  selector: {matchLabels: {app: nope}}
  template:
    metadata: {labels: {app: nope}}
    spec:
      containers: [{name: main, image: busybox, imagePullPolicy: Never, command: [/no/such/command]}]
EOF
mv "$man/.nope" "$man/nope.yaml"
nope_refused() {
    status_of nope '.lastState.terminated // .state.terminated | "\(.exitCode) \(.reason)"' |
        grepq -E '^128 StartError: runc create: .*/no/such/command'
}
wait_for "nope's start is refused with runc's reason" 20 nope_refused
[[ -z $(runc_of "$(id_of nope)") ]] && ok || fail "a runc process stays after a refused start"
rm -f "$man/nope.yaml" "$man/three.yaml"
both_gone() { no_pod it three && no_pod it nope; }
wait_for "three and nope go with their files" 20 both_gone

# 4. kill -9 of the agent: the container keeps running; its exit while no
# agent runs is recorded by its shim and reported by the next agent.
kill -9 "$agent"
wait "$agent" 2>/dev/null
agent=
kill -0 "$pid" 2>/dev/null && ok || fail "the container died with the agent"
kill -9 "$pid"
wait_for "the shim records the exit" 10 test -s "$state/runtime/containers/$id/exit.json"
[[ $(jq -r .exitCode "$state/runtime/containers/$id/exit.json") == 137 ]] && ok ||
    fail "exit.json: $(cat "$state/runtime/containers/$id/exit.json")"
start_agent
adopted_exit() { [[ $(status_of sleeper '.lastState.terminated | "\(.exitCode) \(.reason)"') == "137 Error" ]]; }
wait_for "the new agent reports the exit (137, Error) and restarts sleeper" 20 adopted_exit
wait_for "sleeper runs again" 20 pod_running it sleeper
new_id=$(id_of sleeper)
[[ -n $new_id && $new_id != "$id" && -z $(runc_of "$new_id") ]] && ok || fail "no new container, or a runc process stays"

# 5. A graceful stop: SIGTERM reaches the container's trap, exit 0.
new_log=$(ls -t "$state"/runtime/logs/it_sleeper-*/main/*.log | head -1)
rm -f "$man/sleeper.yaml"
wait_for "sleeper goes with its file" 20 no_pod it sleeper
grepq -E '^[0-9T:.-]+Z stdout F terminated$' "$new_log" && ok || fail "the stop's SIGTERM did not reach the trap: $(cat "$new_log")"
[[ -z $(rc list -q 2>/dev/null) ]] && ok || fail "runc still has containers: $(rc list 2>&1)"

# 6. A start held behind the `runc delete` of a crash's leftover bundle
# (here a runc whose delete of it waits for a gate) is canceled when the
# agent stops: no container is made after SIGTERM.
stop_agent TERM
leftover=0123456789abcdef0123456789abcdef
mkdir -p "$state/runtime/bundles/$leftover/rootfs"
cat >"$work/runc" <<EOF
#!/bin/sh
for a; do
    [ "\$a" = $leftover ] && while [ ! -e '$work/gate' ]; do sleep 0.05; done
    [ "\$a" = create ] && echo create >>'$work/creates'
done
exec $runc_bin "\$@"
EOF
chmod +x "$work/runc"
sed -i "s|^runtime: {type: runc, |runtime: {type: runc, runcPath: $work/runc, |" "$cfg"
write_image_ds held.yaml held 'sleep 1000'
start_agent
held_asked() { [[ -n $(status_of held '.name // empty') ]]; }
wait_for "held's pod is admitted, its start held" 20 held_asked
kill -TERM "$agent"
wait_for "the stopping agent closes its control socket" 10 test ! -e "$state/daemonlet.sock"
touch "$work/gate"
wait "$agent"
status=$?
agent=
[[ $status == 0 && ! -e $work/creates && -z $(rc list -q 2>/dev/null) ]] && ok ||
    fail "after SIGTERM: exit status $status, $(cat "$work/creates" 2>/dev/null) $(rc list -q 2>&1)"
[[ ! -e $state/runtime/bundles/$leftover ]] && ok || fail "the leftover bundle stays"

finish
