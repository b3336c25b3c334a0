# The test Kubernetes API server (tests/apiserver/fake_apiserver.cpp) for the
# agent's scripts that follow one (sourced after lib.sh): its certificate,
# start and stop, its /_control endpoints, and DaemonSets put and deleted
# on it. The caller runs `trap cleanup_cluster EXIT` (set here).
srv=${FAKE_APISERVER:?}
command -v jq >/dev/null || {
    echo "jq is missing (scripts/setup.sh installs it)"
    exit 1
}

fake=
proxy=
cleanup_cluster() {
    # KEEP_LOGS=DIR keeps the logs of a run for a post-mortem.
    [[ -n ${KEEP_LOGS:-} ]] && cp "$work"/*.log "$KEEP_LOGS"/ 2>/dev/null
    [[ -n $fake ]] && kill "$fake" 2>/dev/null
    [[ -n $proxy ]] && kill "$proxy" 2>/dev/null
    cleanup
}
trap cleanup_cluster EXIT

# --- The test API server: a self-signed certificate for 127.0.0.1, a token.
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout "$work/key.pem" \
    -out "$work/cert.pem" -subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1,DNS:localhost -days 2 2>/dev/null
port=
# Arguments every start_fake adds (test_fleet.sh: the controllers).
fake_extra=()
start_fake() {  # start_fake [PORT [FAULT_JSON]]: a fresh server (no objects), on PORT or a free one
    rm -f "$work/port"
    local where=(--port-file "$work/port")
    [[ -n ${1:-} ]] && where+=(--port "$1")
    [[ -n ${2:-} ]] && where+=(--fault "$2")
    "$srv" --cert "$work/cert.pem" --key "$work/key.pem" "${where[@]}" --token s3cret --bookmark-ms 500 \
        "${fake_extra[@]}" >>"$work/fake.log" 2>&1 &
    fake=$!
    wait_for "the API server listens" 5 test -s "$work/port"
    port=$(cat "$work/port")
}
stop_fake() {
    kill "$fake" 2>/dev/null
    wait "$fake" 2>/dev/null
    fake=
}
ctl() {  # ctl METHOD PATH [BODY]: the fake's /_control endpoints
    local body=()
    [[ -n ${3:-} ]] && body=(-d "$3")
    curl -sS --max-time 10 --cacert "$work/cert.pem" -X "$1" "https://127.0.0.1:$port/_control/$2" "${body[@]}"
}
stats() { ctl GET stats; }
requests_of() { stats | jq -r ".requests[\"$1\"] // 0"; }
fault() { ctl POST fault "$1" >/dev/null; }
clear_faults() { ctl DELETE fault >/dev/null; }
end_watches() { ctl POST end-watches "{\"gone\": ${1:-false}}" >/dev/null; }
# For the predicates run by wait_for in a child bash.
export work port
export -f ctl stats requests_of

# A DaemonSet as the cluster has it: ds_json NAME SCRIPT [POD_SPEC_EXTRA_JSON] [METADATA_EXTRA_JSON].
# The uid is fixed per name, so that a restarted server holds the same objects.
mkdir -p "$work/ds"
ds_json() {
    local x=${3:-} md=${4:-}
    jq -nc --arg n "$1" --arg s "$2" --arg m "it-marker-$$-$1" --argjson x "${x:-"{}"}" --argjson md "${md:-"{}"}" '
      {metadata: ({uid: ("uid-" + $n)} + $md),
       spec: {selector: {matchLabels: {app: $n}},
              template: {metadata: {labels: {app: $n}},
                         spec: ({terminationGracePeriodSeconds: 2,
                                 containers: [{name: "main", image: "none",
                                               command: ["/bin/sh", "-c", $s, $m]}]} + $x)}}}'
}
put_ds() {  # put_ds NAME SCRIPT [POD_SPEC_EXTRA_JSON] [METADATA_EXTRA_JSON]
    ds_json "$@" >"$work/ds/$1.json"
    ctl PUT "daemonsets/it/$1" "@$work/ds/$1.json" >/dev/null
}
put_ds_body() {  # put_ds_body NAME BODY
    printf '%s' "$2" >"$work/ds/$1.json"
    ctl PUT "daemonsets/it/$1" "@$work/ds/$1.json" >/dev/null
}
delete_ds() {
    rm -f "$work/ds/$1.json"
    ctl DELETE "daemonsets/it/$1" >/dev/null
}
# A ControllerRevision as the DaemonSet controller writes it
# (controller_history.go NewControllerRevision, update.go getPatch) for the
# DaemonSet's template as last put: name <ds>-<hash>, the template's labels
# and the hash label, data the template patch, revision REVISION (default
# 1), owned by the DaemonSet.
put_revision() {  # put_revision DS HASH [REVISION]
    jq -c --arg h "$2" --arg n "$1" --argjson r "${3:-1}" '{metadata: {name: ($n + "-" + $h),
        labels: (.spec.template.metadata.labels + {"controller-revision-hash": $h}),
        ownerReferences: [{apiVersion: "apps/v1", kind: "DaemonSet", name: $n, uid: .metadata.uid,
                           controller: true, blockOwnerDeletion: true}]},
      data: {spec: {template: (.spec.template + {"$patch": "replace"})}}, revision: $r}' "$work/ds/$1.json" \
        >"$work/rev-$1.json"
    ctl PUT "controllerrevisions/it/$1-$2" "@$work/rev-$1.json" >/dev/null
}
node_body='{"metadata": {"labels": {"zone": "a"}}, "spec": {}}'
put_node() { ctl PUT nodes/it-node "$1" >/dev/null; }
# api_server_config [KEY: VALUE]...: a kubeconfig for the test API server on
# $port, and the apiServer section that uses it appended to $cfg (after
# write_config), with the given keys.
api_server_config() {
    write_kubeconfig "$work/kubeconfig" "$port"
    {
        echo "apiServer:"
        echo "  kubeconfig: $work/kubeconfig"
        echo "  requestTimeout: 3s"
        local kv
        for kv in "$@"; do echo "  $kv"; done
    } >>"$cfg"
}

# The real kubectl against the test server (the kubeconfig next to it), for
# the tests that check the cluster side with a client nobody here wrote.
require_kubectl() {
    command -v kubectl >/dev/null || {
        echo "kubectl is missing"
        exit 1
    }
}
k() { kubectl --kubeconfig "$work/kubeconfig" --cache-dir "$work/kcache" --request-timeout 5s "$@"; }
