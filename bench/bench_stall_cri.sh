#!/usr/bin/env bash
# bench_stall against Debian's containerd, started as tests/agent/test_cri.sh
# starts it (tests/agent/cri_lib.sh: its own root, socket and tini), with the
# busybox and pause images imported:
#   BENCH_STALL=build/dev/bench/bench_stall DAEMONLET=build/dev/agent/daemonlet \
#     NOTIFY_LISTEN=build/dev/tests/notify_listen \
#     bench/bench_stall_cri.sh [bench_stall options]
set -uo pipefail
here=$(dirname "${BASH_SOURCE[0]}")
[[ $(id -u) -eq 0 ]] || { echo "bench_stall_cri: containerd needs root"; exit 1; }
containerd_bin=$(command -v containerd) || { echo "bench_stall_cri: apt-get install containerd"; exit 1; }
source "$here/../tests/agent/lib.sh"
source "$here/../tests/agent/cri_lib.sh"
start_containerd
wait_for "containerd answers" 30 containerd_up || exit 1
import_images || { echo "bench_stall_cri: cannot import the images"; exit 1; }
"$BENCH_STALL" --runtime cri --endpoint "unix://$sock" --daemonlet "$DAEMONLET" --work-parent "$work" "$@"
