#!/usr/bin/env bash
# bench_metrics: what /metrics costs the agent (issue 16 §2). The same agent
# (exec runtime, N DaemonSets running) measured twice over the same window:
# metricsBindAddress "" (off), then on and scraped every 15 s (Prometheus's
# default scrape_interval) with curl as the scraper. Prints the agent's RSS
# at the end of the window, its peak RSS (VmHWM) and its CPU time over the
# window (/proc/PID/schedstat: nanoseconds on a CPU, finer than utime +
# stime's 10 ms ticks) for each, and the size of one
# scrape. docs/figures.md records the figures with the machine and command.
#
#   bench/bench_metrics.sh [--daemonlet PATH] [--pods N] [--window SECONDS]
#
# PATH defaults to build/release/agent/daemonlet (its daemonlet-shim next
# to it). The window waits by design (it is what is measured); the start
# waits on a condition with a deadline.
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
dl=$repo/build/release/agent/daemonlet
pods=10
window=120
while (($#)); do
    case $1 in
    --daemonlet) dl=$2; shift 2 ;;
    --pods) pods=$2; shift 2 ;;
    --window) window=$2; shift 2 ;;
    *) echo "usage: $0 [--daemonlet PATH] [--pods N] [--window SECONDS]" >&2; exit 2 ;;
    esac
done
[[ -x $dl ]] || { echo "bench_metrics: $dl is not built" >&2; exit 1; }

work=$(mktemp -d /tmp/daemonlet-bench-metrics.XXXXXX)
agent=
cleanup() {
    [[ -n $agent ]] && kill -9 "$agent" 2>/dev/null
    pkill -KILL -f "daemonlet-shim.*$work" 2>/dev/null || true
    pkill -KILL -f "bench-metrics-marker-$$" 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT

source "$(dirname "${BASH_SOURCE[0]}")/../tests/free_port.sh"

cpu_ns() { awk '{print $1}' "/proc/$1/schedstat"; }
kib() { awk -v k="$2" '$1 == k":" {print $2}' "/proc/$1/status"; }

# run LABEL ADDRESS: prints "LABEL rss_kib hwm_kib cpu_ms scrapes bytes"
run() {
    local label=$1 address=$2 man=$work/$1/manifests state=$work/$1/state cfg=$work/$1/config.yaml
    mkdir -p "$man" "$state"
    cat >"$cfg" <<EOF
nodeName: bench-node
manifestDir: $man
stateDir: $state
metricsBindAddress: "$address"
EOF
    for i in $(seq "$pods"); do
        cat >"$man/ds-$i.yaml" <<EOF
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: ds-$i, namespace: bench}
spec:
  selector: {matchLabels: {app: ds-$i}}
  template:
    metadata: {labels: {app: ds-$i}}
    spec:
      containers:
        - name: main
          image: none
          command: ["/bin/sh", "-c", "trap 'exit 0' TERM; while true; do sleep 5; done", "bench-metrics-marker-$$"]
EOF
    done
    "$dl" run --config "$cfg" >"$work/$label.log" 2>&1 &
    agent=$!
    local deadline=$((SECONDS + 60))
    until (($("$dl" get pods -A --config "$cfg" 2>/dev/null | grep -c ' Running ') == pods)); do
        ((SECONDS < deadline)) || { echo "bench_metrics: $label: the pods did not all run within 60 s" >&2; exit 1; }
        sleep 0.2
    done
    local t0 c0 scrapes=0 bytes=0 next=0
    t0=$SECONDS
    c0=$(cpu_ns "$agent")
    while ((SECONDS - t0 < window)); do
        if [[ -n $address ]] && ((SECONDS - t0 >= next)); then
            bytes=$(curl -s "http://$address/metrics" | wc -c)
            scrapes=$((scrapes + 1))
            next=$((next + 15))
        fi
        sleep 1
    done
    local c1 rss hwm
    c1=$(cpu_ns "$agent")
    rss=$(kib "$agent" VmRSS)
    hwm=$(kib "$agent" VmHWM)
    kill "$agent"
    wait "$agent" 2>/dev/null || true
    agent=
    pkill -KILL -f "daemonlet-shim.*$work/$label" 2>/dev/null || true
    pkill -KILL -f "bench-metrics-marker-$$" 2>/dev/null || true
    echo "$label $rss $hwm $(((c1 - c0) / 1000000)) $scrapes $bytes"
}

echo "bench_metrics: $dl, exec runtime, $pods pods, ${window} s window, scrape every 15 s"
off=$(run off "")
on=$(run on "127.0.0.1:$(free_port)")
printf '%-34s %12s %12s\n' "" "off" "on, scraped"
read -r _ rss0 hwm0 cpu0 _ _ <<<"$off"
read -r _ rss1 hwm1 cpu1 n1 b1 <<<"$on"
printf '%-34s %9s KiB %9s KiB\n' "agent RSS at the end" "$rss0" "$rss1"
printf '%-34s %9s KiB %9s KiB\n' "agent peak RSS (VmHWM)" "$hwm0" "$hwm1"
printf '%-34s %10s ms %10s ms\n' "agent CPU over the window" "$cpu0" "$cpu1"
printf '%-34s %12s %12s\n' "scrapes" "0" "$n1"
printf '%-34s %12s %10s B\n' "one scrape" "-" "$b1"
