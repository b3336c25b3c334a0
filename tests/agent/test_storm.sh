#!/usr/bin/env bash
# kill -9 at any point (issue 15 §1), in the spirit of SQLite's crash tests:
# the agent is SIGKILLed at random points (before READY, just after a
# manifest change, mid-rollout) while DaemonSets are created, changed,
# broken, fixed and removed, in the manifest directory and on the test API
# server. After every kill each database passes `PRAGMA integrity_check`;
# after each batch of kills a clean agent converges to:
# - `get ds -o json` listing exactly the directory's and the server's
#   DaemonSets (a broken file: one of the versions it had since the last
#   check, the last one the agent saw, or none if it never saw one);
# - each DaemonSet that should run on the node with exactly one pod, Running
#   and of its latest template (currentNumberScheduled = updatedNumberScheduled
#   = 1), and exactly one process of that template's script;
# - no pod and no process of a removed or non-matching DaemonSet, no shim
#   more than pods, no mount under the work directory.
# Replay: STORM_SEED=S (the seed is printed). Length: STORM_SECONDS (default
# 15) or STORM_BATCHES; bench/storm.sh runs it for as long as one wants.
# STORM_RUNTIME=runc (root, runc): the manifest directory only, a busybox
# image imported anew now and then (kills mid-import), and no runc
# container nor root filesystem mount beyond the pods.
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
source "$(dirname "${BASH_SOURCE[0]}")/cluster_lib.sh"
runtime=${STORM_RUNTIME:-exec}
[[ $runtime == exec || $runtime == runc ]] || { echo "STORM_RUNTIME: exec or runc"; exit 2; }
[[ $runtime == runc ]] && require_runc
command -v sqlite3 >/dev/null || {
    echo "sqlite3 is missing (scripts/setup.sh installs it)"
    exit 1
}

seed=${STORM_SEED:-$(($(date +%s%N) % 1000000))}
RANDOM=$seed
max_seconds=${STORM_SECONDS:-15}
max_batches=${STORM_BATCHES:-0}  # 0: as many as fit in max_seconds
kills_per_batch=${STORM_KILLS:-5}
echo "storm: seed $seed (replay with STORM_SEED=$seed)"

start_notify_listener
: >"$work/notify.log"

files=(f0 f1 f2 f3)
apis=(a0 a1 a2)
if [[ $runtime == runc ]]; then
    runc_import_busybox
    cp "$import/busybox.tar" "$work/busybox.tar"  # the copy each new import is made of
    # KEEP_LOGS=DIR keeps the logs, as cluster_lib.sh's cleanup does.
    trap '[[ -n ${KEEP_LOGS:-} ]] && cp "$work"/*.log "$KEEP_LOGS"/; runc_cleanup' EXIT
    write_runc_config "$import"
    export DS_IMAGE=busybox
    apis=()
else
    start_fake
    write_kubeconfig "$work/kubeconfig" "$port"
    write_config "{board: \"true\"}" "[]"
    cat >>"$cfg" <<EOF
apiServer:
  kubeconfig: $work/kubeconfig
  requestTimeout: 3s
EOF
fi

# The DaemonSets: f* in files, a* on the server. A version's script names
# it (v=N;), and traps TERM slowly at times, so that a kill lands mid-rollout.
declare -A src  # name -> absent | v<N> | n<N> (non-matching) | broken
declare -A history  # file name -> what the agent may hold for a broken file: " v1 none n3 ..."
version=0
script_of() {  # script_of N
    if (($1 % 2)); then
        echo "v=$1; trap 'sleep 0.4; exit 0' TERM; while true; do sleep 0.2; done"
    else
        echo "v=$1; trap 'exit 0' TERM; while true; do sleep 0.2; done"
    fi
}
not_here='nodeSelector: {board: "false"}'
for n in "${files[@]}" "${apis[@]}"; do
    src[$n]=absent
    history[$n]=" none"
done

# One random change to one random DaemonSet (runc: or a new import).
imports=0
mutate() {
    local n kind r=$((RANDOM % (${#files[@]} + ${#apis[@]} + 1)))
    if ((r == ${#files[@]} + ${#apis[@]})); then
        [[ $runtime == runc ]] || return
        # The same image as a new archive: imported again (copied to a dot
        # name first, as operators are told to).
        imports=$((imports + 1))
        cp "$work/busybox.tar" "$import/.busybox-$imports.tar"
        mv "$import/.busybox-$imports.tar" "$import/busybox-$imports.tar"
        rm -f "$import/busybox-$((imports - 1)).tar"
        echo "import $imports" >>"$work/storm.log"
        return
    fi
    n=$( ((r < ${#files[@]})) && echo "${files[r]}" || echo "${apis[r - ${#files[@]}]}")
    version=$((version + 1))
    kind=$((RANDOM % 10))
    if [[ $n == f* ]]; then
        if ((kind < 4)); then
            write_ds "$n.yaml" "$n" "$(script_of $version)"
            src[$n]=v$version
        elif ((kind < 5)); then
            write_ds "$n.yaml" "$n" "$(script_of $version)" "$not_here"
            src[$n]=n$version
        elif ((kind < 7)) && [[ ${src[$n]} != absent ]]; then
            # Broken: YAML that stops parsing, or a DaemonSet that fails
            # validation (no containers).
            if ((RANDOM % 2)); then
                printf 'spec: [\n' >>"$man/$n.yaml"
            else
                printf 'apiVersion: apps/v1\nkind: DaemonSet\nmetadata: {name: %s, namespace: it}\nspec: {}\n' \
                    "$n" >"$man/$n.yaml.tmp" && mv "$man/$n.yaml.tmp" "$man/$n.yaml"
            fi
            src[$n]=broken
            echo "$n broken" >>"$work/storm.log"
            return
        else
            rm -f "$man/$n.yaml"
            src[$n]=absent
        fi
    else
        if ((kind < 5)); then
            put_ds "$n" "$(script_of $version)"
            src[$n]=v$version
        elif ((kind < 7)); then
            put_ds "$n" "$(script_of $version)" '{"nodeSelector": {"board": "false"}}'
            src[$n]=n$version
        else
            delete_ds "$n"
            src[$n]=absent
        fi
    fi
    echo "$n ${src[$n]}" >>"$work/storm.log"
    local h=${src[$n]}
    [[ $h == absent ]] && h=none
    history[$n]+=" $h"
}

# The checks, quiet (for the wait) or saying what is wrong (-v).
db_intact() {
    local db r bad=0
    for db in $(find "$state" -name '*.db'); do
        r=$(sqlite3 -readonly "$db" 'PRAGMA integrity_check' 2>&1)
        [[ $r == ok ]] || {
            echo "integrity_check of $db: $r"
            bad=1
        }
    done
    return $bad
}
procs_of() { pgrep -fc "^/bin/sh -c .* it-marker-$$-$1\$"; }
procs_of_version() { pgrep -fc "^/bin/sh -c v=$2; .* it-marker-$$-$1\$"; }
converged() {
    local verbose=${1:-} dsj pj n s want listed v running=0 ds_names expect_names shims mounts
    say() { [[ -n $verbose ]] && echo "  $*"; return 1; }
    dsj=$(ds_list_json) || { say "get ds failed"; return 1; }
    pj=$(pods_json) || { say "get pods failed"; return 1; }
    local ok=0
    for n in "${files[@]}" "${apis[@]}"; do
        s=${src[$n]}
        listed=$(jq -r --arg n "$n" '.items[] | select(.metadata.name == $n)
            | .spec.template.spec.containers[0].command[2] | capture("^v=(?<v>[0-9]+);").v' <<<"$dsj")
        local nonmatch
        nonmatch=$(jq -r --arg n "$n" '.items[] | select(.metadata.name == $n) | .spec.template.spec.nodeSelector.board // ""' <<<"$dsj")
        if [[ -z $listed ]]; then have=none; elif [[ $nonmatch == false ]]; then have=n$listed; else have=v$listed; fi
        if [[ $s == broken ]]; then
            [[ " ${history[$n]} " == *" $have "* ]] || { say "$n (broken): holds $have, not one of${history[$n]}"; ok=1; }
        else
            want=$s
            [[ $want == absent ]] && want=none
            [[ $have == "$want" ]] || { say "$n: get ds has $have, the source $want"; ok=1; }
        fi
        local pods
        pods=$(jq --arg n "$n" '[.items[] | select(.metadata.ownerReferences[0].name == $n)] | length' <<<"$pj")
        if [[ $have == v* ]]; then
            running=$((running + 1))
            v=${have#v}
            [[ $pods == 1 ]] || { say "$n: $pods pods, not 1"; ok=1; }
            jq -e --arg n "$n" '.items[] | select(.metadata.ownerReferences[0].name == $n) | .status.phase == "Running"' \
                <<<"$pj" >/dev/null || { say "$n: its pod is not Running"; ok=1; }
            jq -e --arg n "$n" '.items[] | select(.metadata.name == $n) | .status
                | .currentNumberScheduled == 1 and .updatedNumberScheduled == 1 and .numberMisscheduled == 0' \
                <<<"$dsj" >/dev/null || { say "$n: the pod is not of the latest template: $(jq -c --arg n "$n" '.items[] | select(.metadata.name == $n) | .status' <<<"$dsj")"; ok=1; }
            [[ $(procs_of "$n") == 1 && $(procs_of_version "$n" "$v") == 1 ]] ||
                { say "$n: $(procs_of "$n") processes, $(procs_of_version "$n" "$v") of v=$v"; ok=1; }
        else
            [[ $pods == 0 ]] || { say "$n ($have): $pods pods"; ok=1; }
            [[ $(procs_of "$n") == 0 ]] || { say "$n ($have): $(procs_of "$n") processes"; ok=1; }
        fi
    done
    # Nothing else is listed, nothing else runs.
    local others
    others=$(jq -r '[.items[].metadata.name | select(test("^[fa][0-9]$") | not)] | join(" ")' <<<"$dsj")
    [[ -z $others ]] || { say "get ds lists $others"; ok=1; }
    shims=$(pgrep -fc "daemonlet-shim.*$work")
    ((shims <= running)) || { say "$shims shims for $running pods"; ok=1; }
    # A root filesystem mount per runc container (overlay), none for exec;
    # and, following the API server as root, a kube-api-access volume's
    # tmpfs per pod (issue 13 §3), counted apart.
    local tokens
    tokens=$(awk -v w="$work/" 'index($5, w) == 1 && $5 ~ /\/kube-api-access-[a-z0-9]+$/' /proc/self/mountinfo | wc -l)
    mounts=$(($(awk -v w="$work/" 'index($5, w) == 1' /proc/self/mountinfo | wc -l) - tokens))
    local allowed=0
    [[ $runtime == runc ]] && allowed=$running
    ((mounts <= allowed)) || { say "$mounts mounts under $work for $running pods"; ok=1; }
    ((tokens <= running)) || { say "$tokens token volumes under $work for $running pods"; ok=1; }
    if [[ $runtime == runc ]]; then
        local containers
        containers=$(rc list -q 2>/dev/null | wc -l)
        [[ $containers == "$running" ]] || { say "$containers runc containers for $running pods"; ok=1; }
    fi
    return $ok
}

kills=0 batches=0 failures=0 before_ready=0 mid_change=0 mid_rollout=0
sleep_ms() { sleep "$(printf '0.%03d' "$1")"; }
# One start and one kill at a random point.
kill_at_random() {
    local readies
    readies=$(ready_count)
    start_own_agent
    case $((RANDOM % 3)) in
        0)  # before READY (most of the time: READY takes longer than this)
            sleep_ms $((RANDOM % 120))
            before_ready=$((before_ready + 1)) ;;
        1)  # just after a change seen by a READY agent: mid-reconcile
            wait_ready "$readies"
            mutate
            sleep_ms $((RANDOM % 400))
            mid_change=$((mid_change + 1)) ;;
        2)  # a running DaemonSet's template changed: mid-rollout (odd
            # versions take 0.4 s to stop)
            wait_ready "$readies"
            mutate
            mutate
            sleep_ms $((200 + RANDOM % 600))
            mid_rollout=$((mid_rollout + 1)) ;;
    esac
    stop_agent KILL
    kills=$((kills + 1))
    echo "kill $kills (agent $agents)" >>"$work/storm.log"
    db_intact || {
        fail "batch $batches, kill $kills: a database is damaged"
        failures=$((failures + 1))
    }
}

started=$SECONDS
while :; do
    ((max_batches > 0 && batches >= max_batches)) && break
    ((max_batches == 0 && batches > 0 && SECONDS - started >= max_seconds)) && break
    batches=$((batches + 1))
    for _ in $(seq "$kills_per_batch"); do
        # Drawn here, not inside $(...): a subshell reseeds RANDOM.
        changes=$((RANDOM % 3))
        for ((c = 0; c < changes; c++)); do mutate; done
        kill_at_random
    done
    # A clean agent converges.
    start_own_agent
    if ! wait_for "batch $batches converges (seed $seed)" 30 converged; then
        converged -v
        failures=$((failures + 1))
    fi
    echo "batch $batches: $(pods_json | jq '[.items[] | select(.status.phase == "Running")] | length') pods running"
    # What the agent holds now is confirmed: a broken file's history starts here.
    for n in "${files[@]}" "${apis[@]}"; do
        have=$(ds_list_json | jq -r --arg n "$n" '.items[] | select(.metadata.name == $n)
            | (if .spec.template.spec.nodeSelector.board == "false" then "n" else "v" end)
              + (.spec.template.spec.containers[0].command[2] | capture("^v=(?<v>[0-9]+);").v)')
        history[$n]=" ${have:-none}"
    done
    stop_agent KILL
done
echo "storm ($runtime): seed $seed: $kills kills ($before_ready before READY, $mid_change mid-reconcile, $mid_rollout mid-rollout), $batches batches, $imports imports, $failures failures in $((SECONDS - started)) s"
((failures == 0)) && ok || fail "storm: $failures failures (seed $seed)"
finish
