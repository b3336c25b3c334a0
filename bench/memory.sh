#!/usr/bin/env bash
# memory: the agent under a memory limit (issue 15 §5). This build's agent
# runs in a memory cgroup of 32 MiB (no swap) with 200 DaemonSets, half from
# manifest files and half from the test API server, through the kill -9
# storm of tests/agent/test_storm.sh (the agent SIGKILLed at random points
# while DaemonSets change, then a clean agent that must converge), and then
# meets the largest inputs each source may send it: a manifest file at the
# 3 MiB limit (refused), a valid one just under it, a list response and a
# watch event beyond theirs. It must
# never be OOM-killed.
#
#   bench/memory.sh [--build DIR] [--daemonsets N] [--batches B] [--kills K] [--seed S] [--limit-mib M]
#
# DIR defaults to build/dev (daemonlet, daemonlet-shim, notify_listen and
# fake_apiserver built there; `--build build/release` for a board's build).
# N DaemonSets (default 200: N/2 files, N/2 on the server), B batches
# (default 4) of K kills (default 5), a limit of M MiB (default 32).
# Needs root and a memory controller: cgroup v2 (a child of
# /sys/fs/cgroup with memory.max, memory.swap.max 0) or, on a v1 or hybrid
# hierarchy, the v1 memory controller (a child of this shell's memory
# cgroup with memory.limit_in_bytes, memory.memsw.limit_in_bytes).
#
# What is limited is the agent alone, as a unit's MemoryMax would be with
# a runtime that puts containers in cgroups of their own (runc, CRI): the
# agent's daemonlet-shim is a wrapper that moves itself into a sibling
# cgroup without a limit before it execs this build's shim, so that the
# 200 shims and their containers are not counted. (With the exec runtime
# under systemd the shims stay in the unit's cgroup: a MemoryMax there
# must count them too, about 100 KiB each; figures.md.)
#
# Prints one JSON line last: the cgroup's peak (memory.peak or
# memory.max_usage_in_bytes: page cache included, which the kernel reclaims
# at the limit rather than failing), the sampled peak of its anonymous
# memory (heap, stacks: what cannot be reclaimed without swap), the OOM
# events and kills (memory.events or memory.oom_control), the highest VmHWM
# of any agent and the last agent's VmRSS, and the storm's counts. Exits 1
# on an OOM kill, a failed convergence or a lost agent, 2 on bad usage, 77
# where it cannot run (no root, no memory controller).
set -uo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build=$repo/build/dev
daemonsets=200
batches=4
kills_per_batch=5
seed=
limit_mib=32
usage() {
    echo "usage: $0 [--build DIR] [--daemonsets N] [--batches B] [--kills K] [--seed S] [--limit-mib M]" >&2
    exit 2
}
while (($#)); do
    case $1 in
    --build) build=$2; shift 2 ;;
    --daemonsets) daemonsets=$2; shift 2 ;;
    --batches) batches=$2; shift 2 ;;
    --kills) kills_per_batch=$2; shift 2 ;;
    --seed) seed=$2; shift 2 ;;
    --limit-mib) limit_mib=$2; shift 2 ;;
    *) usage ;;
    esac
done
build=$(cd "$build" && pwd) || exit 2
for b in agent/daemonlet platform/daemonlet-shim tests/notify_listen tests/fake_apiserver; do
    [[ -x $build/$b ]] || { echo "memory: $build/$b is not built" >&2; exit 1; }
done
[[ $(id -u) -eq 0 ]] || { echo "memory: SKIPPED: a memory cgroup needs root" >&2; exit 77; }
for t in jq curl openssl; do
    command -v "$t" >/dev/null || { echo "memory: $t is missing (scripts/setup.sh installs it)" >&2; exit 1; }
done

# --- The cgroups: $limited (the agent) and $pods (the shims), siblings.
limit_bytes=$((limit_mib * 1024 * 1024))
cg_version=
limited=
pods_cg=
if [[ $(stat -fc %T /sys/fs/cgroup) == cgroup2fs ]] && grep -qw memory /sys/fs/cgroup/cgroup.controllers; then
    cg_version=2
    grep -qw memory /sys/fs/cgroup/cgroup.subtree_control || echo +memory >/sys/fs/cgroup/cgroup.subtree_control
    limited=/sys/fs/cgroup/daemonlet-bench-memory.$$
    pods_cg=/sys/fs/cgroup/daemonlet-bench-memory-pods.$$
elif [[ -d /sys/fs/cgroup/memory ]] && own=$(awk -F: '$2 ~ /(^|,)memory(,|$)/ {print $3}' /proc/self/cgroup) &&
    [[ -n $own && -w /sys/fs/cgroup/memory$own ]]; then
    cg_version=1
    own=${own%/}
    limited=/sys/fs/cgroup/memory$own/daemonlet-bench-memory.$$
    pods_cg=/sys/fs/cgroup/memory$own/daemonlet-bench-memory-pods.$$
else
    echo "memory: SKIPPED: no memory controller (cgroup v2 with memory, or v1's memory hierarchy)" >&2
    exit 77
fi
mkdir "$limited" "$pods_cg" || exit 1
cgroup_cleanup() {
    local cg pid tries
    for cg in "$limited" "$pods_cg"; do
        [[ -d $cg ]] || continue
        for ((tries = 0; tries < 50; tries++)); do
            [[ -n $(cat "$cg/cgroup.procs") ]] || break  # cgroupfs files have no size: not -s
            while read -r pid; do kill -9 "$pid" 2>/dev/null; done <"$cg/cgroup.procs"
            sleep 0.2
        done
        rmdir "$cg" 2>/dev/null || echo "memory: could not remove $cg" >&2
    done
}
if ((cg_version == 2)); then
    echo "$limit_bytes" >"$limited/memory.max" || exit 1
    [[ -e $limited/memory.swap.max ]] && echo 0 >"$limited/memory.swap.max"
else
    echo "$limit_bytes" >"$limited/memory.limit_in_bytes" || exit 1
    [[ -e $limited/memory.memsw.limit_in_bytes ]] && echo "$limit_bytes" >"$limited/memory.memsw.limit_in_bytes"
    echo 0 >"$limited/memory.swappiness" 2>/dev/null
fi
# cg_peak, cg_anon, cg_ooms, cg_oom_kills: the limited cgroup's figures.
cg_peak() {
    if ((cg_version == 2)); then
        cat "$limited/memory.peak" 2>/dev/null || echo null
    else
        cat "$limited/memory.max_usage_in_bytes"
    fi
}
cg_anon() {
    if ((cg_version == 2)); then
        awk '$1 == "anon" {print $2}' "$limited/memory.stat"
    else
        awk '$1 == "total_rss" {print $2}' "$limited/memory.stat"
    fi
}
cg_ooms() {  # times the limit was reached with nothing left to reclaim
    if ((cg_version == 2)); then
        awk '$1 == "oom" {print $2}' "$limited/memory.events"
    else
        # v1 counts no OOM events: the times the limit was hit (reclaim ran).
        cat "$limited/memory.failcnt"
    fi
}
cg_oom_kills() {
    if ((cg_version == 2)); then
        awk '$1 == "oom_kill" {print $2}' "$limited/memory.events"
    else
        awk '$1 == "oom_kill" {print $2}' "$limited/memory.oom_control"
    fi
}

# --- The work directory, the API server and the agent (tests/agent/lib.sh).
export DAEMONLET=$build/agent/daemonlet NOTIFY_LISTEN=$build/tests/notify_listen FAKE_APISERVER=$build/tests/fake_apiserver
source "$repo/tests/agent/lib.sh"
source "$repo/tests/agent/cluster_lib.sh"
sampler=
trap 'trap "" INT TERM; cleanup_cluster; [[ -n $sampler ]] && kill "$sampler" 2>/dev/null; cgroup_cleanup' EXIT
trap 'exit 130' INT TERM  # the EXIT trap cleans up

# The agent's copy, so that its daemonlet-shim (found next to it) is the
# wrapper that leaves the limited cgroup.
mkdir -p "$work/bin"
cp "$build/agent/daemonlet" "$work/bin/daemonlet"
cat >"$work/bin/daemonlet-shim" <<EOF
#!/bin/sh
echo \$\$ >$pods_cg/cgroup.procs || exit 1
exec $build/platform/daemonlet-shim "\$@"
EOF
chmod 755 "$work/bin/daemonlet-shim"
dl=$work/bin/daemonlet
# The agent starts in the limited cgroup: a subshell moves itself there and
# execs it (lib.sh's start_agent, in the cgroup).
start_agent() {
    (
        echo "$BASHPID" >"$limited/cgroup.procs" || exit 1
        NOTIFY_SOCKET=$work/notify.sock exec "$dl" run --config "$cfg" >>"$agent_log" 2>&1
    ) &
    agent=$!
}

seed=${seed:-$(($(date +%s%N) % 1000000))}
RANDOM=$seed
echo "memory: seed $seed, $daemonsets DaemonSets, cgroup v$cg_version $limited, limit $limit_mib MiB"

"$listen" "$work/notify.sock" "$work/notify.log" &
listener=$!
wait_for "notify listener up" 5 test -S "$work/notify.sock"
start_fake
write_config "{board: \"true\"}" "[]"
api_server_config

# The anonymous memory of the limited cgroup, sampled every 100 ms.
(
    max=0
    while :; do
        a=$(cg_anon)
        ((a > max)) && { max=$a; echo "$max" >"$work/anon.max"; }
        sleep 0.1
    done
) &
sampler=$!

# --- The DaemonSets: f000.. in files, a000.. on the server. A version's
# container is a sleep (v=N names it); non-matching versions select another
# board.
files=() apis=()
for ((i = 0; i < daemonsets / 2; i++)); do files+=("$(printf f%03d "$i")"); done
for ((i = 0; i < daemonsets - daemonsets / 2; i++)); do apis+=("$(printf a%03d "$i")"); done
all=("${files[@]}" "${apis[@]}")
declare -A src  # name -> absent | v<N> | n<N>
version=0
script_of() { echo "v=$1; exec sleep 100000"; }
not_here='nodeSelector: {board: "false"}'
set_ds() {  # set_ds NAME v|n|absent
    local n=$1
    if [[ $2 == absent ]]; then
        if [[ $n == f* ]]; then rm -f "$man/$n.yaml"; else delete_ds "$n"; fi
        src[$n]=absent
        return
    fi
    version=$((version + 1))
    if [[ $n == f* ]]; then
        if [[ $2 == v ]]; then write_ds "$n.yaml" "$n" "$(script_of $version)"; else
            write_ds "$n.yaml" "$n" "$(script_of $version)" "$not_here"; fi
    else
        if [[ $2 == v ]]; then put_ds "$n" "$(script_of $version)"; else
            put_ds "$n" "$(script_of $version)" '{"nodeSelector": {"board": "false"}}'; fi
    fi
    src[$n]=$2$version
}
for n in "${all[@]}"; do set_ds "$n" v; done
# One random change: a new template (6 in 10), a non-matching one (2 in
# 10), a removal (2 in 10; an absent one comes back).
mutate() {
    local n=${all[RANDOM % ${#all[@]}]} kind=$((RANDOM % 10))
    if [[ ${src[$n]} == absent || $kind -lt 6 ]]; then set_ds "$n" v
    elif ((kind < 8)); then set_ds "$n" n
    else set_ds "$n" absent; fi
}

# Converged: `get ds` lists exactly the sources' DaemonSets at their
# versions, each matching one with one pod of its latest template, Running.
expected_json() {
    local n
    for n in "${all[@]}"; do printf '%s %s\n' "$n" "${src[$n]}"; done |
        jq -Rn '[inputs | split(" ") | select(.[1] != "absent") | {key: .[0], value: .[1]}] | from_entries'
}
converged() {
    local verbose=${1:-}
    # Files, not arguments: 200 DaemonSets are past ARG_MAX's per-argument limit.
    ds_list_json >"$work/ds.json" || return 1
    pods_json >"$work/pods.json" || return 1
    expected_json >"$work/want.json"
    jq -e -n --slurpfile w "$work/want.json" --slurpfile d "$work/ds.json" --slurpfile p "$work/pods.json" \
        --arg v "$verbose" '$w[0] as $want | $d[0] as $ds | $p[0] as $pods
        | ($ds.items | map({key: .metadata.name, value:
            ((if .spec.template.spec.nodeSelector.board == "false" then "n" else "v" end)
             + (.spec.template.spec.containers[0].command[2] | capture("^v=(?<v>[0-9]+);").v))}) | from_entries) as $have
        | ([$ds.items[] | select(.spec.template.spec.nodeSelector.board != "false")
            | select(.status.currentNumberScheduled != 1 or .status.updatedNumberScheduled != 1
                     or .status.numberMisscheduled != 0) | .metadata.name]) as $stale
        | ([$pods.items[] | select(.status.phase == "Running")] | length) as $running
        | ([$want[] | select(startswith("v"))] | length) as $should
        | if $have == $want and ($stale | length) == 0 and $running == $should and ($pods.items | length) == $should
          then true
          else (if $v != "" then
                  ("  differ: " + ([$want | keys[] | select($have[.] != $want[.]) | "\(.) \($have[.] // "none") not \($want[.])"] | .[:10] | join(", ")))
                  + ("; extra: " + ([$have | keys[] | select($want[.] == null)] | join(" ")))
                  + "; stale: \($stale[:10] | join(" ")); running \($running) of \($should), \($pods.items | length) pods"
                  | stderr else . end) | false end' >/dev/null
}

# The agent's VmHWM and VmRSS (kB), read before its kill.
hwm_max=0 rss_last=0
read_agent_memory() {
    local h r
    h=$(awk '$1 == "VmHWM:" {print $2}' "/proc/$agent/status" 2>/dev/null) || return 0
    r=$(awk '$1 == "VmRSS:" {print $2}' "/proc/$agent/status" 2>/dev/null)
    [[ -n $h ]] && ((h > hwm_max)) && hwm_max=$h
    [[ -n $r ]] && rss_last=$r
}
agent_alive() { kill -0 "$agent" 2>/dev/null; }
lost=0
kill_agent() {
    read_agent_memory
    agent_alive || { lost=$((lost + 1)); fail "agent $agents died before its kill (oom_kill: $(cg_oom_kills))"; }
    stop_agent KILL
}

failures=0 kills=0 before_ready=0 mid_change=0 mid_rollout=0
started=$SECONDS
# The first start: every pod running.
start_own_agent
if wait_for "the first agent runs all $daemonsets pods" 300 converged; then
    echo "memory: first start converged in $((SECONDS - started)) s, VmRSS $(awk '$1 == "VmRSS:" {print $2}' "/proc/$agent/status") kB"
else
    converged -v
    failures=$((failures + 1))
fi
read_agent_memory
first_rss=$rss_last
kill_agent

sleep_ms() { sleep "$(printf '%d.%03d' $(($1 / 1000)) $(($1 % 1000)))"; }
for ((b = 1; b <= batches; b++)); do
    for ((k = 0; k < kills_per_batch; k++)); do
        changes=$((RANDOM % 4))
        for ((c = 0; c < changes; c++)); do mutate; done
        readies=$(ready_count)
        start_own_agent
        case $((RANDOM % 3)) in
        0)  # before READY (adoption of 200 shims)
            sleep_ms $((RANDOM % 600))
            before_ready=$((before_ready + 1)) ;;
        1)  # a change seen by a READY agent: mid-reconcile
            wait_ready "$readies"
            mutate
            sleep_ms $((RANDOM % 1500))
            mid_change=$((mid_change + 1)) ;;
        2)  # several changes: mid-rollout
            wait_ready "$readies"
            for ((c = 0; c < 5; c++)); do mutate; done
            sleep_ms $((500 + RANDOM % 2500))
            mid_rollout=$((mid_rollout + 1)) ;;
        esac
        kill_agent
        kills=$((kills + 1))
    done
    start_own_agent
    if ! wait_for "batch $b converges (seed $seed)" 180 converged; then
        converged -v
        failures=$((failures + 1))
    fi
    echo "memory: batch $b: $(pods_json | jq '[.items[] | select(.status.phase == "Running")] | length') pods running," \
        "cgroup peak $(cg_peak), anon max $(cat "$work/anon.max" 2>/dev/null || echo 0), oom_kill $(cg_oom_kills)"
    kill_agent
done
storm_seconds=$((SECONDS - started))
storm_peak=$(cg_peak)
storm_anon=$(cat "$work/anon.max" 2>/dev/null || echo 0)
storm_hwm=$hwm_max

# --- The largest inputs, to a converged agent; after each it must be alive.
# revive WHAT: a dead agent is counted and replaced, so that the next input
# is measured too.
revive() {
    agent_alive && return 0
    lost=$((lost + 1))
    fail "the agent died $1 (oom_kill: $(cg_oom_kills))"
    wait "$agent" 2>/dev/null
    start_own_agent
    wait_for "a new agent converges" 180 converged || failures=$((failures + 1))
}
start_own_agent
wait_for "the agent converges before the large inputs" 180 converged || failures=$((failures + 1))
large_hwm_before=$(awk '$1 == "VmHWM:" {print $2}' "/proc/$agent/status")
# A manifest file just under the 3 MiB limit, of a shape that costs much
# parsed: a sequence of strings, just under the 50 000 values a document may
# hold, refused by the decoder after the parse (its error quotes the value).
# (A mapping of as many keys costs as much memory; its parse is linear in
# its keys since the readers index a large mapping's keys.)
{
    printf 'apiVersion: apps/v1\nkind: DaemonSet\nmetadata:\n  name: big\n  namespace: it\n  annotations:\n    big:\n'
    awk 'BEGIN { for (i = 0; i < 49900; i++) printf "      - k%07d%045d\n", i, 0 }'
} >"$work/big.yaml"
head -c $((3 * 1024 * 1024 - 1)) "$work/big.yaml" | sed '$d' >"$man/.big.yaml" && mv "$man/.big.yaml" "$man/zz-big.yaml"
big_bytes=$(stat -c %s "$man/zz-big.yaml")
wait_for "the agent reports the large file" 60 grepq -F "zz-big.yaml" "$agent_log"
rm -f "$man/zz-big.yaml"
revive "reading a $big_bytes-byte manifest"
# The largest valid file: three ConfigMaps of 10 values of 100 KiB, each at
# upstream's 1 MiB of data, just under 3 MiB; loaded, kept as the file's
# last good version and stored, then removed.
value=$(head -c 102300 /dev/zero | tr '\0' a)
for n in 0 1 2; do
    printf -- '---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: big-%d\n  namespace: it\ndata:\n' "$n"
    for k in 0 1 2 3 4 5 6 7 8 9; do printf '  key-%d: "%s"\n' "$k" "$value"; done
done >"$man/.zz-config.yaml" && mv "$man/.zz-config.yaml" "$man/zz-config.yaml"
valid_bytes=$(stat -c %s "$man/zz-config.yaml")
wait_for "the agent loads the large valid file" 60 grepq -F "zz-config.yaml: 3 ConfigMaps" "$agent_log"
rm -f "$man/zz-config.yaml"
wait_for "the agent drops the large valid file" 60 grepq -F "zz-config.yaml: removed" "$agent_log"
revive "reading a valid $valid_bytes-byte manifest"
# A list response beyond the agent's 16 MiB limit (64 MiB of it), then a
# watch whose event line exceeds its 4 MiB limit: both refused.
requests=$(requests_of list)
fault '{"match": "list", "mode": "oversized", "bytes": 67108864, "count": 1}'
end_watches true
wait_for "the agent meets the oversized list" 60 bash -c "(( \$(requests_of list) > $requests ))"
wait_for "the agent refuses the oversized list" 60 grepq -E "larger than [0-9]+ bytes" "$agent_log"
revive "on an oversized list"
clear_faults
fault '{"match": "watch", "mode": "oversized", "bytes": 16777216, "count": 1}'
end_watches false
wait_for "the agent refuses the oversized watch event" 90 grepq -E "watch event: longer than" "$agent_log"
revive "on an oversized watch event"
clear_faults
wait_for "the agent converges after the large inputs" 180 converged || { converged -v; failures=$((failures + 1)); }
read_agent_memory
large_hwm=$(awk '$1 == "VmHWM:" {print $2}' "/proc/$agent/status" 2>/dev/null || echo 0)
kill_agent

peak=$(cg_peak)
anon=$(cat "$work/anon.max" 2>/dev/null || echo 0)
ooms=$(cg_ooms)
oom_kills=$(cg_oom_kills)
kill "$sampler" 2>/dev/null
sampler=
machine="$(nproc) x $(awk -F': ' '/^model name/ {print $2; exit}' /proc/cpuinfo), Linux $(uname -r) $(uname -m)"
jq -cn --arg machine "$machine" --arg build "$build" --argjson cgv "$cg_version" --argjson limit "$limit_bytes" \
    --argjson ds "$daemonsets" --argjson seed "$seed" --argjson kills "$kills" --argjson batches "$batches" \
    --argjson br "$before_ready" --argjson mc "$mid_change" --argjson mr "$mid_rollout" \
    --argjson storm_seconds "$storm_seconds" --argjson storm_peak "${storm_peak:-null}" --argjson storm_anon "$storm_anon" \
    --argjson storm_hwm "$storm_hwm" --argjson first_rss "${first_rss:-0}" \
    --argjson peak "${peak:-null}" --argjson anon "$anon" --argjson ooms "${ooms:-0}" --argjson oom_kills "${oom_kills:-0}" \
    --argjson hwm "$hwm_max" --argjson rss "$rss_last" --argjson big "${big_bytes:-0}" --argjson valid "${valid_bytes:-0}" \
    --argjson large_before "${large_hwm_before:-0}" --argjson large_hwm "${large_hwm:-0}" \
    --argjson failures "$failures" --argjson lost "$lost" '
    {bench: "memory", machine: $machine, build: $build, cgroup: $cgv, limit_bytes: $limit,
     daemonsets: $ds, seed: $seed, kills: $kills, batches: $batches,
     kills_before_ready: $br, kills_mid_reconcile: $mc, kills_mid_rollout: $mr, storm_seconds: $storm_seconds,
     storm: {cgroup_peak_bytes: $storm_peak, anon_peak_bytes: $storm_anon, agent_vmhwm_kb: $storm_hwm},
     first_converged_vmrss_kb: $first_rss,
     large_inputs: {manifest_bytes: $big, valid_manifest_bytes: $valid, agent_vmhwm_kb_before: $large_before, agent_vmhwm_kb_after: $large_hwm},
     cgroup_peak_bytes: $peak, anon_peak_bytes: $anon, limit_hits: $ooms, oom_kills: $oom_kills,
     agent_vmhwm_kb: $hwm, agent_vmrss_kb: $rss, convergence_failures: $failures, agents_lost: $lost}'
((oom_kills == 0 && failures == 0 && lost == 0 && failed == 0))
