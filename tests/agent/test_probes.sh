#!/usr/bin/env bash
# Probes and init containers end to end: the real daemonlet and
# daemonlet-shim, probes run by the agent against real processes and a real
# HTTP server (tests/agent/http_serve.cpp, run as a container), driven
# through files. Every wait is a predicate polled until a deadline.
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

start_notify_listener

loop='trap \"exit 0\" TERM; while true; do sleep 0.2; done'
# write_manifest FILE NAME CONTAINER_EXTRA_YAML [STRATEGY_YAML] [POD_SPEC_EXTRA_YAML] [SCRIPT]:
# lib.sh's write_ds with the container's extra YAML (probes) first.
write_manifest() { write_ds "$1" "$2" "${6:-$loop}" "${5:-}" "${4:-}" "$3"; }
pod_line() { get_pods | grep -E "^it +$1-"; }
pod_shows() { pod_line "$1" | grep -E "$2"; }
restarts_of() { pod_line "$1" | awk '{print $5}'; }

write_config "{}" "[]"
start_agent
wait_for "agent ready" 10 grep -q 'READY=1' "$work/notify.log"

# 1. Readiness (exec): 0/1 Running until the probe's file appears, then 1/1
#    (prober_manager UpdatePodStatus: ready only after the probe succeeds).
write_manifest ready.yaml ready "          readinessProbe:
            exec: {command: [test, -f, $work/ready-marker]}
            periodSeconds: 1"
wait_for "ready: running but not ready" 10 pod_shows ready ' 0/1 +Running '
wait_for "the readiness failure is logged once" 10 grep -q 'ready-.* container main: Readiness probe failed' "$work/agent.log"
touch "$work/ready-marker"
wait_for "ready: 1/1 once the probe passes" 10 pod_shows ready ' 1/1 +Running '
[[ $(grep -c 'ready-.* container main: Readiness probe failed' "$work/agent.log") -eq 1 ]] && ok ||
    fail "the readiness failure was logged more than once per transition"
"$dl" get pods -n it -o json --config "$cfg" | grepq '"ready": true' && ok || fail "-o json: ready is not true"
# kill -9 and a new agent: the container is adopted (same process) and its
# probes run again, so it is ready again without a restart.
ready_pid=$(pid_of ready)
kill -9 "$agent"
wait "$agent" 2>/dev/null
rm -f "$work/ready-marker"
start_agent
wait_for "the new agent adopts the ready pod" 10 grep -q 'adopted 1 running containers' "$work/agent.log"
wait_for "after the agent restart, readiness starts over (newWorker: Failure)" 10 pod_shows ready ' 0/1 +Running +0 '
touch "$work/ready-marker"
wait_for "ready again once the adopted container's probe passes" 10 pod_shows ready ' 1/1 +Running +0 '
[[ $(pid_of ready) == "$ready_pid" ]] && ok || fail "the agent restart restarted the probed container"
rm -f "$work/ready-marker"
wait_for "ready: back to 0/1 when the probe fails (failureThreshold 3)" 15 pod_shows ready ' 0/1 +Running '
rm -f "$man/ready.yaml"

# 1b. httpGet readiness and tcpSocket liveness against the container's own
#     server, through its named port (probe.ResolveContainerPort; DoHTTPProbe:
#     503 fails, 200 passes).
http_serve=$(realpath "${HTTP_SERVE:?}")  # the container runs in /
http_port=$("$http_serve" --free-port)
write_manifest http.yaml http "          ports: [{name: web, containerPort: $http_port}]
          readinessProbe:
            httpGet: {path: /healthz, port: web}
            periodSeconds: 1
          livenessProbe:
            tcpSocket: {port: web}
            periodSeconds: 1" "" "" "exec $http_serve $http_port $work/http-ready"
server_up() { bash -c "exec 3<>/dev/tcp/127.0.0.1/$http_port"; }
wait_for "http: the container's server is up" 10 server_up
pod_shows http ' 0/1 +Running ' >/dev/null && ok || fail "http: ready while the server answers 503"
touch "$work/http-ready"
wait_for "http: ready once the server answers 200" 10 pod_shows http ' 1/1 +Running +0 '
rm -f "$man/http.yaml"
wait_for "http stops" 10 no_pod it http

# 1c. grpc readiness and liveness (pkg/probe/grpc: grpc.health.v1.Health/Check
#     of the probe's service) against a real gRPC server run as the
#     container (tests/agent/grpc_health_serve.cpp, built where gRPC is):
#     NOT_SERVING keeps the pod unready, SERVING makes it ready, a liveness
#     NOT_SERVING restarts the container; the log names the status. The
#     readiness probe waits a second, so that its first failure (logged once
#     per transition) is the server's answer, not a connection refused
#     before the server listens.
if [[ -n ${GRPC_HEALTH_SERVE:-} ]]; then
    grpc_serve=$(realpath "$GRPC_HEALTH_SERVE")
    grpc_port=$("$http_serve" --free-port)
    write_manifest grpc.yaml grpc "          readinessProbe:
            grpc: {port: $grpc_port, service: ready}
            initialDelaySeconds: 1
            periodSeconds: 1
          livenessProbe:
            grpc: {port: $grpc_port, service: live}
            periodSeconds: 1
            failureThreshold: 2" "" "" "exec $grpc_serve $grpc_port"
    grpc_field() { pods_json | jq -r ".items[] | select(.metadata.ownerReferences[0].name == \"grpc\") | $1"; }
    grpc_pid() { pgrep -f "^$grpc_serve $grpc_port\$" | head -1; }
    wait_for "grpc: the server runs as the container" 10 grpc_pid
    wait_for "grpc: NOT_SERVING readiness is logged with the status" 10 \
        grep -q 'grpc-.* container main: Readiness probe failed: service unhealthy (responded with "NOT_SERVING")' "$work/agent.log"
    [[ $(grpc_field '.status.containerStatuses[0].ready') == false ]] && ok || fail "grpc: ready while NOT_SERVING"
    gpid=$(grpc_pid)
    kill -USR1 "$gpid"
    wait_for "grpc: ready once the service is SERVING" 10 bash -c "[[ \$('$dl' get pods -A -o json --config '$cfg' | jq -r '.items[] | select(.metadata.ownerReferences[0].name == \"grpc\") | .status.containerStatuses[0].ready') == true ]]"
    [[ $(grpc_field '.status.containerStatuses[0].restartCount') == 0 ]] && ok || fail "grpc: restarted while live SERVING"
    kill -USR2 "$gpid"
    wait_for "grpc: a NOT_SERVING liveness restarts the container (restartCount)" 15 bash -c "(( \$('$dl' get pods -A -o json --config '$cfg' | jq '[.items[] | select(.metadata.ownerReferences[0].name == \"grpc\") | .status.containerStatuses[0].restartCount] | max // 0') >= 1 ))"
    grep -q 'grpc-.* container main: Liveness probe failed: service unhealthy (responded with "NOT_SERVING")' "$work/agent.log" && ok ||
        fail "grpc: the liveness failure does not name the status"
    grep -q 'grpc-.* container main failed liveness probe, will be restarted' "$work/agent.log" && ok ||
        fail "grpc: the liveness kill is not logged"
    wait_for "grpc: a new server process after the restart" 10 bash -c "p=\$(pgrep -f '^$grpc_serve $grpc_port\$' | head -1); [[ -n \$p && \$p != $gpid ]]"
    rm -f "$man/grpc.yaml"
    wait_for "grpc stops" 10 no_pod it grpc
else
    echo "grpc probes: skipped (no GRPC_HEALTH_SERVE: built without gRPC)"
fi

# 2. Liveness: a failing liveness probe restarts the container: RESTARTS
#    grows and the process changes (kuberuntime: "failed liveness probe,
#    will be restarted").
touch "$work/alive"
write_manifest live.yaml live "          livenessProbe:
            exec: {command: [test, -f, $work/alive]}
            periodSeconds: 1
            failureThreshold: 2"
wait_for "live runs" 10 pod_shows live ' 1/1 +Running '
live_pid=$(pid_of live)
[[ -n $live_pid && $(restarts_of live) == 0 ]] && ok || fail "live: no process or restarts already"
rm -f "$work/alive"
wait_for "the liveness failure restarts the container" 15 bash -c "[[ \$('$dl' get pods -n it --config '$cfg' | awk '\$2 ~ /^live-/ {print \$5}') -ge 1 ]]"
grep -q 'live-.* container main failed liveness probe, will be restarted' "$work/agent.log" && ok ||
    fail "the liveness kill is not logged"
touch "$work/alive"
wait_for "live runs again with a new process" 15 bash -c "pgrep -f 'it-marker-$$-live' >/dev/null && [[ \$(pgrep -f 'it-marker-$$-live' | head -1) != '$live_pid' ]]"
wait_for "live is 1/1 again" 15 pod_shows live ' 1/1 +Running '
rm -f "$man/live.yaml"

# 3. Startup probe: neither started nor ready until it passes; liveness waits.
write_manifest startup.yaml startup "          startupProbe:
            exec: {command: [test, -f, $work/started]}
            periodSeconds: 1
            failureThreshold: 100
          livenessProbe:
            exec: {command: [test, -f, $work/started]}
            periodSeconds: 1
            failureThreshold: 1"
wait_for "startup: running, not ready" 10 pod_shows startup ' 0/1 +Running '
"$dl" get pods -n it -o json --config "$cfg" | grepq '"started": false' && ok || fail "-o json: started is not false"
[[ $(restarts_of startup) == 0 ]] && ok || fail "liveness ran before the startup probe passed"
touch "$work/started"
wait_for "startup: ready once the startup probe passes" 10 pod_shows startup ' 1/1 +Running '
rm -f "$man/startup.yaml"

# 4. A surge rollout waits for the new pod to be ready: the old pod keeps
#    running while the new one fails its readiness probe (update.go
#    rollingUpdate with maxSurge: the old pod goes once the new is available).
strategy="updateStrategy: {type: RollingUpdate, rollingUpdate: {maxSurge: 1, maxUnavailable: 0}}"
touch "$work/v1-ready"
write_manifest surge.yaml surge "          readinessProbe:
            exec: {command: [test, -f, $work/v1-ready]}
            periodSeconds: 1" "$strategy"
wait_for "surge v1 ready" 10 pod_shows surge ' 1/1 +Running '
old=$(pod_line surge | awk '{print $2}')
write_manifest surge.yaml surge "          readinessProbe:
            exec: {command: [test, -f, $work/v2-ready]}
            periodSeconds: 1" "$strategy"
wait_for "surge v2 created" 10 grep -q 'created for DaemonSet surge revision 2' "$work/agent.log"
wait_for "v2 fails its readiness probe" 10 bash -c "grep 'surge-.* Readiness probe failed' '$work/agent.log' | grep -qv '$old'"
get_pods | grepq -E "^it +$old +1/1 +Running" && ok || fail "surge: the old pod stopped before the new one was ready"
touch "$work/v2-ready"
wait_for "the old pod stops once the new one is ready" 15 bash -c "! '$dl' get pods -A --config '$cfg' | grep -q '$old'"
wait_for "surge v2 ready" 10 pod_shows surge ' 1/1 +Running '
rm -f "$man/surge.yaml"

# 4b. A pod of an older revision (OnDelete keeps it) is probed by its own
#     template, also after an agent restart: the template comes from the
#     revision history (kubelet probes each pod by its own spec).
touch "$work/od-ready"
write_manifest ondelete.yaml ondelete "          readinessProbe:
            exec: {command: [test, -f, $work/od-ready]}
            periodSeconds: 1" "updateStrategy: {type: OnDelete}"
wait_for "ondelete v1 ready" 10 pod_shows ondelete ' 1/1 +Running '
write_manifest ondelete.yaml ondelete "          readinessProbe:
            exec: {command: [test, -f, $work/od-never]}
            periodSeconds: 1" "updateStrategy: {type: OnDelete}"
wait_for "ondelete revision 2 recorded" 10 grep -q 'DaemonSet it/ondelete: revision 2' "$work/agent.log"
kill -9 "$agent"
wait "$agent" 2>/dev/null
rm -f "$work/od-ready"
start_agent
wait_for "the old-revision pod is probed again after the restart" 10 pod_shows ondelete ' 0/1 +Running '
touch "$work/od-ready"
wait_for "by its own template's probe" 10 pod_shows ondelete ' 1/1 +Running '
rm -f "$man/ondelete.yaml"
wait_for "ondelete stops" 10 no_pod it ondelete

# 5. Init containers run in order, each to completion, before the main
#    container; the pod shows Init:N/M meanwhile.
init_yaml="initContainers:
        - {name: one, image: none, command: [/bin/sh, -c, 'echo one >> $work/order; while [ ! -f $work/go ]; do sleep 0.05; done']}
        - {name: two, image: none, command: [/bin/sh, -c, 'echo two >> $work/order']}"
write_manifest init.yaml init "" "" "$init_yaml" "echo main >> $work/order; $loop"
wait_for "init: Init:0/2 while the first init container runs" 10 pod_shows init ' 0/1 +Init:0/2 '
[[ $(cat "$work/order") == one ]] && ok || fail "init: something ran before the first init container finished"
"$dl" get pods -n it -o json --config "$cfg" | grepq '"initContainerStatuses"' && ok || fail "-o json: no initContainerStatuses"
touch "$work/go"
wait_for "init: main runs after both init containers" 10 pod_shows init ' 1/1 +Running '
[[ $(tr '\n' ' ' <"$work/order") == "one two main " ]] && ok || fail "init: order was $(tr '\n' ' ' <"$work/order")"
rm -f "$man/init.yaml"

# 6. A failing init container is restarted with back-off and blocks the pod:
#    Init:Error or Init:CrashLoopBackOff, RESTARTS counting it.
write_manifest initfail.yaml initfail "" "" "initContainers:
        - {name: broken, image: none, command: [/bin/sh, -c, 'exit 2']}"
wait_for "initfail: Init:CrashLoopBackOff" 15 pod_shows initfail ' 0/1 +Init:CrashLoopBackOff '
[[ $(restarts_of initfail) -ge 1 ]] && ok || fail "initfail: RESTARTS does not count the init container"
pgrep -f "it-marker-$$-initfail" >/dev/null && fail "initfail: the main container ran" || ok
rm -f "$man/initfail.yaml"

# 6b. Sidecar init containers (restartPolicy: Always, 1.28+): started, and
#     their startup probe passed, before the next init container; they run
#     beside the main container, count in READY, and restart on their own.
sc_loop='echo sidecar >> '"$work"'/sc-order; trap \"exit 0\" TERM; while true; do sleep 0.2; done'
write_manifest sidecar.yaml sidecar "" "" "initContainers:
        - name: proxy
          image: none
          restartPolicy: Always
          command: [/bin/sh, -c, \"$sc_loop\", it-marker-$$-proxy]
          startupProbe:
            exec: {command: [test, -f, $work/sc-started]}
            periodSeconds: 1
            failureThreshold: 100
        - {name: setup, image: none, command: [/bin/sh, -c, 'echo setup >> $work/sc-order']}" \
    "echo main >> $work/sc-order; $loop"
wait_for "sidecar: Init:0/2 until its startup probe passes" 10 pod_shows sidecar ' 0/2 +Init:0/2 '
[[ $(cat "$work/sc-order") == sidecar ]] && ok || fail "sidecar: the next init container ran before the sidecar started"
touch "$work/sc-started"
wait_for "sidecar: 2/2 Running with the main container" 10 pod_shows sidecar ' 2/2 +Running +0 '
[[ $(tr '\n' ' ' <"$work/sc-order") == "sidecar setup main " ]] && ok || fail "sidecar: order was $(tr '\n' ' ' <"$work/sc-order")"
main_pid=$(pid_of sidecar)
proxy_pid=$(pid_of proxy)
[[ -n $proxy_pid ]] && kill -9 "$proxy_pid"
wait_for "sidecar: a killed sidecar is restarted (RESTARTS counts it)" 15 bash -c "'$dl' get pods -n it --config '$cfg' | grep -E '^it +sidecar-.* 2/2 +Running +1 '"
[[ $(pid_of sidecar) == "$main_pid" ]] && ok || fail "sidecar: the main container restarted with the sidecar"
"$dl" get pods -n it -o json --config "$cfg" | grepq '"name": "proxy"' && ok || fail "-o json: no sidecar status"
# A lost database: the pod is rebuilt from its containers' labels, the
# sidecar and the main container adopted, the completed init container not
# run again.
proxy_pid=$(pid_of proxy)
order=$(tr '\n' ' ' <"$work/sc-order")
kill -TERM "$agent"
wait "$agent" 2>/dev/null
head -c 8192 /dev/urandom >"$state/daemonlet.db"
rm -f "$state/daemonlet.db-wal" "$state/daemonlet.db-shm"
start_agent
wait_for "sidecar: rebuilt after a lost database, 2/2 Running" 15 pod_shows sidecar ' 2/2 +Running '
[[ $(pid_of sidecar) == "$main_pid" && $(pid_of proxy) == "$proxy_pid" ]] && ok ||
    fail "sidecar: the rebuild restarted a container"
[[ $(tr '\n' ' ' <"$work/sc-order") == "$order" ]] && ok ||
    fail "sidecar: the rebuild ran something again: $order -> $(tr '\n' ' ' <"$work/sc-order")"
rm -f "$man/sidecar.yaml"
wait_for "sidecar stops" 10 no_pod it sidecar

# 7. SIGTERM: probes and their timers are closed; the agent exits cleanly
#    (uv_loop_close succeeded: no "handles still open" warning).
kill -TERM "$agent"
wait "$agent"
rc=$?
agent=
[[ $rc -eq 0 ]] && ok || fail "the agent exited with $rc"
grep -q 'handles still open' "$work/agent.log" && fail "the loop closed with handles open" || ok

finish
