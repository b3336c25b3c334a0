#!/usr/bin/env bash
# The kube-api-access volume inside a real runc container (issue 13 §3;
# test_sa_token.sh has the token's refresh, the store and the exec
# runtime): an agent following the test API server mounts the token, the
# cluster's ca.crt and the namespace read-only at
# /var/run/secrets/kubernetes.io/serviceaccount, where client-go's
# rest.InClusterConfig reads them, and gives the kubernetes Service's env.
# Needs root, runc and busybox-static; skips without them.
set -uo pipefail
here=$(dirname "${BASH_SOURCE[0]}")
source "$here/lib.sh"
require_runc
command -v jq >/dev/null || {
    echo "jq is missing (scripts/setup.sh installs it)"
    exit 1
}
runc_busybox_import
fake=
trap '[[ -n $fake ]] && kill "$fake" 2>/dev/null; runc_cleanup' EXIT

start_test_apiserver
curl -sS --max-time 5 --cacert "$work/cert.pem" -X PUT "https://127.0.0.1:$port/_control/configmaps/it/kube-root-ca.crt" \
    -d '{"data": {"ca.crt": "CLUSTER-CA"}}' >/dev/null
write_runc_config "$import"
follow_test_apiserver
out=$work/out
mkdir -p "$out"
sa=/var/run/secrets/kubernetes.io/serviceaccount
script="ls $sa > /out/ls; cat $sa/token > /out/token; cat $sa/ca.crt > /out/ca; cat $sa/namespace > /out/ns;"
script+=" if touch $sa/x 2>/dev/null; then echo rw; else echo ro; fi > /out/ro;"
script+=' env > /out/env.tmp; mv /out/env.tmp /out/env; while :; do sleep 1; done'
DS_IMAGE=busybox write_ds sa.yaml sa "$script" "volumes: [{name: out, hostPath: {path: $out}}]" "" \
    "          volumeMounts: [{name: out, mountPath: /out}]"
start_agent
wait_for "the container wrote what it sees" 30 test -s "$out/env"
check() {  # check WHAT EXPECTED ACTUAL
    if [[ $2 == "$3" ]]; then ok; else fail "$1: expected '$2', got '$3'"; fi
}
check "the volume's files" "ca.crt namespace token" "$(tr '\n' ' ' <"$out/ls" | sed 's/ $//')"
check "a JWT-shaped token" 3 "$(tr '.' '\n' <"$out/token" | grep -c .)"
check "ca.crt: the cluster's kube-root-ca.crt" CLUSTER-CA "$(cat "$out/ca")"
check "namespace" it "$(cat "$out/ns")"
check "mounted read-only" ro "$(cat "$out/ro")"
check "KUBERNETES_SERVICE_HOST" 127.0.0.1 "$(sed -n 's/^KUBERNETES_SERVICE_HOST=//p' "$out/env")"
check "KUBERNETES_SERVICE_PORT" "$port" "$(sed -n 's/^KUBERNETES_SERVICE_PORT=//p' "$out/env")"
finish
