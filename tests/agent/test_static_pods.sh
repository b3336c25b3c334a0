#!/usr/bin/env bash
# Static pods (issue 13 §5): v1 Pods in the manifest directory run as the
# kubelet's static pods, named <name>-<nodeName>, owned by the Node.
# restartPolicy Never: a container that exits 0 leaves the pod Succeeded,
# and it stays so; OnFailure: a failure restarts it, a success finishes it;
# Always: it runs; a finished pod's sidecar is stopped. A pod whose nodeSelector does not match is rejected
# (Failed, reason NodeAffinity), as is one whose host port another pod has
# (NodePorts), or one with a sysctl the kubelet does not allow (SysctlForbidden,
# its handler before the predicates). An edit replaces the pod (a new UID), a
# broken edit keeps the last good version, `delete pod` starts it again,
# removing the file stops it; a restart of the agent adopts the running pod
# without restarting it, and a file removed while the agent is down stops
# its pod at the next start, after its preStop hook, as a removal seen
# while running would. At a start every adopted static pod is admitted
# again, as the kubelet admits every pod at its start (HandlePodAdditions):
# with allowedUnsafeSysctls narrowed, a running pod whose sysctl it allowed
# is Failed (SysctlForbidden) and its process gone; with the node's labels
# changed, a running pod whose nodeSelector no longer matches is Failed
# (NodeAffinity), and one refused before whose selector matches now runs. Exec runtime; every
# oracle is `get pods -o json`, a process or a file.
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

start_notify_listener 30
write_config "{role: edge}" "[]"
echo "allowedUnsafeSysctls: ['kernel.msg*']" >>"$cfg"  # narrowed at the restart below
loop='trap \"exit 0\" TERM; while true; do sleep 0.2; done'

write_pod() {  # write_pod FILE NAME RESTART_POLICY SCRIPT [EXTRA_SPEC_YAML] [CONTAINER_EXTRA_YAML]
    cat >"$man/$1.tmp" <<EOF2
apiVersion: v1
kind: Pod
metadata: {name: $2, namespace: it}
spec:
  restartPolicy: $3
  terminationGracePeriodSeconds: 2
  ${5:-}
  containers:
    - name: main
      image: none
      command: ["/bin/sh", "-c", "$4", "it-marker-$$-$2"]
${6:-}
EOF2
    mv "$man/$1.tmp" "$man/$1"
}
pods_json() { "$dl" get pods -n it -o json --config "$cfg"; }
# pod NAME JQ [JQ_ARGS...]: the pod <NAME>-it-node satisfies JQ.
pod() {
    local n=$1 q=$2
    shift 2
    pods_json | jq -e --arg n "$n-it-node" "$@" ".items[] | select(.metadata.name == \$n) | $q"
}
uid_of() { pods_json | jq -r --arg n "$1-it-node" '.items[] | select(.metadata.name == $n) | .metadata.uid'; }
restarts() { pods_json | jq -r --arg n "$1-it-node" '.items[] | select(.metadata.name == $n) | .status.containerStatuses[0].restartCount'; }
# gone NAME: the list was read and has no such pod (a failed read is not "gone").
gone() {
    local j
    j=$(pods_json) || return 1
    ! jq -e --arg n "$1-it-node" '.items[] | select(.metadata.name == $n)' <<<"$j" >/dev/null
}

flaky_mark=$work/flaky.ran
write_pod never.yaml once Never 'echo static-once-says-hi; exit 0'
# A sidecar (an init container with restartPolicy Always) of a Never pod:
# once the app container has exited the pod is finished and the sidecar is
# stopped, not kept running nor restarted (computePodActions: KillPod).
write_pod sided.yaml sided Never "while [ ! -e $work/side.up ]; do sleep 0.1; done; exit 0" \
    "initContainers:
    - name: side
      image: none
      restartPolicy: Always
      command: [/bin/sh, -c, 'touch $work/side.up; trap \"exit 0\" TERM; while true; do sleep 0.2; done', it-marker-$$-side]"
write_pod onfailure.yaml flaky OnFailure "if [ -e $flaky_mark ]; then exit 0; fi; touch $flaky_mark; exit 3"
# Probed as any pod: ready once its readiness probe passes.
probe="      readinessProbe: {exec: {command: [test, -e, $work/web-ready]}, periodSeconds: 1}"
write_pod always.yaml web Always "$loop" "" "$probe"
write_pod picky.yaml picky Always "$loop" "nodeSelector: {role: core}"
write_pod sysctl.yaml sysctl Always "$loop" "nodeSelector: {role: core}
  securityContext: {sysctls: [{name: kernel.panic, value: '1'}]}"
# Two pods asking for the same host port: the first file's runs.
port="      ports: [{containerPort: 18080, hostPort: 18080}]"
write_pod port-a.yaml porta Always "$loop" "" "$port"
write_pod port-b.yaml portb Always "$loop" "" "$port"
# Admitted while the node's labels match (they change at the restart below).
write_pod edgy.yaml edgy Always "$loop" "nodeSelector: {role: edge}"
# Admitted through allowedUnsafeSysctls (the exec runtime sets no sysctl).
write_pod unsafe.yaml unsafe Always "$loop" "securityContext: {sysctls: [{name: kernel.msgmax, value: '65536'}]}"
# A preStop hook that leaves a file; the container says whether the hook ran
# before its stop signal.
write_pod prestop.yaml prestop Always \
    "trap 'if [ -e $work/prestop.ran ]; then echo hook-first; else echo signal-first; fi >$work/prestop.order; exit 0' TERM; while true; do sleep 0.2; done" \
    "" "      lifecycle: {preStop: {exec: {command: [/bin/sh, -c, 'touch $work/prestop.ran']}}}"
start_own_agent

wait_for "Always: web-it-node runs" 20 pod web '.status.phase == "Running"'
pod web '.status.containerStatuses[0].ready' >/dev/null && fail "ready before its readiness probe passed" || ok
touch "$work/web-ready"
wait_for "...and is ready once its readiness probe passes" 10 pod web '.status.containerStatuses[0].ready'
pod web '.metadata.ownerReferences == [{"apiVersion": "v1", "kind": "Node", "name": "it-node", "controller": true}]
    and .metadata.annotations["kubernetes.io/config.source"] == "file"
    and .metadata.annotations["kubernetes.io/config.hash"] == .metadata.uid
    and (.metadata.annotations["kubernetes.io/config.seen"] | test("^[0-9]{4}-"))' >/dev/null && ok ||
    fail "a static pod is not shown as its mirror pod (owner Node, config annotations)"
wait_for "Never: a container that exits 0 leaves the pod Succeeded" 20 pod once \
    '.status.phase == "Succeeded" and .status.containerStatuses[0].state.terminated.exitCode == 0'
"$dl" logs once-it-node -n it --config "$cfg" | grepq -x static-once-says-hi && ok || fail "logs of a static pod"
wait_for "Never with a sidecar: the app container exits 0, the pod is Succeeded and its sidecar stopped" 20 pod sided \
    '.status.phase == "Succeeded" and .status.initContainerStatuses[0].state.terminated != null'
pgrep -f "it-marker-$$-side" >/dev/null && fail "a finished pod's sidecar still runs" || ok
wait_for "OnFailure: it fails once, restarts, then succeeds" 20 pod flaky \
    '.status.phase == "Succeeded" and .status.containerStatuses[0].restartCount == 1'
wait_for "a nodeSelector that does not match: rejected as the kubelet's admission" 20 pod picky \
    '.status.phase == "Failed" and .status.reason == "NodeAffinity"
     and .status.message == "Pod was rejected: Predicate NodeAffinity failed"'
"$dl" get pods -n it --config "$cfg" | grep -qE '^it +picky-it-node +0/0 +NodeAffinity ' && ok ||
    fail "get pods does not show the rejection's reason"
pgrep -f "it-marker-$$-picky" >/dev/null && fail "a rejected pod runs" || ok
described=$("$dl" describe pod picky-it-node -n it --config "$cfg")
grepq -E '^Reason: +NodeAffinity$' <<<"$described" && grepq -E '^Controlled By: +Node/it-node$' <<<"$described" &&
    ok || fail "describe pod does not show the rejection and the Node as controller: $described"
wait_for "a node-wide sysctl: rejected as SysctlForbidden, before the predicates" 20 pod sysctl \
    '.status.phase == "Failed" and .status.reason == "SysctlForbidden"
     and .status.message == "forbidden sysctl: \"kernel.panic\" not allowlisted"'
wait_for "a host port already taken: rejected as NodePorts" 20 pod portb \
    '.status.phase == "Failed" and .status.reason == "NodePorts"'
pod porta '.status.phase == "Running"' >/dev/null && ok || fail "the first file's pod does not keep its host port"

# An edit replaces the pod: a new UID, the old process gone.
old_uid=$(uid_of web) old_pid=$(pid_of web)
write_pod always.yaml web Always "$loop" "hostname: edited" "$probe"
wait_for "an edit replaces the pod (a new UID, running)" 20 pod web \
    '.metadata.uid != $old and .status.phase == "Running"' --arg old "$old_uid"
wait_for "...the old pod's process is gone" 10 bash -c "! kill -0 $old_pid"
# The new pod of an edit starts once the old one has terminated, not
# beside it (pod_workers.go allowStaticPodStart): the old one takes a second
# to stop after its SIGTERM, and the order file says who ran when.
slow="echo start >>$work/slow.order; trap 'sleep 1; echo stop >>$work/slow.order; exit 0' TERM; while true; do sleep 0.2; done"
write_pod slow.yaml slow Always "$slow"
wait_for "slow runs" 20 pod slow '.status.phase == "Running"'
wait_for "slow's first start is written" 10 grep -q start "$work/slow.order"
write_pod slow.yaml slow Always "$slow" "hostname: edited"
wait_for "the edited slow started" 20 bash -c "[[ \$(grep -c start '$work/slow.order') == 2 ]]"
[[ $(tr '\n' ' ' <"$work/slow.order") == "start stop start " ]] && ok ||
    fail "the edited static pod started beside the old one: $(tr '\n' ' ' <"$work/slow.order")"
rm -f "$man/slow.yaml"

# postStart holds the containers after it (kubelet's SyncPod starts them one
# by one, startContainer returning after its postStart): the second
# container starts after the first one's hook has finished.
write_pod hooked.yaml hooked Always "$loop" "" \
    "      lifecycle: {postStart: {exec: {command: [/bin/sh, -c, 'sleep 1; touch $work/hook.done']}}}
    - name: second
      image: none
      command: [/bin/sh, -c, 'if [ -e $work/hook.done ]; then echo after; else echo before; fi >$work/hook.order; while true; do sleep 0.2; done']"
wait_for "hooked's second container started" 20 test -s "$work/hook.order"
[[ $(cat "$work/hook.order") == after ]] && ok || fail "the second container started during the first one's postStart"
rm -f "$man/hooked.yaml"

# A broken edit keeps the last good version in force.
uid=$(uid_of web) pid=$(pid_of web)
printf 'apiVersion: v1\nkind: Pod\nmetadata: {name: web, namespace: it}\nspec: {containers: [{name: main}]}\n' >"$man/always.yaml"
wait_for "a broken edit is reported, the last good version in force" 20 bash -c \
    "\"$dl\" status -o json --config \"$cfg\" | jq -e '.manifests.broken | any(.lastGoodInForce)'"
[[ $(uid_of web) == "$uid" && $(pid_of web) == "$pid" ]] && ok || fail "a broken edit replaced the pod"
write_pod always.yaml web Always "$loop" "hostname: edited" "$probe"  # fixed back to the version in force

# delete pod: it stops and starts again (the same UID, a new process).
"$dl" delete pod web-it-node -n it --timeout 20s --config "$cfg" >/dev/null && ok || fail "delete pod"
wait_for "a deleted static pod starts again" 20 pod web \
    '.metadata.uid == $u and .status.phase == "Running" and .status.containerStatuses[0].ready' --arg u "$uid"
[[ $(pid_of web) != "$pid" ]] && ok || fail "delete pod did not restart the container"

# A restart of the agent adopts the running pod without restarting it; the
# finished pods stay finished; a file removed meanwhile stops its pod (with
# its preStop hook); a pod no longer admissible is refused.
wait_for "allowedUnsafeSysctls admits a pod with that sysctl" 20 pod unsafe '.status.phase == "Running"'
wait_for "the preStop pod runs" 20 pod prestop '.status.phase == "Running"'
wait_for "a pod whose nodeSelector matches runs" 20 pod edgy '.status.phase == "Running"'
pid=$(pid_of web) unsafe_pid=$(pid_of unsafe) prestop_pid=$(pid_of prestop) edgy_pid=$(pid_of edgy)
[[ -n $unsafe_pid && -n $prestop_pid && -n $edgy_pid ]] && ok || fail "no process for unsafe, prestop or edgy"
kill -TERM "$agent"; wait "$agent"; agent=
rm -f "$man/never.yaml" "$man/prestop.yaml"
write_config "{role: core}" "[]"  # allowedUnsafeSysctls narrowed to none, the node's labels changed
start_own_agent
wait_for "after a restart, the file removed while down: its pod goes" 20 gone once
wait_for "after a restart with allowedUnsafeSysctls narrowed: the adopted pod is refused (SysctlForbidden)" 20 \
    pod unsafe '.status.phase == "Failed" and .status.reason == "SysctlForbidden"
        and .status.message == "forbidden sysctl: \"kernel.msgmax\" not allowlisted"'
wait_for "...and its process is gone" 30 bash -c "! kill -0 $unsafe_pid"
wait_for "...the node's labels changed: a running pod whose nodeSelector no longer matches is refused" 20 \
    pod edgy '.status.phase == "Failed" and .status.reason == "NodeAffinity"'
wait_for "...and its process is gone" 30 bash -c "! kill -0 $edgy_pid"
wait_for "...and a pod refused before (NodeAffinity) whose nodeSelector matches now runs" 20 \
    pod picky '.status.phase == "Running"'
wait_for "the file with a preStop hook removed while down: its pod goes" 20 gone prestop
wait_for "...and its process is gone" 30 bash -c "! kill -0 $prestop_pid"
[[ -e $work/prestop.ran && $(cat "$work/prestop.order" 2>/dev/null) == hook-first ]] && ok ||
    fail "the preStop hook of a pod whose file went while the agent was down did not run before its stop signal"
pod web '.status.phase == "Running"' >/dev/null && [[ $(pid_of web) == "$pid" ]] && ok ||
    fail "the running static pod was not adopted as it ran"
[[ $(restarts web) == 0 ]] && ok || fail "the adopted pod counts a restart"
pod flaky '.status.phase == "Succeeded" and .status.containerStatuses[0].restartCount == 1' >/dev/null && ok ||
    fail "a finished OnFailure pod did not stay Succeeded"

# Removing the file stops the pod.
rm -f "$man/always.yaml"
wait_for "a removed file's static pod goes" 20 gone web
wait_for "...its process too" 10 bash -c "! kill -0 $pid"
pod flaky '.status.phase == "Succeeded"' >/dev/null && ok || fail "the finished pod changed"
finish
