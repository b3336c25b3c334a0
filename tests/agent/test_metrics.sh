#!/usr/bin/env bash
# The agent's /metrics and /healthz (issue 16 §2), scraped by a real
# Prometheus (Debian's prometheus, started here on loopback with a
# configuration this script writes, its storage in the work directory),
# and checked through Prometheus's own HTTP query API (/api/v1/query):
# the series are there and move as the scenario goes (a pod starts, a
# container crash-loops, the API server goes away). `promtool check metrics`
# passes on a scrape. Every wait polls the query API until the value is
# right or a deadline passes; no fixed sleep.
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
: "${FAKE_APISERVER:?}"
for tool in prometheus promtool jq curl ss openssl; do
    command -v "$tool" >/dev/null || {
        echo "$tool is missing (scripts/setup.sh installs it)"
        exit 1
    }
done

fake=
prom=
cleanup_metrics() {
    [[ -n ${KEEP_LOGS:-} ]] && cp "$work"/*.log "$KEEP_LOGS"/ 2>/dev/null
    [[ -n $fake ]] && kill "$fake" 2>/dev/null
    [[ -n $prom ]] && kill "$prom" 2>/dev/null && wait "$prom" 2>/dev/null
    cleanup
}
trap cleanup_metrics EXIT

mport=$(free_port)
pport=$(free_port)
while [[ $pport == "$mport" ]]; do pport=$(free_port); done

# --- The test API server (as tests/agent/test_cluster.sh starts it).
start_test_apiserver
write_kubeconfig "$work/kubeconfig" "$port"

metrics_bind=127.0.0.1:$mport
write_config "{board: \"true\"}" "[]"
cat >>"$cfg" <<EOF
apiServer:
  kubeconfig: $work/kubeconfig
  requestTimeout: 3s
EOF

# --- Prometheus, scraping the agent every second.
cat >"$work/prometheus.yml" <<EOF
global: {scrape_interval: 1s, evaluation_interval: 1s}
scrape_configs:
  - job_name: daemonlet
    static_configs: [{targets: ["127.0.0.1:$mport"]}]
EOF
promtool check config "$work/prometheus.yml" >/dev/null || {
    echo "FAIL: promtool rejects the test's configuration"
    exit 1
}
prometheus --config.file="$work/prometheus.yml" --storage.tsdb.path="$work/prom" \
    --web.listen-address="127.0.0.1:$pport" >"$work/prometheus.log" 2>&1 &
prom=$!

# query EXPR: the first sample's value ("" when none).
query() {
    curl -sS --max-time 5 "http://127.0.0.1:$pport/api/v1/query" --data-urlencode "query=$1" |
        jq -r '.data.result[0].value[1] // empty'
}
# holds EXPR: Prometheus returns at least one sample for EXPR (a comparison
# such as "x >= 1" returns none while it does not hold).
holds() { [[ -n $(query "$1") ]]; }
export pport
export -f query holds

start_agent
wait_for "/healthz answers 200 ok" 10 bash -c "[[ \$(curl -s -o /dev/stderr -w '%{http_code}' \
    http://127.0.0.1:$mport/healthz 2>&1) == ok200 ]]"

# promtool lints a scrape (names, types, HELP, histogram series).
curl -s "http://127.0.0.1:$mport/metrics" >"$work/scrape.txt"
if promtool check metrics <"$work/scrape.txt" >"$work/promtool.txt" 2>&1; then ok; else
    fail "promtool check metrics: $(cat "$work/promtool.txt")"
fi
# The limits: a request larger than 8 KiB is refused, an unknown path is 404.
code=$(curl -s -o /dev/null -w '%{http_code}' -H "X-Big: $(head -c 9000 /dev/zero | tr '\0' a)" \
    "http://127.0.0.1:$mport/metrics")
[[ $code == 431 ]] && ok || fail "a 9 KB request: HTTP $code, expected 431"
code=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$mport/nope")
[[ $code == 404 ]] && ok || fail "an unknown path: HTTP $code, expected 404"
code=$(curl -s -o /dev/null -w '%{http_code}' -X POST "http://127.0.0.1:$mport/metrics")
[[ $code == 405 ]] && ok || fail "a POST: HTTP $code, expected 405"

# Prometheus scrapes it.
wait_for "Prometheus scrapes the agent (up == 1)" 30 holds 'up{job="daemonlet"} == 1'
for series in kubelet_running_pods 'kubelet_running_containers{container_state="running"}' \
    kubelet_pleg_relist_duration_seconds_count daemonlet_store_writes_total daemonlet_store_bytes \
    daemonlet_loop_stall_seconds_count daemonlet_apiserver_connected daemonlet_apiserver_relists_total; do
    wait_for "Prometheus has $series" 10 holds "$series"
done
# Connected after 3 s of a working link (core/connectivity.h's hysteresis).
wait_for "the API server link shows connected" 30 holds 'daemonlet_apiserver_connected == 1'
wait_for "a relist was counted" 10 holds 'daemonlet_apiserver_relists_total >= 1'

# 1. A pod starts: running pods goes up, its start duration and the
# runtime's start operation are counted.
loop='trap \"exit 0\" TERM; while true; do sleep 0.2; done'
store_flushes() { curl -s "http://127.0.0.1:$mport/metrics" | awk '$1 == "daemonlet_store_flushes_total" { print $2 }'; }
flushes0=$(store_flushes)
[[ $flushes0 =~ ^[0-9]+$ ]] && ok || fail "daemonlet_store_flushes_total: '$flushes0'"
write_ds steady.yaml steady "$loop" "" "" "          readinessProbe:
            exec: {command: [/bin/true]}
            periodSeconds: 1"
wait_for "steady runs" 20 pod_running it steady
# Its revision recorded is flushed (rollout history shows it: it holds
# across a power cut; operating.md "Bad days").
flushed_since() { local n; n=$(store_flushes); [[ $n =~ ^[0-9]+$ ]] && ((n > $1)); }
wait_for "the revision recorded is flushed" 10 flushed_since "$flushes0"
wait_for "kubelet_running_pods goes to 1" 30 holds 'kubelet_running_pods == 1'
wait_for "the pod's start duration is observed" 10 holds 'kubelet_pod_start_duration_seconds_count >= 1'
wait_for "start_container operations are counted" 10 \
    holds 'kubelet_runtime_operations_total{operation_type="start_container"} >= 1'
wait_for "the DaemonSet is counted by source and decision" 10 \
    holds 'daemonlet_daemonsets{source="file",decision="run"} == 1'

# Its readiness probe's runs, labelled by DaemonSet and container (never by pod).
wait_for "prober_probe_total counts the readiness probe's successes" 20 \
    holds 'prober_probe_total{probe_type="Readiness",result="successful",namespace="it",daemonset="steady",container="main"} >= 2'

# Its rollout completed once it was ready: counted once for its hash.
wait_for "the completed rollout is counted" 20 holds 'daemonlet_rollouts_completed_total == 1'
rollouts_completed() { curl -s "http://127.0.0.1:$mport/metrics" | awk '$1 == "daemonlet_rollouts_completed_total" { print $2 }'; }

# 2. A container crash-loops: its restarts go up, and it is seen waiting in
# CrashLoopBackOff (crashLoopBackoff 300ms..2s in write_config).
write_ds crash.yaml crash "exit 1"
wait_for "restarts of the crashing DaemonSet go up" 60 \
    holds 'daemonlet_container_restarts_total{namespace="it",daemonset="crash"} >= 3'
wait_for "the crash loop shows" 60 \
    holds 'max_over_time(daemonlet_containers_crash_looping{daemonset="crash"}[5m]) >= 1'
wait_for "the exits' container_status operations are counted" 10 \
    holds 'kubelet_runtime_operations_total{operation_type="container_status"} >= 3'
wait_for "running pods still counts steady only" 10 holds 'kubelet_running_pods == 1'
# Every restart above was a reconcile: a completion is counted once per
# DaemonSet's hash, not per reconcile: steady's, and crash's if its pod (no
# readiness probe: ready while it runs) was seen available between exits.
n=$(rollouts_completed)
[[ $n =~ ^[12]$ ]] && ok ||
    fail "daemonlet_rollouts_completed_total after the crash loop's reconciles: '$n', expected 1 or 2"

# 3. The API server goes away: the link's metric drops to 0.
kill "$fake"
wait "$fake" 2>/dev/null
fake=
wait_for "the API server link shows disconnected" 90 holds 'daemonlet_apiserver_connected == 0'

# No label carries a pod uid: the series' label values are bounded.
curl -s "http://127.0.0.1:$mport/metrics" >"$work/scrape2.txt"
uids=$("$dl" get pods -A --config "$cfg" -o json 2>/dev/null | jq -r '.items[].metadata.uid' 2>/dev/null)
leaked=0
for u in $uids; do grep -qF "$u" "$work/scrape2.txt" && leaked=1; done
[[ $leaked == 0 ]] && ok || fail "a pod uid appears in /metrics"
code=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$mport/healthz")
[[ $code == 200 ]] && ok || fail "/healthz without the API server: HTTP $code, expected 200"

finish
