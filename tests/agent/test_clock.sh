#!/usr/bin/env bash
# The clock (issue 15 §4): a board without a real-time clock boots at 1970
# and NTP steps its clock forward by decades, and sometimes back. The agent
# runs under libfaketime (its wall clock only: FAKETIME_DONT_FAKE_MONOTONIC,
# as NTP steps CLOCK_REALTIME alone), the offset read from a file the test
# rewrites. Checked through -o json, status and the test API server:
# - the pods keep running through the steps (same process, no restart), and
#   a crash-looping container's back-off is neither skipped nor stretched
#   (the restarts come a back-off apart, measured by this script's clock);
# - the times recorded before a step move with it (core/wall_clock.h):
#   creationTimestamp, startedAt, AGE, the queued Events, the Lease;
# - a time recorded before the clock was set, by an agent that did not see
#   it set, is unknown after: AGE "<unknown>", creationTimestamp null;
# - the API server's certificate, refused while the clock reads 1970, is
#   refused with the clock's reading in the error; accepted once it is set.
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
source "$(dirname "${BASH_SOURCE[0]}")/cluster_lib.sh"
libfaketime=
for f in /usr/lib/*/faketime/libfaketime.so.1 /usr/lib/faketime/libfaketime.so.1; do
    [[ -e $f ]] && libfaketime=$f && break
done
[[ -n $libfaketime ]] || {
    echo "libfaketime is missing (scripts/setup.sh installs the faketime package)"
    exit 1
}
[[ -z ${EMULATOR:-} ]] || { echo "SKIPPED: not under an emulator"; exit 0; }

start_notify_listener

# The agent's wall clock: real time + the offset in $work/faketime (seconds).
clock_at_1970() { echo "-$(($(date +%s) - 60))" >"$work/faketime.tmp" && mv "$work/faketime.tmp" "$work/faketime"; }
clock_set() { echo "+0" >"$work/faketime.tmp" && mv "$work/faketime.tmp" "$work/faketime"; }
# The agent and the CLI read the board's clock (the shims and pods too).
# Under ASan (the asan preset) libasan is then not first in the library
# list, which it checks unless told not to; libfaketime intercepts only the
# clock calls, which ASan leaves alone.
cat >"$work/daemonlet" <<EOF
#!/bin/sh
ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0 LD_PRELOAD=$libfaketime FAKETIME_TIMESTAMP_FILE=$work/faketime FAKETIME_NO_CACHE=1 FAKETIME_DONT_FAKE_MONOTONIC=1 \\
    exec "$dl" "\$@"
EOF
chmod +x "$work/daemonlet"
dl=$work/daemonlet

start_fake
write_kubeconfig "$work/kubeconfig" "$port"
write_config "{board: \"true\"}" "[]"
sed -i 's/^crashLoopBackoff:.*/crashLoopBackoff: {initial: 2s, max: 2s}/' "$cfg"
cat >>"$cfg" <<EOF
apiServer:
  kubeconfig: $work/kubeconfig
  requestTimeout: 3s
EOF
loop='trap \"exit 0\" TERM; while true; do sleep 0.2; done'
write_ds steady.yaml steady "$loop"
write_ds crash.yaml crash "exit 1"
put_ds cluster "trap 'exit 0' TERM; while true; do sleep 0.2; done"

now_s() { date +%s; }
pod_field() { pods_json | jq -r --arg n "$1" ".items[] | select(.metadata.ownerReferences[0].name == \$n) | $2"; }
epoch_of() { date -d "$1" +%s 2>/dev/null || echo 0; }
restarts() { pod_field crash '.status.containerStatuses[0].restartCount'; }
link_is() { [[ $(status_json | jq -r .apiServer.state) == "$1" ]]; }

# --- 1. Boot at 1970: the pods run, the API server's certificate is refused
# with the clock's reading in the error.
clock_at_1970
start_own_agent
wait_for "steady runs at 1970" 30 pod_running it steady
steady_pid=$(pid_of steady)
[[ $(pod_field steady .metadata.creationTimestamp) == 1970-* ]] && ok ||
    fail "the clock is not faked: steady created $(pod_field steady .metadata.creationTimestamp)"
steady_created_real=$(now_s)
wait_for "the certificate error says what the clock reads" 20 bash -c \
    "'$dl' status -o json --config '$cfg' | jq -e '.apiServer.lastError | test(\"not yet valid.*the system clock reads 1970-.*not set\")'"
status_json | jq -r .apiServer.lastError

# The crash loop's rhythm before the step: restarts a back-off (2 s) apart.
restart_times=()
note_restarts() {  # note_restarts UNTIL_COUNT: this script's time of each new restartCount
    local last r deadline=$((SECONDS + 20))
    last=$(restarts)
    while ((SECONDS < deadline)); do
        r=$(restarts)
        if [[ -n $r && $r != "$last" ]]; then
            restart_times+=("$(date +%s%N)")
            last=$r
            ((r >= $1)) && return 0
        fi
        sleep 0.05
    done
    return 1
}
wait_for "crash restarts at 1970" 20 bash -c "(( \$('$dl' get pods -A -o json --config '$cfg' | jq '[.items[] | select(.metadata.ownerReferences[0].name == \"crash\") | .status.containerStatuses[0].restartCount] | max // 0') >= 1 ))"
r0=$(restarts)
note_restarts $((r0 + 1)) && ok || fail "no restart of crash at 1970"

# --- 2. NTP steps the clock forward by decades.
clock_set
note_restarts $((r0 + 3)) && ok || fail "the crash loop stalled after the step (restartCount $(restarts))"
# Each gap a back-off (2 s) plus the container's short life, seen by polls
# of `get pods` (each can be late on a loaded machine, more so under ASan
# at ctest -j4): never skipped (under 0.7 s) nor stretched (over 10 s; a
# back-off on the stepped wall clock would be decades, or nothing).
for ((i = 1; i < ${#restart_times[@]}; i++)); do
    gap=$(((restart_times[i] - restart_times[i - 1]) / 1000000))
    echo "measured: crash-loop restart gap $i: $gap ms"
    ((gap >= 700 && gap <= 10000)) && ok || fail "restart gap $i is $gap ms, not a 2 s back-off"
done
wait_for "the agent says the clock stepped" 10 grep -q 'wall clock stepped by +5[0-9]y' "$agent_log"
[[ $(pid_of steady) == "$steady_pid" ]] && ok || fail "steady was restarted by the step"
[[ $(pod_field steady '.status.containerStatuses[0].restartCount') == 0 ]] && ok || fail "steady counts restarts"
# Re-based: steady's creation is when it happened, by this script's clock.
created=$(epoch_of "$(pod_field steady .metadata.creationTimestamp)")
((created >= steady_created_real - 30 && created <= steady_created_real + 2)) && ok ||
    fail "steady's creationTimestamp after the step: $(pod_field steady .metadata.creationTimestamp), created at $(date -ud @"$steady_created_real" +%FT%TZ)"
started=$(epoch_of "$(pod_field steady '.status.containerStatuses[0].state.running.startedAt')")
((started >= steady_created_real - 30 && started <= steady_created_real + 2)) && ok || fail "steady's startedAt after the step"
echo "after the step: $(get_pods | grep steady)"
get_pods | grepq -E '^it +steady-[a-z0-9]+ +1/1 +Running +0 +[0-9]+s$' && ok || fail "steady's AGE after the step: $(get_pods)"
"$dl" get ds -A --config "$cfg" | grepq -E '^it +steady .* [0-9]+s$' && ok || fail "steady's DaemonSet AGE: $(\"$dl\" get ds -A --config "$cfg")"
# The certificate is valid now: the link comes up; the Lease is renewed
# now; the Events queued at 1970 went with their time re-based.
wait_for "the link connects once the clock is set" 30 link_is connected
wait_for "the Lease is renewed at the set clock" 15 bash -c \
    "stats | jq -e '.leases[\"kube-node-lease/it-node\"].spec.renewTime | startswith(\"$(date -u +%Y)\")'"
wait_for "the cluster's DaemonSet's SuccessfulCreate was sent" 15 bash -c \
    "stats | jq -e '.events | any(.reason == \"SuccessfulCreate\" and .involvedObject.name == \"cluster\")'"
stats | jq -e --arg y "$(date -u +%Y)" '.events | all(.firstTimestamp | startswith($y))' >/dev/null && ok ||
    fail "an Event of 1970 reached the cluster: $(stats | jq -c '[.events[].firstTimestamp]')"

# --- 3. Back to 1970 (a step back): the running pod's times follow.
clock_at_1970
wait_for "the agent says the clock stepped back" 10 grep -q 'wall clock stepped by -5[0-9]y' "$agent_log"
[[ $(pid_of steady) == "$steady_pid" ]] && ok || fail "steady was restarted by the step back"
get_pods | grepq -E '^it +steady-[a-z0-9]+ +1/1 +Running +0 +[0-9]+s$' && ok || fail "steady's AGE after the step back: $(get_pods)"

# --- 4. An agent that dies at 1970 and starts after the step: what it
# recorded at 1970 is unknown, not 56 years old; the pod is adopted.
stop_agent KILL
clock_set
start_own_agent
wait_for "the agent after the step is READY" 30 bash -c "(( \$(grep -c READY=1 '$work/notify.log') >= 2 ))"
[[ $(pid_of steady) == "$steady_pid" ]] && ok || fail "steady was restarted by the agent's restart"
echo "an agent started after the step: $(get_pods | grep steady)"
get_pods | grepq -E '^it +steady-[a-z0-9]+ +1/1 +Running +0 +<unknown>$' && ok || fail "steady's AGE recorded at 1970: $(get_pods)"
[[ $(pods_json | jq -r '.items[] | select(.metadata.ownerReferences[0].name == "steady") | .metadata.creationTimestamp') == null ]] &&
    ok || fail "steady's creationTimestamp recorded at 1970 is not null"
# describe pod says so too (kubectl prints a zero time as <unknown>).
steady_name=$(pods_json | jq -r '.items[] | select(.metadata.ownerReferences[0].name == "steady") | .metadata.name')
steady_desc=$("$dl" describe pod "$steady_name" -n it --config "$cfg" 2>&1)
grep -qx 'Start Time: *<unknown>' <<<"$steady_desc" && ok || fail "describe pod's Start Time recorded at 1970: $steady_desc"

finish
