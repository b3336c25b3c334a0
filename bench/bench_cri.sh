#!/usr/bin/env bash
# The CRI runtime's figures (issue 5), against Debian's containerd started
# as tests/agent/test_cri.sh starts it (tests/agent/cri_lib.sh):
#   - time from a manifest change (an env value, written then renamed) to
#     the new container running: the container's first command writes a
#     mark into a hostPath directory, polled every 5 ms; p50 and p99 over
#     CHANGES rolling updates of one DaemonSet (maxUnavailable 1: the old
#     container is stopped first, and exits at once on SIGTERM);
#   - memory of the node stack, Pss summed from /proc/<pid>/smaps_rollup:
#     the agent, containerd, its shims (containerd-shim-runc-v2), and the
#     pod sandboxes' pause processes listed apart; the containers' own
#     processes are not counted. For N = 1 and N = 10 pods (one per
#     DaemonSet), per pod, and the marginal cost of a pod from 1 to 10.
#
#   cmake --build build/dev --target bench_cri     # or, by hand, as root:
#   DAEMONLET=build/dev/agent/daemonlet NOTIFY_LISTEN=build/dev/tests/notify_listen bench/bench_cri.sh [CHANGES]
set -uo pipefail
here=$(dirname "${BASH_SOURCE[0]}")
[[ $(id -u) -eq 0 ]] || { echo "bench_cri: containerd needs root"; exit 1; }
containerd_bin=$(command -v containerd) || { echo "bench_cri: apt-get install containerd"; exit 1; }
changes=${1:-30}
source "$here/../tests/agent/lib.sh"
source "$here/../tests/agent/cri_lib.sh"
marks=$work/marks
mkdir -p "$marks"

die() { echo "bench_cri: $*"; tail -n 20 "$work/agent.log" 2>/dev/null; exit 1; }
now_ns() { date +%s%N; }
# wait_file PATH SECONDS: polls every 5 ms; fails after the deadline.
wait_file() {
    local deadline=$((SECONDS + $2))
    while [[ ! -e $1 ]]; do
        ((SECONDS < deadline)) || return 1
        sleep 0.005
    done
}
bench_ds() {  # bench_ds NAME VERSION
    DS_IMAGE=busybox:latest write_ds "$1.yaml" "$1" \
        'echo > /marks/$NAME-$VERSION; trap \"exit 0\" TERM; while :; do sleep 1 & wait; done' \
        "hostNetwork: true
      volumes: [{name: marks, hostPath: {path: $marks}}]" "" \
        "          env: [{name: VERSION, value: \"$2\"}, {name: NAME, value: \"$1\"}]
          volumeMounts: [{name: marks, mountPath: /marks}]
          imagePullPolicy: IfNotPresent"
}
pss_kib() {  # pss_kib PID...: the sum of their Pss
    local total=0 pid v
    for pid in "$@"; do
        v=$(awk '/^Pss:/ { print $2 }' "/proc/$pid/smaps_rollup" 2>/dev/null)
        total=$((total + ${v:-0}))
    done
    echo "$total"
}
sandbox_pids() {
    local id
    for id in $(c containers ls -q 'labels."io.cri-containerd.kind"==sandbox' 2>/dev/null); do
        c tasks ls 2>/dev/null | awk -v id="$id" '$1 == id { print $2 }'
    done
}
memory() {  # memory N
    local cd shims stack pause
    cd=$(pgrep -P "$containerd_pid" -x containerd)
    shims=$(pgrep -f "containerd-shim-runc-v2 .*-address $sock")
    stack=$(pss_kib "$agent" "$cd" $shims)
    pause=$(pss_kib $(sandbox_pids))
    echo "N=$1: agent $(pss_kib "$agent") KiB, containerd $(pss_kib "$cd") KiB, $(echo $shims | wc -w) shims" \
        "$(pss_kib $shims) KiB; stack $stack KiB, $((stack / $1)) KiB per pod;" \
        "pause processes $pause KiB in all"
    eval "stack_$1=$stack"
}

start_containerd
deadline=$((SECONDS + 30))
until c version >/dev/null 2>&1; do ((SECONDS < deadline)) || die "containerd did not come up"; sleep 0.05; done
import_images || die "cannot import the images"

# Image import into containerd (ctr images import, unpacked by the native
# snapshotter), from an empty store each time: `images rm --sync` lets
# containerd's garbage collection remove the content and snapshots first.
import_times() {  # import_times ARCHIVE NAME RUNS LABEL
    local i t0 ts=()
    for ((i = 0; i < $3; i++)); do
        c images rm --sync "$2" >/dev/null 2>&1
        t0=$(now_ns)
        c images import --snapshotter native "$1" >/dev/null || die "cannot import $1"
        ts+=($((($(now_ns) - t0) / 1000000)))
    done
    local s=($(printf '%s\n' "${ts[@]}" | sort -n))
    echo "image import into containerd, $4: p50 ${s[$((($3 + 1) / 2 - 1))]} ms, max ${s[-1]} ms (n=$3)"
}
EXTRA_LAYERS_MIB="16 16 16" "$here/../tests/data/make_busybox_image.sh" "$work/big.tar" example.com/bench/big:1 \
    >/dev/null || die "cannot build the bigger image"
import_times "$work/busybox.tar" docker.io/library/busybox:latest 10 "busybox (1.0 MiB archive)"
import_times "$work/big.tar" example.com/bench/big:1 3 "busybox + 3 x 16 MiB layers (49.0 MiB archive)"
c images rm --sync example.com/bench/big:1 >/dev/null 2>&1
bench_ds b0 0
start_agent
wait_file "$marks/b0-0" 60 || die "the first container did not run"

declare -a took
for ((i = 1; i <= changes; i++)); do
    t0=$(now_ns)
    bench_ds b0 "$i"
    wait_file "$marks/b0-$i" 60 || die "change $i: the new container did not run within 60 s"
    took+=($((($(now_ns) - t0) / 1000000)))
done
sorted=($(printf '%s\n' "${took[@]}" | sort -n))
pct() { local k=$(((${#sorted[@]} * $1 + 99) / 100)); echo "${sorted[$((k - 1))]}"; }
echo "manifest change to container running, $changes changes: p50 $(pct 50) ms, p99 $(pct 99) ms," \
    "min ${sorted[0]} ms, max ${sorted[-1]} ms"

memory 1
for ((n = 1; n < 10; n++)); do bench_ds "b$n" 0; done
for ((n = 1; n < 10; n++)); do wait_file "$marks/b$n-0" 120 || die "pod b$n did not run"; done
memory 10
echo "marginal cost of a pod (N=1 to 10): $(((stack_10 - stack_1) / 9)) KiB of stack Pss"
