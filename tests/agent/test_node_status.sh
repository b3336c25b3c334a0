#!/usr/bin/env bash
# The board as a Node (issue 14 §1, apiServer.registerNode): the real agent
# registers its Node with the test API server and keeps its status, checked
# with the real kubectl. Rules pinned (kubelet_node_status.go,
# nodestatus/setters.go, pkg/util/node PatchNodeStatus):
#   1. registerWithAPIServer: the Node created with the automatic labels,
#      nodeLabels and registerWithTaints; its status Ready with the setters'
#      addresses, capacity, allocatable and nodeInfo;
#   2. PatchNodeStatus: the Node is patched, never replaced: a label an admin
#      adds with `kubectl label` stays after the next status post;
#   3. a board back from an outage posts Ready at once, over the node
#      lifecycle controller's NotReady (the controller's removal of the
#      unreachable taint is a later step of issue 14: the taint stays here);
#   3b. the same outage live: the agent keeps running while the server
#      answers 503, and posts Ready once it answers again;
#   4. a fresh API server gets the Node again within a Lease period.
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
command -v jq >/dev/null || {
    echo "jq is missing (scripts/setup.sh installs it)"
    exit 1
}
command -v kubectl >/dev/null || {
    echo "kubectl is missing"
    exit 1
}
fake=
trap '[[ -n $fake ]] && kill "$fake" 2>/dev/null; cleanup' EXIT

start_notify_listener
start_test_apiserver
write_kubeconfig "$work/kubeconfig" "$port"
write_config "{board: \"true\"}" "[]"
cat >>"$cfg" <<EOF
apiServer:
  kubeconfig: $work/kubeconfig
  requestTimeout: 3s
  registerNode: true
  registerWithTaints:
    - {key: daemonlet.io/board, effect: NoSchedule}
EOF
k() { kubectl --kubeconfig "$work/kubeconfig" --cache-dir "$work/kcache" --request-timeout 5s "$@"; }
# The Node as kubectl lists it; fails when there is none (jq 1.6's -e
# succeeds on empty input, so every predicate checks for an object first).
node() {
    local out
    out=$(k get nodes -o json | jq -c '.items[] | select(.metadata.name == "it-node")') && [[ -n $out ]] &&
        echo "$out"
}
ready() {
    local n
    n=$(node) && jq -e '[.status.conditions[] | select(.type == "Ready")] == [.status.conditions[] | select(.type == "Ready" and .status == "True")] and any(.status.conditions[]; .type == "Ready")' <<<"$n" >/dev/null
}
writes() { curl -sS --max-time 5 --cacert "$work/cert.pem" "https://127.0.0.1:$port/_control/stats" | jq -r ".nodeWrites[\"$1\"] // 0"; }
export -f k node ready writes
export work port

start_agent
wait_for "kubectl shows the Node Ready" 10 ready
n=$(node)
check() {  # check WHAT JQ_EXPR: the Node as kubectl printed it satisfies JQ_EXPR
    if [[ -n $n ]] && jq -e "$2" <<<"$n" >/dev/null; then
        echo "ok: $1"
    else
        echo "FAIL: $1: $(jq -c "$2" <<<"$n" 2>&1); the Node: $n"
        exit 1
    fi
}
arch=$(uname -m)
case $arch in x86_64) arch=amd64 ;; aarch64) arch=arm64 ;; armv*) arch=arm ;; esac
check "initialNode's labels and nodeLabels" ".metadata.labels == {
    \"kubernetes.io/hostname\": \"it-node\", \"kubernetes.io/os\": \"linux\", \"kubernetes.io/arch\": \"$arch\",
    \"beta.kubernetes.io/os\": \"linux\", \"beta.kubernetes.io/arch\": \"$arch\", \"board\": \"true\"}"
check "registerWithTaints" '.spec.taints == [{"key": "daemonlet.io/board", "effect": "NoSchedule"}]'
check "setters.go order of the conditions" '[.status.conditions[].type] == ["MemoryPressure", "DiskPressure", "PIDPressure", "Ready"]'
check "ReadyCondition: KubeletReady" '.status.conditions[] | select(.type == "Ready") | .reason == "KubeletReady"'
check "NodeAddress: InternalIPs, then the Hostname" \
    '(.status.addresses | length >= 2) and (.status.addresses[-1] == {"type": "Hostname", "address": "it-node"}) and (.status.addresses[:-1] | all(.type == "InternalIP"))'
check "MachineInfo: capacity" '.status.capacity | (.cpu | test("^[0-9]+$")) and (.memory | test("^[0-9]+(Ki|Mi|Gi)?$")) and has("ephemeral-storage") and .pods == "110"'
check "MachineInfo: allocatable below capacity by the eviction thresholds" \
    '.status.allocatable | (.pods == "110") and has("memory") and has("ephemeral-storage")'
check "nodeInfo" '.status.nodeInfo | (.kubeletVersion | startswith("v1.30.0-daemonlet-")) and .operatingSystem == "linux" and (.bootID | length > 0) and (.kernelVersion | length > 0) and (.osImage | length > 0) and (.containerRuntimeVersion | startswith("exec://"))'
[[ $(writes create) == 1 ]] || {
    echo "FAIL: the Node was not created exactly once: $(writes create)"
    exit 1
}
"$dl" status -o json --config "$cfg" | jq -e '.apiServer.nodeStatus | .registered and .posts >= 1 and .lastError == ""' >/dev/null || {
    echo "FAIL: daemonlet status does not say the Node is registered: $("$dl" status -o json --config "$cfg" | jq -c .apiServer.nodeStatus)"
    exit 1
}
"$dl" status --config "$cfg" | grep -q "^  Node:       it-node registered, status posted 20" || {
    echo "FAIL: daemonlet status's Node line: $("$dl" status --config "$cfg" | grep Node)"
    exit 1
}
echo "ok: daemonlet status says the Node is registered"

# 2. An admin's label (kubectl label: a merge patch of the Node) stays after
# the agent's next status post, which a restart makes at once.
k label node it-node admin=yes >/dev/null || {
    echo "FAIL: kubectl label node"
    exit 1
}
posts=$(writes status)
[[ -n $posts ]] || {
    echo "FAIL: the test API server's stats are unreadable"
    exit 1
}
# 3. The agent stopped; the node lifecycle controller's view of a silent
# node: Ready Unknown and the unreachable taints.
kill -9 "$agent"
wait "$agent" 2>/dev/null
node | jq -c '.status.conditions = [.status.conditions[] | if .type == "Ready" then .status = "Unknown" | .reason = "NodeStatusUnknown" | .message = "Kubelet stopped posting node status." | .lastTransitionTime = "2026-01-01T00:00:00Z" else . end]
    | .spec.taints += [{"key": "node.kubernetes.io/unreachable", "effect": "NoSchedule"}, {"key": "node.kubernetes.io/unreachable", "effect": "NoExecute"}]' >"$work/unknown.json"
curl -sS --max-time 5 --cacert "$work/cert.pem" -X PUT "https://127.0.0.1:$port/_control/nodes/it-node" -d "@$work/unknown.json" >/dev/null
ready && {
    echo "FAIL: the test could not mark the Node NotReady"
    exit 1
}
start_agent
wait_for "the restarted agent turns the Node Ready" 10 ready
n=$(node)
[[ $(writes status) -gt $posts ]] || {
    echo "FAIL: no status PATCH after the restart"
    exit 1
}
check "ReadyCondition: a transition from Unknown" '.status.conditions[] | select(.type == "Ready") | .lastTransitionTime != "2026-01-01T00:00:00Z"'
check "the admin's label stays" '.metadata.labels.admin == "yes"'
check "spec is never patched: the taints stay (the controller removes unreachable)" \
    '[.spec.taints[].key] == ["daemonlet.io/board", "node.kubernetes.io/unreachable", "node.kubernetes.io/unreachable"]'
# PatchNodeStatus: only what differs (the conditions' heartbeats, Ready), no
# spec; the addresses are the same, so not in it.
patch=$(curl -sS --max-time 5 --cacert "$work/cert.pem" "https://127.0.0.1:$port/_control/stats" | jq -c .lastNodePatch)
jq -e '(has("spec") | not) and (.status | has("addresses") | not) and (.status.conditions | length > 0)' <<<"$patch" >/dev/null || {
    echo "FAIL: the status patch is not PatchNodeStatus's: $patch"
    exit 1
}
echo "ok: the status patch has only what differs"
[[ $(writes create) == 1 ]] || {
    echo "FAIL: the Node was created again"
    exit 1
}
# 3b. The same outage live, the agent running: the API server answers its
# every request with 503 until the link is down (core/connectivity.h: 15 s
# unhealthy), the node lifecycle controller marks the Node Unknown
# meanwhile; when the server answers again, the agent's link comes up and
# it posts Ready at once (nodestatus's Ready setter, over the server's
# Unknown), without a restart.
control() { curl -sS --max-time 5 --cacert "$work/cert.pem" -X "$1" "https://127.0.0.1:$port/_control/$2" "${@:3}"; }
link_is() { [[ $("$dl" status -o json --config "$cfg" | jq -r .apiServer.state) == "$1" ]]; }
agent_before=$agent
wait_for "the restarted agent's link is up" 10 link_is connected
control POST fault -d '{"match": "any", "mode": "status", "status": 503, "count": -1}' >/dev/null
wait_for "the link goes down while the server answers 503" 25 link_is disconnected
control PUT nodes/it-node -d "@$work/unknown.json" >/dev/null
control DELETE fault >/dev/null
ready && {
    echo "FAIL: the test could not mark the Node NotReady during the outage"
    exit 1
}
wait_for "the running agent turns the Node Ready when the server answers again" 15 ready
[[ $agent == "$agent_before" ]] && kill -0 "$agent" 2>/dev/null || {
    echo "FAIL: the agent did not live through the outage"
    exit 1
}
echo "ok: a live outage ends with the Node Ready"

# 4. A fresh API server (one that lost its state): the agent's next Lease
# renewal finds no Lease (404), so it reads its Node at once, finds none, and
# registers it again: within a Lease period (10 s), not at the 5-minute post.
kill "$fake"
wait "$fake" 2>/dev/null
start_test_apiserver "$port"
wait_for "the agent registers its Node with a fresh server" 15 ready
n=$(node)
check "registered again with its labels and taints" \
    '.metadata.labels.board == "true" and .spec.taints == [{"key": "daemonlet.io/board", "effect": "NoSchedule"}]'
# wait_for's failures are counted (lib.sh), not fatal: finish fails on any.
finish
