#!/usr/bin/env bash
# The operator commands end to end (issue 3, sections 6 and 7): delete pod
# with OnDelete, rollout history / undo / status, describe, -n / -A, and
# what works with the agent stopped. Real agent, real shims, real socket.
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

start_notify_listener

C=(--config "$cfg")
loop() { echo "V=$1; trap \\\"exit 0\\\" TERM; while true; do sleep 0.2; done"; }
# slow_loop V: takes a second to stop, so that a delete that did not wait shows.
slow_loop() { echo "V=$1; trap \\\"sleep 1; exit 0\\\" TERM; while true; do sleep 0.2; done"; }
# version NAME: the V=... marker of the running process of DaemonSet NAME.
version() { local p; p=$(pid_of "$1") && [[ -n $p ]] && tr '\0' ' ' <"/proc/$p/cmdline" | grep -o 'V=v[0-9]*' | cut -d= -f2; }
runs_version() { [[ $(version "$1") == "$2" ]] && pod_running it "$1"; }
# expect_out NAME PATTERN COMMAND...: a line of the command's stdout+stderr
# matches PATTERN (grep -E).
# expect_text NAME PATTERN COMMAND...: the whole output matches the Perl
# regular expression PATTERN (grep -Pz: \n is a newline; (?s) lets . match one).
expect_grep() {
    local flags=$1 what=$2 pat=$3
    shift 3
    local out
    out=$("$@" 2>&1)
    if grep "$flags" -- "$pat" <<<"$out"; then ok; else fail "$what: output does not match /$pat/:"$'\n'"$out"; fi
}
expect_out() { expect_grep -Eq "$@"; }
expect_text() { expect_grep -Pzq "$@"; }
# expect_status NAME WANT COMMAND...
expect_status() {
    local what=$1 want=$2
    shift 2
    "$@" >/dev/null 2>&1
    local got=$?
    [[ $got -eq $want ]] && ok || fail "$what: exit status $got, want $want"
}

write_config "{disktype: ssd}" "[{key: maint, effect: NoSchedule}]"
tolerate="tolerations: [{key: maint, operator: Exists}]"
write_ds ondelete.yaml od "$(slow_loop v1)" "$tolerate" "updateStrategy: {type: OnDelete}"
write_ds roll.yaml roll "$(loop v1)" "$tolerate"
# Not placed: the node's NoSchedule taint is not tolerated.
write_ds untolerated.yaml untol "$(loop v1)" "nodeSelector: {disktype: ssd}"
start_agent
wait_for "od runs v1" 10 runs_version od v1
wait_for "roll runs v1" 10 runs_version roll v1

# The control socket: 0600, in the state directory.
wait_for "the control socket exists" 5 test -S "$state/daemonlet.sock"
[[ $(stat -c %a "$state/daemonlet.sock") == 600 ]] && ok || fail "the socket's mode is $(stat -c %a "$state/daemonlet.sock")"

# A second agent on the same stateDir stops before touching anything.
timeout 10 "$dl" run --config "$cfg" >"$work/second.log" 2>&1
second=$?
[[ $second -ne 0 && $second -ne 124 ]] && grep -q 'another daemonlet is serving' "$work/second.log" && ok ||
    fail "a second agent: exit $second, $(cat "$work/second.log")"
test -S "$state/daemonlet.sock" && ok || fail "the second agent removed the first one's socket"
runs_version roll v1 >/dev/null && ok || fail "the second agent disturbed the pods"

# 1. OnDelete: the old pod keeps running until `delete pod`, then the new revision starts.
od_pid=$(pid_of od)
write_ds ondelete.yaml od "$(slow_loop v2)" "$tolerate" "updateStrategy: {type: OnDelete}"
wait_for "od's revision 2 is recorded" 10 bash -c "'$dl' rollout history ds/od -n it --config '$cfg' | grep -q '^2 '"
wait_for "the agent reconciled after the change" 5 grep -q 'DaemonSet it/od: revision 2' "$work/agent.log"
[[ $(pid_of od) == "$od_pid" && $(version od) == v1 ]] && ok || fail "OnDelete replaced the pod without a delete"
od_pod=$(get_pods | awk '$2 ~ /^od-/ {print $2}')
expect_out "rollout status is RollingUpdate only" \
    '^error: rollout status is only available for RollingUpdate strategy type$' "$dl" rollout status ds/od -n it "${C[@]}"
expect_out "delete pod prints kubectl's line" "^pod \"$od_pod\" deleted$" "$dl" delete pod "$od_pod" -n it "${C[@]}"
# --wait (the default) returned once the pod was gone: its process is gone already.
kill -0 "$od_pid" 2>/dev/null && fail "delete returned while the old process still runs" || ok
wait_for "od runs v2 after the delete" 10 runs_version od v2
expect_out "deleting a pod that is not there is kubectl's NotFound" \
    '^Error from server \(NotFound\): pods "nope" not found$' "$dl" delete pod nope -n it "${C[@]}"
expect_status "NotFound exits 1" 1 "$dl" delete pod nope -n it "${C[@]}"
expect_out "delete ds is refused: DaemonSets come from files" 'manifest files' "$dl" delete ds od -n it "${C[@]}"
od_pod=$(get_pods | awk '$2 ~ /^od-/ {print $2}')
expect_out "delete --wait=false returns at once" "^pod \"$od_pod\" deleted$" "$dl" delete pod "$od_pod" -n it --wait=false "${C[@]}"
wait_for "od is replaced after --wait=false" 10 bash -c "'$dl' get pods -n it --config '$cfg' | grep -E '^it +od-' | grep -v '$od_pod' | grep -q Running"

# 2. rollout status reports, then completes, with updates pushed while watching.
# minReadySeconds: 2 holds the rollout long enough to be seen waiting.
write_ds roll.yaml roll "$(loop v2)" "$tolerate" "minReadySeconds: 2"
# At once after the write: the agent reads the changed file before it
# answers, so the status is the new spec's (kubectl's observedGeneration).
expect_text "rollout status --watch waits for availability and finishes" \
    '^Waiting for daemon set "roll" rollout to finish: [^\n]*\n(.*\n)?daemon set "roll" successfully rolled out\n$' \
    "$dl" rollout status ds/roll -n it --timeout=20s "${C[@]}"
[[ $(version roll) == v2 ]] && ok || fail "rollout status finished before v2 ran"
expect_out "rollout status --watch=false prints once" '^daemon set "roll" successfully rolled out$' \
    "$dl" rollout status daemonset/roll -n it --watch=false "${C[@]}"

# 3. rollout history lists the revisions, and one revision's template.
expect_text "history lists revisions 1 and 2" '^daemonset.apps/roll \nREVISION  CHANGE-CAUSE\n1         <none>\n2         <none>\n' \
    "$dl" rollout history ds/roll -n it "${C[@]}"
expect_text "history --revision=1 shows its template" '(?s)with revision #1\nPod Template:\n.*V=v1' \
    "$dl" rollout history ds/roll -n it --revision=1 "${C[@]}"

# 4. undo: the previous template runs again, renumbered; errors are kubectl's.
expect_out "undo prints kubectl's line" '^daemonset.apps/roll rolled back$' "$dl" rollout undo ds/roll -n it "${C[@]}"
wait_for "undo restores v1" 15 runs_version roll v1
expect_text "the restored revision is renumbered 3" 'REVISION  CHANGE-CAUSE\n2         <none>\n3         <none>\n' \
    "$dl" rollout history ds/roll -n it "${C[@]}"
expect_out "undo to a missing revision" '^error: unable to find specified revision 9 in history$' \
    "$dl" rollout undo ds/roll -n it --to-revision=9 "${C[@]}"
expect_out "undo to the current revision is skipped" \
    '^daemonset.apps/roll skipped rollback \(current template already matches revision 3\)$' \
    "$dl" rollout undo ds/roll -n it --to-revision=3 "${C[@]}"
expect_out "undo of an unknown DaemonSet" '^Error from server \(NotFound\): daemonsets.apps "nope" not found$' \
    "$dl" rollout undo ds/nope -n it "${C[@]}"
expect_out "describe shows the rollback in force" 'Rolled back: +to template .* in force until .*roll.yaml changes' \
    "$dl" describe ds roll -n it "${C[@]}"

# 5. The undo survives a restart of the agent...
kill -TERM "$agent"
wait "$agent" 2>/dev/null
agent=
[[ ! -e $state/daemonlet.sock ]] && ok || fail "a clean stop left the socket behind"
# ...and with the agent stopped: delete and undo say so; get, describe, logs, history, status read the store.
expect_out "delete with the agent stopped" "^error: the agent is not running \\(no $state/daemonlet.sock\\)" \
    "$dl" delete pod x -n it "${C[@]}"
expect_out "undo with the agent stopped" "^error: the agent is not running \\(no $state/daemonlet.sock\\)" \
    "$dl" rollout undo ds/roll -n it "${C[@]}"
expect_out "get works with the agent stopped" '^it +roll-[a-z0-9]+ +1/1 +Running' "$dl" get pods -n it "${C[@]}"
expect_out "describe works with the agent stopped" '^Name: +roll$' "$dl" describe ds roll -n it "${C[@]}"
roll_pod=$(get_pods | awk '$2 ~ /^roll-/ {print $2}')
expect_status "logs works with the agent stopped" 0 "$dl" logs "$roll_pod" -n it "${C[@]}"
expect_out "history works with the agent stopped" '^3 ' "$dl" rollout history ds/roll -n it "${C[@]}"
# (the restored pod becomes available minReadySeconds after it started)
wait_for "status reads the store with the agent stopped" 10 bash -c \
    "'$dl' rollout status ds/roll -n it --config '$cfg' | grep -qx 'daemon set \"roll\" successfully rolled out'"
roll_pid=$(pid_of roll)
start_agent
wait_for "the restarted agent serves the socket" 10 test -S "$state/daemonlet.sock"
wait_for "the restarted agent adopted the pods" 10 grep -q 'adopted 2 running containers' "$work/agent.log"
[[ $(pid_of roll) == "$roll_pid" && $(version roll) == v1 ]] && ok || fail "the undo did not survive the restart"
# ...and a later edit of the file wins again.
write_ds roll.yaml roll "$(loop v4)" "$tolerate"
wait_for "the edited file's template runs" 15 runs_version roll v4
wait_for "the agent logged that the file wins" 5 grep -q 'the file.s template is in force again' "$work/agent.log"
expect_out "describe no longer shows a rollback" '^Source: ' "$dl" describe ds roll -n it "${C[@]}"
"$dl" describe ds roll -n it "${C[@]}" | grepq '^Rolled back:' && fail "the rollback outlived the file's edit" || ok

# 6. describe: the decision's reason (a taint not tolerated) and events.
expect_out "describe shows shouldRun false" '^  shouldRun: +false$' "$dl" describe ds untol -n it "${C[@]}"
expect_out "describe names the taint" 'taint \{maint:NoSchedule\} is not tolerated' "$dl" describe ds untol -n it "${C[@]}"
expect_out "describe shows the FailedPlacement event" 'Warning +FailedPlacement .*failed to place pod on "it-node"' \
    "$dl" describe ds untol -n it "${C[@]}"
expect_text "describe shows create, delete, rollback and rollout events" \
    '(?s)SuccessfulCreate.*SuccessfulDelete.*RollbackDone.*RollbackSuperseded.*RolloutComplete' \
    "$dl" describe ds roll -n it "${C[@]}"
expect_out "get ds: nothing desired where the taint is not tolerated" '^it +untol +0 +0 +0 +0 +0 +disktype=ssd ' \
    "$dl" get ds -n it "${C[@]}"
wait_for "get ds: roll desired, current, ready, up to date and available" 10 \
    bash -c "'$dl' get ds -n it --config '$cfg' | grep -E '^it +roll +1 +1 +1 +1 +1 '"
n=$(grep -c FailedPlacement < <("$dl" describe ds untol -n it "${C[@]}"))
[[ $n -eq 1 ]] && ok || fail "FailedPlacement recorded $n times, want once"

# 7. -n and -A.
cat >"$man/other.yaml" <<YAML
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: elsewhere, namespace: other}
spec:
  selector: {matchLabels: {app: elsewhere}}
  template:
    metadata: {labels: {app: elsewhere}}
    spec:
      tolerations: [{key: maint, operator: Exists}]
      terminationGracePeriodSeconds: 2
      containers: [{name: main, image: none, command: ["/bin/sh", "-c", "$(loop v1)", "it-marker-$$-elsewhere"]}]
YAML
wait_for "the other namespace's pod runs" 10 pod_running other elsewhere
"$dl" get pods -n it "${C[@]}" | grepq elsewhere && fail "-n it lists another namespace's pod" || ok
expect_out "get -A lists both namespaces" '^other +elsewhere-' "$dl" get pods -A "${C[@]}"
expect_out "get with the default namespace finds nothing" '^No resources found in default namespace.$' \
    "$dl" get pods "${C[@]}"
expect_out "describe -A covers every namespace" '^Namespace: +other$' "$dl" describe ds -A "${C[@]}"
expect_out "rollout history -n other" '^1 ' "$dl" rollout history ds/elsewhere -n other "${C[@]}"
expect_out "rollout history in the wrong namespace" 'NotFound' "$dl" rollout history ds/elsewhere -n it "${C[@]}"
expect_out "\$DAEMONLET_CONFIG is used without --config" '^other +elsewhere-' env DAEMONLET_CONFIG="$cfg" "$dl" get pods -A

# 8. A watcher killed mid-watch does not hurt the agent.
write_ds roll.yaml roll "$(loop v5)" "$tolerate" "minReadySeconds: 3"
wait_for "roll's revision 5 is recorded" 10 grep -q 'DaemonSet it/roll: revision 5 ' "$work/agent.log"
"$dl" rollout status ds/roll -n it "${C[@]}" >"$work/watch.out" 2>&1 &
watcher=$!
wait_for "the watcher got a first status" 5 grep -q 'Waiting for daemon set "roll"' "$work/watch.out"
kill -9 "$watcher" 2>/dev/null
wait "$watcher" 2>/dev/null
wait_for "the agent still answers after a client vanished" 15 runs_version roll v5
kill -0 "$agent" && ok || fail "the agent died"

# 9. Events of a crash loop (once per streak) and of a NoExecute eviction.
write_ds crash.yaml crash 'exit 3' "$tolerate"
wait_for "crash restarted with back-off twice" 15 bash -c "[[ \$(grep -c 'crash-.* container main exited with 3' '$work/agent.log') -ge 3 ]]"
expect_out "describe shows the BackOff event" 'Warning +BackOff +.* +kubelet +Back-off restarting failed container main in pod crash-' \
    "$dl" describe ds crash -n it "${C[@]}"
n=$(grep -c BackOff < <("$dl" describe ds crash -n it "${C[@]}"))
[[ $n -eq 1 ]] && ok || fail "BackOff recorded $n times for one crash loop, want once"
write_config "{disktype: ssd}" "[{key: maint, effect: NoSchedule}, {key: evict, effect: NoExecute}]"
kill -HUP "$agent"
wait_for "the NoExecute taint stops od" 10 no_pod it od
expect_out "describe shows the eviction" 'Warning +TaintManagerEviction .*Marking for deletion Pod it/od-.*taint \{evict:NoExecute\} is not tolerated' \
    "$dl" describe ds od -n it "${C[@]}"

finish
