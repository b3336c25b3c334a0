#!/usr/bin/env bash
# bench_stall against Debian's containerd, started as tests/agent/test_cri.sh
# starts it (tests/agent/cri_lib.sh: its own root, socket and tini), with the
# busybox and pause images imported:
#   BENCH_STALL=build/dev/bench/bench_stall DAEMONLET=build/dev/agent/daemonlet \
#     NOTIFY_LISTEN=build/dev/tests/notify_listen \
#     bench/bench_stall_cri.sh [--slow-ms N] [bench_stall options]
# --slow-ms N (issue 12 §7, a CRI endpoint that answers slowly): the agent
# talks to containerd through bench/slow_proxy (SLOW_PROXY, default next to
# BENCH_STALL), which holds each chunk of containerd's answers back N ms.
set -uo pipefail
here=$(dirname "${BASH_SOURCE[0]}")
slow_ms=
if [[ ${1:-} == --slow-ms ]]; then
    [[ ${2:-} =~ ^[0-9]+$ ]] || { echo "bench_stall_cri: --slow-ms takes milliseconds"; exit 2; }
    slow_ms=$2
    shift 2
fi
[[ $(id -u) -eq 0 ]] || { echo "bench_stall_cri: containerd needs root"; exit 1; }
containerd_bin=$(command -v containerd) || { echo "bench_stall_cri: apt-get install containerd"; exit 1; }
slow_proxy=${SLOW_PROXY:-$(dirname "$BENCH_STALL")/slow_proxy}
if [[ -n $slow_ms && ! -x $slow_proxy ]]; then
    echo "bench_stall_cri: --slow-ms needs $slow_proxy (build the slow_proxy target)"
    exit 1
fi
source "$here/../tests/agent/lib.sh"
source "$here/../tests/agent/cri_lib.sh"
proxy_pid=
trap '[[ -n $proxy_pid ]] && kill "$proxy_pid" 2>/dev/null; cri_cleanup' EXIT
start_containerd
wait_for "containerd answers" 30 containerd_up || exit 1
import_images || { echo "bench_stall_cri: cannot import the images"; exit 1; }
endpoint=$sock
if [[ -n $slow_ms ]]; then
    endpoint=$work/slow.sock
    "$slow_proxy" --listen "$endpoint" --upstream "$sock" --delay-ms "$slow_ms" 2>"$work/slow_proxy.log" &
    proxy_pid=$!
    wait_for "slow_proxy listens" 10 test -S "$endpoint" || exit 1
fi
"$BENCH_STALL" --runtime cri --endpoint "unix://$endpoint" --daemonlet "$DAEMONLET" --work-parent "$work" "$@"
