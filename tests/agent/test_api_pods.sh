#!/usr/bin/env bash
# The board's DaemonSet pods as Pods of the API (issue 14 §2,
# apiServer.podStatus): the real agent against the test API server, the Pods
# checked with the real kubectl. Rules pinned:
#   1. daemon_controller.go syncNodes / util.CreatePodTemplate /
#      controller_utils.go GetPodFromTemplate: one Pod per DaemonSet, named
#      from generateName "<ds>-", labels the template's with
#      controller-revision-hash (the ControllerRevision's, never guessed: no
#      Pod before the revision exists) and pod-template-generation, a
#      controller ownerReference, the daemon tolerations, the node affinity
#      of ReplaceDaemonSetPodNodeNameNodeAffinity, bound to the board;
#   2. status_manager.go / PatchPodStatus: Running, the four conditions
#      Ready, container statuses with restartCount and lastState after a
#      crash; PATCH of pods/NAME/status with the uid precondition;
#   3. the controller's Pod for the board (bound to it, of the revision the
#      board runs) is taken, not doubled; a restarted agent takes its Pods:
#      no second Pod, no new creation;
#   4. the DaemonSet gone, its Pod gets its terminal status, then is deleted;
#   5. (issue 14 §3/§4, the node's Pods watched with fieldSelector
#      spec.nodeName, config/apiserver.go) a Pod of a DaemonSet that is gone,
#      made with kubectl before the agent started, is finished and deleted;
#      `kubectl delete pod` (graceful: deletionTimestamp, then the kubelet's
#      confirming DELETE with grace 0 and the uid precondition,
#      status_manager.go canBeDeleted/deletePod) restarts the board's pod:
#      a new board pod, one Pod of the DaemonSet, the old one gone; a Pod the
#      controller made for a DaemonSet the board's labels do not run is
#      refused (phase Failed, NodeAffinity: predicate.go Admit, rejectPod);
#      a bare Pod bound to the board (kubectl create) is refused the same
#      way, reason NotDaemonSetPod, and never run (a deliberate departure:
#      the kubelet admits any pod, a board runs only DaemonSet pods and its
#      static pods; issue 14 §1).
#   6. Pod Events as the kubelet records them, read with kubectl get events:
#      startContainer's Created and Started, doBackOff's BackOff (format.Pod
#      in its message), killContainer's Killing, involvedObject the Pod with
#      fieldPath spec.containers{main}; prober.go's Unhealthy, once for a
#      probe that keeps failing alike; those of a pod that ran before its
#      Pod existed are sent once it does.
#   7. (issue 14 §3, mirror_client.go CreateMirrorPod / DeleteMirrorPod,
#      kubelet.go syncPod) a static pod and a manifest file's DaemonSet pod
#      each have a mirror Pod: their name, kubernetes.io/config.mirror the
#      config hash, owned by the Node (its uid), Running; kept across an
#      agent restart; `kubectl delete pod` of it makes a new one without
#      restarting the pod; the manifest file removed, it is deleted; removed
#      while the agent was down, its orphan is deleted at the restart
#      (HandlePodCleanups deleteOrphanedMirrorPods).
#   8. (kuberuntime_container.go killContainer; a departure from labels.go
#      podDeletionGracePeriodLabel, set only at a container's creation) a Pod deleted with its own grace stops
#      within it, also resumed by an agent restarted (after a kill -9) with
#      the API server down: the grace is kept with the pod's record.
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
source "$(dirname "${BASH_SOURCE[0]}")/cluster_lib.sh"
require_kubectl

start_notify_listener
start_fake
write_config "{board: \"true\"}" "[]"
api_server_config "registerNode: true"
# The Pods as kubectl lists them in namespace it.
api_pods() { k get pods -n it -o json; }
pod_of() { api_pods | jq -ce --arg d "$1" '[.items[] | select(.metadata.ownerReferences[0].name == $d)] | if length == 1 then .[0] else error("not one") end'; }
running_ready() {
    pod_of "$1" | jq -e '.status.phase == "Running" and any(.status.conditions[]; .type == "Ready" and .status == "True")'
}
pod_writes() { stats | jq -r ".podWrites[\"$1\"] // 0"; }
export -f k api_pods pod_of running_ready pod_writes

put_ds web 'exec sleep 600' '{}' '{"annotations": {"deprecated.daemonset.template.generation": "3"}}'
# flaky crashes twice: the first restart is at once, the second after the
# crash-loop back-off (doBackOff: a BackOff Event).
put_ds flaky "[ -f $work/crashed2 ] || { [ -f $work/crashed ] && touch $work/crashed2 || touch $work/crashed; exit 3; }; exec sleep 600"
# made is not ready until $work/made-ready exists: prober.go's Unhealthy.
put_ds made 'exec sleep 600' "$(jq -nc --arg m "it-marker-$$-made" --arg f "$work/made-ready" '{containers: [{name: "main", image: "none",
    command: ["/bin/sh", "-c", "exec sleep 600", $m],
    readinessProbe: {exec: {command: ["/bin/sh", "-c", ("test -f " + $f + " || { echo not ready yet; exit 1; }")]}, periodSeconds: 1}}]}')"
# The controller's Pod for the board, made before the agent saw the revision
# (syncNodes with the scheduler's binding): Pending, no status of its own.
ctl PUT pods/it/made-x7k2p "$(jq -c '{metadata: {labels: (.spec.template.metadata.labels + {"controller-revision-hash": "6c5d8b7f94"}),
    ownerReferences: [{apiVersion: "apps/v1", kind: "DaemonSet", name: "made", uid: .metadata.uid, controller: true, blockOwnerDeletion: true}]},
    spec: (.spec.template.spec + {nodeName: "it-node"}), status: {phase: "Pending"}}' "$work/ds/made.json")" >/dev/null
# A Pod of a DaemonSet removed while the agent was down, made with the real kubectl.
jq -nc '{apiVersion: "v1", kind: "Pod", metadata: {name: "gone-b7x4k", namespace: "it", labels: {app: "gone"},
    ownerReferences: [{apiVersion: "apps/v1", kind: "DaemonSet", name: "gone", uid: "uid-gone", controller: true}]},
    spec: {nodeName: "it-node", containers: [{name: "main", image: "none"}]}}' >"$work/stale.json"
k create --validate=false -f "$work/stale.json" >/dev/null && ok || fail "kubectl create of the stale Pod failed"
# A manifest file's DaemonSet and a static pod: the board's alone, shown
# by mirror Pods, which get no Pod Events.
write_ds local.yaml local 'exec sleep 600'
for st in st st2; do
    printf 'apiVersion: v1\nkind: Pod\nmetadata: {name: %s, namespace: it, labels: {app: st}}\nspec:\n  terminationGracePeriodSeconds: 2\n  containers: [{name: main, image: none, command: ["/bin/sh", "-c", "exec sleep 600"]}]\n' "$st" >"$man/$st.yaml"
done
start_own_agent
wait_for "the board runs web" 10 pod_running it web
stale_gone() { [[ $(api_pods | jq '[.items[] | select(.metadata.name == "gone-b7x4k")] | length') == 0 ]]; }
export -f stale_gone
wait_for "the stale Pod of the absent DaemonSet gone is deleted" 10 stale_gone
stats | jq -e '.deletedPods | any(.metadata.name == "gone-b7x4k" and .status.phase == "Failed" and .status.containerStatuses == null)' >/dev/null &&
    ok || fail "the stale Pod was not finished (phase Failed) before its deletion: $(stats | jq -c '[.deletedPods[] | {n: .metadata.name, s: .status}]')"
# No ControllerRevision yet: the board creates no Pod (the hash is never guessed).
not_mirrors='[.items[] | select(.metadata.annotations["kubernetes.io/config.mirror"] == null)]'
[[ $(api_pods | jq "$not_mirrors | length") == 1 ]] && ok || fail "a Pod before its ControllerRevision: $(api_pods | jq -c '[.items[].metadata.name]')"
put_revision web 7d4b9c6f58
put_revision flaky 5f8c7d9b46
put_revision made 6c5d8b7f94
wait_for "kubectl shows web's Pod Running and Ready" 10 running_ready web
wait_for "kubectl shows flaky's Pod Running and Ready" 10 running_ready flaky
made_unhealthy() {  # made_unhealthy MIN_COUNT
    k get events -n it -o json | jq -e --arg u "$(pod_of made | jq -r .metadata.uid)" --argjson n "$1" \
        '[.items[] | select(.involvedObject.uid == $u and .reason == "Unhealthy")] | length == 1 and (.[0] | .type == "Warning" and .involvedObject.fieldPath == "spec.containers{main}" and (.message | startswith("Readiness probe failed: not ready yet")) and .count >= $n and .lastTimestamp >= .firstTimestamp)' >/dev/null
}
# eventLogger: the failing probe's repeats count on one Event (a PATCH of
# its count), as kubectl describe shows "(x3 over 3s)".
wait_for "the controller's Pod, taken: one Unhealthy Event for its failing readiness probe, its repeats counted on it" 10 made_unhealthy 3
event_patched() { stats | jq -e '.eventPatches >= 1'; }
wait_for "...a repeat after the Event was made is a PATCH of its count" 10 event_patched
touch "$work/made-ready"
wait_for "the controller's Pod is taken: Running and Ready" 10 running_ready made
made_unhealthy 3 && ok || fail "the probe's repeated failures made more than one Unhealthy Event: $(k get events -n it -o json | jq -c '[.items[] | select(.reason == "Unhealthy") | {message, count}]')"
[[ $(pod_of made | jq -r .metadata.name) == made-x7k2p ]] && ok || fail "the controller's Pod was not taken: $(pod_of made | jq -c .metadata)"

p=$(pod_of web)
check() {  # check WHAT JQ_EXPR: web's Pod as kubectl printed it satisfies JQ_EXPR
    if [[ -n $p ]] && jq -e "$2" <<<"$p" >/dev/null; then ok; else
        fail "$1: $(jq -c "$2" <<<"$p" 2>&1); the Pod: $p"
    fi
}
check "GetPodFromTemplate: generateName <ds>-" '.metadata.generateName == "web-" and (.metadata.name | test("^web-[a-z0-9]{5}$"))'
check "CreatePodTemplate: the template's labels, the revision's hash, the template generation" \
    '.metadata.labels == {"app": "web", "controller-revision-hash": "7d4b9c6f58", "pod-template-generation": "3"}'
check "NewControllerRef: the DaemonSet controls it" \
    '.metadata.ownerReferences == [{"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "web", "uid": "uid-web", "controller": true, "blockOwnerDeletion": true}]'
check "bound to the board" '.spec.nodeName == "it-node"'
check "ReplaceDaemonSetPodNodeNameNodeAffinity" \
    '.spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms == [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["it-node"]}]}]'
check "AddOrUpdateDaemonPodTolerations" \
    '[.spec.tolerations[] | .key + ":" + .effect] == ["node.kubernetes.io/not-ready:NoExecute", "node.kubernetes.io/unreachable:NoExecute", "node.kubernetes.io/disk-pressure:NoSchedule", "node.kubernetes.io/memory-pressure:NoSchedule", "node.kubernetes.io/pid-pressure:NoSchedule", "node.kubernetes.io/unschedulable:NoSchedule"]'
check "generateAPIPodStatus: the conditions in the kubelet's order" \
    '[.status.conditions[] | .type + "=" + .status] == ["PodReadyToStartContainers=True", "Initialized=True", "Ready=True", "ContainersReady=True", "PodScheduled=True"] and all(.status.conditions[]; .lastTransitionTime | test("^20"))'
check "container status: image, imageID (none: the exec runtime has no image), exec:// containerID, running, ready, started" \
    '.status.containerStatuses[0] | .name == "main" and .image == "none" and .imageID == "" and (.containerID | startswith("exec://")) and .ready and .started and .restartCount == 0 and (.state.running.startedAt | test("^20"))'
check "hostIP, startTime, qosClass" '(.status.hostIP | length > 0) and (.status.startTime | test("^20")) and .status.qosClass == "BestEffort"'
# PatchPodStatus: the uid precondition in the status patch.
patch=$(stats | jq -c .lastPodPatch)
jq -e '.metadata.uid | type == "string" and length > 0' <<<"$patch" >/dev/null && ok ||
    fail "the status patch has no uid precondition: $patch"

# 2. The crash: restartCount and the last termination, as kubectl reads them.
crashed() { pod_of flaky | jq -e '.status.containerStatuses[0] | .restartCount == 2 and .lastState.terminated.exitCode == 3 and .lastState.terminated.reason == "Error" and (.lastState.terminated.containerID | startswith("exec://")) and .lastState.terminated.containerID != .containerID and .ready'; }
export -f crashed
wait_for "flaky's Pod: restartCount 2, lastState terminated with exit code 3" 10 crashed
# kubectl's own table: NAME READY STATUS RESTARTS ... NODE.
wide=$(k get pods -n it -o wide 2>&1)
grep -Eq "^flaky-[a-z0-9]{5} +1/1 +Running +2 .* it-node " <<<"$wide" && grep -Eq "^web-[a-z0-9]{5} +1/1 +Running +0 .* it-node " <<<"$wide" &&
    ok || fail "kubectl get pods -o wide: $wide"

# 5. Pod Events (kubectl get events): on the Pod, with the container's fieldPath.
has_event() {  # has_event DS TYPE REASON MESSAGE: an Event of DS's Pod, as kubectl lists it
    local pod
    pod=$(pod_of "$1") || return 1
    k get events -n it -o json | jq -e --argjson p "$pod" --arg t "$2" --arg r "$3" --arg m "$4" \
        'any(.items[]; .involvedObject == {kind: "Pod", apiVersion: "v1", namespace: "it", name: $p.metadata.name, uid: $p.metadata.uid, fieldPath: "spec.containers{main}"} and .type == $t and .reason == $r and .message == ($m | gsub("<pod>"; $p.metadata.name + "_it(" + $p.metadata.uid + ")")))' >/dev/null
}
web_started() { has_event web Normal Created "Created container main" && has_event web Normal Started "Started container main"; }
flaky_backoff() { has_event flaky Warning BackOff "Back-off restarting failed container main in pod <pod>"; }
wait_for "web's Pod: Created and Started, recorded before its Pod existed" 10 web_started
wait_for "flaky's Pod: doBackOff's BackOff, format.Pod in the message" 10 flaky_backoff
n=$(k get events -n it -o json | jq --arg u "$(pod_of web | jq -r .metadata.uid)" '[.items[] | select(.involvedObject.uid == $u and .reason == "Started")] | length')
[[ $n == 1 ]] && ok || fail "web's Pod has $n Started Events, not 1"
wait_for "the board runs the manifest file's DaemonSet" 10 pod_running it local
# Mirror pods (mirror_client.go CreateMirrorPod): one per static pod and
# per manifest file's DaemonSet pod, of the pod's name, annotation
# kubernetes.io/config.mirror the config hash (the pod's uid), owned by the
# Node (its uid), its status the board's.
st_running() { pods_json | jq -e '.items[] | select(.metadata.name == "st-it-node") | .status.phase == "Running"' >/dev/null; }
export -f st_running
wait_for "the board runs the static pod" 10 st_running
node_uid=$(k get node it-node -o json | jq -r .metadata.uid)
mirror_ok() {  # mirror_ok NAME: the mirror Pod of the board's pod NAME, Running
    local uid
    uid=$(pods_json | jq -r --arg n "$1" '.items[] | select(.metadata.name == $n) | .metadata.uid')
    [[ -n $uid ]] && k get pod -n it "$1" -o json | jq -e --arg u "$uid" --arg nu "$node_uid" \
        '.metadata.annotations["kubernetes.io/config.mirror"] == $u and .metadata.ownerReferences == [{apiVersion: "v1", kind: "Node", name: "it-node", uid: $nu, controller: true}] and .spec.nodeName == "it-node" and .status.phase == "Running" and .status.reason == null and .status.containerStatuses[0].ready' >/dev/null
}
local_name=$(pods_json | jq -r '.items[] | select(.metadata.ownerReferences[0].name == "local") | .metadata.name')
export -f mirror_ok
export node_uid
wait_for "the static pod's mirror Pod: annotation, owner the Node, Running" 10 mirror_ok st-it-node
wait_for "the manifest file's DaemonSet pod's mirror Pod" 10 mirror_ok "$local_name"
wait_for "the second static pod's mirror Pod" 10 mirror_ok st2-it-node
n=$(k get events -n it -o json | jq '[.items[] | select(.involvedObject.name | startswith("local"))] | length')
[[ $n == 0 ]] && ok || fail "Events for the manifest file's pod, which has no Pod: $(k get events -n it -o json | jq -c '[.items[] | select(.involvedObject.name | startswith("local")) | .reason]')"

# 3. A restarted agent takes its Pods: the same two, none created.
# st2's manifest file is removed while the agent is down: its mirror Pod
# is an orphan the restarted agent deletes (deleteOrphanedMirrorPods).
uids=$(api_pods | jq -c '[.items[] | select(.metadata.name != "st2-it-node") | .metadata.uid] | sort')
creates=$(pod_writes create)
[[ $creates == 6 ]] && ok || fail "Pods created: $creates, not 6 (kubectl's stale one, web, flaky, the three mirror Pods; made's was taken)"
stop_agent TERM
rm "$man/st2.yaml"
before=$(ready_count)
start_own_agent
wait_ready "$before"
taken() { grep -c "(taken)" "$agent_log"; }
export -f taken
export agent_log
wait_for "the restarted agent takes its three Pods" 10 bash -c '[[ $(taken) == 3 ]]'
st2_gone() { [[ $(api_pods | jq '[.items[] | select(.metadata.name == "st2-it-node")] | length') == 0 ]]; }
export -f st2_gone
wait_for "the orphaned mirror Pod of st2 (its file removed while the agent was down) is deleted" 10 st2_gone
[[ $(api_pods | jq -c '[.items[].metadata.uid] | sort') == "$uids" ]] && ok || fail "the Pods changed across a restart: $(api_pods | jq -c '[.items[].metadata.name]')"
[[ $(pod_writes create) == 6 ]] && ok || fail "the restarted agent created Pods (its mirror Pods are kept, not made again): $(pod_writes create)"
"$dl" status --config "$cfg" | grep -q "^  Mirrors:    2 mirror pods (0 created, 1 deleted)$" && ok ||
    fail "daemonlet status's Mirrors line: $("$dl" status --config "$cfg" | grep Mirrors)"

"$dl" status -o json --config "$cfg" | jq -e '.apiServer.podStatus | .pods == 3 and .taken == 3 and .lastError == ""' >/dev/null && ok ||
    fail "daemonlet status does not count the Pods: $("$dl" status -o json --config "$cfg" | jq -c .apiServer.podStatus)"
"$dl" status --config "$cfg" | grep -q "^  Pods:       3 in the API (0 created, 3 taken" && ok ||
    fail "daemonlet status's Pods line: $("$dl" status --config "$cfg" | grep Pods)"

# 4. The DaemonSet gone: its Pod's terminal status, then the Pod deleted.
web_uid=$(pod_of web | jq -r .metadata.uid)
delete_ds web
gone() { [[ $(api_pods | jq '[.items[] | select(.metadata.ownerReferences[0].name == "web")] | length') == 0 ]]; }
export -f gone
wait_for "web's Pod is deleted once the DaemonSet is gone" 15 gone
last=$(stats | jq -c '.deletedPods[-1]')
jq -e '.metadata.ownerReferences[0].name == "web" and (.status.phase == "Failed" or .status.phase == "Succeeded") and (.status.containerStatuses[0].state | has("terminated")) and any(.status.conditions[]; .type == "Ready" and .status == "False")' <<<"$last" >/dev/null &&
    ok || fail "web's Pod was deleted without its terminal status: $last"
killing=$(k get events -n it -o json | jq -c --arg u "$web_uid" '[.items[] | select(.involvedObject.uid == $u and .reason == "Killing") | {type, message, fieldPath: .involvedObject.fieldPath}]')
[[ $killing == '[{"type":"Normal","message":"Stopping container main","fieldPath":"spec.containers{main}"}]' ]] && ok ||
    fail "killContainer's Killing Event on web's Pod: $killing"
options=$(stats | jq -c .lastPodDelete)
jq -e --arg u "$web_uid" '.preconditions.uid == $u and .gracePeriodSeconds == 0' <<<"$options" >/dev/null && ok ||
    fail "the Pod was deleted without the uid precondition: $options"
[[ $(api_pods | jq -c "$not_mirrors | [.[].metadata.ownerReferences[0].name] | sort") == '["flaky","made"]' ]] && ok || fail "the other Pods did not stay: $(api_pods | jq -c '[.items[].metadata.name]')"

# 5. kubectl delete pod (graceful, waiting for the deletion as kubectl does):
# the board's pod of made restarts and gets a new Pod.
board_uid() { pods_json | jq -r --arg d "$1" '[.items[] | select(.metadata.ownerReferences[0].name == $d)] | if length == 1 then .[0].metadata.uid else "" end'; }
old_board=$(board_uid made)
old_pod=$(pod_of made | jq -r .metadata.name)
old_pod_uid=$(pod_of made | jq -r .metadata.uid)
export old_board old_pod
graceful0=$(pod_writes graceful)
t0=$(date +%s%N)
k delete pod -n it "$old_pod" --timeout=15s >/dev/null 2>"$work/kdelete.err" && ok || fail "kubectl delete pod $old_pod: $(cat "$work/kdelete.err")"
echo "kubectl delete pod took $((($(date +%s%N) - t0) / 1000000)) ms"
[[ $(pod_writes graceful) -gt $graceful0 ]] && ok || fail "the Pod was not deleted gracefully (no deletionTimestamp)"
options=$(stats | jq -c .lastPodDelete)
jq -e --arg u "$old_pod_uid" '.preconditions.uid == $u and .gracePeriodSeconds == 0' <<<"$options" >/dev/null && ok ||
    fail "the deletion was not confirmed with grace 0 and the uid precondition: $options"
restarted() {  # restarted DS: a board pod other than $old_board, its one Pod other than $old_pod, Running and Ready
    local b
    b=$(board_uid "$1")
    [[ -n $b && $b != "$old_board" ]] && running_ready "$1" && [[ $(pod_of "$1" | jq -r .metadata.name) != "$old_pod" ]]
}
export -f restarted board_uid
wait_for "a new board pod of made, with a new Pod Running and Ready" 10 restarted made
[[ $(api_pods | jq --arg n "$old_pod" '[.items[] | select(.metadata.name == $n)] | length') == 0 ]] && ok ||
    fail "the old Pod $old_pod is still there"
"$dl" status -o json --config "$cfg" | jq -e '.apiServer.podStatus.restarted == 1' >/dev/null && ok ||
    fail "daemonlet status does not count the restart: $("$dl" status -o json --config "$cfg" | jq -c .apiServer.podStatus)"

# A forced delete (grace 0: the Pod removed outright, a DELETED event,
# HandlePodRemoves) restarts the board's pod too.
old_board=$(board_uid flaky)
old_pod=$(pod_of flaky | jq -r .metadata.name)
k delete pod -n it "$old_pod" --grace-period=0 --force >/dev/null 2>"$work/kdelete.err" && ok ||
    fail "kubectl delete pod --force $old_pod: $(cat "$work/kdelete.err")"
wait_for "a new board pod of flaky, with a new Pod Running and Ready" 10 restarted flaky
"$dl" status -o json --config "$cfg" | jq -e '.apiServer.podStatus.restarted == 2' >/dev/null && ok ||
    fail "daemonlet status does not count the second restart: $("$dl" status -o json --config "$cfg" | jq -c .apiServer.podStatus)"

# A Pod the controller made for a DaemonSet the board's labels do not run: refused.
put_ds away 'exec sleep 600' '{"nodeSelector": {"zone": "b"}}'
ctl PUT pods/it/away-q2w3e "$(jq -c '{metadata: {labels: .spec.template.metadata.labels,
    ownerReferences: [{apiVersion: "apps/v1", kind: "DaemonSet", name: "away", uid: .metadata.uid, controller: true}]},
    spec: (.spec.template.spec + {nodeName: "it-node"}), status: {phase: "Pending"}}' "$work/ds/away.json")" >/dev/null
refused() { k get pod -n it away-q2w3e -o json | jq -e '.status.phase == "Failed" and .status.reason == "NodeAffinity" and (.status.message | startswith("Pod was rejected: Predicate NodeAffinity failed"))'; }
export -f refused
wait_for "the Pod of away is refused: phase Failed, reason NodeAffinity" 10 refused
[[ $(api_pods | jq '[.items[] | select(.metadata.name == "away-q2w3e")] | length') == 1 ]] && ok ||
    fail "the refused Pod was deleted by the board (it is the controller's to delete)"
# A bare Pod bound to the board, made with the real kubectl: refused (issue
# 14 §1, rejectPod's phase Failed with a reason and message), never run.
jq -nc '{apiVersion: "v1", kind: "Pod", metadata: {name: "bare", namespace: "it"},
    spec: {nodeName: "it-node", containers: [{name: "main", image: "none", command: ["/bin/sh", "-c", "exec sleep 600"]}]}}' >"$work/bare.json"
k create --validate=false -f "$work/bare.json" >/dev/null && ok || fail "kubectl create of the bare Pod failed"
bare_refused() { k get pod -n it bare -o json | jq -e '.status.phase == "Failed" and .status.reason == "NotDaemonSetPod" and (.status.message | startswith("Pod was rejected: the node (daemonlet) runs only DaemonSet pods and its own static pods; this Pod has no controller"))'; }
export -f bare_refused
wait_for "the bare Pod is refused: phase Failed, reason NotDaemonSetPod" 10 bare_refused
[[ $(pods_json | jq '[.items[] | select(.metadata.name | startswith("bare"))] | length') == 0 ]] && ! grep -q "pod it/bare" "$agent_log" && ok ||
    fail "the board runs a pod for the bare Pod: $(pods_json | jq -c '[.items[].metadata.name]')"
"$dl" status --config "$cfg" | grep -q "^  Pods: .*, 2 restarts by a deletion, 2 refused)$" && ok ||
    fail "daemonlet status's Pods line: $("$dl" status --config "$cfg" | grep Pods)"

# kubectl delete pod of a mirror Pod (syncPod: DeleteMirrorPod, then
# CreateMirrorPod): a new mirror Pod, the static pod not restarted.
st_uid=$(pods_json | jq -r '.items[] | select(.metadata.name == "st-it-node") | .metadata.uid')
st_cid=$(pods_json | jq -r '.items[] | select(.metadata.name == "st-it-node") | .status.containerStatuses[0].containerID')
old_mirror=$(k get pod -n it st-it-node -o json | jq -r .metadata.uid)
# --wait=false: kubectl's wait for the deletion relists by name, and the
# mirror Pod made again under that name may come first (a new uid).
k delete pod -n it st-it-node --wait=false >/dev/null 2>"$work/kdelete.err" && ok || fail "kubectl delete pod st-it-node: $(cat "$work/kdelete.err")"
remade() { mirror_ok st-it-node && [[ $(k get pod -n it st-it-node -o json | jq -r .metadata.uid) != "$old_mirror" ]]; }
export -f remade
export old_mirror
wait_for "the mirror Pod is made again" 10 remade
options=$(stats | jq -c .lastPodDelete)
jq -e --arg u "$old_mirror" '.preconditions.uid == $u and .gracePeriodSeconds == 0' <<<"$options" >/dev/null && ok ||
    fail "DeleteMirrorPod: not deleted with grace 0 and the uid precondition: $options"
[[ $(pods_json | jq -r '.items[] | select(.metadata.name == "st-it-node") | .metadata.uid + " " + .status.containerStatuses[0].containerID') == "$st_uid $st_cid" ]] && ok ||
    fail "deleting the mirror Pod restarted the static pod: $(pods_json | jq -c '.items[] | select(.metadata.name == "st-it-node") | [.metadata.uid, .status.containerStatuses[0].containerID]')"
# The manifest file removed: the static pod stops, its mirror Pod is deleted.
rm "$man/st.yaml"
mirror_gone() { [[ $(api_pods | jq '[.items[] | select(.metadata.name == "st-it-node")] | length') == 0 ]]; }
export -f mirror_gone
wait_for "the mirror Pod is deleted with its static pod's manifest file" 10 mirror_gone
mirror_ok "$local_name" && ok || fail "the manifest DaemonSet's mirror Pod did not stay: $(api_pods | jq -c '[.items[].metadata.name]')"
# 8. (kuberuntime_container.go killContainer; a departure from labels.go
# podDeletionGracePeriodLabel, set only at a container's creation) a Pod deleted through the API with its own
# grace (kubectl delete --grace-period: deletionGracePeriodSeconds) stops
# within it, not the spec's, also after a kill -9 of the agent mid-stop and
# a restart with the API server unreachable: the grace is kept with the
# board pod's record. slow's container ignores SIGTERM and its preStop hook
# outlasts any grace; the hook runs before the stop signal, so the agent
# killed during it leaves the whole stop to the restarted one.
hook_mark=$work/slow-prestop
put_ds slow '' "$(jq -nc --arg m "it-marker-$$-slow" --arg h "it-marker-$$-slowhook" --arg f "$hook_mark" '{terminationGracePeriodSeconds: 60,
    containers: [{name: "main", image: "none", command: ["/bin/sh", "-c", "trap \"\" TERM; while :; do sleep 1; done", $m],
                  lifecycle: {preStop: {exec: {command: ["/bin/sh", "-c", ("echo >>" + $f + "; while :; do sleep 1; done"), $h]}}}}]}')"
put_revision slow 4d7f6b8c59
wait_for "kubectl shows slow's Pod Running and Ready" 10 running_ready slow
slow_pid=$(pid_of slow)
slow_id=$(pods_json | jq -r '.items[] | select(.metadata.ownerReferences[0].name == "slow") | .status.containerStatuses[0].containerID | ltrimstr("exec://")')
k delete pod -n it "$(pod_of slow | jq -r .metadata.name)" --grace-period=8 --wait=false >/dev/null 2>"$work/kdelete.err" && ok ||
    fail "kubectl delete pod --grace-period=8 of slow's Pod: $(cat "$work/kdelete.err")"
slow_stopping() {
    [[ -s $hook_mark ]] && pods_json | jq -e '.items[] | select(.metadata.ownerReferences[0].name == "slow") | .metadata.deletionGracePeriodSeconds == 8'
}
export -f slow_stopping
export hook_mark
wait_for "the agent stops slow's pod within the Pod's grace (8, in its record), its preStop hook running" 10 slow_stopping
stop_agent KILL
# The stop signal not sent yet (no stop_grace for the shim): the restarted agent's to send.
[[ -n $slow_pid && -n $slow_id && ! -e $state/containers/$slow_id/stop_grace ]] && kill -0 "$slow_pid" && ok ||
    fail "slow's container was signalled before the agent was killed (pid $slow_pid, id $slow_id): the row shows nothing"
stop_fake
t0=$SECONDS
start_own_agent
slow_gone() { ! kill -0 "$slow_pid"; }
export -f slow_gone
export slow_pid
wait_for "the restarted agent (the API server down) stops slow's container within the deletion grace (8 s), not the spec's (60 s)" 20 slow_gone
echo "slow's container went $((SECONDS - t0)) s after the restart"
finish
