#!/usr/bin/env bash
# A fleet (issue 14 §5): three real agents, three boards, against the test
# API server with its DaemonSet and node lifecycle controllers
# (fake_apiserver --controllers, tests/apiserver/fake_controllers.h), the
# cluster side read with the real kubectl. Rules pinned:
#   1. each board registers its Node and runs the DaemonSet's pod for the
#      controller's Pod (daemon_controller.go syncNodes): kubectl counts 3
#      Ready Nodes and the DaemonSet 3 desired, 3 ready;
#   2. a template change with maxUnavailable 1 (update.go rollingUpdate)
#      replaces one board at a time: never more than one board without an
#      available Pod in the Pods' watch, and `kubectl rollout status`
#      succeeds with all three boards on the new revision; at the same
#      time another DaemonSet with maxSurge 1, maxUnavailable 0 (the surge
#      path) rolls with every board keeping a Ready Pod throughout, and a
#      third with maxUnavailable "34%" takes two boards down at once and no
#      more (util.UnavailableCount rounds the percentage of 3 up: 2),
#      and a fourth, OnDelete, keeps every board's pod of revision 1 once
#      the controllers have acted on the new template (syncDaemonSet runs
#      no rollingUpdate for it);
#   3. `kubectl delete pod` of one board's Pod restarts that board's pod
#      (a new Pod, Ready) and no other board's; for the OnDelete DaemonSet
#      the new Pod is of its revision 2, the other boards' stay on 1;
#   4. a template whose container exits 1: the rollout stops after one
#      board (its new Pod never available): once that Pod has failed and
#      the controllers have acted on it (their round's resourceVersion in
#      /_control/stats), the two others still run the Pods and containers
#      they had, and the DaemonSet's status counts 1 updated, 2 available;
#   5. the fallback (docs/cluster.md, "The board rolls alone"): the two
#      boards still on revision 2 hold web's rollout for the controller
#      (daemonSets.waitingForTheCluster). The API server goes away: board A,
#      running and connected, holds it while its link is still connected
#      (core Connectivity: connected until 15 s of failing), then rolls
#      alone once disconnected; board B, restarted while the server is
#      unreachable, holds it from its start until its new link is judged
#      (15 s without connecting), then rolls alone. Both at once, so that
#      the two 15 s waits overlap. A kubelet cut off changes nothing; a
#      board departs from it here on purpose.
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
source "$(dirname "${BASH_SOURCE[0]}")/cluster_lib.sh"
require_kubectl

boards=(board-1 board-2 board-3)
pids=()
watcher=
cleanup_fleet() {
    local p
    for p in "${pids[@]}" $watcher; do
        kill -9 "$p" 2>/dev/null
        wait "$p" 2>/dev/null
    done
    cleanup_cluster
}
trap cleanup_fleet EXIT

fake_extra=(--controllers)
start_fake
export -f k
# One config, state dir and log per board (the exec runtime).
for b in "${boards[@]}"; do
    write_config "{board: \"true\"}" "[]"
    api_server_config "registerNode: true" "podStatus: true"
    sed -i -e "s|^nodeName: .*|nodeName: $b|" -e "s|^stateDir: .*|stateDir: $work/state-$b|" \
        -e "s|^manifestDir: .*|manifestDir: $work/manifests-$b|" "$cfg"
    mkdir -p "$work/manifests-$b"
    mv "$cfg" "$work/config-$b.yaml"
done

# web: on every board (nodeSelector board=true), maxUnavailable 1, and
# minReadySeconds 2: a container that exits at once is Ready for a moment
# after each start, which without it counts as available (IsPodAvailable);
# 5 for the failing template of step 4 (see there).
put_web() {  # put_web SCRIPT [MIN_READY_SECONDS, 2 unless given]
    put_ds_body web "$(ds_json web "$1" '{"nodeSelector": {"board": "true"}}' |
        jq -c --argjson m "${2:-2}" '.spec.updateStrategy = {type: "RollingUpdate", rollingUpdate: {maxUnavailable: 1, maxSurge: 0}} |
               .spec.minReadySeconds = $m')"
}
put_web 'exec sleep 600'
put_surge() {  # put_surge SCRIPT
    put_ds_body surge "$(ds_json surge "$1" '{"nodeSelector": {"board": "true"}}' |
        jq -c '.spec.updateStrategy = {type: "RollingUpdate", rollingUpdate: {maxUnavailable: 0, maxSurge: 1}}')"
}
put_surge 'exec sleep 600'
put_pct() {  # put_pct SCRIPT
    put_ds_body pct "$(ds_json pct "$1" '{"nodeSelector": {"board": "true"}}' |
        jq -c '.spec.updateStrategy = {type: "RollingUpdate", rollingUpdate: {maxUnavailable: "34%", maxSurge: 0}}')"
}
put_pct 'exec sleep 600'
put_od() {  # put_od SCRIPT
    put_ds_body ondelete "$(ds_json ondelete "$1" '{"nodeSelector": {"board": "true"}}' | jq -c '.spec.updateStrategy = {type: "OnDelete"}')"
}
put_od 'exec sleep 600'
for b in "${boards[@]}"; do
    "$dl" run --config "$work/config-$b.yaml" >>"$work/agent-$b.log" 2>&1 &
    pids+=($!)
done

# kubectl's views.
ready_nodes() { k get nodes -o json | jq '[.items[] | select(any(.status.conditions[]?; .type == "Ready" and .status == "True"))] | length'; }
ds_status() { k get ds -n it web -o json | jq -c '.status'; }
# The hash of DaemonSet ${DS:-web}'s current revision (the highest).
current_hash() {
    k get controllerrevisions -n it -o json |
        jq -r --arg d "${DS:-web}" '[.items[] | select(.metadata.ownerReferences[0].name == $d)] | max_by(.revision) | .metadata.labels["controller-revision-hash"]'
}
# ${DS:-web}'s live Pods (not being deleted) per board: "board hash ready" lines, sorted.
pod_lines() {
    k get pods -n it -o json | jq -r --arg d "${DS:-web}" '.items[] | select(.metadata.deletionTimestamp == null and .metadata.ownerReferences[0].name == $d) |
        "\(.spec.nodeName) \(.metadata.labels["controller-revision-hash"]) \(any(.status.conditions[]?; .type == "Ready" and .status == "True"))"' | sort
}
# all_on HASH: each board has one live Pod of ${DS:-web}, of HASH, Ready.
all_on() { [[ $(pod_lines) == "$(printf '%s %s true\n' board-1 "$1" board-2 "$1" board-3 "$1")" ]]; }
# The board's own pod of ${DS:-web} (its uid and container id: a restart changes them).
board_ids() {
    "$dl" get pods -A -o json --config "$work/config-$1.yaml" | jq -r --arg d "${DS:-web}" '[.items[] | select(.metadata.ownerReferences[0].name == $d)] |
        if length == 1 then .[0] | .metadata.uid + " " + .status.containerStatuses[0].containerID else "none" end'
}
# Waits until the controllers have made a round from the Pods' list as it
# is now on (/_control/stats): what they would do about it is done.
controllers_acted() {
    local rv
    rv=$(k get pods -n it -o json | jq -r .metadata.resourceVersion)
    wait_for "the controllers have acted on the Pods at resourceVersion $rv" 5 bash -c \
        "[[ \$(stats | jq '.controllers.seenResourceVersion') -ge $rv ]]"
}
export -f ready_nodes ds_status current_hash pod_lines all_on board_ids

# 1. Three boards, three Ready Nodes, the DaemonSet counted on each.
wait_for "kubectl lists 3 Ready Nodes" 20 bash -c '[[ $(ready_nodes) == 3 ]]'
wait_for "the DaemonSet's controller revision" 5 bash -c '[[ -n $(current_hash) && $(current_hash) != null ]]'
rev1=$(current_hash)
wait_for "each board runs web's Pod of revision 1, Ready" 20 all_on "$rev1"
surge1=$(DS=surge current_hash)
wait_for "each board runs surge's Pod of revision 1, Ready" 5 env DS=surge bash -c "all_on $surge1"
pct1=$(DS=pct current_hash)
wait_for "each board runs pct's Pod of revision 1, Ready" 5 env DS=pct bash -c "all_on $pct1"
od1=$(DS=ondelete current_hash)
wait_for "each board runs ondelete's Pod of revision 1, Ready" 5 env DS=ondelete bash -c "all_on $od1"
wait_for "kubectl: the DaemonSet desires 3, 3 ready and available" 5 bash -c \
    'ds_status | jq -e ".desiredNumberScheduled == 3 and .currentNumberScheduled == 3 and .numberReady == 3 and .numberAvailable == 3 and .updatedNumberScheduled == 3" >/dev/null'
ok

# 2. A new template, maxUnavailable 1: one board at a time. The Pods'
# watch (kubectl get -w) samples every change; replayed below.
declare -A ids
declare -A od_ids
for b in "${boards[@]}"; do
    ids[$b]=$(board_ids "$b")
    od_ids[$b]=$(DS=ondelete board_ids "$b")
done
k get pods -n it -w -o json --output-watch-events --request-timeout 0 >"$work/watch.json" 2>"$work/watch.err" &
watcher=$!
wait_for "the Pods' watch has the 12 Pods" 5 bash -c "[[ \$(jq -s length '$work/watch.json' 2>/dev/null) -ge 12 ]]"
put_web 'exec sleep 601'
put_surge 'exec sleep 601'
put_pct 'exec sleep 601'
put_od 'exec sleep 601'
wait_for "a revision 2" 5 bash -c "[[ \$(current_hash) != '$rev1' ]]"
rev2=$(current_hash)
k rollout status ds/web -n it --timeout=30s >"$work/rollout.out" 2>&1 && ok ||
    fail "kubectl rollout status: $(cat "$work/rollout.out")"
all_on "$rev2" && ok || fail "not every board on revision 2: $(pod_lines)"
k rollout status ds/surge -n it --timeout=15s >"$work/rollout.out" 2>&1 && ok ||
    fail "kubectl rollout status ds/surge: $(cat "$work/rollout.out")"
surge2=$(DS=surge current_hash)
[[ $surge2 != "$surge1" ]] && DS=surge all_on "$surge2" && ok || fail "not every board on surge's revision 2: $(DS=surge pod_lines)"
wait_for "pct's revision 2" 5 env DS=pct bash -c "[[ \$(current_hash) != '$pct1' ]]"
pct2=$(DS=pct current_hash)
wait_for "each board runs pct's Pod of revision 2, Ready" 10 env DS=pct bash -c "[[ $pct2 != $pct1 ]] && all_on $pct2"
wait_for "ondelete's revision 2" 5 env DS=ondelete bash -c "[[ \$(current_hash) != '$od1' ]]"
od2=$(DS=ondelete current_hash)
controllers_acted
DS=ondelete all_on "$od1" && ok || fail "OnDelete: not every board on ondelete's revision 1: $(DS=ondelete pod_lines)"
for b in "${boards[@]}"; do
    [[ $(DS=ondelete board_ids "$b") == "${od_ids[$b]}" ]] || fail "OnDelete: $b's pod of ondelete changed"
done
kill "$watcher"
wait "$watcher" 2>/dev/null
watcher=
# The most boards without an available (Ready, not being deleted) Pod of
# DS at any point of the watch after its first 12 events (the Pods then).
most_unavailable() {  # most_unavailable DS
    jq -s --arg d "$1" '
    def down($pods): ["board-1", "board-2", "board-3"] - [$pods[] | select(.metadata.ownerReferences[0].name == $d and
        .metadata.deletionTimestamp == null and any(.status.conditions[]?; .type == "Ready" and .status == "True")) | .spec.nodeName] | length;
    (reduce .[0:12][] as $e ({}; .[$e.object.metadata.name] = $e.object)) as $start |
    reduce .[12:][] as $e ({pods: $start, max: 0};
        (if $e.type == "DELETED" then .pods |= del(.[$e.object.metadata.name]) else .pods[$e.object.metadata.name] = $e.object end) |
        .max = ([.max, down(.pods)] | max)) | .max' "$work/watch.json"
}
max_unavailable=$(most_unavailable web)
[[ $max_unavailable == 1 ]] && ok || fail "boards unavailable at once during the rollout: $max_unavailable (want 1)"
max_unavailable=$(most_unavailable surge)
[[ $max_unavailable == 0 ]] && ok || fail "boards without a Ready Pod of surge during its rollout: $max_unavailable (want 0)"
max_unavailable=$(most_unavailable pct)
[[ $max_unavailable == 2 ]] && ok || fail "boards unavailable at once during pct's rollout: $max_unavailable (want 2: 34% of 3 rounded up)"
for b in "${boards[@]}"; do
    [[ $(board_ids "$b") != "${ids[$b]}" ]] || fail "$b's pod was not replaced"
done
ok

# 3. kubectl delete pod of board-2's Pod: board-2's pod restarts, with a new
# Pod; the other boards' pods stay.
for b in "${boards[@]}"; do ids[$b]=$(board_ids "$b"); done
pod2=$(k get pods -n it -o json | jq -r '.items[] | select(.spec.nodeName == "board-2" and .metadata.ownerReferences[0].name == "web") | .metadata.name')
k delete pod -n it "$pod2" --timeout=15s >/dev/null 2>"$work/kdelete.err" && ok || fail "kubectl delete pod $pod2: $(cat "$work/kdelete.err")"
wait_for "board-2's pod restarted, its new Pod Ready" 15 bash -c "[[ \$(board_ids board-2) != '${ids[board-2]}' ]] && all_on '$rev2'"
[[ $(board_ids board-1) == "${ids[board-1]}" && $(board_ids board-3) == "${ids[board-3]}" ]] && ok ||
    fail "another board's pod restarted"
[[ -z $(k get pods -n it -o json | jq -r --arg n "$pod2" '.items[] | select(.metadata.name == $n) | .metadata.name') ]] && ok ||
    fail "the deleted Pod $pod2 is still there"
# OnDelete: the deleted Pod is replaced by one of revision 2 (manage), the
# other boards keep revision 1.
pod2=$(k get pods -n it -o json | jq -r '.items[] | select(.spec.nodeName == "board-2" and .metadata.ownerReferences[0].name == "ondelete") | .metadata.name')
k delete pod -n it "$pod2" --timeout=15s >/dev/null 2>"$work/kdelete.err" && ok || fail "kubectl delete pod $pod2: $(cat "$work/kdelete.err")"
wait_for "OnDelete: board-2 runs ondelete's revision 2, the others revision 1" 15 env DS=ondelete bash -c \
    "[[ \$(pod_lines) == \$(printf '%s %s true\n' board-1 $od1 board-2 $od2 board-3 $od1) ]]"
[[ $(DS=ondelete board_ids board-1) == "${od_ids[board-1]}" && $(DS=ondelete board_ids board-3) == "${od_ids[board-3]}" ]] && ok ||
    fail "OnDelete: another board's pod of ondelete restarted"

# The controller replaces an old Pod that is not available at once
# (rollingUpdate's allowedReplacementPods): board-2's fresh Pod first
# has to be available (minReadySeconds).
wait_for "kubectl: the DaemonSet has 3 available again" 10 bash -c \
    'ds_status | jq -e ".numberAvailable == 3" >/dev/null'

# 4. A failing template: one board crash-loops on it, the rollout stops
# there. Checked on facts, not in a time window: once the failing Pod has
# failed (restartCount >= 1 in the API: what the controller reads) and the
# controllers have made a round from that state on (their
# seenResourceVersion reaches the list's), anything they would delete is
# deleted; the two other boards still run the Pods and containers they had.
# minReadySeconds 5 from here: the failing Pod crash-loops (back-off 300 ms
# to 2 s) and is Ready for a moment after each start; the fake controller
# reads Ready's lastTransitionTime in whole seconds (fake_controllers.h
# available: + minReadySeconds <= time(nullptr)), so with 2 a Ready of just
# over 1 s could count as available and let the rollout move on. A Ready of
# over 4 s it never has. Only from this step: 5 throughout would make each
# earlier rollout step 3 s longer per board. An old Pod not available under
# 5 s yet is replaced at once but takes the one unavailable slot
# (rollingUpdate's allowedReplacementPods), so one board still.
for b in "${boards[@]}"; do ids[$b]=$(board_ids "$b"); done
put_web 'exit 1' 5
wait_for "a revision 3" 5 bash -c "[[ \$(current_hash) != '$rev2' ]]"
rev3=$(current_hash)
# One board's Pod of revision 3, Ready or not (it crash-loops: Ready for a
# moment after each start); two of revision 2, Ready. The lines it read are
# left in stopped_lines.
stopped() {
    stopped_lines=$(pod_lines)
    [[ $(grep -cE " $rev3 (true|false)\$" <<<"$stopped_lines") == 1 &&
        $(grep -c " $rev2 true\$" <<<"$stopped_lines") == 2 && $(wc -l <<<"$stopped_lines") == 3 ]]
}
# The Pods' list resourceVersion once revision 3's Pod has restarted.
failed_rv() {
    k get pods -n it -o json | jq -er --arg h "$rev3" 'select(any(.items[]; .metadata.labels["controller-revision-hash"] == $h and
        .metadata.deletionTimestamp == null and .status.containerStatuses[0].restartCount >= 1)) | .metadata.resourceVersion'
}
export -f stopped failed_rv
export rev2 rev3
wait_for "one board on the failing revision, two on the old one" 15 stopped
wait_for "the failing Pod has restarted, in the API" 15 failed_rv
controllers_acted
# The Pods as the controllers left them; the ids below are the oracle that
# nothing moved on.
stopped && ok || fail "the rollout went on past the failing board: ${stopped_lines//$'\n'/; }"
bad=$(pod_lines | awk -v h="$rev3" '$2 == h {print $1}' | head -1)
for b in "${boards[@]}"; do
    if [[ $b == "$bad" ]]; then
        [[ $(board_ids "$b") != "${ids[$b]}" ]] || fail "$b, on revision 3, still runs its old pod"
    else
        [[ $(board_ids "$b") == "${ids[$b]}" ]] || fail "$b's pod changed: $(board_ids "$b"), was ${ids[$b]}"
    fi
done
ok
ds_status | jq -e '.updatedNumberScheduled == 1 and .numberAvailable == 2 and .numberUnavailable == 1' >/dev/null && ok ||
    fail "the DaemonSet's status: $(ds_status)"
"$dl" get pods -A -o json --config "$work/config-$bad.yaml" |
    jq -e '[.items[] | select(.metadata.ownerReferences[0].name == "web")][0].status.containerStatuses[0].restartCount >= 1' >/dev/null && ok ||
    fail "$bad's failing pod is not restarting"

# 5. The API server goes away with web's rollout held on the two boards of
# revision 2 (the failing board took the one unavailable slot).
good=()
for b in "${boards[@]}"; do [[ $b == "$bad" ]] || good+=("$b"); done
a=${good[0]} b=${good[1]}
st() { "$dl" status -o json --config "$work/config-$1.yaml"; }
held() { st "$1" | jq -e '.daemonSets.waitingForTheCluster == ["it/web"]' >/dev/null; }
# The controller-revision-hash of the board's one pod of web.
board_hash() {
    "$dl" get pods -A -o json --config "$work/config-$1.yaml" |
        jq -er '[.items[] | select(.metadata.ownerReferences[0].name == "web")] | if length == 1 then .[0].metadata.labels["controller-revision-hash"] else error("not one") end'
}
# rolled_alone BOARD OLD_HASH: the board runs one pod of web, of another
# revision than OLD_HASH (the template it held), and holds nothing any more.
rolled_alone() {
    st "$1" | jq -e '.daemonSets.waitingForTheCluster == []' >/dev/null && [[ $(board_hash "$1") != "$2" ]]
}
export -f st held board_hash rolled_alone
held "$a" && held "$b" && ok || fail "web's rollout is not held on $a and $b: $(st "$a" | jq -c .daemonSets), $(st "$b" | jq -c .daemonSets)"
ids[$a]=$(board_ids "$a")
ids[$b]=$(board_ids "$b")
old_hash=$(board_hash "$a")
[[ $(board_hash "$b") == "$old_hash" ]] && ok || fail "$a and $b run different revisions: $old_hash, $(board_hash "$b")"
for i in "${!boards[@]}"; do [[ ${boards[$i]} == "$b" ]] && bi=$i; done
kill -TERM "${pids[$bi]}"
wait "${pids[$bi]}" 2>/dev/null
stop_fake
t0=$SECONDS
b_start=$(date -u +%s)
"$dl" run --config "$work/config-$b.yaml" >>"$work/agent-$b.2.log" 2>&1 &
pids[bi]=$!
# Not connected yet is no outage: B holds from its start, A while connected.
wait_for "$b, restarted with the server unreachable, holds web's rollout" 5 held "$b"
[[ $(board_ids "$b") == "${ids[$b]}" ]] && ok || fail "$b rolled at its start: ${ids[$b]} -> $(board_ids "$b")"
st "$a" | jq -e '.apiServer.state == "connected" and .daemonSets.waitingForTheCluster == ["it/web"]' >/dev/null && ok ||
    fail "$a let go of the rollout within the link's hysteresis: $(st "$a" | jq -c '[.apiServer.state, .daemonSets]')"
[[ $(board_ids "$a") == "${ids[$a]}" ]] && ok || fail "$a rolled while connected: ${ids[$a]} -> $(board_ids "$a")"
# Both roll alone once their links are judged down (15 s), within 35 s (slack
# for a sanitizer build on a loaded machine); each wait polls at least once.
left() { local s=$((35 - (SECONDS - t0))); echo $((s > 1 ? s : 1)); }
wait_for "$a rolls alone once disconnected" "$(left)" rolled_alone "$a" "$old_hash"
st "$a" | jq -e '.apiServer.state == "disconnected"' >/dev/null && ok || fail "$a: link $(st "$a" | jq -c .apiServer.state)"
# Not before its link went down: the new pod is no older than the change.
since=$(st "$a" | jq -r .apiServer.since)
created=$("$dl" get pods -A -o json --config "$work/config-$a.yaml" | jq -r '.items[] | select(.metadata.ownerReferences[0].name == "web") | .metadata.creationTimestamp')
[[ ! $created < $since ]] && ok || fail "$a's new pod ($created) is older than its disconnection ($since)"
wait_for "$b rolls alone once its new link is judged" "$(left)" rolled_alone "$b" "$old_hash"
# Not before its new link was judged: 15 s after its start (14 with the
# timestamps' whole seconds).
created=$("$dl" get pods -A -o json --config "$work/config-$b.yaml" | jq -r '.items[] | select(.metadata.ownerReferences[0].name == "web") | .metadata.creationTimestamp')
(($(date -u -d "$created" +%s) >= b_start + 14)) && ok || fail "$b rolled before its new link was judged: started $(date -u -d @"$b_start" +%FT%TZ), new pod $created"
[[ $(board_ids "$a") != "${ids[$a]}" && $(board_ids "$b") != "${ids[$b]}" ]] && ok || fail "a board's pod of web is the one it held"
echo "the fallback: both boards rolled $((SECONDS - t0)) s after the server went away"
finish
