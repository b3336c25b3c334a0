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
cmake --build --preset release --target daemonlet daemonlet-shim
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

if [[ -t 0 && -t 1 ]]; then
    section "the agent in the foreground: Ctrl-C stops it (the pods keep running; the next run adopts them)"
    kill -TERM $agent
    wait $agent || true
    trap 'stop_pods; rm -f "$agent_log"' EXIT
    "$dl" run --config "$cfg" || true
else
    section "not a terminal: stopping the agent and the demo's pods"
fi
