#!/usr/bin/env bash
# README's run command: installs what is missing, builds daemonlet (release
# preset), shows the decision core on the example manifests in examples/
# (which DaemonSets each example board should run, and why not where not),
# then runs the agent on examples/agent/config.yaml (state in
# build/demo-state, manifests in examples/agent/manifests, the exec runtime)
# and shows its pods running, surviving an agent restart, and adopted again;
# then the same agent following a test API server, and (as root, with runc)
# a real container from a busybox image imported offline.
# On a terminal the agent then stays in the foreground until Ctrl-C (its pods
# keep running, as under systemd); otherwise the demo cleans up and exits.
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo"

# Only what the demo needs (the test command installs the test toolchain),
# and its own build of the release preset, without the CRI module (gRPC).
scripts/setup.sh --demo
cmake --preset release -B build/demo -DDAEMONLET_CRI=OFF -DDAEMONLET_BENCH=OFF >/dev/null
cmake --build build/demo -j2 --target daemonlet daemonlet-shim daemonlet-image fake_apiserver
dl=build/demo/agent/daemonlet
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
unmount_under() {  # the pods' volumes (tmpfs for tokens and secrets) the stopped pods leave
    local dir
    dir=$(realpath -m "$1")
    { findmnt -rn -o TARGET | grep "^$dir/" || true; } | sort -r | while read -r m; do umount -l "$m" 2>/dev/null || true; done
}
stop_pods() {  # the demo's pods: their shims stop them gracefully, then their volumes go
    local pattern
    pattern="daemonlet-shim.*$(realpath -m "$state")"
    pkill -TERM -f "$pattern" 2>/dev/null || true
    for _ in $(seq 100); do pgrep -f "$pattern" >/dev/null || break; sleep 0.1; done
    if [[ $(id -u) -eq 0 ]]; then unmount_under "$state"; fi
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
build/demo/tests/fake_apiserver --cert "$cl/ca.pem" --key "$cl/key.pem" --port-file "$cl/port" \
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

# Real containers: the runc runtime, with an image made here from Debian's
# busybox-static and imported offline, as on an air-gapped board. A second
# agent with its own state directory, so the one above keeps its pods.
rd=$(realpath -m build/demo-runc)
rrc() { runc --root "$rd/state/runtime/runc" "$@"; }
stop_runc() {  # the runc demo's agent, shims and containers
    [[ -n ${ragent:-} ]] && kill -9 "$ragent" 2>/dev/null
    pkill -KILL -f "daemonlet-shim.*$rd" 2>/dev/null || true
    for id in $(rrc list -q 2>/dev/null); do rrc delete --force "$id" >/dev/null 2>&1 || true; done
    unmount_under "$rd"
}
if [[ $(id -u) -eq 0 ]] && command -v runc >/dev/null && [[ -x /bin/busybox ]]; then
    section "real containers: runtime {type: runc}, a busybox image imported offline"
    stop_runc
    rm -rf "$rd"
    mkdir -p "$rd/import" "$rd/manifests"
    trap 'kill $agent 2>/dev/null; stop_pods; stop_runc; rm -rf "$agent_log" "$cl"' EXIT
    # An OCI image-layout archive dropped into the import directory.
    tests/data/make_busybox_image.sh "$rd/import/busybox.tar"
    cat >"$rd/config.yaml" <<RUNCCONFIG
nodeName: demo-board
manifestDir: $rd/manifests
stateDir: $rd/state
runtime: {type: runc, imageImportDir: $rd/import}
metricsBindAddress: 127.0.0.1:10256   # the first agent, still running, has the default
RUNCCONFIG
    cat "$rd/config.yaml"
    # "$$$$" is the shell's "$$" after kubelet's $(VAR) expansion.
    cat >"$rd/manifests/hello.yaml" <<'RUNCDS'
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: hello-container, namespace: edge}
spec:
  selector: {matchLabels: {app: hello-container}}
  template:
    metadata: {labels: {app: hello-container}}
    spec:
      containers:
        - name: hello
          image: busybox
          imagePullPolicy: IfNotPresent   # an air-gapped board: the imported image, no registry
          command: [/bin/sh, -c, 'trap "exit 0" TERM; echo "pid $$$$ on $(NODE_NAME), rootfs /bin: $(echo /bin/*)"; while :; do sleep 5 & wait $$!; done']
          env: [{name: NODE_NAME, valueFrom: {fieldRef: {fieldPath: spec.nodeName}}}]
          resources: {limits: {memory: 32Mi, cpu: 250m}}
RUNCDS
    cat "$rd/manifests/hello.yaml"
    "$dl" run --config "$rd/config.yaml" >"$rd/agent.log" 2>&1 &
    ragent=$!
    for _ in $(seq 150); do
        "$dl" get pods -n edge --config "$rd/config.yaml" 2>/dev/null | grep -q ' Running ' && break
        sleep 0.1
    done
    cat "$rd/agent.log"
    "$dl" get pods -n edge --config "$rd/config.yaml"
    section "inside the container: its own PID namespace (pid 1) and the image's rootfs"
    for _ in $(seq 50); do [[ -n $(find "$rd/state/runtime/logs" -name '*.log' -size +0 2>/dev/null) ]] && break; sleep 0.1; done
    cat "$(find "$rd/state/runtime/logs" -name '*.log' | head -1)"
    section "runc list, and the memory limit of its cgroup"
    rrc list
    cid=$(rrc list -q | head -1)
    cat "/sys/fs/cgroup/memory/daemonlet/$cid/memory.limit_in_bytes" 2>/dev/null ||
        cat "/sys/fs/cgroup/daemonlet/$cid/memory.max"
    cpid=$(rrc state "$cid" | sed -n 's/^ *"pid": \([0-9]*\),/\1/p')
    section "kill -9 of the agent: the container runs on, and a new agent adopts it"
    kill -9 "$ragent"
    wait "$ragent" 2>/dev/null || true
    "$dl" run --config "$rd/config.yaml" >"$rd/agent.log" 2>&1 &
    ragent=$!
    for _ in $(seq 100); do grep -q 'daemonlet running' "$rd/agent.log" && break; sleep 0.1; done
    cat "$rd/agent.log"
    "$dl" get pods -n edge --config "$rd/config.yaml"
    echo "container init: before $cpid, now $(rrc state "$cid" | sed -n 's/^ *"pid": \([0-9]*\),/\1/p')"
    section "the DaemonSet's file removed: its container stops (SIGTERM) and goes"
    rm "$rd/manifests/hello.yaml"
    for _ in $(seq 100); do [[ -z $(rrc list -q 2>/dev/null) ]] && break; sleep 0.1; done
    "$dl" get pods -n edge --config "$rd/config.yaml"
    echo "runc containers left: $(rrc list -q | wc -l)"
    kill -TERM "$ragent"
    wait "$ragent" 2>/dev/null || true
    ragent=
else
    section "real containers with runc: skipped (needs root, runc and busybox-static: scripts/setup.sh installs them)"
fi

if [[ -t 0 && -t 1 ]]; then
    section "the agent in the foreground: Ctrl-C stops it (the pods keep running; the next run adopts them)"
    kill -TERM $agent
    wait $agent || true
    trap 'stop_pods; rm -rf "$agent_log" "$cl"' EXIT
    "$dl" run --config "$cl/config.yaml" || true
else
    section "not a terminal: stopping the agent and the demo's pods"
fi
