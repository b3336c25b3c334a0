#!/usr/bin/env bash
# Config objects' figures (issue 13 §6), on this build's agent:
#   - runc: time from a manifest change (an env value, written then
#     renamed) to the new container running, for a pod with three config
#     volumes (a ConfigMap's, a Secret's, a downwardAPI) and the
#     kube-api-access token volume (the agent follows the test API server,
#     tests/apiserver/fake_apiserver), against the same pod without any
#     (hostPath only, automountServiceAccountToken: false); the two
#     DaemonSets changed in turn, CHANGES times each, p50 and max. The
#     container's first command writes a mark into a hostPath directory,
#     polled every 5 ms. The token is the one in the agent's cache after the
#     first pod (TokenRequest is not on the path of a change).
#   - the agent's memory (VmRSS, and Pss from smaps_rollup) with 50
#     DaemonSets running, exec runtime: without config objects, and with
#     100 cached (50 ConfigMaps and 50 Secrets of 2 keys x 1 KiB, each pod
#     using one of each as a volume and by envFrom).
#
#   cmake --build build/release --target bench_config     # or, by hand, as root:
#   DAEMONLET=build/release/agent/daemonlet NOTIFY_LISTEN=build/release/tests/notify_listen \
#        FAKE_APISERVER=build/release/tests/fake_apiserver bench/bench_config.sh [CHANGES]
set -uo pipefail
here=$(dirname "${BASH_SOURCE[0]}")
changes=${1:-20}
source "$here/../tests/agent/lib.sh"
require_runc
runc_import_busybox
fake=
trap '[[ -n $fake ]] && kill "$fake" 2>/dev/null; runc_cleanup' EXIT
marks=$work/marks
mkdir -p "$marks"

die() { echo "bench_config: $*"; tail -n 20 "$agent_log" 2>/dev/null; exit 1; }
now_ns() { date +%s%N; }
wait_file() {  # wait_file PATH SECONDS: polls every 5 ms
    local deadline=$((SECONDS + $2))
    while [[ ! -e $1 ]]; do
        ((SECONDS < deadline)) || return 1
        sleep 0.005
    done
}
mark='echo > /marks/$NAME-$VERSION; trap \"exit 0\" TERM; while :; do sleep 1 & wait; done'
bench_ds() {  # bench_ds NAME VERSION: NAME config has the volumes, plain not
    local volumes="" mounts=""
    if [[ $1 == config ]]; then
        volumes="
        - {name: cm, configMap: {name: bench-cm}}
        - {name: sec, secret: {secretName: bench-secret}}
        - {name: info, downwardAPI: {items: [{path: labels, fieldRef: {fieldPath: metadata.labels}}]}}"
        mounts="
            - {name: cm, mountPath: /etc/cm}
            - {name: sec, mountPath: /etc/sec}
            - {name: info, mountPath: /etc/info}"
    fi
    DS_IMAGE=busybox write_ds "$1.yaml" "$1" "$mark" \
        "$([[ $1 == plain ]] && echo 'automountServiceAccountToken: false')
      volumes:
        - {name: marks, hostPath: {path: $marks}}$volumes" "" \
        "          env: [{name: VERSION, value: \"$2\"}, {name: NAME, value: \"$1\"}]
          imagePullPolicy: IfNotPresent
          volumeMounts:
            - {name: marks, mountPath: /marks}$mounts"
}

# 1. Start latency under runc.
start_test_apiserver
write_runc_config "$import"
follow_test_apiserver
cat >"$man/objects.yaml" <<EOF
apiVersion: v1
kind: ConfigMap
metadata: {name: bench-cm, namespace: it}
data: {a.conf: "x = 1", b.conf: "y = 2"}
---
apiVersion: v1
kind: Secret
metadata: {name: bench-secret, namespace: it}
stringData: {password: s3cret}
EOF
bench_ds plain 0
bench_ds config 0
start_agent
wait_file "$marks/plain-0" 60 || die "the first plain container did not run"
wait_file "$marks/config-0" 60 || die "the first config container did not run"
declare -a took_plain took_config
for ((i = 1; i <= changes; i++)); do
    for kind in plain config; do
        t0=$(now_ns)
        bench_ds "$kind" "$i"
        wait_file "$marks/$kind-$i" 60 || die "$kind change $i: the new container did not run within 60 s"
        eval "took_$kind+=($((($(now_ns) - t0) / 1000000)))"
    done
done
summary() {  # summary LABEL MS...
    local label=$1
    shift
    local s
    mapfile -t s < <(printf '%s\n' "$@" | sort -n)
    echo "$label: p50 ${s[$(((${#s[@]} + 1) / 2 - 1))]} ms, min ${s[0]} ms, max ${s[-1]} ms (n=${#s[@]})"
}
echo "runc, manifest change to the new container running:"
summary "  without config volumes or token          " "${took_plain[@]}"
summary "  with 3 config volumes and the token       " "${took_config[@]}"
stop_agent KILL
for id in $(rc list -q 2>/dev/null); do rc delete --force "$id" >/dev/null 2>&1; done

# 2. The agent's memory with 50 DaemonSets, exec runtime.
rss_of() {  # rss_of PID: "VmRSS KiB, Pss KiB"
    echo "VmRSS $(awk '/^VmRSS:/ {print $2}' "/proc/$1/status") KiB, Pss $(awk '/^Pss:/ {print $2}' "/proc/$1/smaps_rollup") KiB"
}
running() { [[ $("$dl" get pods -A --config "$cfg" 2>/dev/null | grep -c ' Running ') -eq $1 ]]; }
kib=$(head -c 1024 /dev/zero | tr '\0' x)
memory_run() {  # memory_run LABEL WITH_OBJECTS
    man=$work/man-$2
    state=$work/state-$2
    mkdir -p "$man"
    agent_log=$work/agent-$2.log
    write_config "{}" "[]"
    local n
    for ((n = 0; n < 50; n++)); do
        if [[ $2 == objects ]]; then
            cat >"$man/obj-$n.yaml" <<EOF
apiVersion: v1
kind: ConfigMap
metadata: {name: cm-$n, namespace: it}
data: {a: "$kib", b: "$kib"}
---
apiVersion: v1
kind: Secret
metadata: {name: sec-$n, namespace: it}
stringData: {a: "$kib", b: "$kib"}
EOF
            write_ds "ds-$n.yaml" "ds-$n" 'trap \"exit 0\" TERM; while :; do sleep 10 & wait; done' \
                "volumes: [{name: c, configMap: {name: cm-$n}}, {name: s, secret: {secretName: sec-$n}}]" "" \
                "          envFrom: [{configMapRef: {name: cm-$n}}, {secretRef: {name: sec-$n}}]"
        else
            write_ds "ds-$n.yaml" "ds-$n" 'trap \"exit 0\" TERM; while :; do sleep 10 & wait; done'
        fi
    done
    start_agent
    local deadline=$((SECONDS + 120))
    until running 50; do ((SECONDS < deadline)) || die "$1: 50 pods not running within 120 s"; sleep 0.2; done
    echo "agent with 50 DaemonSets running, $1: $(rss_of "$agent")"
    stop_agent TERM
}
memory_run "no config objects          " none
memory_run "100 ConfigMaps and Secrets " objects
