#!/usr/bin/env bash
# The kube-api-access volume inside a real runc container (issue 13 §3;
# test_sa_token.sh has the token's refresh, the store and the exec
# runtime): an agent following the test API server mounts the token, the
# cluster's ca.crt and the namespace read-only at
# /var/run/secrets/kubernetes.io/serviceaccount, where client-go's
# rest.InClusterConfig reads them, and gives the kubernetes Service's env.
# The pod is a cluster DaemonSet's, with podStatus (registerNode): its
# token is unbound until its Pod exists (the ControllerRevision is put
# after the container runs), then bound to that Pod as the kubelet binds it
# (projected.go collectData: boundObjectRef {v1, Pod, name, uid}), the
# file replaced in place while the same container keeps running.
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
echo "  registerNode: true" >>"$cfg"
out=$work/out
mkdir -p "$out"
sa=/var/run/secrets/kubernetes.io/serviceaccount
script="echo started >> /out/starts; ls $sa > /out/ls; cat $sa/token > /out/token; cat $sa/ca.crt > /out/ca; cat $sa/namespace > /out/ns;"
script+=" if touch $sa/x 2>/dev/null; then echo rw; else echo ro; fi > /out/ro;"
script+=' env > /out/env.tmp; mv /out/env.tmp /out/env;'
script+=" while :; do cat $sa/token > /out/now.tmp && mv /out/now.tmp /out/now;"
script+=" cat $sa/ca.crt > /out/ca.tmp && mv /out/ca.tmp /out/ca_now; sleep 0.2; done"
# The DaemonSet on the cluster, and the ControllerRevision the controller
# writes for it (the board's template hash, as `daemonlet eval` computes it).
jq -nc --arg s "$script" --arg m "it-marker-$$-sa" --arg out "$out" '{apiVersion: "apps/v1", kind: "DaemonSet",
    metadata: {name: "sa", namespace: "it", uid: "uid-sa"},
    spec: {selector: {matchLabels: {app: "sa"}}, template: {metadata: {labels: {app: "sa"}},
      spec: {terminationGracePeriodSeconds: 2, volumes: [{name: "out", hostPath: {path: $out}}],
             containers: [{name: "main", image: "busybox", command: ["/bin/sh", "-c", $s, $m],
                           volumeMounts: [{name: "out", mountPath: "/out"}]}]}}}}' >"$work/sa.json"
printf 'apiVersion: v1\nkind: Node\nmetadata: {name: it-node}\n' >"$work/node.yaml"
hash=$("$dl" eval --node "$work/node.yaml" --daemonset "$work/sa.json" | jq -r .templateHash)
jq -c --arg h "$hash" '{metadata: {name: ("sa-" + $h), labels: (.spec.template.metadata.labels + {"controller-revision-hash": $h}),
    ownerReferences: [{apiVersion: "apps/v1", kind: "DaemonSet", name: "sa", uid: .metadata.uid, controller: true}]},
    data: {spec: {template: (.spec.template + {"$patch": "replace"})}}, revision: 1}' "$work/sa.json" >"$work/rev.json"
ctl() { curl -sS --max-time 5 --cacert "$work/cert.pem" -X "$1" "https://127.0.0.1:$port/_control/$2" ${3:+-d "$3"}; }
api() { curl -sS --max-time 5 --cacert "$work/cert.pem" -H "Authorization: Bearer s3cret" "https://127.0.0.1:$port$1" "${@:2}"; }
ctl PUT daemonsets/it/sa "@$work/sa.json" >/dev/null
start_agent
wait_for "the container wrote what it sees" 30 test -s "$out/env"
check() {  # check WHAT EXPECTED ACTUAL
    if [[ $2 == "$3" ]]; then ok; else fail "$1: expected '$2', got '$3'"; fi
}
claims() {  # claims TOKEN_FILE: the JWT's claims
    cut -d. -f2 <"$1" | tr '_-' '/+' | awk '{ while (length($0) % 4) $0 = $0 "="; print }' | base64 -d 2>/dev/null
}
# Its Pod is made once the controller's revision exists: the token is then
# bound to it, rewritten in place.
check "before its Pod exists: unbound (no kubernetes.io.pod claim)" null "$(claims "$out/token" | jq -c '."kubernetes.io".pod')"
ctl PUT "controllerrevisions/it/sa-$hash" "@$work/rev.json" >/dev/null
api_pod() { api /api/v1/namespaces/it/pods | jq -c '[.items[] | select(.metadata.name | startswith("sa-"))] | .[0] // empty | {name: .metadata.name, uid: .metadata.uid}'; }
bound_to_pod() { [[ -n $(api_pod) && $(claims "$out/now" | jq -c '."kubernetes.io".pod') == "$(api_pod)" ]]; }
wait_for "the token inside the container is bound to its Pod (kubernetes.io.pod: the Pod's name and uid)" 20 bound_to_pod
check "the same container read both tokens (not restarted)" 1 "$(wc -l <"$out/starts")"
check "TokenRequest: boundObjectRef {v1, Pod, name, uid} of its Pod" \
    "$(api_pod | jq -c '{apiVersion: "v1", kind: "Pod", name, uid}')" \
    "$(ctl GET token-requests | jq -c '[.[] | .spec.boundObjectRef | select(.)] | last | {apiVersion, kind, name, uid}')"
# kube-apiserver's TokenREST.Create checks of the binding, in the test API server.
tr_status() {  # tr_status NAME UID: the HTTP status of a TokenRequest bound to the Pod NAME of uid UID
    api /api/v1/namespaces/it/serviceaccounts/default/token -o /dev/null -w '%{http_code}' -X POST \
        -d "{\"spec\": {\"boundObjectRef\": {\"apiVersion\": \"v1\", \"kind\": \"Pod\", \"name\": \"$1\", \"uid\": \"$2\"}}}"
}
check "a TokenRequest bound to a Pod that does not exist: 404" 404 "$(tr_status sa-nopod x)"
check "... to its Pod with another uid (made again): 409" 409 "$(tr_status "$(api_pod | jq -r .name)" stale-uid)"
check "the volume's files" "ca.crt namespace token" "$(tr '\n' ' ' <"$out/ls" | sed 's/ $//')"
check "a JWT-shaped token" 3 "$(tr '.' '\n' <"$out/token" | grep -c .)"
# ca.crt as the container reads it now: a pod that started before the
# agent's first list of kube-root-ca.crt had the kubeconfig's CA (the
# fallback, docs/cluster.md), and the ConfigMap's arrival rewrites the file
# (read once at the start, /out/ca, it raced with that list).
ca_now() { [[ $(cat "$out/ca_now" 2>/dev/null) == CLUSTER-CA ]]; }
wait_for "ca.crt: the cluster's kube-root-ca.crt, inside the running container" 10 ca_now
check "namespace" it "$(cat "$out/ns")"
check "mounted read-only" ro "$(cat "$out/ro")"
check "KUBERNETES_SERVICE_HOST" 127.0.0.1 "$(sed -n 's/^KUBERNETES_SERVICE_HOST=//p' "$out/env")"
check "KUBERNETES_SERVICE_PORT" "$port" "$(sed -n 's/^KUBERNETES_SERVICE_PORT=//p' "$out/env")"
finish
