# Shared by the agent's end-to-end scripts (sourced): a temporary work
# directory with config, manifests and state, helpers to write them, start
# the real agent and wait on predicates with a deadline (never a fixed
# sleep). Each script sets its own checks and ends with `finish`.
dl=${DAEMONLET:?}
listen=${NOTIFY_LISTEN:?}
work=$(mktemp -d /tmp/daemonlet-it.XXXXXX)
cfg=$work/config.yaml
man=$work/manifests
state=$work/state
mkdir -p "$man"
agent=
listener=
# The running agent's log. start_own_agent gives each agent process its own
# (agent.1.log, agent.2.log, ...), so that no line of an earlier agent
# satisfies a later wait.
agent_log=$work/agent.log
agents=0
# metricsBindAddress of every config these scripts write: "" (no endpoint).
# ctest runs the scripts in parallel, and agents on the default
# 127.0.0.1:10255 would race for the port (the losers log it and run on).
# test_metrics.sh sets a free port of its own before writing its config.
metrics_bind='""'
unmount_under() { awk -v w="$1/" 'index($5, w) == 1 {print $5}' /proc/self/mountinfo | sort -r | xargs -r -n1 umount -l 2>/dev/null; }
cleanup() {
    [[ -n $agent ]] && kill -9 "$agent" 2>/dev/null
    [[ -n $listener ]] && kill "$listener" 2>/dev/null
    pkill -KILL -f "daemonlet-shim.*$work" 2>/dev/null
    pkill -KILL -f "daemonlet-image .*$work" 2>/dev/null
    pkill -KILL -f "it-marker-$$-" 2>/dev/null
    # What the agent mounted under $work and a kill -9 left (secret and
    # token volumes are tmpfs mounts when it runs as root), deepest first.
    unmount_under "$work"
    rm -rf "$work"
}
trap cleanup EXIT
# The runc runtime's scripts: exits (SKIPPED) where runc containers cannot
# run, else sets runc_bin.
require_runc() {
    [[ $(id -u) -eq 0 ]] || { echo "SKIPPED: runc containers need root"; exit 0; }
    runc_bin=$(command -v runc) || { echo "SKIPPED: runc is not installed (apt-get install runc)"; exit 0; }
    [[ -x /bin/busybox ]] || { echo "SKIPPED: /bin/busybox is missing (apt-get install busybox-static)"; exit 0; }
    [[ -z ${EMULATOR:-} ]] || { echo "SKIPPED: not under an emulator"; exit 0; }
}
# The CRI runtime's scripts: exits (SKIPPED) where containerd cannot run,
# else sets containerd_bin (before sourcing cri_lib.sh).
require_containerd() {
    [[ $(id -u) -eq 0 ]] || { echo "SKIPPED: containerd needs root"; exit 0; }
    containerd_bin=$(command -v containerd) || { echo "SKIPPED: containerd is not installed (apt-get install containerd)"; exit 0; }
    [[ -z ${EMULATOR:-} ]] || { echo "SKIPPED: not under an emulator"; exit 0; }
}
# The runc runtime's scripts set runc_bin, then `trap runc_cleanup EXIT`:
# the shims go with cleanup, runc's containers need runc, their rootfs
# mounts an unmount.
runc_root=$state/runtime/runc
rc() { "${runc_bin:?}" --root "$runc_root" "$@"; }
runc_cleanup() {
    [[ -n $agent ]] && kill -9 "$agent" 2>/dev/null
    pkill -KILL -f "daemonlet-shim.*$work" 2>/dev/null
    for id in $(rc list -q 2>/dev/null); do rc delete --force "$id" >/dev/null 2>&1; done
    # The containers' overlay root filesystems (runtime.rootfs), before the
    # work directory goes: rm -rf stops at a mount and would leave it.
    local m
    for m in $(awk -v w="$work/" 'index($5, w) == 1 {print $5}' /proc/self/mountinfo); do umount -l "$m"; done
    cleanup
}
# The start of a runc script whose stateDir fills: $import (empty) and the
# stateDir on a tmpfs of SIZE named NAME, unmounted by runc_cleanup on exit.
runc_state_on_tmpfs() {  # runc_state_on_tmpfs SIZE NAME
    import=$work/import
    mkdir -p "$import" "$state"
    trap runc_cleanup EXIT
    mount -t tmpfs -o "size=$1" "$2" "$state" || {
        echo "FAIL: cannot mount a tmpfs"
        exit 1
    }
}
# The runc scripts' start, after require_runc: $import, an import directory
# holding the busybox test image (tests/data/make_busybox_image.sh), and
# runc_cleanup on exit.
runc_import_busybox() {
    import=$work/import
    mkdir -p "$import"
    trap runc_cleanup EXIT
    "$(dirname "${BASH_SOURCE[0]}")/../data/make_busybox_image.sh" "$import/busybox.tar" >/dev/null ||
        { echo "FAIL: cannot build the image"; exit 1; }
}

# `producer | grepq PATTERN`: grep -q stops reading at its first match, and
# under pipefail the producer then fails with SIGPIPE whenever it still had
# output to write (it happens with a slower build: ASan). grepq reads it all.
grepq() { grep "$@" >/dev/null; }

passed=0 failed=0
ok() { passed=$((passed + 1)); }
# A test that runs a daemon of its own beside the agent (containerd) names
# its log in $daemon_log: a failure prints the end of both.
fail() {
    echo "FAIL: $*"
    echo "---- agent log (last 30 lines)"
    tail -n 30 "$agent_log" 2>/dev/null
    if [[ -n ${daemon_log:-} && -s $daemon_log ]]; then
        echo "---- $(basename "$daemon_log") (last 20 lines)"
        tail -n 20 "$daemon_log"
    fi
    failed=$((failed + 1))
}
# wait_for DESCRIPTION SECONDS COMMAND...: polls COMMAND until it succeeds.
source "$(dirname "${BASH_SOURCE[0]}")/../free_port.sh"

wait_for() {
    local what=$1 secs=$2
    shift 2
    local deadline=$((SECONDS + secs))
    while ((SECONDS < deadline)); do
        if "$@" >/dev/null 2>&1; then
            ok
            return 0
        fi
        sleep 0.05
    done
    fail "$what (not within ${secs}s)"
    return 1
}
get_pods() { "$dl" get pods -A --config "$cfg"; }
pod_running() { get_pods | grep -E "^$1 +$2-[a-z0-9]+ +1/1 +Running"; }
# A pod whose container waits for its image (kubelet's reasons; $2 narrows).
pod_waiting_for_image() { get_pods | grep -E "^it +$1-[a-z0-9]+ +0/1 +${2:-(ErrImagePull|ImagePullBackOff)} "; }
no_pod() { ! get_pods 2>/dev/null | grep -E "^$1 +$2-"; }
# The container's own process: anchored, so that a `bash -c` whose command
# line mentions the marker (a wait_for predicate) never matches.
pid_of() { pgrep -f "^/bin/sh -c .* it-marker-$$-$1\$" | head -1; }

# The agent's answers as JSON, read from its store (the oracles).
ds_list_json() { "$dl" get ds -A -o json --config "$cfg"; }
pods_json() { "$dl" get pods -A -o json --config "$cfg"; }
status_json() { "$dl" status -o json --config "$cfg"; }
# The sd_notify listener the agents' NOTIFY_SOCKET names ($work/notify.sock),
# writing what they send to $work/notify.log (ready_count, wait_ready); its
# pid in $listener (cleanup kills it). SECS: how long it may take to come up.
start_notify_listener() {  # start_notify_listener [SECS, default 5]
    "$listen" "$work/notify.sock" "$work/notify.log" &
    listener=$!
    wait_for "notify listener up" "${1:-5}" test -S "$work/notify.sock"
}
# The READY=1 notifications the notify listener wrote to $work/notify.log,
# and a wait for one more than COUNT (the agent started since).
ready_count() {
    local n
    n=$(grep -c READY=1 "$work/notify.log" 2>/dev/null)
    echo "${n:-0}"
}
wait_ready() {  # wait_ready COUNT
    wait_for "agent $agents READY" 30 bash -c "(( \$(grep -c READY=1 '$work/notify.log') > $1 ))"
}
stop_agent() {  # stop_agent SIGNAL: the running agent, waited for
    kill "-$1" "$agent"
    wait "$agent" 2>/dev/null
    agent=
}

write_config() {  # write_config LABELS_YAML TAINTS_YAML
    cat >"$cfg" <<EOF
nodeName: it-node
nodeLabels: $1
nodeTaints: $2
manifestDir: $man
stateDir: $state
metricsBindAddress: $metrics_bind
fileCheckFrequency: 2s
crashLoopBackoff: {initial: 300ms, max: 2s}
EOF
}
# The image is $DS_IMAGE (default none: the exec runtime needs none), the
# grace period $DS_GRACE (default 2).
write_ds() {  # write_ds FILE NAME SCRIPT [EXTRA_SPEC_YAML] [STRATEGY_YAML] [CONTAINER_EXTRA_YAML]
    cat >"$man/$1.tmp" <<EOF
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: $2, namespace: it}
spec:
  selector: {matchLabels: {app: $2}}
  ${5:-}
  template:
    metadata: {labels: {app: $2}}
    spec:
      terminationGracePeriodSeconds: ${DS_GRACE:-2}
      ${4:-}
      containers:
        - name: main
          image: ${DS_IMAGE:-none}
          command: ["/bin/sh", "-c", "$3", "it-marker-$$-$2"]
${6:-}
EOF
    mv "$man/$1.tmp" "$man/$1"  # as tools write: a temp file, then rename
}
# The runc runtime importing from IMPORT_DIR. A long back-off: a waiting pod
# that starts within seconds of its image's import was started by the
# import, not by its back-off timer.
# runc_busybox_import: after require_runc: the busybox test image in
# $work/import (sets import), the runc cleanup at exit.
runc_busybox_import() {
    import=$work/import
    mkdir -p "$import"
    trap runc_cleanup EXIT
    "$here/../data/make_busybox_image.sh" "$import/busybox.tar" >/dev/null || { echo "FAIL: cannot build the image"; exit 1; }
}

write_runc_config() {  # write_runc_config IMPORT_DIR
    cat >"$cfg" <<EOF
nodeName: it-node
manifestDir: $man
stateDir: $state
metricsBindAddress: $metrics_bind
runtime: {type: runc, imageImportDir: $1}
fileCheckFrequency: 2s
crashLoopBackoff: {initial: 60s, max: 120s}
EOF
}
start_agent() {
    NOTIFY_SOCKET=$work/notify.sock "$dl" run --config "$cfg" >>"$agent_log" 2>&1 &
    agent=$!
}
start_own_agent() {
    agents=$((agents + 1))
    agent_log=$work/agent.$agents.log
    start_agent
}

# finish: prints the tally; the script's exit status.
finish() {
    echo "$passed passed, $failed failed"
    [[ $failed -eq 0 ]]
}

# start_test_apiserver [PORT]: tests/apiserver/fake_apiserver ($FAKE_APISERVER)
# on PORT or a free loopback port, with a self-signed certificate
# ($work/cert.pem, made once) and the token s3cret; a fresh server (no
# objects), with the options in the array test_apiserver_args if set.
# Sets $fake (its pid) and $port.
start_test_apiserver() {
    [[ -s $work/cert.pem ]] ||
        openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout "$work/key.pem" \
            -out "$work/cert.pem" -subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1,DNS:localhost \
            -days 2 2>/dev/null
    local where=()
    [[ -n ${1:-} ]] && where=(--port "$1")
    [[ -v test_apiserver_args ]] || test_apiserver_args=()
    rm -f "$work/port"
    "${FAKE_APISERVER:?}" --cert "$work/cert.pem" --key "$work/key.pem" --port-file "$work/port" "${where[@]}" \
        --token s3cret --bookmark-ms 500 "${test_apiserver_args[@]}" >>"$work/fake.log" 2>&1 &
    fake=$!
    wait_for "the API server listens" 5 test -s "$work/port"
    port=$(cat "$work/port")
}

# write_kubeconfig FILE PORT: a kubeconfig for the test API server on
# loopback PORT (its CA in $work/cert.pem, token s3cret), private to root.
write_kubeconfig() {  # write_kubeconfig FILE PORT
    cat >"$1" <<EOF
apiVersion: v1
kind: Config
clusters:
  - name: fake
    cluster: {server: "https://127.0.0.1:$2", certificate-authority: $work/cert.pem}
users:
  - name: board
    user: {token: s3cret}
contexts:
  - name: fake
    context: {cluster: fake, user: board}
current-context: fake
EOF
    chmod 600 "$1"
}
# follow_test_apiserver: the config ($cfg, written) follows the test API
# server on $port in namespace it, with a kubeconfig of its own.
follow_test_apiserver() {
    write_kubeconfig "$work/kubeconfig" "$port"
    cat >>"$cfg" <<EOF
apiServer:
  kubeconfig: $work/kubeconfig
  namespaces: [it]
  requestTimeout: 3s
EOF
}
