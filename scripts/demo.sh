#!/usr/bin/env bash
# README's run command: installs what is missing, builds daemonlet (release
# preset), shows the decision core on the example manifests in examples/
# (which DaemonSets each example board should run, and why not where not),
# then runs the agent on examples/agent/config.yaml (state in
# build/demo-state, manifests in examples/agent/manifests, the exec runtime)
# and shows its pods running, surviving an agent restart, and adopted again.
# On a terminal the agent then stays in the foreground until Ctrl-C (its pods
# keep running, as under systemd); otherwise the demo cleans up and exits.
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo"

DAEMONLET_SKIP_ARMHF=1 scripts/setup.sh
cmake --preset release >/dev/null
cmake --build --preset release --target daemonlet daemonlet-shim fake_apiserver
dl=build/release/agent/daemonlet
cfg=examples/agent/config.yaml

section() { printf '\n== %s\n' "$*"; }

section "daemonlet version"
"$dl" version

section "daemonlet validate examples/*.yaml (valid manifests)"
"$dl" validate examples/daemonsets.yaml examples/kubectl-dry-run.yaml examples/node-edge-01.yaml \
    examples/node-edge-02-tainted.yaml

section "daemonlet validate examples/invalid.yaml (every error, with file, document and field)"
"$dl" validate examples/invalid.yaml || echo "(exit status $?: invalid, as expected)"

for node in examples/node-edge-01.yaml examples/node-edge-02-tainted.yaml; do
    for ds in monitoring/node-exporter plant/sensor-reader kube-system/log-shipper; do
        section "daemonlet eval --node $node --daemonset examples/daemonsets.yaml --name $ds"
        "$dl" eval --node "$node" --daemonset examples/daemonsets.yaml --name "$ds"
    done
done

section "daemonlet run --config $cfg (the agent, in the background for the demo)"
state=build/demo-state
stop_pods() {  # the demo's pods: their shims stop them gracefully
    pkill -TERM -f "daemonlet-shim.*$(realpath -m "$state")" 2>/dev/null || true
}
stop_pods
rm -rf "$state"
agent_log=$(mktemp)
"$dl" run --config "$cfg" >"$agent_log" 2>&1 &
agent=$!
trap 'kill $agent 2>/dev/null; stop_pods; rm -f "$agent_log"' EXIT
# Wait (at most 15 s) for both pods to run: no fixed sleeps.
for _ in $(seq 150); do
    [[ $("$dl" get pods -A --config "$cfg" 2>/dev/null | grep -c ' Running ') -ge 2 ]] && break
    sleep 0.1
done
cat "$agent_log"
section "daemonlet get ds -A"
"$dl" get ds -A --config "$cfg"
section "daemonlet get pods -A"
"$dl" get pods -A --config "$cfg"
section "daemonlet describe ds gpu-exporter -n monitoring (why this board runs no pod of it)"
"$dl" describe ds gpu-exporter -n monitoring --config "$cfg"
section "daemonlet rollout status ds/heartbeat -n kube-system"
"$dl" rollout status ds/heartbeat -n kube-system --config "$cfg"
pid_before=$(pgrep -f 'heartbeat from' | head -1)
section "the heartbeat container's log (CRI format, under $state/runtime/logs)"
sleep 1
tail -n 3 "$(find "$state/runtime/logs" -path '*heartbeat*' -name '*.log' | head -1)"

section "SIGTERM to the agent: it stops, the pods keep running"
kill -TERM $agent
wait $agent || true
tail -n 1 "$agent_log"
ps -o pid,args -p "$pid_before" | tail -n +1

section "a new agent adopts them: zero restarts"
"$dl" run --config "$cfg" >"$agent_log" 2>&1 &
agent=$!
for _ in $(seq 100); do grep -q 'adopted' "$agent_log" && break; sleep 0.1; done
cat "$agent_log"
"$dl" get pods -A --config "$cfg"
echo "heartbeat process: before $pid_before, now $(pgrep -f 'heartbeat from' | head -1)"

# Following a cluster: the test API server (TLS, a token) on loopback stands
# in for kube-apiserver; the same agent, with an apiServer section added.
section "following a cluster: a test API server on loopback (TLS, bearer token)"
cl=$(mktemp -d)
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout "$cl/key.pem" \
    -out "$cl/ca.pem" -subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1 -days 1 2>/dev/null
build/release/tests/fake_apiserver --cert "$cl/ca.pem" --key "$cl/key.pem" --port-file "$cl/port" \
    --token demo-token >/dev/null 2>&1 &
fake=$!
trap 'kill $agent $fake 2>/dev/null; stop_pods; rm -rf "$agent_log" "$cl"' EXIT
for _ in $(seq 100); do [[ -s $cl/port ]] && break; sleep 0.05; done
server=https://127.0.0.1:$(cat "$cl/port")
cat >"$cl/kubeconfig" <<KUBECONFIG
apiVersion: v1
kind: Config
clusters: [{name: demo, cluster: {server: "$server", certificate-authority: ca.pem}}]
users: [{name: board, user: {token: demo-token}}]
contexts: [{name: demo, context: {cluster: demo, user: board}}]
current-context: demo
KUBECONFIG
chmod 600 "$cl/kubeconfig"
sed -e "s|^manifestDir: .*|manifestDir: $repo/examples/agent/manifests|" \
    -e "s|^stateDir: .*|stateDir: $(realpath -m "$state")|" "$cfg" >"$cl/config.yaml"
printf 'apiServer:\n  kubeconfig: %s\n  namespaces: [edge]\n' "$cl/kubeconfig" >>"$cl/config.yaml"
cat "$cl/config.yaml"
curl -sS --cacert "$cl/ca.pem" -X PUT "$server/_control/daemonsets/edge/uplink-probe" -o /dev/null -d '{
  "apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "uplink-probe", "namespace": "edge"},
  "spec": {"selector": {"matchLabels": {"app": "uplink-probe"}},
           "template": {"metadata": {"labels": {"app": "uplink-probe"}},
                        "spec": {"tolerations": [{"key": "dedicated", "operator": "Exists"}],
                                 "containers": [{"name": "probe", "image": "busybox",
                                 "command": ["/bin/sh", "-c", "while :; do echo uplink ok; sleep 5; done"]}]}}}}'
kill -TERM $agent
wait $agent || true
"$dl" run --config "$cl/config.yaml" >"$agent_log" 2>&1 &
agent=$!
for _ in $(seq 100); do
    "$dl" status --config "$cl/config.yaml" 2>/dev/null | grep -q 'API server: *connected' && break
    sleep 0.1
done
cat "$agent_log"
section "daemonlet status (the cluster's DaemonSet runs next to the files')"
"$dl" status --config "$cl/config.yaml"
"$dl" get pods -A --config "$cl/config.yaml"
section "what the board told the cluster: its Lease and Events (kubectl describe ds shows these)"
curl -sS --cacert "$cl/ca.pem" "$server/_control/summary"

section "no network: agent (kill -9) and API server gone, a new agent runs from its cache"
probe_before=$(pgrep -f 'uplink ok' | head -1 || true)
kill -9 $agent $fake
wait $agent $fake 2>/dev/null || true
"$dl" run --config "$cl/config.yaml" >"$cl/offline.log" 2>&1 &
agent=$!
for _ in $(seq 100); do grep -q "daemonlet running" "$cl/offline.log" && break; sleep 0.1; done
cat "$cl/offline.log"
"$dl" get pods -n edge --config "$cl/config.yaml"
echo "uplink-probe process: before $probe_before, now $(pgrep -f 'uplink ok' | head -1 || true)"
"$dl" status --config "$cl/config.yaml" | sed -n '/^API server/,$p'

if [[ -t 0 && -t 1 ]]; then
    section "the agent in the foreground: Ctrl-C stops it (the pods keep running; the next run adopts them)"
    kill -TERM $agent
    wait $agent || true
    trap 'stop_pods; rm -rf "$agent_log" "$cl"' EXIT
    "$dl" run --config "$cl/config.yaml" || true
else
    section "not a terminal: stopping the agent and the demo's pods"
fi
