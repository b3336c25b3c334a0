#!/usr/bin/env bash
# The test API server itself, checked with curl before the agent's tests
# rely on it: TLS, authentication, paginated lists, watch streams with
# bookmarks, 410 after compaction, injected faults, and its controllers
# (--controllers: node lifecycle, DaemonSets).
set -uo pipefail
srv=${FAKE_APISERVER:?}
work=$(mktemp -d /tmp/daemonlet-fa.XXXXXX)
pid=
cleanup() {
    [[ -n $pid ]] && kill "$pid" 2>/dev/null
    rm -rf "$work"
}
trap cleanup EXIT
passed=0 failed=0
check() {  # check DESCRIPTION COMMAND...
    local what=$1
    shift
    if "$@" >/dev/null 2>&1; then passed=$((passed + 1)); else
        echo "FAIL: $what"
        failed=$((failed + 1))
    fi
}
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout "$work/key.pem" \
    -out "$work/cert.pem" -subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1 -days 2 2>/dev/null
"$srv" --cert "$work/cert.pem" --key "$work/key.pem" --port-file "$work/port" --token s3cret --bookmark-ms 200 \
    >"$work/log" 2>&1 &
pid=$!
for _ in $(seq 100); do [[ -s $work/port ]] && break; sleep 0.05; done
base=https://127.0.0.1:$(cat "$work/port")
c() { curl -sS --max-time 10 --cacert "$work/cert.pem" "$@"; }
api() { c -H "Authorization: Bearer s3cret" "$@"; }

check "control creates a DaemonSet" bash -c "$(declare -f c); work=$work; c -X PUT $base/_control/daemonsets/edge/a -d '{\"spec\":{}}' | grep -q '\"resourceVersion\":\"101\"'"
c -X PUT "$base/_control/daemonsets/edge/b" -d '{"metadata":{"labels":{"tier":"edge"}},"spec":{}}' >/dev/null
check "no token: 401" bash -c "[[ \$(curl -s -o /dev/null -w '%{http_code}' --cacert $work/cert.pem $base/apis/apps/v1/daemonsets) == 401 ]]"
page1=$(api "$base/apis/apps/v1/daemonsets?limit=1")
check "page 1 has a continue token" grep -q '"continue":"t1"' <<<"$page1"
check "list items carry no kind" bash -c "! grep -q '\"kind\":\"DaemonSet\"' <<<'$page1'"
check "page 2 ends the list" bash -c "api() { curl -s --cacert $work/cert.pem -H 'Authorization: Bearer s3cret' \"\$@\"; }; api '$base/apis/apps/v1/daemonsets?limit=1&continue=t1' | grep -q '\"name\":\"b\"'"
check "label selector" bash -c "curl -s --cacert $work/cert.pem -H 'Authorization: Bearer s3cret' '$base/apis/apps/v1/daemonsets?labelSelector=tier%3Dedge' | grep -vq '\"name\":\"a\"'"
api -N "$base/apis/apps/v1/daemonsets?watch=1&resourceVersion=101&allowWatchBookmarks=true&timeoutSeconds=1" >"$work/watch"
check "watch streams events after the resourceVersion" bash -c "grep '\"type\":\"ADDED\"' '$work/watch' | grep -q '\"name\":\"b\"'"
check "watch sends bookmarks" grep -q '"type":"BOOKMARK"' "$work/watch"
c -X POST "$base/_control/compact" >/dev/null
api -N "$base/apis/apps/v1/daemonsets?watch=1&resourceVersion=101&timeoutSeconds=1" >"$work/gone"
check "a compacted resourceVersion gets 410 in an ERROR event" grep -q '"type":"ERROR".*"code":410\|"code":410.*"type":"ERROR"' "$work/gone"
api -N "$base/apis/apps/v1/daemonsets?watch=1&timeoutSeconds=30" >"$work/ended" &
watcher=$!
for _ in $(seq 100); do [[ -s $work/ended ]] && break; sleep 0.05; done
c -X POST "$base/_control/end-watches" -d '{"gone":true}' >/dev/null
check "end-watches ends an open watch at once" bash -c "for _ in \$(seq 100); do kill -0 $watcher 2>/dev/null || exit 0; sleep 0.05; done; exit 1"
check "end-watches with gone sends a 410 ERROR event" grep -q '"code":410' "$work/ended"
check "a created object keeps a given uid" bash -c "curl -s --cacert $work/cert.pem -X PUT $base/_control/daemonsets/edge/u -d '{\"metadata\":{\"uid\":\"kept-1\"},\"spec\":{}}' | grep -q '\"uid\":\"kept-1\"'"
c -X POST "$base/_control/fault" -d '{"match":"list","status":429,"retryAfter":3}' >/dev/null
check "an injected 429 with Retry-After" bash -c "curl -si --cacert $work/cert.pem -H 'Authorization: Bearer s3cret' '$base/apis/apps/v1/daemonsets' | grep -q '^Retry-After: 3'"
check "the fault was used once" bash -c "[[ \$(curl -s -o /dev/null -w '%{http_code}' --cacert $work/cert.pem -H 'Authorization: Bearer s3cret' '$base/apis/apps/v1/daemonsets') == 200 ]]"
c -X POST "$base/_control/fault" -d '{"match":"list","mode":"drop"}' >/dev/null
check "a dropped list is cut off" bash -c "! curl -s --cacert $work/cert.pem -H 'Authorization: Bearer s3cret' '$base/apis/apps/v1/daemonsets'"
check "stats count requests" bash -c "curl -s --cacert $work/cert.pem $base/_control/stats | grep -q '\"watch\":3'"
check "stats count the bytes on the wire of each kind of request" bash -c "curl -s --cacert $work/cert.pem $base/_control/stats | grep -Eq '\"list\":\\{\"received\":[0-9]{3,},\"sent\":[0-9]{4,}\\}.*\"watch\":\\{\"received\":[0-9]{3,},\"sent\":[0-9]{4,}\\}'"
# --fault: in force from the first request (a server that starts refusing).
kill "$pid"
wait "$pid" 2>/dev/null
rm -f "$work/port"
"$srv" --cert "$work/cert.pem" --key "$work/key.pem" --port-file "$work/port" --token s3cret \
    --fault '{"match": "any", "status": 503, "count": -1}' >>"$work/log" 2>&1 &
pid=$!
for _ in $(seq 100); do [[ -s $work/port ]] && break; sleep 0.05; done
base=https://127.0.0.1:$(cat "$work/port")
check "--fault answers the first request" bash -c "[[ \$(curl -s -o /dev/null -w '%{http_code}' --cacert $work/cert.pem -H 'Authorization: Bearer s3cret' '$base/apis/apps/v1/daemonsets') == 503 ]]"
c -X DELETE "$base/_control/fault" >/dev/null
check "...until the faults are cleared" bash -c "[[ \$(curl -s -o /dev/null -w '%{http_code}' --cacert $work/cert.pem -H 'Authorization: Bearer s3cret' '$base/apis/apps/v1/daemonsets') == 200 ]]"
# Pods: graceful deletion as podStrategy.CheckGracefulDelete, seen by a
# watch with fieldSelector spec.nodeName (the kubelet's pod source).
c -X PUT "$base/_control/pods/edge/bound" -d '{"spec":{"nodeName":"n1","terminationGracePeriodSeconds":5},"status":{"phase":"Running"}}' >/dev/null
c -X PUT "$base/_control/pods/edge/loose" -d '{"spec":{},"status":{"phase":"Pending"}}' >/dev/null
rv=$(api "$base/api/v1/pods?fieldSelector=spec.nodeName%3Dn1" | jq -r .metadata.resourceVersion)
check "a pod list with fieldSelector spec.nodeName has the bound Pod only" bash -c "[[ \$(curl -s --cacert $work/cert.pem -H 'Authorization: Bearer s3cret' '$base/api/v1/pods?fieldSelector=spec.nodeName%3Dn1' | jq -c '[.items[].metadata.name]') == '[\"bound\"]' ]]"
api -X DELETE "$base/api/v1/namespaces/edge/pods/bound" -d '{}' >"$work/graceful"
check "DELETE of a bound Pod sets deletionTimestamp and the spec's grace" jq -e '.metadata.deletionGracePeriodSeconds == 5 and (.metadata.deletionTimestamp | length > 0)' "$work/graceful"
check "...and keeps it" bash -c "curl -s --cacert $work/cert.pem -H 'Authorization: Bearer s3cret' $base/api/v1/namespaces/edge/pods/bound | jq -e .metadata.deletionTimestamp"
check "a DELETE with another uid precondition is refused (409)" bash -c "[[ \$(curl -s -o /dev/null -w '%{http_code}' --cacert $work/cert.pem -H 'Authorization: Bearer s3cret' -X DELETE -d '{\"gracePeriodSeconds\":0,\"preconditions\":{\"uid\":\"other\"}}' $base/api/v1/namespaces/edge/pods/bound) == 409 ]]"
api -X DELETE "$base/api/v1/namespaces/edge/pods/bound" -d '{"gracePeriodSeconds":0}' >/dev/null
check "DELETE with grace 0 removes it" bash -c "[[ \$(curl -s -o /dev/null -w '%{http_code}' --cacert $work/cert.pem -H 'Authorization: Bearer s3cret' $base/api/v1/namespaces/edge/pods/bound) == 404 ]]"
api -X DELETE "$base/api/v1/namespaces/edge/pods/loose" -d '{}' >/dev/null
check "an unbound Pod goes at once" bash -c "[[ \$(curl -s -o /dev/null -w '%{http_code}' --cacert $work/cert.pem -H 'Authorization: Bearer s3cret' $base/api/v1/namespaces/edge/pods/loose) == 404 ]]"
api -N "$base/api/v1/pods?watch=1&fieldSelector=spec.nodeName%3Dn1&resourceVersion=$rv&timeoutSeconds=1" >"$work/podwatch"
check "a pod watch streams the deletion: MODIFIED with deletionTimestamp, then DELETED, the unbound Pod not at all" bash -c "[[ \$(jq -sc '[.[] | select(.type != \"BOOKMARK\") | .type + \":\" + .object.metadata.name + \":\" + (.object.metadata | has(\"deletionTimestamp\") | tostring)]' '$work/podwatch') == '[\"MODIFIED:bound:true\",\"DELETED:bound:true\"]' ]]"
check "stats count requests by resource and verb (apiserver_request_total's labels)" bash -c "curl -s --cacert $work/cert.pem $base/_control/stats | jq -e '.requestsByVerb | .[\"pods delete\"] == 4 and .[\"pods watch\"] == 1 and .[\"pods list\"] == 2 and .[\"pods get\"] == 3'"
# --controllers: the node lifecycle controller (node_lifecycle_controller.go
# tryUpdateNodeHealth, the tainting passes), with a grace of 2 s: a Node
# whose Lease is not renewed gets Ready Unknown and the unreachable taints,
# NoSchedule and NoExecute; a renewal and Ready True remove them.
kill "$pid"
wait "$pid" 2>/dev/null
rm -f "$work/port"
"$srv" --cert "$work/cert.pem" --key "$work/key.pem" --port-file "$work/port" --token s3cret \
    --controllers --node-grace-seconds 2 --failed-pod-backoff-ms 5000 >>"$work/log" 2>&1 &
pid=$!
for _ in $(seq 100); do [[ -s $work/port ]] && break; sleep 0.05; done
base=https://127.0.0.1:$(cat "$work/port")
lease() {  # lease RENEW_TIME: the kubelet's Lease of n1, created or renewed
    local body="{\"metadata\":{\"name\":\"n1\",\"namespace\":\"kube-node-lease\"},\"spec\":{\"holderIdentity\":\"n1\",\"renewTime\":\"$1\"}}"
    api -X POST "$base/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases" -d "$body" >/dev/null
    api -X PUT "$base/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/n1" -d "$body" >/dev/null
}
node_is() {  # node_is READY TAINTS_JSON: n1's Ready status and its taints' key:effect
    api "$base/api/v1/nodes/n1" | jq -e --arg r "$1" --argjson t "$2" \
        '(.status.conditions[] | select(.type == "Ready") | .status) == $r and ([.spec.taints[]? | .key + ":" + .effect] | sort) == $t'
}
until_ok() {  # until_ok SECONDS COMMAND...: polls COMMAND (the server's controllers act on their own)
    local deadline=$((SECONDS + $1))
    shift
    until "$@" >/dev/null 2>&1; do
        ((SECONDS < deadline)) || return 1
        sleep 0.1
    done
}
c -X PUT "$base/_control/nodes/n1" -d '{"spec":{},"status":{"conditions":[{"type":"Ready","status":"True","reason":"KubeletReady"}]}}' >/dev/null
lease 2026-01-01T00:00:00.000000Z
check "a Node renewing its Lease stays Ready, without taints" node_is True '[]'
unreachable='["node.kubernetes.io/unreachable:NoExecute","node.kubernetes.io/unreachable:NoSchedule"]'
check "its Lease not renewed for the grace: Ready Unknown, the unreachable taints" until_ok 5 node_is Unknown "$unreachable"
check "...the reason NodeStatusUnknown" bash -c "curl -s --cacert $work/cert.pem -H 'Authorization: Bearer s3cret' $base/api/v1/nodes/n1 | jq -e '.status.conditions[0].reason == \"NodeStatusUnknown\"'"
lease 2026-01-01T00:00:10.000000Z
api -X PATCH -H 'Content-Type: application/strategic-merge-patch+json' "$base/api/v1/nodes/n1/status" \
    -d '{"status":{"conditions":[{"type":"Ready","status":"True","reason":"KubeletReady"}]}}' >/dev/null
check "renewed, and Ready again: the taints removed" until_ok 2 node_is True '[]'

# The DaemonSet controller, without kubelets: three Nodes d1..d3 labelled
# fleet=true (no conditions, no Lease: never tainted), the test marking
# the Pods Ready itself. `settle` waits for a round of the controllers that
# started from the latest resourceVersion: every write seen and acted on,
# and nothing left to do (a deterministic wait, not a time window).
for n in d1 d2 d3; do
    c -X PUT "$base/_control/nodes/$n" -d '{"metadata":{"labels":{"fleet":"true"}},"spec":{}}' >/dev/null
done
settled() { c "$base/_control/stats" | jq -e '.controllers.seenResourceVersion == .resourceVersion'; }
settle() { until_ok 5 settled || { echo "FAIL: the controllers did not settle"; failed=$((failed + 1)); }; }
put_fl() {  # put_fl NAME UPDATE_STRATEGY_JSON ARG: DaemonSet fl/NAME; a new ARG is a new template
    c -X PUT "$base/_control/daemonsets/fl/$1" -d "$(jq -nc --arg n "$1" --argjson u "$2" --arg a "$3" '
        {metadata: {uid: ("uid-fl-" + $n), generation: 1}, spec: {selector: {matchLabels: {app: $n}}, updateStrategy: $u,
         template: {metadata: {labels: {app: $n}}, spec: {nodeSelector: {fleet: "true"},
                    containers: [{name: "main", image: "none", args: [$a]}]}}}}')" >/dev/null
}
fl_pods() { api "$base/api/v1/namespaces/fl/pods" | jq -c --arg d "$1" '[.items[] | select(.metadata.ownerReferences[0].name == $d)]'; }
ready_pod() {  # ready_pod NAME True|False
    api -X PATCH -H 'Content-Type: application/strategic-merge-patch+json' "$base/api/v1/namespaces/fl/pods/$1/status" \
        -d "{\"status\":{\"phase\":\"Running\",\"conditions\":[{\"type\":\"Ready\",\"status\":\"$2\",\"lastTransitionTime\":\"2026-01-01T00:00:00Z\"}]}}" >/dev/null
}
# shape DS OLD_HASH: "deleting old live" counts of DS's Pods, e.g. "2 1 2":
# 2 old ones being deleted, 1 old one live, 2 new (not OLD_HASH) live.
shape() {
    fl_pods "$1" | jq -r --arg h "$2" '[(map(select(.metadata.deletionTimestamp != null)) | length),
        (map(select(.metadata.deletionTimestamp == null and .metadata.labels["controller-revision-hash"] == $h)) | length),
        (map(select(.metadata.deletionTimestamp == null and .metadata.labels["controller-revision-hash"] != $h)) | length)] | join(" ")'
}
shape_is() { [[ $(shape "$1" "$2") == "$3" ]]; }
put_fl pct '{"type":"RollingUpdate","rollingUpdate":{"maxUnavailable":"34%","maxSurge":0}}' v1
put_fl sg '{"type":"RollingUpdate","rollingUpdate":{"maxUnavailable":0,"maxSurge":"34%"}}' v1
put_fl od '{"type":"OnDelete"}' v1
settle
for d in pct sg od; do
    for name in $(fl_pods $d | jq -r '.[].metadata.name'); do ready_pod "$name" True; done
done
settle
pods_per_node() { [[ $(api "$base/api/v1/namespaces/fl/pods" | jq -c '[.items[].spec.nodeName] | sort') == '["d1","d1","d1","d2","d2","d2","d3","d3","d3"]' ]]; }
check "a Pod per Node for each DaemonSet, on d1..d3" pods_per_node
declare -A h1
for d in pct sg od; do h1[$d]=$(fl_pods $d | jq -r '.[0].metadata.labels["controller-revision-hash"]'); done
od_uids=$(fl_pods od | jq -c 'map(.metadata.uid) | sort')
put_fl pct '{"type":"RollingUpdate","rollingUpdate":{"maxUnavailable":"34%","maxSurge":0}}' v2
put_fl sg '{"type":"RollingUpdate","rollingUpdate":{"maxUnavailable":0,"maxSurge":"34%"}}' v2
put_fl od '{"type":"OnDelete"}' v2
settle
# util.UnavailableCount: GetScaledValueFromIntOrPercent(34%, 3, roundUp
# true) = ceil(1.02) = 2 (rounding down, as Deployments' maxUnavailable
# does, would give 1). podsShouldBeOnNode makes their new Pods only once
# the deletions are confirmed (a terminating Pod still counts as the
# node's: getNodesToDaemonPods), as a kubelet does here.
check "maxUnavailable 34% of 3 Nodes: 2 old Pods deleted at once (rounded up), none made while they terminate" \
    shape_is pct "${h1[pct]}" "2 1 0"
for name in $(fl_pods pct | jq -r '.[] | select(.metadata.deletionTimestamp != null) | .metadata.name'); do
    api -X DELETE "$base/api/v1/namespaces/fl/pods/$name" -d '{"gracePeriodSeconds":0}' >/dev/null
done
settle
check "...and their new ones made once the deletions are confirmed" shape_is pct "${h1[pct]}" "0 1 2"
# util.SurgeCount: ceil(34% of 3) = 2 new Pods beside the old ones.
check "maxSurge 34% of 3 Nodes: 2 new Pods beside the 3 old ones (rounded up)" shape_is sg "${h1[sg]}" "0 3 2"
# update.go rollingUpdate is not run for OnDelete: nothing is deleted.
od_uids_are() { [[ $(fl_pods od | jq -c 'map(.metadata.uid) | sort') == "$od_uids" ]]; }
check "OnDelete: a new template deletes nothing, makes nothing" od_uids_are
# podsShouldBeOnNode with surge: on a Node with a new Pod, an old Pod that
# is not Ready goes (even though the new one is not available yet: rollingUpdate
# alone would wait for it); then a new Pod available: its old one goes.
mapfile -t surged < <(fl_pods sg | jq -r --arg h "${h1[sg]}" '.[] | select(.metadata.labels["controller-revision-hash"] != $h) | .spec.nodeName')
old_on() { fl_pods sg | jq -r --arg h "${h1[sg]}" --arg n "$1" '.[] | select(.metadata.labels["controller-revision-hash"] == $h and .spec.nodeName == $n) | .metadata.name'; }
new_on() { fl_pods sg | jq -r --arg h "${h1[sg]}" --arg n "$1" '.[] | select(.metadata.labels["controller-revision-hash"] != $h and .spec.nodeName == $n) | .metadata.name'; }
ready_pod "$(old_on "${surged[0]}")" False
settle
# The third Node is surged then: 2 allowed, only one Node still waits.
check "surge: an old Pod no longer Ready beside a new one is deleted (podsShouldBeOnNode)" shape_is sg "${h1[sg]}" "1 2 3"
ready_pod "$(new_on "${surged[1]}")" True
settle
check "surge: a new Pod available, its Node's old one is deleted (podsShouldBeOnNode)" shape_is sg "${h1[sg]}" "2 1 3"
c -X DELETE "$base/_control/pods/fl/$(fl_pods od | jq -r '.[] | select(.spec.nodeName == "d2") | .metadata.name')" >/dev/null
settle
new_od_on_d2() { [[ $(fl_pods od | jq -r --arg h "${h1[od]}" '.[] | select(.metadata.labels["controller-revision-hash"] != $h) | .spec.nodeName') == d2 ]]; }
check "OnDelete: a deleted Pod is replaced by one of the new template, the others stay" shape_is od "${h1[od]}" "0 2 1"
check "...on the deleted Pod's Node" new_od_on_d2
# podsShouldBeOnNode: a failed daemon Pod is deleted, under failedPodsBackoff
# per DaemonSet and Node (flowcontrol.NewBackOff, 1 s doubling; the first
# delay 5 s here, room for a loaded machine's checks within it): the next failed Pod on that Node within the delay stays,
# and goes once it is over; each is replaced at once.
od_live_on() { fl_pods od | jq -r --arg n "$1" '.[] | select(.spec.nodeName == $n and .metadata.deletionTimestamp == null) | .metadata.name'; }
fail_pod() {
    api -X PATCH -H 'Content-Type: application/strategic-merge-patch+json' "$base/api/v1/namespaces/fl/pods/$1/status" \
        -d '{"status":{"phase":"Failed"}}' >/dev/null
}
# A terminal Pod's deletion is immediate (the server's grace 0 for it).
pod_gone() { api "$base/api/v1/namespaces/fl/pods/$1" | jq -e '.code == 404'; }
pod_failed_there() { api "$base/api/v1/namespaces/fl/pods/$1" | jq -e '.status.phase == "Failed"'; }
p1=$(od_live_on d3)
fail_pod "$p1"
settle
check "a failed daemon Pod is deleted (podsShouldBeOnNode)" pod_gone "$p1"
p2=$(od_live_on d3)
check "...and replaced on its Node at once" test -n "$p2"
fail_pod "$p2"
settle
check "failedPodsBackoff: the next failed Pod on that Node within the delay stays" pod_failed_there "$p2"
check "...and is deleted once the delay is over" until_ok 8 pod_gone "$p2"
echo "$passed passed, $failed failed"
[[ $failed -eq 0 ]]
